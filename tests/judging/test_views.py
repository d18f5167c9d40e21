"""The judging pages: who may open them, what they show, their htmx fragments, and
that an API key never reaches a page."""

from __future__ import annotations

import html
import json
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from flaskapp.numbers import money
from judging.models import (
    JudgeCall,
    JudgeConfig,
    JudgeDriver,
    JudgeRun,
    JudgeScore,
)
from judging.selectors import runs as selectors
from judging.services.runs import judge_run_create
from tests.factories import grant_endpoint_rights
from tests.judging.data import (
    KEY_ENV,
    SECRET,
    add_calls,
    make_config,
    make_dataset,
    make_run,
)

pytestmark = pytest.mark.django_db

LAYOUT_NAV = '<nav aria-label="Main">'
HX = {"HTTP_HX_REQUEST": "true"}
S, F, R, P = (
    JudgeCall.Status.SUCCEEDED,
    JudgeCall.Status.FAILED,
    JudgeCall.Status.RUNNING,
    JudgeCall.Status.PENDING,
)


def page_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


@pytest.fixture(autouse=True)
def _key_in_env(monkeypatch):
    # The server holds a key under the config's env var: pages may say so, never show it.
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def dataset(db):
    return make_dataset(instructions=3, models=("alpha", "beta"))


@pytest.fixture
def config(researcher):
    return make_config(researcher)


PAGES = [
    ("judging:judge-list", False),
    ("judging:judge-new", False),
    ("judging:run-list", False),
    ("judging:run-new", False),
    ("judging:run-import", False),
    ("judging:run-detail", True),
    ("judging:run-results", True),
    ("judging:run-suggestions", True),
]


@pytest.fixture
def any_run(dataset, config):
    run = make_run(dataset=dataset, config=config)
    add_calls(run, [S, F])
    return run


@pytest.mark.parametrize(("name", "needs_run"), PAGES)
def test_every_page_refuses_raters_and_redirects_anonymous(
    client_for, rater, any_run, name, needs_run
):
    url = reverse(name, args=[any_run.pk] if needs_run else [])
    refused = client_for(rater).get(url)
    assert refused.status_code == 403
    # Raters never see judge scores or raw outputs.
    assert "Feedback for call" not in refused.content.decode()
    anonymous = client_for(None).get(url)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(
    "name", ["judging:run-start", "judging:run-cancel", "judging:run-retry"]
)
def test_run_actions_refuse_raters_anonymous_and_get(
    client_for, rater, researcher, any_run, name
):
    url = reverse(name, args=[any_run.pk])
    assert client_for(rater).post(url).status_code == 403
    assert client_for(None).post(url).status_code == 302
    assert client_for(researcher).get(url).status_code == 405
    any_run.refresh_from_db()
    assert any_run.status == JudgeRun.Status.RUNNING


def test_nav_links_for_researchers_not_raters(client_for, researcher, rater):
    body = client_for(researcher).get(reverse("judging:run-list")).content.decode()
    assert 'href="/judges/"' in body and 'href="/runs/"' in body
    home = client_for(rater).get(reverse("home")).content.decode()
    assert 'href="/judges/"' not in home and 'href="/runs/"' not in home


# --- Judge configs ------------------------------------------------------------------------


def test_judge_list_shows_env_var_name_and_whether_it_is_set_never_the_key(
    client_for, researcher, config, monkeypatch
):
    make_config(researcher, name="local", api_key_env="JUDGE_KEY_FLASK_UNSET")
    make_config(
        researcher, name="rouge", backend="baseline_rouge", base_url="", api_key_env=""
    )
    monkeypatch.delenv("JUDGE_KEY_FLASK_UNSET", raising=False)
    response = client_for(researcher).get(reverse("judging:judge-list"))
    assert response.status_code == 200
    text = page_text(response)
    assert KEY_ENV in text and "set on the server" in text
    assert "JUDGE_KEY_FLASK_UNSET not set" in text
    assert "baseline" in text
    assert SECRET not in response.content.decode()


def test_judge_new_page_and_create(client_for, researcher):
    grant_endpoint_rights(researcher)  # a new endpoint
    client = client_for(researcher)
    page = client.get(reverse("judging:judge-new"))
    assert page.status_code == 200
    assert LAYOUT_NAV in page.content.decode()
    response = client.post(
        reverse("judging:judge-new"),
        {
            "name": "gpt-4o judge",
            "backend": "openai",
            "base_url": "https://api.example.com/v1",
            "model": "gpt-4o",
            "api_key_env": KEY_ENV,
            "temperature": "0.2",
            "max_tokens": "900",
            "samples": "3",
            "output_mode": "text",
            "price_input_per_m": "2.5",
            "price_output_per_m": "10",
            "max_concurrency": "8",
            "requests_per_minute": "500",
            "tokens_per_minute": "",
            "timeout_seconds": "60",
            "max_parse_retries": "1",
            "include_reference": "on",
        },
    )
    assert response.status_code == 302
    config = JudgeConfig.objects.get(name="gpt-4o judge")
    assert (config.model, config.samples, config.api_key_env) == ("gpt-4o", 3, KEY_ENV)
    assert config.requests_per_minute == 500 and config.tokens_per_minute is None
    assert config.output_mode == "text" and config.temperature == 0.2
    assert config.price_input_per_m == Decimal("2.5")


def _judge_post(**overrides):
    data = {
        "name": "j",
        "backend": "openai",
        "base_url": "https://api.example.com/v1",
        "model": "m",
        "api_key_env": "",
        "temperature": "0",
        "max_tokens": "100",
        "samples": "1",
        "output_mode": "json_schema",
        "price_input_per_m": "0",
        "price_output_per_m": "0",
        "max_concurrency": "4",
        "timeout_seconds": "30",
        "max_parse_retries": "2",
    }
    data.update(overrides)
    return data


def test_judge_new_refuses_a_key_in_the_env_var_field_and_never_echoes_it(
    client_for, researcher
):
    grant_endpoint_rights(researcher)
    response = client_for(researcher).post(
        reverse("judging:judge-new"), _judge_post(api_key_env=SECRET)
    )
    assert response.status_code == 400
    body = response.content.decode()
    assert "NAME of an environment variable" in body
    assert SECRET not in body
    assert not JudgeConfig.objects.exists()


def test_judge_new_bad_input_names_the_field(client_for, researcher):
    grant_endpoint_rights(researcher)
    response = client_for(researcher).post(
        reverse("judging:judge-new"),
        _judge_post(temperature="5", samples="0"),
    )
    assert response.status_code == 400
    assert set(response.context["form"].errors) >= {"temperature", "samples"}
    response = client_for(researcher).post(
        reverse("judging:judge-new"), _judge_post(base_url="ftp://x")
    )
    assert response.status_code == 400
    assert "base_url" in response.context["form"].errors
    assert not JudgeConfig.objects.exists()


def test_judge_new_key_status_fragment(client_for, researcher):
    client = client_for(researcher)
    url = reverse("judging:judge-new")
    present = client.get(url, {"api_key_env": KEY_ENV}, **HX)
    body = present.content.decode()
    assert present.status_code == 200
    assert LAYOUT_NAV not in body
    assert 'id="api-key-status"' in body and "set on the server" in body
    assert SECRET not in body
    missing = client.get(url, {"api_key_env": "JUDGE_KEY_NOPE_NOT_SET"}, **HX)
    assert "not set on the server" in missing.content.decode()


def test_judge_new_refuses_raters_on_post(client_for, rater):
    response = client_for(rater).post(reverse("judging:judge-new"), _judge_post())
    assert response.status_code == 403
    assert not JudgeConfig.objects.exists()


# --- Run list -----------------------------------------------------------------------------


def test_run_list_shows_counts_tokens_cost_and_badges(
    client_for, researcher, dataset, config
):
    run = make_run(dataset=dataset, config=config, name="first run")
    add_calls(run, [S, S, F, R, P])
    make_run(
        dataset=dataset,
        config=None,
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
        name="imported run",
        snapshot={"source": "import"},
    )
    make_run(
        dataset=dataset,
        config=config,
        name="dev run",
        snapshot={"backend": "openai", "is_dev_server": True},
    )
    make_run(
        dataset=dataset,
        config=config,
        name="rouge run",
        snapshot={"backend": "baseline_rouge"},
    )
    response = client_for(researcher).get(reverse("judging:run-list"))
    assert response.status_code == 200
    text = page_text(response)
    assert "first run" in text and "3 / 5" in text
    assert "360" in text  # 3 finished calls x 120 tokens
    assert "< $0.01" in text  # $0.0015: less than a cent
    assert "imported" in text and "dev server" in text and "baseline" in text


def test_run_list_status_filter(client_for, researcher, dataset, config):
    make_run(dataset=dataset, config=config, name="running one")
    make_run(dataset=dataset, config=config, name="done one", status="completed")
    text = page_text(
        client_for(researcher).get(reverse("judging:run-list"), {"status": "completed"})
    )
    assert "done one" in text and "running one" not in text


@pytest.mark.parametrize("n_calls", [5, 50])
def test_run_list_queries_do_not_grow_with_calls_or_runs(
    client_for, researcher, dataset, config, django_assert_max_num_queries, n_calls
):
    for i in range(n_calls // 5):
        run = make_run(dataset=dataset, config=config, name=f"run {i}")
        add_calls(run, [S, F, R, P, S][: min(5, n_calls)])
    client = client_for(researcher)
    # Session, user, roles, workspace memberships, count, page, one grouped count
    # of calls.
    with django_assert_max_num_queries(7):
        response = client.get(reverse("judging:run-list"))
    assert response.status_code == 200


# --- New run ------------------------------------------------------------------------------


def test_run_new_page(client_for, researcher, dataset, config):
    response = client_for(researcher).get(
        reverse("judging:run-new"), {"config": config.pk, "dataset": dataset.pk}
    )
    assert response.status_code == 200
    text = page_text(response)
    assert "alpha (3)" in text and "beta (3)" in text
    assert "Estimate" in text and "6 calls" in text


def test_run_new_estimate_fragment_recomputes_from_the_form(
    client_for, researcher, dataset, config
):
    client = client_for(researcher)
    url = reverse("judging:run-new")
    params = {"config": config.pk, "dataset": dataset.pk, "models": ["alpha"]}
    response = client.get(url, params, HTTP_HX_TARGET="run-estimate", **HX)
    body = response.content.decode()
    assert response.status_code == 200
    assert LAYOUT_NAV not in body
    assert body.strip().startswith('<aside class="card" id="run-estimate"')
    assert 'id="estimate-calls">3<' in body
    limited = client.get(
        url, {**params, "instruction_limit": "1"}, HTTP_HX_TARGET="run-estimate", **HX
    )
    assert 'id="estimate-calls">1<' in limited.content.decode()
    # The estimate equals the one the run will record.
    run = judge_run_create(
        config=config, dataset=dataset, user=researcher, models=["alpha"]
    )
    tokens = run.estimate["input_tokens"] + run.estimate["output_tokens"]
    assert f'id="estimate-tokens">{tokens:,}<' in body
    assert f'id="estimate-cost">{money(run.estimate["cost"])}<' in body


def test_run_new_models_fragment_follows_the_dataset(client_for, researcher, config):
    other = make_dataset(name="other-set", instructions=1, models=("gamma",))
    response = client_for(researcher).get(
        reverse("judging:run-new"),
        {"dataset": other.pk, "config": config.pk, "models": ["alpha"]},
        HTTP_HX_TARGET="run-models",
        **HX,
    )
    body = response.content.decode()
    assert body.strip().startswith('<fieldset id="run-models"')
    assert "gamma (1)" in body and "alpha" not in body


def test_run_new_creates_a_pending_run(client_for, researcher, dataset, config):
    response = client_for(researcher).post(
        reverse("judging:run-new"),
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "kind": "pointwise",
            "models": ["beta"],
            "instruction_limit": "2",
            "name": "beta, first two",
        },
    )
    run = JudgeRun.objects.get(name="beta, first two")
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:run-detail", args=[run.pk])
    assert run.status == JudgeRun.Status.PENDING
    assert run.calls.count() == 2
    assert set(run.calls.values_list("response__model_name", flat=True)) == {"beta"}


def test_run_new_can_start_right_away(client_for, researcher, dataset, config):
    client_for(researcher).post(
        reverse("judging:run-new"),
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "kind": "pointwise",
            "start": "on",
        },
    )
    run = JudgeRun.objects.get()
    assert run.status == JudgeRun.Status.RUNNING
    assert run.started_at is not None


def test_run_new_metadata_kind_makes_one_call_per_instruction(
    client_for, researcher, dataset, config
):
    client_for(researcher).post(
        reverse("judging:run-new"),
        {"config": config.pk, "dataset": dataset.pk, "kind": "metadata"},
    )
    run = JudgeRun.objects.get()
    assert run.kind == JudgeRun.Kind.METADATA
    assert (
        run.calls.filter(instruction__isnull=False, response__isnull=True).count() == 3
    )


def test_run_new_bad_input_names_the_field(client_for, researcher, dataset, config):
    client = client_for(researcher)
    missing = client.post(reverse("judging:run-new"), {"kind": "pointwise"})
    assert missing.status_code == 400
    assert set(missing.context["form"].errors) >= {"config", "dataset"}
    bad_limit = client.post(
        reverse("judging:run-new"),
        {"config": config.pk, "dataset": dataset.pk, "instruction_limit": "0"},
    )
    assert bad_limit.status_code == 400
    assert "instruction_limit" in bad_limit.context["form"].errors
    assert not JudgeRun.objects.exists()


# --- Run detail and progress --------------------------------------------------------------


@pytest.fixture
def busy_run(dataset, config):
    """Running for 5 minutes: 3 done and 1 failed in the last 30 s, 2 claimed, 4
    waiting; its live driver has 1 HTTP request open (a dead one reported 5)."""
    run = make_run(dataset=dataset, config=config, name="busy run")
    add_calls(run, [S, S, S, F, R, R, P, P, P, P], finished_seconds_ago=10)
    now = timezone.now()
    JudgeDriver.objects.create(
        token="a" * 32, run=run, started_at=now, beat_at=now, in_flight=1
    )
    JudgeDriver.objects.create(
        token="b" * 32,
        run=run,
        started_at=now,
        beat_at=now - timedelta(minutes=1),
        in_flight=5,
    )
    return run


def test_run_progress_numbers(busy_run):
    progress = selectors.judge_run_progress(run=busy_run)
    c = progress.counts
    assert (c.succeeded, c.failed, c.running, c.pending, c.total) == (3, 1, 2, 4, 10)
    assert (c.input_tokens, c.output_tokens) == (400, 80)
    assert c.cost == Decimal("0.002")
    # 4 calls finished in the last 30 s: 4 / 30 calls per second.
    assert progress.calls_per_second == round(4 / 30, 2)
    # 6 calls still open at 4/30 per second.
    assert progress.eta_seconds == 45
    assert progress.elapsed_seconds >= 299
    assert [e.error_kind for e in progress.recent_errors] == ["server"]
    assert progress.requests_in_flight == 1  # the live driver's, not the dead one's


def test_calls_finished_long_ago_do_not_count_towards_the_rate(dataset, config):
    run = make_run(dataset=dataset, config=config)
    add_calls(run, [S, S, P], finished_seconds_ago=120)
    progress = selectors.judge_run_progress(run=run)
    assert progress.calls_per_second == 0
    assert progress.eta_seconds is None


def test_run_detail_shows_live_progress_errors_and_settings(
    client_for, researcher, busy_run
):
    response = client_for(researcher).get(
        reverse("judging:run-detail", args=[busy_run.pk])
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert 'hx-trigger="every 2s"' in body
    text = page_text(response)
    assert "3 / 10 done" in text
    assert "1 failed" in text
    assert "1 requests in flight" in text
    assert "2 claimed · 4 waiting" in text
    assert "0.1 calls / s" in text
    assert "480 tokens" in text
    assert "< $0.01 cost so far" in text  # $0.0020
    assert "45 s ETA" in text
    assert "upstream exploded" in text  # recent errors
    assert KEY_ENV in text and "set on the server" in text
    assert SECRET not in body
    assert ">Cancel<" in body
    assert "Retry" not in text  # not while it runs


def test_progress_fragment_polls_while_running_and_stops_with_286(
    client_for, researcher, busy_run
):
    client = client_for(researcher)
    url = reverse("judging:run-detail", args=[busy_run.pk])
    poll = client.get(url, **HX)
    body = poll.content.decode()
    assert poll.status_code == 200
    assert LAYOUT_NAV not in body
    assert body.strip().startswith('<section id="run-progress"')
    busy_run.status = JudgeRun.Status.FAILED
    busy_run.finished_at = timezone.now()
    busy_run.save()
    JudgeCall.objects.filter(run=busy_run).exclude(status__in=[S, F]).update(status=S)
    done = client.get(url, **HX)
    assert done.status_code == 286
    assert 'hx-trigger="every 2s"' not in done.content.decode()
    assert "Retry 1 failed" in page_text(done)
    # A history restore gets the whole page.
    restore = client.get(url, HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HX)
    assert restore.status_code == 200 and LAYOUT_NAV in restore.content.decode()


def test_pending_run_shows_the_estimate_and_a_start_button(
    client_for, researcher, dataset, config
):
    run = judge_run_create(config=config, dataset=dataset, user=researcher)
    response = client_for(researcher).get(reverse("judging:run-detail", args=[run.pk]))
    text = page_text(response)
    assert "Before you start" in text
    assert f"{run.estimate['calls']} calls" in text
    assert "Start run" in text
    assert 'hx-trigger="every 2s"' not in response.content.decode()


def test_dev_server_and_baseline_runs_are_marked(
    client_for, researcher, dataset, config
):
    dev = make_run(
        dataset=dataset,
        config=config,
        snapshot={"backend": "openai", "is_dev_server": True},
    )
    rouge = make_run(
        dataset=dataset, config=config, snapshot={"backend": "baseline_rouge"}
    )
    client = client_for(researcher)
    dev_text = page_text(client.get(reverse("judging:run-detail", args=[dev.pk])))
    assert "dev server" in dev_text and "development tool" in dev_text
    rouge_text = page_text(client.get(reverse("judging:run-detail", args=[rouge.pk])))
    assert "baseline" in rouge_text and "ROUGE-L" in rouge_text


def test_run_detail_of_unknown_run_is_404(client_for, researcher):
    assert (
        client_for(researcher)
        .get(reverse("judging:run-detail", args=[999]))
        .status_code
        == 404
    )


# --- Run actions --------------------------------------------------------------------------


def test_start_cancel_and_retry_buttons_call_the_services(
    client_for, researcher, dataset, config
):
    client = client_for(researcher)
    run = judge_run_create(config=config, dataset=dataset, user=researcher)
    assert client.post(reverse("judging:run-start", args=[run.pk])).status_code == 302
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.RUNNING
    client.post(reverse("judging:run-cancel", args=[run.pk]))
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.CANCELLED
    page = page_text(client.get(reverse("judging:run-detail", args=[run.pk])))
    assert "Resume" in page
    JudgeCall.objects.filter(run=run).update(status=F, error="boom")
    response = client.post(reverse("judging:run-retry", args=[run.pk]), follow=True)
    assert f"Retrying {run.total_calls} failed calls" in page_text(response)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.RUNNING
    assert not run.calls.filter(status=F).exists()


# --- Results ------------------------------------------------------------------------------


def test_results_page_shows_scores_raw_output_status_and_error(
    client_for, researcher, busy_run
):
    response = client_for(researcher).get(
        reverse("judging:run-results", args=[busy_run.pk])
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "<details" in body and "Feedback for call 0. Scores: 4" in body
    text = page_text(response)
    assert "Comprehension 4" in text or "Logical Robustness 4" in text
    assert "N/A" in text
    assert "upstream exploded" in text
    assert "alpha" in text
    assert "10 calls" in text


def test_results_filter_by_status_with_htmx(client_for, researcher, busy_run):
    url = reverse("judging:run-results", args=[busy_run.pk])
    response = client_for(researcher).get(url, {"status": "failed"}, **HX)
    body = response.content.decode()
    assert LAYOUT_NAV not in body
    assert body.strip().startswith('<section id="run-results"')
    assert "1 call" in page_text(response)
    assert "upstream exploded" in body
    assert "Feedback for call 0." not in body


@pytest.mark.parametrize("n_calls", [5, 50])
def test_results_page_queries_do_not_grow_with_calls(
    client_for, researcher, dataset, config, django_assert_max_num_queries, n_calls
):
    run = make_run(dataset=dataset, config=config)
    many = make_dataset(name="many", instructions=10, models=("a", "b", "c", "d", "e"))
    run.dataset = many
    run.save()
    add_calls(run, [S, F, S, R, P] * (n_calls // 5))
    client = client_for(researcher)
    # Session, user, roles, workspace memberships (issue 35: read once, cached on
    # the user), run, count, page of calls, their scores with skills.
    with django_assert_max_num_queries(8) as queries:
        response = client.get(reverse("judging:run-results", args=[run.pk]))
    assert sum("flaskapp_membership" in q["sql"] for q in queries.captured_queries) == 1
    assert response.status_code == 200
    assert JudgeScore.objects.filter(run=run).exists()


# --- Import page --------------------------------------------------------------------------


def _review_file(name: str, rows: list[dict]) -> SimpleUploadedFile:
    data = "\n".join(json.dumps(r) for r in rows).encode()
    return SimpleUploadedFile(name, data, content_type="application/json")


def test_import_page_imports_a_flask_review_file(client_for, researcher, dataset):
    client = client_for(researcher)
    assert client.get(reverse("judging:run-import")).status_code == 200
    upload = _review_file(
        "alpha_review.jsonl",
        [
            {"question_id": 1, "review": "Fine.", "score": {"Comprehension": "4"}},
            {"question_id": 2, "review": "Meh.", "score": {"Readability": "N/A"}},
        ],
    )
    response = client.post(
        reverse("judging:run-import"),
        {
            "dataset": dataset.pk,
            "format": "flask_review",
            "files": [upload],
            "name": "ext",
        },
    )
    run = JudgeRun.objects.get(name="ext")
    assert response.status_code == 302
    assert response["Location"] == reverse("judging:run-detail", args=[run.pk])
    assert run.kind == JudgeRun.Kind.IMPORTED and run.scores.count() == 2
    detail = page_text(client.get(response["Location"]))
    assert "imported" in detail and "alpha_review.jsonl" in detail


def test_import_page_lists_problems_by_line_and_field(client_for, researcher, dataset):
    upload = _review_file(
        "alpha_review.jsonl",
        [
            {"question_id": 1, "review": "ok", "score": {"Comprehension": 4}},
            {"question_id": 2, "review": "ok", "score": {"Comprehension": 7}},
            {"question_id": 77, "review": "ok", "score": {"Comprehension": 3}},
        ],
    )
    response = client_for(researcher).post(
        reverse("judging:run-import"),
        {"dataset": dataset.pk, "format": "flask_review", "files": [upload]},
    )
    assert response.status_code == 400
    text = page_text(response)
    assert "Nothing was imported" in text
    assert "line 2 score" in text and "line 3 question_id" in text
    assert not JudgeRun.objects.exists()


def test_import_page_warnings_are_shown_on_the_run_and_strict_refuses_them(
    client_for, researcher, dataset
):
    rows = [
        {"question_id": 1, "review": "", "score": {"Comprehension": 4}},
        {"question_id": 2, "review": "ok", "score": {"Readability": 3}},
    ]
    client = client_for(researcher)
    refused = client.post(
        reverse("judging:run-import"),
        {
            "dataset": dataset.pk,
            "format": "flask_review",
            "files": [_review_file("alpha.jsonl", rows)],
            "strict": "on",
        },
    )
    assert refused.status_code == 400
    assert "line 1 review" in page_text(refused)
    assert not JudgeRun.objects.exists()
    response = client.post(
        reverse("judging:run-import"),
        {
            "dataset": dataset.pk,
            "format": "flask_review",
            "files": [_review_file("alpha.jsonl", rows)],
        },
        follow=True,
    )
    text = page_text(response)
    assert "1 warning (listed on this page)" in text
    assert "alpha.jsonl, line 1, field `review`: is empty" in text


def test_import_page_form_errors(client_for, researcher, dataset):
    response = client_for(researcher).post(
        reverse("judging:run-import"), {"dataset": dataset.pk, "format": "xml"}
    )
    assert response.status_code == 400
    assert set(response.context["form"].errors) >= {"format", "files"}


def test_raters_cannot_post_an_import(client_for, rater, dataset):
    upload = _review_file(
        "alpha.jsonl", [{"question_id": 1, "review": "", "score": [4]}]
    )
    response = client_for(rater).post(
        reverse("judging:run-import"),
        {"dataset": dataset.pk, "format": "flask_review", "files": [upload]},
    )
    assert response.status_code == 403
    assert not JudgeRun.objects.exists()


def test_the_api_key_never_reaches_a_page(client_for, admin_user, busy_run, caplog):
    client = client_for(admin_user)
    bodies = [
        client.get(reverse("judging:judge-list")),
        client.get(reverse("judging:judge-new"), {"api_key_env": KEY_ENV}, **HX),
        client.get(reverse("judging:run-detail", args=[busy_run.pk])),
        client.get(reverse("judging:run-results", args=[busy_run.pk])),
        client.get(reverse("judging:run-list")),
        client.post(reverse("judging:judge-new"), _judge_post(api_key_env=SECRET)),
    ]
    for response in bodies:
        assert SECRET not in response.content.decode()
    assert SECRET not in caplog.text
    assert not JudgeConfig.objects.filter(api_key_env=SECRET).exists()
    assert SECRET not in json.dumps(
        list(JudgeRun.objects.values_list("settings_snapshot", flat=True))
    )
