"""The run page and the API say what each call actually sent (issue 36): a reasoning
model's max_completion_tokens and reasoning_effort and no temperature, a config
adapted on the endpoint's refusals likewise, from one helper
(`judging.selectors.runs.run_request_settings`) checked against the request the
real local server received."""

from __future__ import annotations

import html as html_lib

import pytest

from tests.judging import FakeJudge
from tests.judging.test_execution import (
    eager_tasks,
    make_config,
    make_dataset,
    run_to_end,
)

pytestmark = pytest.mark.django_db(transaction=True)
__all__ = ["eager_tasks"]  # a fixture used below

NOT_FIELDS = ("messages", "model", "response_format", "seed")


def sent_fields(base: str) -> dict:
    body = FakeJudge(base).last_request()
    return {k: v for k, v in body.items() if k not in NOT_FIELDS}


def shown(client_for, api_client_for, user, run) -> tuple[dict, str]:
    api = api_client_for(user).get(f"/api/runs/{run.pk}/")
    assert api.status_code == 200
    page = client_for(user).get(f"/runs/{run.pk}/")
    return api.json()["request_settings"], html_lib.unescape(page.content.decode())


def test_a_reasoning_models_run_shows_what_was_sent_and_no_temperature(
    eager_tasks, fake_server, client_for, api_client_for
):
    base = fake_server(latency_ms=0)
    config, user = make_config(
        base,
        model="reasoning-judge",
        reasoning_model=True,
        reasoning_effort="low",
        temperature=1.0,
        max_tokens=700,
    )
    run = run_to_end(config, user, make_dataset(n_instructions=1, models=("m",)))
    assert run.status == "completed"

    settings, html = shown(client_for, api_client_for, user, run)

    assert settings["fields"] == sent_fields(base)
    assert settings["fields"] == {
        "max_completion_tokens": 700,
        "reasoning_effort": "low",
    }
    assert settings["not_sent"] == ["temperature", "max_tokens"]
    assert settings["text"] in html
    row = html.split('id="run-request-settings">', 1)[1].split("</td>", 1)[0]
    assert "max_completion_tokens 700" in row and "reasoning_effort low" in row
    assert "no temperature" in row and "temperature 1" not in row


def test_a_run_adapted_on_the_endpoints_refusals_shows_what_it_sent(
    eager_tasks, fake_server, client_for, api_client_for
):
    # Not declared a reasoning model: the endpoint refuses max_tokens and the
    # temperature 0.0 with its documented 400s and the client adapts.
    base = fake_server(latency_ms=0)
    config, user = make_config(
        base, model="reasoning-judge", temperature=0.0, max_concurrency=1
    )
    run = run_to_end(config, user, make_dataset(n_instructions=1, models=("m",)))
    assert run.status == "completed" and run.adaptations

    settings, html = shown(client_for, api_client_for, user, run)

    assert settings["fields"] == sent_fields(base)
    assert "temperature" not in settings["fields"]
    assert settings["fields"]["max_completion_tokens"] == config.max_tokens
    assert sorted(settings["adaptations"]) == sorted(run.adaptations.values())
    row = html.split('id="run-request-settings">', 1)[1].split("</td>", 1)[0]
    assert "temperature 0.0" not in row and "no temperature" in row
    assert "adapted: sent max_completion_tokens" in row


def test_an_ordinary_run_shows_its_temperature_and_max_tokens(
    eager_tasks, fake_server, client_for, api_client_for
):
    base = fake_server(latency_ms=0)
    config, user = make_config(base, temperature=0.3, max_tokens=512)
    run = run_to_end(config, user, make_dataset(n_instructions=1, models=("m",)))
    settings, html = shown(client_for, api_client_for, user, run)
    assert settings["fields"] == sent_fields(base)
    assert settings["fields"] == {"temperature": 0.3, "max_tokens": 512}
    assert settings["not_sent"] == []
    assert "temperature 0.3 · max_tokens 512" in html
