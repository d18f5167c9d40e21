"""Judge runs through the Batch API (issue 36) against the real local server's
``/v1/files`` and ``/v1/batches`` (`judging.fake_batches`): the same scores as the
synchronous path, failed lines retried then recorded, stray result lines ignored, a
file the server refuses, cancel, and a worker SIGKILLed mid-run that resumes the same
batches without submitting any key twice (counted at the server)."""

from __future__ import annotations

import io
import threading
from collections import Counter
from decimal import Decimal

import httpx
import pytest
from django.db import connection

from judging import llm, llm_batch
from judging.models import (
    JudgeBatch,
    JudgeBatchFailure,
    JudgeRun,
    JudgeScore,
)
from judging.services.runs import judge_run_cancel, judge_run_create, judge_run_start
from tests.judge_fixtures import wait_for
from tests.judging.test_execution import (
    eager_tasks,
    expected_scores,
    make_config,
    make_dataset,
    run_to_end,
)

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks"]  # a fixture used below


@pytest.fixture
def fast_polls(settings):
    settings.JUDGE_BATCH_POLL_MIN_SECONDS = 0.1
    settings.JUDGE_BATCH_POLL_MAX_SECONDS = 0.3


def batch_stats(base_url, ids=False):
    root = base_url.rstrip("/").removesuffix("/v1")
    return httpx.get(f"{root}/batch_stats", params={"ids": 1} if ids else {}).json()


def scores_of(run):
    return {
        (r, s): v
        for r, s, v in JudgeScore.objects.filter(run=run).values_list(
            "response_id", "skill_id", "score"
        )
    }


def test_a_batch_run_stores_the_same_scores_and_usage_as_a_sync_run_at_the_batch_price(
    eager_tasks, fast_polls, fake_server, settings
):
    settings.JUDGE_BATCH_MAX_LINES = 3  # 8 calls: batches of 3, 3 and 2 lines
    dataset = make_dataset()
    sync_config, user = make_config(fake_server(latency_ms=0))
    sync = run_to_end(sync_config, user, dataset)
    base = fake_server(latency_ms=0)  # another endpoint: nothing from the cache
    config, user2 = make_config(base)
    run = run_to_end(config, user2, dataset, batch=True)

    assert sync.status == run.status == JudgeRun.Status.COMPLETED
    assert scores_of(run) == scores_of(sync)
    assert len(scores_of(run)) == expected_scores(dataset) == 24
    batches = list(JudgeBatch.objects.filter(run=run).order_by("pk"))
    assert [b.lines for b in batches] == [3, 3, 2]
    assert {b.state for b in batches} == {"completed"}
    assert all(b.batch_id and b.input_file_id and b.output_file_id for b in batches)
    calls = {c.response_id: c for c in run.calls.all()}
    for c in sync.calls.all():
        mine = calls[c.response_id]
        assert mine.via_batch and not c.via_batch
        assert (mine.input_tokens, mine.output_tokens) == (
            c.input_tokens,
            c.output_tokens,
        )
        assert mine.raw_output == c.raw_output
        # The same usage at the config's batch discount (50% by default), to the
        # stored cost's 6 decimal places.
        assert c.cost > 0 and abs(mine.cost - c.cost / 2) <= Decimal("0.000001")
    stats = batch_stats(base, ids=True)
    assert stats["lines_submitted"] == 8 and stats["duplicates"] == 0
    assert sorted(stats["custom_ids"]) == sorted(
        f"call-{pk}" for pk in run.calls.values_list("pk", flat=True)
    )


def test_each_batch_is_stored_as_it_completes_while_later_ones_are_in_flight(
    eager_tasks, fast_polls, fake_server, settings
):
    """Batches of `JUDGE_BATCH_LINES` (below the provider's limit): the first one's
    results are stored while the server still holds the others (no clock: the
    server keeps them until released), then the rest, each key once."""
    settings.JUDGE_BATCH_LINES = 2  # 6 calls: three batches of 2
    base = fake_server(latency_ms=0, batch_hold_after=1)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=3)
    run = judge_run_create(config=config, dataset=dataset, user=user, batch=True)
    assert run.settings_snapshot["batch"]["lines"] == 2

    def drive():
        try:
            judge_run_start(run=run, user=user)
        finally:
            connection.close()

    driving = threading.Thread(target=drive)
    driving.start()
    try:
        wait_for(
            lambda: (
                JudgeBatch.objects.filter(run=run, state="completed").count() == 1
                and JudgeBatch.objects.filter(
                    run=run, state="submitted", provider_status="in_progress"
                ).count()
                == 2
            ),
            timeout=30,
        )
        first = JudgeBatch.objects.get(run=run, state="completed")
        held = JudgeBatch.objects.filter(run=run, state="submitted")
        # The first batch's calls are stored, with their scores ...
        assert set(first.calls.values_list("status", flat=True)) == {"succeeded"}
        stored = set(
            JudgeScore.objects.filter(run=run).values_list("call_id", flat=True)
        )
        assert stored == set(first.calls.values_list("pk", flat=True))
        # ... while the server still holds the other two, their calls in flight.
        assert set(
            run.calls.filter(batch__in=held).values_list("status", flat=True)
        ) == {"running"}
        assert run.calls.filter(batch__in=held).count() == 4
        root = base.rstrip("/").removesuffix("/v1")
        httpx.post(f"{root}/batch_release").raise_for_status()
        driving.join(60)
        assert not driving.is_alive()
    finally:
        httpx.post(f"{base.rstrip('/').removesuffix('/v1')}/batch_release")
        driving.join(60)
    run.refresh_from_db()
    assert run.status == "completed"
    assert [b.lines for b in JudgeBatch.objects.filter(run=run)] == [2, 2, 2]
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list("response_id", "skill_id")
    )
    assert len(keys) == expected_scores(dataset) and max(keys.values()) == 1
    assert batch_stats(base)["duplicates"] == 0
    assert set(run.calls.values_list("via_batch", flat=True)) == {True}


def test_a_batch_stored_again_on_resume_keeps_one_result_per_key(
    eager_tasks, fast_polls, fake_server
):
    """A driver killed while storing a batch: the chunks it committed stay, the one
    it was writing rolled back (its call running, no scores). The next driver reads
    the batch's files again: the rolled-back call is stored, the stored ones are
    not touched, and a call whose scores were written already (stored through
    COPY, ON CONFLICT DO NOTHING) keeps one score per key; nothing is sent again."""
    from judging.models import JudgeCall
    from judging.services.execution import judge_run_drive

    base = fake_server(latency_ms=0)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=3)
    run = run_to_end(config, user, dataset, batch=True)
    assert run.status == "completed"
    before = {
        (c.pk, c.raw_output, c.cost, c.finished_at) for c in run.calls.order_by("pk")
    }
    scores_before = scores_of(run)
    batch = JudgeBatch.objects.get(run=run)
    rolled_back, scored, *_ = list(run.calls.order_by("pk"))
    JudgeScore.objects.filter(call=rolled_back).delete()
    JudgeCall.objects.filter(pk__in=[rolled_back.pk, scored.pk]).update(
        status="running", claim_token="killed-driver", raw_output="", parsed=None
    )
    JudgeBatch.objects.filter(pk=batch.pk).update(state="submitted", finished_at=None)
    JudgeRun.objects.filter(pk=run.pk).update(status="running", finished_at=None)

    assert judge_run_drive(run_id=run.pk) == "completed"

    batch.refresh_from_db()
    assert batch.state == "completed"
    assert scores_of(run) == scores_before
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list("response_id", "skill_id")
    )
    assert len(keys) == expected_scores(dataset) and max(keys.values()) == 1
    after = {
        (c.pk, c.raw_output, c.cost, c.finished_at)
        for c in run.calls.order_by("pk")
        if c.pk not in (rolled_back.pk, scored.pk)
    }
    assert after <= before  # the others untouched
    for call in run.calls.filter(pk__in=[rolled_back.pk, scored.pk]):
        assert call.status == "succeeded" and call.raw_output and call.via_batch
    stats = batch_stats(base)
    assert stats["lines_submitted"] == 6 and stats["duplicates"] == 0
    assert not JudgeBatchFailure.objects.filter(batch=batch).exists()


def test_answers_read_from_batch_files_are_keyed_as_their_prompts_were_sent(
    eager_tasks, fast_polls, fake_server
):
    """Reading a batch's answers renders no prompt again (the key each call was sent
    with is stored at submission); the keys are the prompts' own: a synchronous run
    of the same config afterwards is answered wholly from the cache, key for key."""
    base = fake_server(latency_ms=0)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=3)
    batched = run_to_end(config, user, dataset, batch=True)
    assert batched.status == "completed"
    sync = run_to_end(config, user, dataset)
    assert sync.status == "completed"
    assert set(sync.calls.values_list("cached", flat=True)) == {True}
    assert scores_of(sync) == scores_of(batched)
    keys = dict(batched.calls.values_list("response_id", "prompt_hash"))
    assert all(keys.values())
    assert dict(sync.calls.values_list("response_id", "prompt_hash")) == keys
    assert batch_stats(base)["lines_submitted"] == 6


def test_the_byte_limit_splits_a_batch_and_nothing_is_lost(
    eager_tasks, fast_polls, fake_server, settings
):
    # About two lines of these prompts (each carries the whole FLASK rubric: the
    # cache-friendly layout).
    settings.JUDGE_BATCH_MAX_BYTES = 30000
    base = fake_server(latency_ms=0)
    config, user = make_config(base)
    run = run_to_end(config, user, make_dataset(n_instructions=3), batch=True)
    assert run.status == "completed"
    batches = list(JudgeBatch.objects.filter(run=run))
    assert len(batches) >= 2 and all(0 < b.bytes <= 30000 for b in batches)
    assert sum(b.lines for b in batches) == 6
    assert batch_stats(base)["duplicates"] == 0


def test_a_request_larger_than_a_batch_file_fails_with_the_limit_named(
    eager_tasks, fast_polls, fake_server, settings
):
    # No prompt fits in 2,000 bytes: each call fails once, permanently, naming the
    # setting, and the run ends instead of releasing the calls to a new empty batch
    # again and again.
    settings.JUDGE_BATCH_MAX_BYTES = 2000
    base = fake_server(latency_ms=0)
    config, user = make_config(base)
    run = run_to_end(config, user, make_dataset(n_instructions=2), batch=True)
    run.refresh_from_db()
    assert run.status in ("completed", "failed")
    calls = list(run.calls.all())
    assert calls and all(c.status == "failed" for c in calls)
    assert all("JUDGE_BATCH_MAX_BYTES = 2,000 bytes" in c.error for c in calls)
    failures = JudgeBatchFailure.objects.filter(batch__run=run)
    assert failures.count() == len(calls)
    assert {f.kind for f in failures} == {"too_large"}
    assert not any(f.retried for f in failures)
    assert batch_stats(base)["duplicates"] == 0
    assert JudgeBatch.objects.filter(run=run, lines__gt=0).count() == 0


def test_failed_lines_are_retried_in_a_follow_up_batch_and_each_failure_recorded(
    eager_tasks, fast_polls, fake_server
):
    # Half the keys fail their first submission (500 in the error file).
    base = fake_server(latency_ms=0, batch_fail_share=0.5, batch_fail_times=1)
    config, user = make_config(base, batch_max_retries=2)
    dataset = make_dataset(n_instructions=5)
    run = run_to_end(config, user, dataset, batch=True)

    assert run.status == "completed"
    failures = list(JudgeBatchFailure.objects.filter(batch__run=run))
    assert failures, "the fake server failed no line: the test proves nothing"
    assert all(f.retried and f.kind == "server_error" for f in failures)
    assert all(
        "HTTP 500" in f.reason and "fake batch line failed" in f.reason
        for f in failures
    )
    batches = list(JudgeBatch.objects.filter(run=run).order_by("pk"))
    assert [b.round for b in batches] == [0, 1]
    assert batches[1].lines == len(failures)
    assert len(scores_of(run)) == expected_scores(dataset)
    stats = batch_stats(base, ids=True)
    failed_ids = {f.custom_id for f in failures}
    assert {k for k, n in stats["custom_ids"].items() if n == 2} == failed_ids


def test_lines_failing_past_the_retry_limit_fail_with_their_reason(
    eager_tasks, fast_polls, fake_server
):
    base = fake_server(latency_ms=0, batch_fail_share=0.5, batch_fail_times=99)
    config, user = make_config(base, batch_max_retries=1)
    run = run_to_end(config, user, make_dataset(n_instructions=5), batch=True)

    assert run.status == "failed"
    failed = list(run.calls.filter(status="failed"))
    assert failed and run.calls.filter(status="succeeded").exists()
    per_call = Counter(
        JudgeBatchFailure.objects.filter(batch__run=run).values_list(
            "call_id", flat=True
        )
    )
    # The first try and one retry, each recorded; then the call failed with the reason.
    assert set(per_call) == {c.pk for c in failed} and set(per_call.values()) == {2}
    assert all(c.error_kind == "server_error" and "HTTP 500" in c.error for c in failed)
    assert not JudgeScore.objects.filter(call__in=failed).exists()


def test_result_lines_for_unknown_custom_ids_are_recorded_and_ignored(
    eager_tasks, fast_polls, fake_server
):
    base = fake_server(latency_ms=0, batch_unknown_ids=2)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=2)
    run = run_to_end(config, user, dataset, batch=True)
    assert run.status == "completed"
    strays = JudgeBatchFailure.objects.filter(batch__run=run, kind="unknown_id")
    assert sorted(strays.values_list("custom_id", flat=True)) == ["stray-0", "stray-1"]
    assert all(s.call_id is None for s in strays)
    assert JudgeScore.objects.filter(run=run).count() == expected_scores(dataset)


def test_a_batch_file_the_server_refuses_fails_its_calls_naming_the_reason(
    eager_tasks, fast_polls, fake_server
):
    base = fake_server(latency_ms=0, batch_max_lines=2)
    config, user = make_config(base)
    run = run_to_end(config, user, make_dataset(n_instructions=2), batch=True)

    assert run.status == "failed"
    batch = JudgeBatch.objects.get(run=run)
    assert batch.state == "failed" and batch.provider_status == "failed"
    assert "rejected the batch file" in batch.error
    assert "4 lines; the limit is 2" in batch.error
    calls = list(run.calls.all())
    assert {c.status for c in calls} == {"failed"}
    assert {c.error_kind for c in calls} == {"batch_rejected"}
    assert all("4 lines; the limit is 2" in c.error for c in calls)
    # Not retried: the same file would be refused again.
    assert JudgeBatch.objects.filter(run=run).count() == 1
    assert batch_stats(base)["lines_submitted"] == 0


def test_a_host_not_allowed_gets_no_file_and_no_batch(fake_server, settings, tmp_path):
    base = fake_server(latency_ms=0)
    settings.JUDGE_ALLOWED_HOSTS = "judge.example.com"
    path = tmp_path / "batch.jsonl"
    path.write_bytes(b"{}\n")
    with llm_batch.BatchClient(base_url=base, api_key=None, timeout=5) as client:
        for operation in (
            lambda: client.upload(str(path)),
            lambda: client.create("file-x"),
            lambda: client.retrieve("batch_x"),
            lambda: list(client.lines("file-x")),
        ):
            with pytest.raises(llm.PermanentJudgeError) as caught:
                operation()
            assert caught.value.kind == "refused" and caught.value.attempts == 0
            assert "nothing was sent" in str(caught.value)
    assert batch_stats(base) == {
        "lines_submitted": 0,
        "distinct_custom_ids": 0,
        "duplicates": 0,
        "batches": {},
    }


def test_cancel_cancels_the_batch_at_the_server_and_the_calls_wait_to_resume(
    eager_tasks, fast_polls, fake_server
):
    base = fake_server(latency_ms=0, batch_delay_seconds=60)
    config, user = make_config(base)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=2), user=user, batch=True
    )

    def drive():
        try:
            judge_run_start(run=run, user=user)
        finally:
            connection.close()

    driving = threading.Thread(target=drive)
    driving.start()
    try:
        wait_for(
            lambda: JudgeBatch.objects.filter(run=run, state="submitted").exists(),
            timeout=20,
        )
        judge_run_cancel(run=run, user=user)
        driving.join(30)
        assert not driving.is_alive()
    finally:
        driving.join(60)
    run.refresh_from_db()
    assert run.status == "cancelled"
    batch = JudgeBatch.objects.get(run=run)
    assert batch.state == "cancelled" and batch.provider_status == "cancelled"
    assert batch_stats(base)["batches"] == {"cancelled": 1}
    assert set(run.calls.values_list("status", flat=True)) == {"pending"}
    assert not run.calls.filter(batch__isnull=False).exists()
    assert not JudgeScore.objects.filter(run=run).exists()


# --- a real worker killed by signal -------------------------------------------------------


@pytest.mark.integration
def test_a_worker_killed_mid_run_resumes_the_same_batches_and_sends_no_key_twice(
    celery_worker_process, fake_server, settings
):
    settings.JUDGE_BATCH_MAX_LINES = 5  # 20 calls: four batches
    settings.JUDGE_BATCH_POLL_MIN_SECONDS = 0.2  # frozen in the run's settings
    settings.JUDGE_BATCH_POLL_MAX_SECONDS = 0.5
    base = fake_server(latency_ms=0, batch_delay_seconds=6)
    env = {"JUDGE_BATCH_POLL_MIN_SECONDS": "0.2", "JUDGE_BATCH_POLL_MAX_SECONDS": "0.5"}
    first = celery_worker_process(**env)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=10)
    run = judge_run_create(config=config, dataset=dataset, user=user, batch=True)
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeBatch.objects.filter(run=run, state="submitted").count() >= 2,
        timeout=60,
        message=first.tail,
    )
    first.kill()
    submitted_at_kill = set(
        JudgeBatch.objects.filter(run=run)
        .exclude(batch_id="")
        .values_list("batch_id", flat=True)
    )
    assert not run.calls.filter(status="succeeded").exists()

    second = celery_worker_process(**env)
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=90,
        message=second.tail,
    )
    run.refresh_from_db()
    assert run.status == "completed", second.tail()
    batches = list(JudgeBatch.objects.filter(run=run))
    assert submitted_at_kill <= {b.batch_id for b in batches}
    assert len(batches) == 4 and {b.state for b in batches} == {"completed"}
    stats = batch_stats(base, ids=True)
    assert stats["duplicates"] == 0 and stats["lines_submitted"] == 20
    assert stats["batches"] == {"completed": 4}  # no batch made twice
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list("response_id", "skill_id")
    )
    assert len(keys) == expected_scores(dataset) and max(keys.values()) == 1
    assert "presumed dead" in second.tail(400)


def test_the_api_makes_a_batch_run_and_the_run_page_shows_its_batches(
    eager_tasks, fast_polls, fake_server, api_client_for, client_for
):
    base = fake_server(latency_ms=0)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=2)
    client = api_client_for(user)
    refused = client.post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "batch": "maybe"},
        format="json",
    )
    assert refused.status_code == 400 and "batch" in refused.content.decode()
    assert not JudgeRun.objects.filter(dataset=dataset).exists()
    made = client.post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "batch": True, "start": True},
        format="json",
    )
    assert made.status_code == 201, made.content
    run = JudgeRun.objects.get(pk=made.json()["id"])
    assert run.settings_snapshot["batch"] == {
        "max_lines": 50_000,
        "lines": 5_000,  # JUDGE_BATCH_LINES: several batches in flight at once
        "max_bytes": 200 * 1024 * 1024,
        "max_retries": 2,
        "poll_min_seconds": 0.1,
        "poll_max_seconds": 0.3,
    }
    assert run.status == "completed"
    batch = JudgeBatch.objects.get(run=run)
    page = client_for(user).get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="run-batches"' in html and batch.batch_id[:20] in html
    assert "Completed" in html
    # A synchronous run's page has no batch table (and runs no batch query).
    sync = run_to_end(config, user, make_dataset(n_instructions=1))
    assert (
        'id="run-batches"'
        not in client_for(user).get(f"/runs/{sync.pk}/").content.decode()
    )


def test_the_judge_command_sends_a_run_through_the_batch_api(
    eager_tasks, fast_polls, fake_server, admin_user
):
    from django.core.management import call_command

    base = fake_server(latency_ms=0)
    dataset = make_dataset(n_instructions=2)
    out = io.StringIO()
    call_command(
        "judge",
        *("--dataset", dataset.name, "--base-url", base, "--model", "fake"),
        "--batch",
        "--wait",
        stdout=out,
    )
    run = JudgeRun.objects.get(dataset=dataset)
    assert run.status == "completed" and run.settings_snapshot["batch"]
    assert "completed: 4 done" in out.getvalue()
    assert JudgeBatch.objects.filter(run=run, state="completed").count() == 1
    assert batch_stats(base)["lines_submitted"] == 4
    assert set(run.calls.values_list("via_batch", flat=True)) == {True}


def test_a_batch_created_whose_answer_was_lost_is_found_not_created_again(
    eager_tasks, fast_polls, fake_server
):
    """The crash window of step 4: the file uploaded, the create request reached the
    provider, the worker died before storing the batch id. The next driver finds the
    batch by its input file instead of creating a second one."""
    from judging.services.execution.batch import BatchDriver, batch_run_drive

    base = fake_server(latency_ms=0)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=2)
    run = judge_run_create(config=config, dataset=dataset, user=user, batch=True)
    JudgeRun.objects.filter(pk=run.pk).update(status="running")
    run = JudgeRun.objects.select_related("config", "dataset").get(pk=run.pk)
    first = BatchDriver(run)
    first.skills = list(dataset.rubric.skills.order_by("position"))
    first.template = config.prompt
    with first.client() as client:
        batch = first._claim()
        first._prepare_and_upload(client, batch)
        assert batch.state == "uploaded" and batch.input_file_id
        lost = client.create(batch.input_file_id)  # its answer never stored
    assert JudgeBatch.objects.get(pk=batch.pk).batch_id == ""

    batch_run_drive(run)

    batch.refresh_from_db()
    assert batch.batch_id == lost["id"] and batch.state == "completed"
    stats = batch_stats(base)
    assert stats["batches"] == {"completed": 1} and stats["duplicates"] == 0
    assert stats["lines_submitted"] == 4
    assert JudgeScore.objects.filter(run=run).count() == expected_scores(dataset)


def test_a_batch_run_submits_only_the_lines_its_budget_allows_then_resumes(
    eager_tasks, fast_polls, fake_server
):
    """A spend cap on a Batch API run: each line counts at its batch estimate (the
    discount applied), the run stops at its budget with lines still pending and
    never spends past the cap, and resumes with a higher cap to the end without
    submitting any key twice."""
    from judging.services import budgets

    base = fake_server(latency_ms=0)
    config, user = make_config(
        base, price_input_per_m=1000, price_output_per_m=2000, max_tokens=300
    )
    dataset = make_dataset(n_instructions=5)
    probe = judge_run_create(config=config, dataset=dataset, user=user, batch=True)
    per_call = budgets.run_call_estimate(probe)
    sync_snapshot = {**probe.settings_snapshot, "batch": None}
    sync_per_call = budgets.call_estimate(
        snapshot=sync_snapshot, estimate=probe.estimate
    )
    total = probe.calls.count()
    probe.delete()
    assert 0 < per_call < sync_per_call  # the 50% batch discount is assumed

    cap = (per_call * Decimal("3.5")).quantize(Decimal("0.0001"))
    run = judge_run_create(
        config=config, dataset=dataset, user=user, batch=True, budget=cap
    )
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.STOPPED_BUDGET
    submitted = sum(JudgeBatch.objects.filter(run=run).values_list("lines", flat=True))
    assert 3 <= submitted < total
    assert sum(run.calls.values_list("cost", flat=True)) <= cap
    assert run.calls.filter(status="pending").count() == total - submitted

    judge_run_start(run=run, user=user, budget=cap * 10)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.calls.filter(status="succeeded").count() == total
    stats = batch_stats(base)
    assert stats["lines_submitted"] == total and stats["duplicates"] == 0
