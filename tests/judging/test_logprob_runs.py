"""Probability-weighted scores end to end: runs against the real local fake server
returning known token distributions (structured and text layouts, a 1-10 scale), an
endpoint returning none, and the option on the config's service, API and command."""

from __future__ import annotations

from io import StringIO

import httpx
import pytest
from django.core.management import call_command

from flaskapp.errors import DomainError
from judging.logprobs import NO_LOGPROBS_NOTE
from judging.models import JudgeConfig, JudgeRun, JudgeScore
from tests.factories import grant_endpoint_rights
from tests.judging.rubric_data import MT_BENCH, dataset_on
from tests.judging.test_execution import make_config, make_dataset, run_to_end

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_tasks(settings):
    """Celery tasks inline (the drive task too), the in-process limiter."""
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""
    yield
    app.conf.task_always_eager = before


SPREAD = {"0": 0.5, "+1": 0.3, "-1": 0.15, "other": 0.05}


def expected_for(score: int, low: int, high: int, spread=SPREAD) -> tuple[float, float]:
    """What the fake server's spread around `score` must give on `low`..`high`."""
    present = {
        score + int(k): p
        for k, p in spread.items()
        if k != "other" and low <= score + int(k) <= high
    }
    mass = sum(present.values())
    return sum(v * p for v, p in present.items()) / mass, mass


def last_request(base_url: str) -> dict:
    root = base_url.rstrip("/").removesuffix("/v1")
    return httpx.get(root + "/last_request").json()["body"]


def assert_exact(run, low=1, high=5):
    scores = list(JudgeScore.objects.filter(run=run))
    assert scores
    for s in scores:
        want, mass = expected_for(s.score, low, high)
        assert s.expected_score == pytest.approx(want, abs=1e-9), s.score
        assert s.expected_mass == pytest.approx(mass, abs=1e-9)
    return scores


@pytest.mark.parametrize("output_mode", ["json_schema", "text"])
def test_expected_scores_are_exact_for_known_distributions(
    eager_tasks, fake_server, output_mode
):
    base = fake_server(latency_ms=1, logprobs_spread=SPREAD)
    config, user = make_config(
        base, output_mode=output_mode, logprobs=True, top_logprobs=7
    )
    run = run_to_end(config, user, make_dataset(n_instructions=3))
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.logprobs_note == ""
    scores = assert_exact(run)
    assert len(scores) == 18
    # An edge score's neighbour is off the scale: the rest is renormalised.
    edges = [s for s in scores if s.score in (1, 5)]
    middles = [s for s in scores if s.score not in (1, 5)]
    assert all(s.expected_mass < 0.95 for s in edges)
    assert all(s.expected_mass == pytest.approx(0.95) for s in middles)
    body = last_request(base)
    assert body["logprobs"] is True and body["top_logprobs"] == 7


def test_multi_digit_scale_in_the_flame_free_text_layout(eager_tasks, fake_server):
    base = fake_server(latency_ms=1, logprobs_spread=SPREAD)
    config, user = make_config(base, output_mode="text", logprobs=True)
    run = run_to_end(config, user, dataset_on(MT_BENCH, instructions=4))
    assert run.status == JudgeRun.Status.COMPLETED
    scores = assert_exact(run, low=1, high=10)
    assert len(scores) == 8


def test_top_logprobs_cuts_the_alternatives(eager_tasks, fake_server):
    # Only the two likeliest alternatives (chosen 0.5, +1 0.3) are returned.
    base = fake_server(latency_ms=1, logprobs_spread=SPREAD)
    config, user = make_config(base, logprobs=True, top_logprobs=2)
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    for s in JudgeScore.objects.filter(run=run):
        if s.score == 5:  # 6 is off the scale: the chosen value alone
            assert (s.expected_score, s.expected_mass) == (5.0, pytest.approx(0.5))
        else:
            want = (s.score * 0.5 + (s.score + 1) * 0.3) / 0.8
            assert s.expected_score == pytest.approx(want)
            assert s.expected_mass == pytest.approx(0.8)


def test_an_endpoint_without_logprobs_stores_integers_and_says_so(
    eager_tasks, fake_server, client
):
    base = fake_server(latency_ms=1)  # ignores the request's logprobs
    config, user = make_config(base, logprobs=True)
    run = run_to_end(config, user, make_dataset(n_instructions=2))
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.logprobs_note == NO_LOGPROBS_NOTE
    scores = JudgeScore.objects.filter(run=run)
    assert scores.count() == 12
    assert all(1 <= s.score <= 5 and s.expected_score is None for s in scores)
    client.force_login(user)
    page = client.get(f"/runs/{run.pk}/")
    assert page.status_code == 200
    assert NO_LOGPROBS_NOTE in page.content.decode()


def test_a_run_without_the_option_asks_for_nothing(eager_tasks, fake_server):
    base = fake_server(latency_ms=1, logprobs_spread=SPREAD)
    config, user = make_config(base)
    run = run_to_end(config, user, make_dataset(n_instructions=1))
    assert "logprobs" not in last_request(base)
    assert run.logprobs_note == ""
    assert not JudgeScore.objects.filter(run=run, expected_score__isnull=False)


@pytest.mark.parametrize("top", [0, 21])
def test_top_logprobs_out_of_bounds_is_refused_naming_the_field(top):
    with pytest.raises(DomainError) as exc:
        make_config("http://127.0.0.1:9/v1", logprobs=True, top_logprobs=top)
    assert [p.field for p in exc.value.problems] == ["top_logprobs"]
    assert not JudgeConfig.objects.exists()


def test_a_baseline_judge_cannot_ask_for_logprobs():
    with pytest.raises(DomainError) as exc:
        make_config("", backend="baseline_length", logprobs=True)
    assert "logprobs" in [p.field for p in exc.value.problems]


def test_the_judge_command_flag_sets_the_option(eager_tasks, fake_server, admin_user):
    base = fake_server(latency_ms=1, logprobs_spread=SPREAD)
    dataset = make_dataset(n_instructions=1)
    call_command(
        "judge",
        "--dataset",
        dataset.name,
        "--base-url",
        base,
        "--model",
        "fake-judge",
        "--logprobs",
        "--top-logprobs",
        "3",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    config = JudgeConfig.objects.get(logprobs=True)
    assert config.top_logprobs == 3
    run = JudgeRun.objects.get(config=config)
    assert run.settings_snapshot["logprobs"] is True


def test_the_api_sets_the_option_and_refuses_a_bad_top_naming_it(
    api_client_for, researcher
):
    grant_endpoint_rights(researcher)
    client = api_client_for(researcher)
    body = {
        "name": "weighted judge",
        "base_url": "https://api.example.com/v1",
        "model": "gpt-4o-mini",
        "logprobs": True,
        "top_logprobs": 30,
    }
    refused = client.post("/api/judges/", body, format="json")
    assert refused.status_code == 400
    assert "top_logprobs" in refused.content.decode()
    assert not JudgeConfig.objects.filter(name="weighted judge").exists()
    created = client.post("/api/judges/", {**body, "top_logprobs": 10}, format="json")
    assert created.status_code == 201, created.json()
    data = created.json()
    assert data["logprobs"] is True and data["top_logprobs"] == 10


def test_the_config_form_sets_the_option_and_refuses_a_bad_top(client_for, researcher):
    from django.urls import reverse

    from tests.judging.test_views import _judge_post

    grant_endpoint_rights(researcher)
    client = client_for(researcher)
    url = reverse("judging:judge-new")
    refused = client.post(
        url, _judge_post(name="weighted", logprobs="on", top_logprobs="0")
    )
    assert refused.status_code == 400
    text = refused.content.decode()
    field = text[text.index('id="id_top_logprobs"') :]
    assert "greater than or equal to 1" in field[: field.index("</div>")]
    assert not JudgeConfig.objects.filter(name="weighted").exists()
    saved = client.post(
        url, _judge_post(name="weighted", logprobs="on", top_logprobs="12")
    )
    assert saved.status_code == 302
    config = JudgeConfig.objects.get(name="weighted")
    assert (config.logprobs, config.top_logprobs) == (True, 12)
    page = client.get(reverse("judging:judge-detail", args=[config.pk]))
    assert "probability-weighted scores (top 12" in page.content.decode()


def test_a_criterion_without_an_expected_score_says_why(eager_tasks, fake_server):
    # A yes/no criterion has no expected value: each call's `parsed` says why.
    from judging.models import JudgeCall
    from tests.judging.rubric_data import YES_NO

    base = fake_server(latency_ms=1, logprobs_spread=SPREAD)
    config, user = make_config(base, logprobs=True)
    run = run_to_end(config, user, dataset_on(YES_NO, instructions=2))
    assert run.status == JudgeRun.Status.COMPLETED
    assert not JudgeScore.objects.filter(run=run, expected_score__isnull=False)
    for call in JudgeCall.objects.filter(run=run):
        assert call.parsed["unweighted"] == {
            "consistent": "a categorical criterion has no expected value"
        }
