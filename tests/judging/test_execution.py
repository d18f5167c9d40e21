"""Judge execution against a real local chat-completions server: results stored once,
faults ending in the right states, cache, cancel/resume/retry, and secrets kept out.

The in-process tests drive runs with eager Celery tasks; the integration tests at the
end use a real Celery worker process on Redis and PostgreSQL."""

from __future__ import annotations

import logging
import time
from collections import Counter

import httpx
import pytest
from django.db import connection

from annotation.models import InstructionSkill, Response
from judging.models import JudgeCache, JudgeCall, JudgeConfig, JudgeRun, JudgeScore
from judging.services.configs import judge_config_create
from judging.services.execution import judge_run_drive
from judging.services.runs import (
    judge_run_cancel,
    judge_run_create,
    judge_run_retry_failed,
    judge_run_start,
)
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    grant_endpoint_rights,
)
from tests.judge_fixtures import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.05
    settings.REDIS_URL = ""  # in-process limiter: these tests need no Redis
    yield
    app.conf.task_always_eager = before


def make_dataset(n_instructions=4, models=("m-a", "m-b")):
    dataset = DatasetFactory()
    for _ in range(n_instructions):
        instruction = InstructionFactory(dataset=dataset)
        for model in models:
            ResponseFactory(
                instruction=instruction,
                model_name=model,
                text=f"{model} answers instruction {instruction.pk} at length.",
            )
    return dataset


def make_config(base_url, **kw):
    user = UserFactory(username=f"cfg-{time.monotonic_ns()}", role="researcher")
    grant_endpoint_rights(user)  # each test's judge is a new endpoint
    fields = {
        "name": f"judge-{time.monotonic_ns()}",
        "base_url": base_url,
        "model": "fake-judge",
        "max_concurrency": 8,
        "timeout_seconds": 5,
        "price_input_per_m": 1,
        "price_output_per_m": 2,
        **kw,
    }
    return judge_config_create(user=user, **fields), user


def run_to_end(config, user, dataset, **kw):
    run = judge_run_create(config=config, dataset=dataset, user=user, **kw)
    judge_run_start(run=run, user=user)  # eager: drives inline until done
    run.refresh_from_db()
    return run


def expected_scores(dataset):
    """One score per listed skill of every response's instruction."""
    per_instruction = Counter(
        InstructionSkill.objects.filter(instruction__dataset=dataset).values_list(
            "instruction_id", flat=True
        )
    )
    return sum(
        per_instruction[r.instruction_id]
        for r in Response.objects.filter(instruction__dataset=dataset)
    )


def stats(base_url):
    return httpx.get(base_url.rstrip("/").removesuffix("/v1") + "/stats").json()


def test_run_completes_with_every_score_stored(eager_tasks, fake_server):
    base = fake_server(latency_ms=5)
    config, user = make_config(base)
    dataset = make_dataset()
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.COMPLETED
    calls = JudgeCall.objects.filter(run=run)
    assert calls.count() == 8
    assert set(calls.values_list("status", flat=True)) == {"succeeded"}
    assert JudgeScore.objects.filter(run=run).count() == expected_scores(dataset) == 24
    for call in calls:
        assert (
            call.input_tokens > 0
            and call.output_tokens > 0
            and call.latency_ms is not None
        )
        assert call.cost > 0 and call.raw_output
    score = JudgeScore.objects.filter(run=run).first()
    assert 1 <= score.score <= 5 and score.rationale  # the judge's rationale is stored
    assert stats(base)["requests"] == 8


def test_text_mode_output_is_parsed(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="text")
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    assert run.status == JudgeRun.Status.COMPLETED
    assert JudgeScore.objects.filter(run=run).count() == 12


def test_faults_end_in_the_right_states_without_duplicates(eager_tasks, fake_server):
    base = fake_server(
        latency_ms=2,
        rate_limit=0.2,
        server_error=0.2,
        malformed=0.2,
        retry_after=0,
        seed=7,
    )
    config, user = make_config(base, max_parse_retries=3)
    dataset = make_dataset(n_instructions=10)
    run = run_to_end(config, user, dataset)
    calls = list(JudgeCall.objects.filter(run=run))
    assert len(calls) == 20
    by_status = Counter(c.status for c in calls)
    assert set(by_status) <= {"succeeded", "failed"}
    assert by_status["succeeded"] >= 15  # transient faults retried, bad output re-asked
    for call in calls:
        if call.status == "failed":
            assert call.error and call.error_kind  # kept with its reason
    assert any(c.attempts > 1 for c in calls)  # 429/500 were retried
    assert any(c.parse_failures > 0 for c in calls)  # malformed replies were re-asked
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list(
            "response_id", "skill_id", "sample_index"
        )
    )
    assert keys and max(keys.values()) == 1
    succeeded = sum(1 for c in calls if c.status == "succeeded")
    assert (
        JudgeScore.objects.filter(run=run).values("call_id").distinct().count()
        == succeeded
    )


def test_permanent_errors_fail_at_once_with_the_reason(
    eager_tasks, fake_server, monkeypatch
):
    monkeypatch.setenv("JUDGE_KEY_FAKE", "wrong-key-123")
    base = fake_server(latency_ms=1, require_api_key="right-key-456")
    config, user = make_config(base, api_key_env="JUDGE_KEY_FAKE")
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    assert run.status == JudgeRun.Status.FAILED
    calls = JudgeCall.objects.filter(run=run)
    assert set(calls.values_list("error_kind", flat=True)) == {"auth"}
    assert set(calls.values_list("attempts", flat=True)) == {1}  # not retried
    assert not JudgeScore.objects.filter(run=run).exists()


def test_timeouts_are_retried_then_fail(eager_tasks, fake_server, settings):
    settings.JUDGE_MAX_TRANSPORT_RETRIES = 1
    base = fake_server(latency_ms=1, timeout=1.0)
    config, user = make_config(base, timeout_seconds=1)
    run = run_to_end(config, user, make_dataset(n_instructions=1, models=("m",)))
    call = JudgeCall.objects.get(run=run)
    assert (
        call.status == "failed" and call.error_kind == "timeout" and call.attempts == 2
    )


def test_cache_makes_no_new_calls_on_a_rerun(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=3)
    first = run_to_end(config, user, dataset)
    paid = stats(base)["requests"]
    second = run_to_end(config, user, dataset)
    assert stats(base)["requests"] == paid  # zero new requests
    assert second.status == JudgeRun.Status.COMPLETED
    calls = JudgeCall.objects.filter(run=second)
    assert set(calls.values_list("cached", flat=True)) == {True}
    assert sum(c.cost for c in calls) == 0
    assert (
        JudgeScore.objects.filter(run=second).count()
        == JudgeScore.objects.filter(run=first).count()
    )
    assert JudgeCache.objects.count() == 6


def test_samples_are_distinct_calls_with_their_own_scores(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, samples=3, temperature=0.7)
    run = run_to_end(config, user, make_dataset(n_instructions=1, models=("m",)))
    assert JudgeCall.objects.filter(run=run).count() == 3
    assert set(
        JudgeScore.objects.filter(run=run).values_list("sample_index", flat=True)
    ) == {0, 1, 2}
    assert stats(base)["requests"] == 3


def test_cancel_resume_and_retry_failed(eager_tasks, fake_server, settings):
    base = fake_server(latency_ms=1, server_error=1.0)
    settings.JUDGE_MAX_TRANSPORT_RETRIES = 0
    config, user = make_config(base)
    dataset = make_dataset(n_instructions=2)
    run = run_to_end(config, user, dataset)
    assert run.status == JudgeRun.Status.FAILED
    assert set(JudgeCall.objects.filter(run=run).values_list("status", flat=True)) == {
        "failed"
    }
    # The endpoint recovers; retrying the failed calls completes the run.
    httpx.post(
        base.rstrip("/").removesuffix("/v1") + "/reset", json={"server_error": 0.0}
    )
    assert judge_run_retry_failed(run=run, user=user) == 4
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    assert JudgeScore.objects.filter(run=run).count() == 12

    # Cancel before anything runs: calls stay pending; resume finishes them.
    run2 = judge_run_create(config=config, dataset=dataset, user=user)
    JudgeRun.objects.filter(pk=run2.pk).update(status=JudgeRun.Status.RUNNING)
    judge_run_cancel(run=run2, user=user)
    run2.refresh_from_db()
    assert run2.status == JudgeRun.Status.CANCELLED
    assert judge_run_drive(run_id=run2.pk) == JudgeRun.Status.CANCELLED
    assert JudgeCall.objects.filter(run=run2, status="pending").count() == 4
    judge_run_start(run=run2, user=user)
    run2.refresh_from_db()
    assert run2.status == JudgeRun.Status.COMPLETED


def test_baseline_judges_need_no_network(eager_tasks):
    user = UserFactory(username="base-res", role="researcher")
    dataset = make_dataset(n_instructions=5)
    for backend in ("baseline_rouge", "baseline_length"):
        config = judge_config_create(user=user, name=backend, backend=backend)
        run = run_to_end(config, user, dataset)
        assert run.status == JudgeRun.Status.COMPLETED
        scores = list(
            JudgeScore.objects.filter(run=run).values_list("score", flat=True)
        )
        assert len(scores) == 30 and all(s is None or 1 <= s <= 5 for s in scores)


def test_api_key_never_reaches_the_database_or_logs(
    eager_tasks, fake_server, monkeypatch, caplog
):
    secret = "sk-test-SECRET-7f3a9c"
    monkeypatch.setenv("JUDGE_KEY_FAKE", secret)
    base = fake_server(latency_ms=1, require_api_key=secret)
    caplog.set_level(logging.DEBUG)
    config, user = make_config(base, api_key_env="JUDGE_KEY_FAKE")
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    assert run.status == JudgeRun.Status.COMPLETED  # the key was sent to the endpoint
    assert secret not in caplog.text
    # Every text-like column of every table (works on PostgreSQL and SQLite).
    with connection.cursor() as cursor:
        checked = 0
        for table in connection.introspection.table_names(cursor):
            for column in connection.introspection.get_table_description(cursor, table):
                kind = str(column.type_code).lower()
                if connection.vendor == "postgresql":
                    kind = connection.introspection.get_field_type(
                        column.type_code, column
                    )
                if not any(t in kind.lower() for t in ("char", "text", "json")):
                    continue
                cursor.execute(
                    f'SELECT count(*) FROM "{table}" WHERE CAST("{column.name}" AS TEXT) '
                    "LIKE %s",
                    [f"%{secret}%"],
                )
                assert cursor.fetchone()[0] == 0, (
                    f"secret found in {table}.{column.name}"
                )
                checked += 1
    assert checked > 50  # the scan really looked at the tables


def test_config_refuses_a_key_in_place_of_a_variable_name():
    from flaskapp.errors import DomainError

    user = UserFactory(username="cfg-res", role="researcher")
    with pytest.raises(DomainError) as exc:
        judge_config_create(
            user=user,
            name="x",
            base_url="http://127.0.0.1:1/v1",
            model="m",
            api_key_env="sk-live-abcdef123456",
        )
    assert "api_key_env" in [p.field for p in exc.value.problems]
    assert not JudgeConfig.objects.filter(name="x").exists()


# --- real Celery worker ---------------------------------------------------------------


@pytest.mark.integration
def test_worker_completes_a_run_with_every_score(celery_worker_process, fake_server):
    base = fake_server(latency_ms=20)
    worker = celery_worker_process()
    config, user = make_config(base, max_concurrency=16)
    dataset = make_dataset(n_instructions=15)
    run = judge_run_create(config=config, dataset=dataset, user=user)
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=90,
        message=worker.tail,
    )
    run.refresh_from_db()
    assert run.status == "completed", worker.tail()
    assert JudgeScore.objects.filter(run=run).count() == 90
    assert stats(base)["requests"] == 30


@pytest.mark.integration
def test_killing_the_worker_mid_run_loses_and_duplicates_nothing(
    celery_worker_process, fake_server
):
    base = fake_server(latency_ms=150)
    env = {"JUDGE_MIN_LEASE_SECONDS": "3"}
    first = celery_worker_process(**env)
    config, user = make_config(base, max_concurrency=4, timeout_seconds=1)
    dataset = make_dataset(n_instructions=30)
    run = judge_run_create(config=config, dataset=dataset, user=user)
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeCall.objects.filter(run=run, status="succeeded").count() >= 8,
        timeout=60,
        message=first.tail,
    )
    first.kill()
    in_flight = JudgeCall.objects.filter(run=run, status="running").count()
    assert in_flight > 0  # the crash left claimed calls behind
    time.sleep(3.5)  # their leases run out
    second = celery_worker_process(**env)
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=120,
        message=second.tail,
    )
    run.refresh_from_db()
    assert run.status == "completed", second.tail()
    keys = Counter(
        JudgeScore.objects.filter(run=run).values_list(
            "response_id", "skill_id", "sample_index"
        )
    )
    assert len(keys) == 180 and max(keys.values()) == 1
    assert set(JudgeCall.objects.filter(run=run).values_list("status", flat=True)) == {
        "succeeded"
    }


@pytest.mark.integration
def test_concurrency_limit_holds_across_two_worker_processes(
    celery_worker_process, fake_server, settings
):
    settings.JUDGE_DRIVERS_PER_RUN = 2
    base = fake_server(latency_ms=100)
    celery_worker_process(concurrency=1)
    celery_worker_process(concurrency=1)
    config, user = make_config(base, max_concurrency=5)
    run = judge_run_create(
        config=config, dataset=make_dataset(n_instructions=20), user=user
    )
    judge_run_start(run=run, user=user)
    wait_for(
        lambda: JudgeRun.objects.get(pk=run.pk).status in ("completed", "failed"),
        timeout=90,
    )
    server = stats(base)
    assert server["requests"] == 40
    assert 2 <= server["max_in_flight"] <= 5


def test_calls_record_the_hash_of_their_rendered_prompt(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    hashes = list(
        JudgeCall.objects.filter(run=run).values_list("prompt_hash", flat=True)
    )
    assert all(len(h) == 64 for h in hashes) and len(set(hashes)) == len(hashes)


@pytest.mark.parametrize("kind", ["metadata", "checklist"])
def test_annotation_runs_store_suggestions(eager_tasks, fake_server, kind):
    from judging.models import MetadataSuggestion

    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="text")
    dataset = make_dataset(n_instructions=3)
    run = judge_run_create(config=config, dataset=dataset, user=user, kind=kind)
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    suggestions = list(MetadataSuggestion.objects.filter(run=run))
    assert len(suggestions) == 3
    for s in suggestions:
        if kind == "metadata":
            assert 1 <= len(s.domains) <= 2 and s.skills
            assert s.difficulty is None or 1 <= s.difficulty <= 5
        else:
            assert s.checklist and all(item["question"] for item in s.checklist)
    # Suggestions only: the instructions themselves are unchanged until accepted.
    assert set(dataset.instructions.values_list("domain_1", flat=True)) == {"math"}


def test_checklist_runs_skip_instructions_that_have_one(eager_tasks, fake_server):
    config, user = make_config(fake_server(latency_ms=1), output_mode="text")
    dataset = make_dataset(n_instructions=3)
    first = dataset.instructions.order_by("pk").first()
    first.checklist = [{"skill": None, "question": "Does it cite a source?"}]
    first.save(update_fields=["checklist"])
    run = judge_run_create(config=config, dataset=dataset, user=user, kind="checklist")
    assert set(
        JudgeCall.objects.filter(run=run).values_list("instruction_id", flat=True)
    ) == set(dataset.instructions.exclude(pk=first.pk).values_list("pk", flat=True))
