"""Cancelling a Batch API run (issue 36) cancels every open batch of the run at the
provider, through `judging.llm_batch`, even when no worker drives the run (its worker
SIGKILLed): from the run page, the API and the `judge --cancel` command. Each batch
records what came of it (cancelled, already final, or why the cancel failed) and
nothing more is submitted. Against the real local files-and-batches server
(`judging.fake_batches`)."""

from __future__ import annotations

import io

import httpx
import pytest
from django.core.management import call_command

from judging.models import JudgeBatch, JudgeRun
from judging.services.execution.batch import BatchDriver
from judging.services.runs import judge_run_create, judge_run_start
from tests.judge_fixtures import wait_for
from tests.judging.test_batch import batch_stats, fast_polls
from tests.judging.test_execution import eager_tasks, make_config, make_dataset

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks", "fast_polls"]  # fixtures used below


def _server_config(base: str, **changes) -> None:
    root = base.rstrip("/").removesuffix("/v1")
    httpx.post(f"{root}/config", json=changes).raise_for_status()


@pytest.mark.integration
def test_cancelling_a_batch_run_whose_worker_was_killed_cancels_its_batches(
    celery_worker_process, fake_server, settings, client_for
):
    settings.JUDGE_BATCH_MAX_LINES = 4  # 12 calls: three batches
    settings.JUDGE_BATCH_POLL_MIN_SECONDS = 0.2
    settings.JUDGE_BATCH_POLL_MAX_SECONDS = 0.5
    base = fake_server(latency_ms=0, batch_delay_seconds=300)
    worker = celery_worker_process()
    config, user = make_config(base)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=6), user=user, batch=True
    )
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeBatch.objects.filter(run=run, state="submitted").count() == 3,
        timeout=60,
        message=worker.tail,
    )
    worker.kill()  # no driver is left to cancel anything
    at_kill = batch_stats(base, ids=True)
    assert at_kill["lines_submitted"] == 12
    assert "cancelled" not in at_kill["batches"]

    page = client_for(user).post(f"/runs/{run.pk}/cancel/", follow=True)

    assert page.status_code == 200
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED
    stats = batch_stats(base, ids=True)
    assert stats["batches"] == {"cancelled": 3}  # every batch, at the provider
    assert stats["custom_ids"] == at_kill["custom_ids"]  # nothing more submitted
    batches = list(JudgeBatch.objects.filter(run=run))
    assert len(batches) == 3
    assert {b.cancel_note for b in batches} == {"cancelled at the provider"}
    assert {b.provider_status for b in batches} <= {"cancelling", "cancelled"}
    html = client_for(user).get(f"/runs/{run.pk}/").content.decode()
    assert "cancelled at the provider" in html


def _submitted_by_hand(run, n: int) -> list[JudgeBatch]:
    """`n` batches claimed, uploaded and created by a driver that then died (no
    driver holds the run afterwards)."""
    driver = BatchDriver(JudgeRun.objects.select_related("config").get(pk=run.pk))
    driver.skills = list(run.dataset.rubric.skills.order_by("position"))
    driver.template = run.config.prompt
    made = []
    with driver.client() as client:
        for _ in range(n):
            batch = driver._claim()
            driver._prepare_and_upload(client, batch)
            driver._submit(client, batch)
            made.append(batch)
    return made


def test_each_batch_records_what_cancelling_it_did_and_nothing_is_sent_after(
    eager_tasks, fast_polls, fake_server, settings, api_client_for
):
    settings.JUDGE_BATCH_MAX_LINES = 2
    base = fake_server(latency_ms=0, batch_delay_seconds=0)
    config, user = make_config(base)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=4), user=user, batch=True
    )
    JudgeRun.objects.filter(pk=run.pk).update(status="running")
    (done,) = _submitted_by_hand(run, 1)
    wait_for(lambda: batch_stats(base)["batches"] == {"completed": 1}, timeout=10)
    _server_config(base, batch_delay_seconds=300)
    running, gone = _submitted_by_hand(run, 2)
    JudgeBatch.objects.filter(pk=gone.pk).update(batch_id="batch_not_at_the_server")
    # A batch whose row was written and whose file never went out.
    driver = BatchDriver(JudgeRun.objects.get(pk=run.pk))
    unsent = driver._claim()
    unsent_calls = set(unsent.calls.values_list("pk", flat=True))
    before = batch_stats(base, ids=True)

    answer = api_client_for(user).post(f"/api/runs/{run.pk}/cancel/")

    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"
    notes = dict(JudgeBatch.objects.filter(run=run).values_list("pk", "cancel_note"))
    assert notes[done.pk] == "already completed at the provider: nothing to cancel"
    assert notes[running.pk] == "cancelled at the provider"
    assert notes[gone.pk].startswith("the cancel failed: ")
    assert "No such batch" in notes[gone.pk]
    assert notes[unsent.pk] == "never submitted: its calls wait to resume"
    unsent.refresh_from_db()
    assert unsent.state == "cancelled"
    assert (
        set(
            run.calls.filter(pk__in=unsent_calls, status="pending").values_list(
                "pk", flat=True
            )
        )
        == unsent_calls
    )
    after = batch_stats(base, ids=True)
    assert after["custom_ids"] == before["custom_ids"]  # nothing more submitted
    # The batch the cancel could not reach goes on at the server, as it would.
    assert after["batches"] == {"completed": 1, "cancelled": 1, "in_progress": 1}


def test_the_judge_command_cancels_a_batch_run_and_says_what_each_batch_did(
    eager_tasks, fast_polls, fake_server, admin_user
):
    base = fake_server(latency_ms=0, batch_delay_seconds=300)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=2)
    run = judge_run_create(config=config, dataset=dataset, user=user, batch=True)
    JudgeRun.objects.filter(pk=run.pk).update(status="running")
    (batch,) = _submitted_by_hand(run, 1)
    out = io.StringIO()

    call_command(
        "judge", "--dataset", dataset.name, "--cancel", str(run.pk), stdout=out
    )

    text = out.getvalue()
    assert f"Run {run.pk}: cancelled." in text
    assert f"batch {batch.pk} ({batch.batch_id}): cancelled at the provider" in text
    assert batch_stats(base)["batches"] == {"cancelled": 1}
