"""Reasoning models, adaptation on the endpoint's documented 400s, extra request
fields and judge drift (issue 36), against the real local fake server
(`judging.fake_server`: a model named ``reasoning-...`` refuses ``max_tokens`` and a
temperature other than 1 with OpenAI's error bodies)."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from django.core.management import CommandError, call_command

from flaskapp.errors import DomainError
from judging import llm, reasoning
from judging.fake_replies import fake_score
from judging.models import JudgeCall, JudgeConfig, JudgeRun, JudgeScore
from judging.selectors.drift import run_drift_notices, runs_drift_notices
from judging.services.configs import judge_config_update
from tests.judging.test_execution import (
    eager_tasks,
    make_config,
    make_dataset,
    run_to_end,
    stats,
)

__all__ = ["eager_tasks"]  # a fixture used below
pytestmark = pytest.mark.django_db(transaction=True)

MAX_TOKENS_WORDS = "sent max_completion_tokens: the endpoint refuses max_tokens"


def _server_root(base_url: str) -> str:
    return base_url.rstrip("/").removesuffix("/v1")


def _last_request(base_url: str) -> dict:
    return httpx.get(_server_root(base_url) + "/last_request").json()["body"]


def _reset(base_url: str, **settings) -> None:
    httpx.post(_server_root(base_url) + "/reset", json=settings).raise_for_status()


def _assert_every_score_right(run: JudgeRun) -> None:
    scores = list(
        JudgeScore.objects.filter(run=run).select_related("response", "skill")
    )
    assert scores
    wrong = [
        (s.response_id, s.skill.key, s.score)
        for s in scores
        if s.score != fake_score(s.response.text, s.skill.key)
    ]
    assert wrong == []


# --- adaptation --------------------------------------------------------------------------


def test_unflagged_reasoning_endpoint_is_adapted_and_every_score_is_right(
    eager_tasks, fake_server, api_client_for
):
    base = fake_server(latency_ms=2)
    config, user = make_config(base, model="reasoning-judge", temperature=0.0)
    dataset = make_dataset()
    run = run_to_end(config, user, dataset)

    assert run.status == JudgeRun.Status.COMPLETED
    assert set(JudgeCall.objects.filter(run=run).values_list("error", flat=True)) == {
        ""
    }
    _assert_every_score_right(run)
    server = stats(base)
    assert server["refused_bodies"] >= 2  # both parameters were refused at first
    assert server["repeated_refusals"] == 0  # never a refused request sent unchanged
    # Recorded in words on the run and on the config, for its version.
    assert run.adaptations == {
        "max_tokens": MAX_TOKENS_WORDS,
        "temperature": reasoning.note("temperature"),
    }
    config.refresh_from_db()
    assert config.adaptations == {"version": config.version, "params": run.adaptations}
    api = api_client_for(user).get(f"/api/runs/{run.pk}/").json()
    assert api["adaptations"]["max_tokens"] == MAX_TOKENS_WORDS
    body = _last_request(base)
    assert "max_tokens" not in body and "temperature" not in body
    assert body["max_completion_tokens"] == config.max_tokens


def test_adaptation_is_remembered_for_the_version_and_relearnt_after_a_change(
    eager_tasks, fake_server, client_for
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base, model="reasoning-judge")
    run_to_end(config, user, make_dataset(n_instructions=2))
    _reset(base)

    # A later run (a new driver and client, as after a worker restart) reads the
    # stored change: every call goes right the first time.
    second = run_to_end(config, user, make_dataset(n_instructions=3))
    assert second.status == JudgeRun.Status.COMPLETED
    assert stats(base)["refused_bodies"] == 0
    assert stats(base)["requests"] == JudgeCall.objects.filter(run=second).count() == 6
    assert second.adaptations["max_tokens"] == MAX_TOKENS_WORDS
    _assert_every_score_right(second)
    # The run page and the config page say what was changed.
    page = client_for(user).get(f"/runs/{second.pk}/").content.decode()
    assert MAX_TOKENS_WORDS in page and 'id="run-adaptations"' in page
    config_page = client_for(user).get(f"/judges/{config.pk}/").content.decode()
    assert MAX_TOKENS_WORDS in config_page

    # A new version of the config learns afresh (the endpoint may be another).
    config = judge_config_update(user=user, config=config, max_parse_retries=1)
    _reset(base)
    third = run_to_end(config, user, make_dataset(n_instructions=1))
    assert third.status == JudgeRun.Status.COMPLETED
    assert stats(base)["refused_bodies"] >= 1
    assert stats(base)["repeated_refusals"] == 0
    config.refresh_from_db()
    assert config.adaptations["version"] == config.version == 2


def test_client_changes_exactly_the_refused_parameter_and_never_resends_unchanged(
    fake_server,
):
    base = fake_server(latency_ms=0)

    async def go():
        async with llm.JudgeClient(base_url=base, api_key=None, timeout=5) as client:
            request = llm.ChatRequest(
                messages=[{"role": "user", "content": "Say hi."}],
                model="reasoning-x",
                temperature=0.0,
                max_tokens=64,
            )
            first = await client.complete(request)
            second = await client.complete(request)
            # A refusal of a parameter that cannot be adapted stands: no resend.
            bad = llm.ChatRequest(
                messages=request.messages,
                model="reasoning-x",
                temperature=1.0,
                max_tokens=64,
                max_tokens_param="max_completion_tokens",
                send_temperature=False,
                reasoning_effort="extreme",
            )
            with pytest.raises(llm.PermanentJudgeError) as refused:
                await client.complete(bad)
            return first, second, refused.value, dict(client.adaptations)

    first, second, refused, adaptations = asyncio.run(go())
    assert first.attempts == 3  # max_tokens refused, then temperature, then answered
    assert second.attempts == 1  # the client applies what it learnt
    assert refused.kind == "bad_request" and refused.attempts == 1
    assert "reasoning_effort" in refused.message
    assert set(adaptations) == {"max_tokens", "temperature"}
    assert stats(base)["repeated_refusals"] == 0
    assert stats(base)["requests"] == 5


# --- flagged reasoning configs and extra fields ------------------------------------------


def test_reasoning_config_sends_max_completion_tokens_effort_and_extra_fields(
    eager_tasks, fake_server
):
    base = fake_server(latency_ms=1)
    config, user = make_config(
        base,
        model="reasoning-judge",
        reasoning_model=True,
        temperature=1.0,
        reasoning_effort="low",
        extra_body={"top_k": 20, "metadata_note": "x"},
    )
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    assert run.status == JudgeRun.Status.COMPLETED
    assert stats(base)["refused_bodies"] == 0 and run.adaptations == {}
    body = _last_request(base)
    assert body["max_completion_tokens"] == config.max_tokens
    assert "max_tokens" not in body and "temperature" not in body
    assert body["reasoning_effort"] == "low"
    assert body["top_k"] == 20 and body["metadata_note"] == "x"
    assert run.settings_snapshot["reasoning_effort"] == "low"
    _assert_every_score_right(run)


def test_chat_request_body_keeps_the_app_fields_over_extra_ones():
    request = llm.ChatRequest(
        messages=[{"role": "user", "content": "q"}],
        model="m",
        temperature=0.5,
        max_tokens=10,
        extra_body={"top_k": 3},
    )
    assert llm.chat_request_body(request) == {
        "top_k": 3,
        "model": "m",
        "messages": [{"role": "user", "content": "q"}],
        "temperature": 0.5,
        "max_tokens": 10,
    }


def _problems(exc: DomainError) -> dict[str, str]:
    return {p.field: p.message for p in exc.problems}


@pytest.mark.parametrize(
    ("fields", "field", "words"),
    [
        ({"reasoning_model": True, "temperature": 1.0, "reasoning_effort": "max"},
         "reasoning_effort", "minimal, low, medium, high"),
        ({"reasoning_effort": "low"}, "reasoning_effort", "reasoning_model"),
        ({"reasoning_model": True, "temperature": 0.2}, "temperature", "must be 1"),
        ({"extra_body": {"messages": []}}, "extra_body", "messages"),
        ({"extra_body": {"response_format": {}, "model": "x"}}, "extra_body", "model"),
        ({"extra_body": ["top_k"]}, "extra_body", "JSON object"),
        ({"extra_body": {"note": "x" * 5000}}, "extra_body", "at most 4,000"),
    ],
)  # fmt: skip
def test_bad_reasoning_settings_are_refused_naming_the_field(fields, field, words):
    before = JudgeConfig.objects.count()
    with pytest.raises(DomainError) as refused:
        make_config("http://127.0.0.1:9/v1", **fields)
    problems = _problems(refused.value)
    assert field in problems and words in problems[field]
    assert JudgeConfig.objects.count() == before


def test_api_and_command_refuse_bad_settings_naming_the_field(
    api_client_for, researcher
):
    from tests.factories import grant_endpoint_rights

    dataset = make_dataset(n_instructions=1)

    grant_endpoint_rights(researcher)
    client = api_client_for(researcher)
    base = {"name": "r", "base_url": "http://127.0.0.1:9/v1", "model": "o"}
    bad = client.post(
        "/api/judges/",
        {**base, "reasoning_model": True, "temperature": 1, "reasoning_effort": "huge"},
        format="json",
    )
    assert bad.status_code == 400
    assert [p["field"] for p in bad.json()["problems"]] == ["reasoning_effort"]
    override = client.post(
        "/api/judges/", {**base, "extra_body": {"messages": []}}, format="json"
    )
    assert override.status_code == 400
    assert [p["field"] for p in override.json()["problems"]] == ["extra_body"]
    good = client.post(
        "/api/judges/",
        {**base, "reasoning_model": True, "temperature": 1, "extra_body": {"top_k": 5}},
        format="json",
    )
    assert good.status_code == 201, good.content
    assert good.json()["reasoning_model"] is True
    assert good.json()["extra_body"] == {"top_k": 5}
    with pytest.raises(CommandError, match="--extra-body must be a JSON object"):
        call_command(
            "judge", "--dataset", dataset.name, "--base-url", "http://x/v1",
            "--model", "m", "--extra-body", "[1]", "--user", researcher.username,
            "--workspace", dataset.workspace.slug,
        )  # fmt: skip
    assert JudgeConfig.objects.count() == 1


def test_judge_command_creates_a_reasoning_config(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    dataset = make_dataset(n_instructions=1)
    from tests.factories import UserFactory

    UserFactory(username="cmd-admin", role="admin")
    call_command(
        "judge", "--dataset", dataset.name, "--base-url", base,
        "--model", "reasoning-cmd", "--reasoning-model", "--reasoning-effort",
        "medium", "--extra-body", json.dumps({"top_k": 7}), "--user", "cmd-admin",
        "--workspace", dataset.workspace.slug,
    )  # fmt: skip
    config = JudgeConfig.objects.get(model="reasoning-cmd")
    assert (config.reasoning_model, config.temperature) == (True, 1.0)
    assert config.reasoning_effort == "medium" and config.extra_body == {"top_k": 7}
    body = _last_request(base)
    assert body["reasoning_effort"] == "medium" and body["top_k"] == 7
    assert stats(base)["refused_bodies"] == 0


# --- drift -------------------------------------------------------------------------------


def test_drift_within_a_run_and_against_earlier_runs(
    eager_tasks, fake_server, client_for, api_client_for
):
    models = ["judge-2025-06"] * 3 + ["judge-2024-11"] * 2
    base = fake_server(latency_ms=1, answer_models=models, system_fingerprints=["fp_a"])
    config, user = make_config(base, max_concurrency=1)
    first = run_to_end(config, user, make_dataset(n_instructions=5))
    calls = JudgeCall.objects.filter(run=first)
    assert calls.filter(reply_model="judge-2025-06").count() == 6
    assert calls.filter(reply_model="judge-2024-11").count() == 4
    assert set(calls.values_list("system_fingerprint", flat=True)) == {"fp_a"}
    notices = run_drift_notices(first)
    assert notices == [
        "The endpoint answered as model judge-2025-06 for 60% of calls and "
        "model judge-2024-11 for 40% of calls."
    ]
    page = client_for(user).get(f"/runs/{first.pk}/").content.decode()
    assert 'id="run-drift"' in page and "judge-2024-11 for 40% of calls" in page
    listed = api_client_for(user).get(f"/api/runs/{first.pk}/calls/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert {r["reply_model"] for r in rows} == {"judge-2025-06", "judge-2024-11"}

    _reset(base, answer_models=["judge-2026-01"], system_fingerprints=["fp_b"])
    second = run_to_end(config, user, make_dataset(n_instructions=1))
    later = run_drift_notices(second)
    assert later == [
        f"Earlier run {first.pk} of this judge was answered as model judge-2025-06; "
        "this run as judge-2026-01."
    ]
    compared = runs_drift_notices([first, second])
    assert any("judge-2024-11 for 40%" in n for n in compared)
    assert any(
        f"run {first.pk} as judge-2025-06" in n
        and f"run {second.pk} as judge-2026-01" in n
        for n in compared
    )


def test_no_drift_notice_when_one_model_answered(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    run = run_to_end(config, user, make_dataset(n_instructions=1))
    assert set(
        JudgeCall.objects.filter(run=run).values_list("reply_model", flat=True)
    ) == {"fake-judge"}
    assert run_drift_notices(run) == [] and runs_drift_notices([run]) == []


def test_agreement_dashboard_shows_drift_of_the_runs_it_compares(
    eager_tasks, fake_server, client_for
):
    drifting = fake_server(
        latency_ms=1, answer_models=["judge-2025-06"] * 3 + ["judge-2024-11"] * 2
    )
    steady = fake_server(latency_ms=1)
    dataset = make_dataset(n_instructions=3)
    config, user = make_config(drifting, max_concurrency=1)
    other, _ = make_config(steady)
    run = run_to_end(config, user, dataset)
    reference = run_to_end(other, user, dataset)
    page = client_for(user).get(
        f"/agreement/{dataset.pk}/",
        {"run": run.pk, "reference": reference.pk, "n_boot": 10},
    )
    assert page.status_code == 200, page.content.decode()[:500]
    text = page.content.decode()
    assert 'id="agreement-drift"' in text
    assert "model judge-2024-11 for 33% of calls" in text


def test_versions_saved_before_these_settings_show_no_change_of_them():
    from judging.models import JudgeConfigVersion
    from judging.selectors.configs import version_changes

    config, user = make_config("http://127.0.0.1:9/v1")
    first = JudgeConfigVersion.objects.get(config=config, version=1)
    for key in reasoning.SNAPSHOT_DEFAULTS:
        first.snapshot.pop(key)  # as saved before the settings existed
    first.save()
    judge_config_update(user=user, config=config, reasoning_model=True, temperature=1.0)
    versions = list(JudgeConfigVersion.objects.filter(config=config))
    (_, changes), _ = version_changes(versions)
    assert {key for key, _, _ in changes} == {"reasoning_model", "temperature"}
