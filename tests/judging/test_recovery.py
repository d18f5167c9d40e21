"""Crash recovery of judge runs (`judging.services.execution.recovery`): a dead driver's
claims come back and the run gets a new driver, without Celery beat and without waiting
for leases (which last 3x the call timeout).

The in-process tests build the state a killed worker leaves behind (a driver row that
stopped beating, calls claimed under it); the integration tests kill a real worker
process with SIGKILL and start another, with and without embedded beat."""

from __future__ import annotations

import logging
from collections import Counter
from datetime import timedelta
from uuid import uuid4

import pytest
from django.utils import timezone

from judging.models import JudgeCall, JudgeDriver, JudgeRun, JudgeScore
from judging.services.execution.recovery import (
    driver_beat,
    driver_register,
    judge_runs_recover,
)
from judging.services.runs import judge_run_create, judge_run_start
from tests.judge_fixtures import wait_for
from tests.judging.test_execution import eager_tasks, make_config, make_dataset, stats

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks"]  # a fixture used below


def _running_run(base_url, *, n_instructions=3):
    """A run marked running with nothing driving it yet (as right after a start)."""
    config, user = make_config(base_url, max_concurrency=4, timeout_seconds=5)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=n_instructions), user=user
    )
    JudgeRun.objects.filter(pk=run.pk).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now()
    )
    run.refresh_from_db()
    return run


def _claim_under(run, token, *, n, beat_ago, lease_ahead=timedelta(hours=1)):
    """`n` calls claimed by driver `token`, whose last beat was `beat_ago`; the claims'
    leases run `lease_ahead` (far: only the heartbeat can free them)."""
    now = timezone.now()
    JudgeDriver.objects.create(
        token=token, run=run, host="gone", pid=1, started_at=now, beat_at=now - beat_ago
    )
    ids = list(run.calls.order_by("pk").values_list("pk", flat=True)[:n])
    JudgeCall.objects.filter(pk__in=ids).update(
        status=JudgeCall.Status.RUNNING,
        claim_token=uuid4().hex,
        driver_token=token,
        lease_until=now + lease_ahead,
        started_at=now,
    )
    JudgeRun.objects.filter(pk=run.pk).update(heartbeat_at=now - beat_ago)
    return ids


def test_a_dead_drivers_claims_come_back_and_a_new_driver_finishes_the_run(
    eager_tasks, fake_server, settings, caplog
):
    settings.JUDGE_DRIVER_STALE_SECONDS = 8
    base = fake_server(latency_ms=1)
    run = _running_run(base)
    dead = uuid4().hex
    claimed = _claim_under(run, dead, n=3, beat_ago=timedelta(seconds=30))

    with caplog.at_level(logging.WARNING, logger="judging.services.execution"):
        counts = judge_runs_recover()  # eager: the new driver runs inline

    assert counts == {"dead_drivers": 1, "reclaimed_calls": 3, "restarted_runs": 1}
    assert dead[:8] in caplog.text and "presumed dead" in caplog.text
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert not JudgeDriver.objects.exists()  # the dead row and the new driver's
    assert set(run.calls.values_list("status", flat=True)) == {"succeeded"}
    # The calls the dead driver held were done again, once each.
    assert JudgeCall.objects.filter(pk__in=claimed, driver_token="").count() == 3
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list(
            "response_id", "skill_id", "sample_index"
        )
    )
    assert keys and max(keys.values()) == 1
    assert stats(base)["requests"] == run.calls.count()


def test_a_live_driver_keeps_its_claims_and_no_second_driver_is_started(
    eager_tasks, fake_server, settings
):
    settings.JUDGE_DRIVER_STALE_SECONDS = 8
    base = fake_server(latency_ms=1)
    run = _running_run(base)
    claimed = _claim_under(run, uuid4().hex, n=2, beat_ago=timedelta(seconds=1))

    assert judge_runs_recover() == {
        "dead_drivers": 0,
        "reclaimed_calls": 0,
        "restarted_runs": 0,
    }
    assert set(
        JudgeCall.objects.filter(pk__in=claimed).values_list("status", flat=True)
    ) == {"running"}
    assert stats(base)["requests"] == 0


def test_a_run_without_any_driver_is_driven_and_an_idle_one_is_finished(
    eager_tasks, fake_server, settings
):
    settings.JUDGE_DRIVER_STALE_SECONDS = 8
    base = fake_server(latency_ms=1)
    stalled = _running_run(base)  # started, its driver task lost before it ran
    JudgeRun.objects.filter(pk=stalled.pk).update(
        heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    done = _running_run(base, n_instructions=1)  # every call finished, still "running"
    done.calls.update(status=JudgeCall.Status.SUCCEEDED)

    counts = judge_runs_recover()

    assert counts["restarted_runs"] == 1
    assert JudgeRun.objects.get(pk=stalled.pk).status == JudgeRun.Status.COMPLETED
    assert JudgeRun.objects.get(pk=done.pk).status == JudgeRun.Status.COMPLETED


def test_a_recently_dispatched_run_is_not_dispatched_again(
    eager_tasks, fake_server, settings
):
    settings.JUDGE_DRIVER_STALE_SECONDS = 8
    base = fake_server(latency_ms=1)
    run = _running_run(base)
    JudgeRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())

    assert judge_runs_recover()["restarted_runs"] == 0
    assert stats(base)["requests"] == 0


def test_a_driver_presumed_dead_registers_again_on_its_next_beat(fake_server):
    run = _running_run(fake_server(latency_ms=1))
    token = uuid4().hex
    driver_register(run_id=run.pk, token=token)
    assert driver_beat(run_id=run.pk, token=token) is True
    JudgeDriver.objects.filter(token=token).delete()  # what recovery does to the dead
    assert driver_beat(run_id=run.pk, token=token) is False
    assert JudgeDriver.objects.filter(token=token, run=run).exists()


def test_claims_record_their_driver_and_a_finished_driver_leaves_no_row(
    eager_tasks, fake_server
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=2), user=user
    )
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert not JudgeDriver.objects.filter(run=run).exists()
    # Finished calls drop their claim (the token of who held it is not kept).
    assert set(run.calls.values_list("driver_token", flat=True)) == {""}


# --- a real worker killed by signal -------------------------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("beat", [False, True], ids=["workers-only", "with-beat"])
def test_a_killed_worker_is_replaced_within_seconds_without_lease_expiry(
    celery_worker_process, fake_server, tmp_path, beat
):
    """Default leases (3 x the call timeout, at least 120 s): only the heartbeat can
    bring the run back in time. Before heartbeats, with workers only the run never
    finished, and with beat it waited for the leases."""
    base = fake_server(latency_ms=150)
    args = ("--beat", "--schedule", str(tmp_path / "beat-schedule")) if beat else ()
    first = celery_worker_process(extra_args=args)
    config, user = make_config(base, max_concurrency=4, timeout_seconds=30)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=30), user=user
    )
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeCall.objects.filter(run=run, status="succeeded").count() >= 8,
        timeout=60,
        message=first.tail,
    )
    first.kill()
    assert JudgeCall.objects.filter(run=run, status="running").exists()
    done_at_kill = JudgeCall.objects.filter(run=run, status="succeeded").count()

    second = celery_worker_process(extra_args=args)
    # Far below the 120 s lease: the new worker took the dead driver's claims back.
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=75,
        message=second.tail,
    )
    run.refresh_from_db()
    assert run.status == "completed", second.tail()
    assert run.calls.filter(status="succeeded").count() > done_at_kill
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list(
            "response_id", "skill_id", "sample_index"
        )
    )
    assert len(keys) == 180 and max(keys.values()) == 1
    assert set(run.calls.values_list("status", flat=True)) == {"succeeded"}
    assert not JudgeDriver.objects.filter(run=run).exists()
    assert "presumed dead" in second.tail(400)
