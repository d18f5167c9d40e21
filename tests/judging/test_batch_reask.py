"""A Batch API reply that does not parse is re-asked as the synchronous path re-asks
(issue 36): the follow-up batch's line is the synchronous re-ask (the conversation
with the answer and `TaskKind.reask`'s message), within the config's
`max_parse_retries`, each failure recorded with its reason. And a run uses and shows
the batch settings of the config version it was made with."""

from __future__ import annotations

import json

import pytest

from judging import llm_batch
from judging.models import JudgeBatch, JudgeBatchFailure, JudgeConfigVersion
from judging.services.configs import judge_config_update
from judging.services.runs import judge_run_create, judge_run_start
from tests.judging import FakeJudge
from tests.judging.test_batch import batch_stats, fast_polls, scores_of
from tests.judging.test_execution import (
    eager_tasks,
    make_config,
    make_dataset,
    run_to_end,
)

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks", "fast_polls"]  # fixtures used below


def input_lines(base: str, batch: JudgeBatch) -> list[dict]:
    with llm_batch.BatchClient(base_url=base, api_key=None, timeout=5) as client:
        return [json.loads(line) for line in client.lines(batch.input_file_id)]


def test_a_reply_that_does_not_parse_is_re_asked_in_a_follow_up_batch_as_sync_does(
    eager_tasks, fast_polls, fake_server
):
    dataset = make_dataset(n_instructions=1, models=("m",))  # one call
    sync_base = fake_server(latency_ms=0)
    FakeJudge(sync_base).script("malformed")
    sync_config, user = make_config(sync_base)
    sync = run_to_end(sync_config, user, dataset)
    assert sync.status == "completed"
    sync_reask = FakeJudge(sync_base).last_request()["messages"]

    base = fake_server(latency_ms=0)
    FakeJudge(base).script("malformed")
    config, user2 = make_config(base)
    run = run_to_end(config, user2, dataset, batch=True)

    assert run.status == "completed"
    first, follow_up = JudgeBatch.objects.filter(run=run).order_by("pk")
    assert (first.round, follow_up.round) == (0, 1)
    (failure,) = JudgeBatchFailure.objects.filter(batch__run=run)
    assert failure.batch_id == first.pk and failure.retried
    assert failure.kind == "reask" and failure.reply
    assert failure.reason.startswith("reask: re-asked in a follow-up batch: ")
    assert "could not be read" in failure.reason  # the parser's reason, in words
    (line,) = input_lines(base, follow_up)
    (original,) = input_lines(base, first)
    # The follow-up sends the synchronous path's re-ask, word for word.
    asked = line["body"]["messages"]
    assert asked == sync_reask
    assert asked[:-2] == original["body"]["messages"]
    assert asked[-2] == {"role": "assistant", "content": failure.reply}
    call, sync_call = run.calls.get(), sync.calls.get()
    assert call.parse_failures == sync_call.parse_failures == 1
    assert scores_of(run) == scores_of(sync)
    assert batch_stats(base)["lines_submitted"] == 2


def test_re_asks_stop_at_the_configs_parse_retry_limit_with_the_reason(
    eager_tasks, fast_polls, fake_server
):
    base = fake_server(latency_ms=0)
    FakeJudge(base).script("malformed", "malformed", "malformed")
    config, user = make_config(base, max_parse_retries=1, batch_max_retries=5)
    run = run_to_end(
        config, user, make_dataset(n_instructions=1, models=("m",)), batch=True
    )

    assert run.status == "failed"
    call = run.calls.get()
    assert call.error_kind == "parse" and "could not parse" in call.error
    assert call.parse_failures == 2  # the first answer and the one re-ask
    # One re-ask (the config allows one), not five follow-ups (batch_max_retries).
    assert JudgeBatch.objects.filter(run=run).count() == 2
    kinds = list(
        JudgeBatchFailure.objects.filter(batch__run=run)
        .order_by("pk")
        .values_list("kind", "retried")
    )
    assert kinds == [("reask", True), ("parse", False)]
    # Failed for good: a later "retry failed" asks afresh, replaying nothing.
    assert not JudgeBatchFailure.objects.filter(batch__run=run).exclude(reply="")


def test_a_run_uses_and_shows_the_batch_settings_of_its_config_version(
    eager_tasks, fast_polls, fake_server, client_for
):
    base = fake_server(latency_ms=0, batch_fail_share=0.5, batch_fail_times=99)
    config, user = make_config(base, batch_max_retries=1)
    dataset = make_dataset(n_instructions=4)
    run = judge_run_create(config=config, dataset=dataset, user=user, batch=True)
    version = config.version

    changed = judge_config_update(config=config, user=user, batch_max_retries=3)
    # The retry limit is part of the version: changing it makes a new one.
    assert changed.version == version + 1
    saved = JudgeConfigVersion.objects.get(config=config, version=version + 1)
    assert saved.snapshot["batch_max_retries"] == 3

    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.settings_snapshot["config_version"] == version
    assert run.settings_snapshot["batch"]["max_retries"] == 1
    assert run.settings_snapshot["batch"]["poll_max_seconds"] == 0.3
    failures = JudgeBatchFailure.objects.filter(batch__run=run)
    per_call = {}
    for call_id in failures.values_list("call_id", flat=True):
        per_call[call_id] = per_call.get(call_id, 0) + 1
    assert per_call and set(per_call.values()) == {2}  # the first try and 1 retry
    html = client_for(user).get(f"/runs/{run.pk}/").content.decode()
    assert "retried in up to 1 follow-up batch " in html
    assert "polled every 0.1–0.3 s" in html
    assert f"(config version {version})" in html
