"""This round's new pages in Chromium, at 1440 and 800 px: the judge form's request,
score and cost fields (a bad value shown beside its field), run pages of a Batch API
run, of a run stopped at its budget (resumed with a higher cap), of a run adapted to
its endpoint with drift, a cached share and token probabilities, the new-run form's
batch and budget fields, the dataset taxonomy edit and the agreement dashboard's
judge-score option. Runs are made against the real local fake server
(`judging.fake_server`); screenshots go to $FLASK_SCREENSHOTS."""

from __future__ import annotations

import os
import re
import threading
from decimal import Decimal

import pytest
from django.db import connection
from playwright.sync_api import expect

from judging.models import JudgeBatch, JudgeRun
from judging.services import budgets
from judging.services.runs import judge_run_create, judge_run_start
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import login, shot
from tests.judging.test_costs import long_dataset
from tests.judging.test_execution import (
    eager_tasks,
    make_config,
    make_dataset,
    run_to_end,
)

__all__ = ["eager_tasks"]  # a fixture used below
pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS = (1440, 800)


def off_the_loop(build, *args, **kwargs):
    """`build(*args, **kwargs)` in another thread: a run driven inline calls
    asyncio.run, which refuses to start beside Playwright's running loop."""
    out: dict = {}

    def target():
        try:
            out["value"] = build(*args, **kwargs)
        except BaseException as error:  # re-raised in the test's thread
            out["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=120)
    if "error" in out:
        raise out["error"]
    return out["value"]


def shot_of(locator, name: str) -> None:
    """A screenshot of one element in $FLASK_SCREENSHOTS (or nothing when unset)."""
    folder = os.environ.get("FLASK_SCREENSHOTS")
    if folder:
        locator.screenshot(path=os.path.join(folder, f"{name}.png"))


def fits(page, width: int) -> None:
    """Nothing on the page is wider than the window (no sideways scroll)."""
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def at_widths(page, url: str, name: str, ready: str) -> None:
    """Open `url` at each width, wait for `ready`, check the fit and take a shot."""
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(url)
        expect(page.locator(ready)).to_be_visible()
        fits(page, width)
        shot(page, f"{name}-{width}")


def test_judge_form_groups_the_new_fields_and_shows_a_bad_value_beside_it(
    page, live_server, fake_server
):
    config, user = make_config(fake_server(latency_ms=1))
    login(page, live_server, user)
    at_widths(page, f"{live_server.url}/judges/new/", "judge-new", "#judge-form")
    # The new fields, each labelled, in the group it belongs to.
    groups = {
        "Request": ("Reasoning model", "Reasoning effort", "Extra request fields"),
        "Scores": ("Prompt layout", "Probability-weighted scores", "top_logprobs"),
        "Costs and budget": (
            "Cached input price",
            "Batch API discount",
            "Batch retries",
            "Default budget per run",
        ),
    }
    for heading, labels in groups.items():
        section = page.locator("#judge-form section").filter(
            has=page.get_by_role("heading", name=heading, exact=True)
        )
        for label in labels:
            expect(section.get_by_label(label, exact=False)).to_be_visible()
    # A new judge's extra fields start as an empty object, not JSON null.
    expect(page.get_by_label("Extra request fields", exact=False)).to_have_value("{}")

    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/judges/{config.pk}/edit/")
    page.get_by_label("Extra request fields", exact=False).fill("{not json")
    page.get_by_label("Batch API discount (%)").fill("150")
    page.get_by_role("button", name="Save judge").click()
    expect(page.get_by_text("The judge was not saved.")).to_be_visible()
    for field in ("extra_body", "batch_discount_percent"):
        box = page.locator(f".field:has([name={field}])")
        expect(box).to_have_class(re.compile("has-error"))
        expect(box.locator(".errorlist")).to_be_visible()
    shot(page, "judge-edit-errors-1440")
    config.refresh_from_db()
    assert config.batch_discount_percent != 150 and not config.extra_body


def test_run_pages_of_a_batch_run_and_a_run_stopped_at_its_budget(
    page, live_server, eager_tasks, fake_server, settings
):
    settings.JUDGE_BATCH_POLL_MIN_SECONDS = 0.1
    settings.JUDGE_BATCH_POLL_MAX_SECONDS = 0.3
    settings.JUDGE_BATCH_MAX_LINES = 3
    config, user = make_config(fake_server(latency_ms=0))
    batch = off_the_loop(run_to_end, config, user, make_dataset(), batch=True)
    assert batch.status == JudgeRun.Status.COMPLETED
    assert JudgeBatch.objects.filter(run=batch).count() == 3
    login(page, live_server, user)
    at_widths(page, f"{live_server.url}/runs/{batch.pk}/", "run-batch", "h1")
    expect(page.locator("#run-batches")).to_be_visible()
    expect(page.locator("#run-prices")).to_contain_text("50% off through the Batch API")

    capped_config, capped_user = make_config(
        fake_server(latency_ms=1),
        price_input_per_m=1000,
        price_output_per_m=2000,
        max_tokens=300,
        max_concurrency=1,
    )
    dataset = long_dataset(n_instructions=2, models=("m-a",))
    probe = judge_run_create(config=capped_config, dataset=dataset, user=capped_user)
    per_call = budgets.run_call_estimate(probe)
    probe.delete()
    capped = judge_run_create(
        config=capped_config,
        dataset=dataset,
        user=capped_user,
        budget=(per_call * Decimal("1.2")).quantize(Decimal("0.0001")),
    )
    off_the_loop(judge_run_start, run=capped, user=capped_user)
    capped.refresh_from_db()
    assert capped.status == JudgeRun.Status.STOPPED_BUDGET
    login(page, live_server, capped_user)
    at_widths(page, f"{live_server.url}/runs/{capped.pk}/", "run-budget", "h1")
    expect(page.locator("#run-stopped-budget")).to_contain_text("Stopped at its budget")
    page.get_by_label("Budget").fill(str(per_call * 100))
    page.get_by_role("button", name="Resume").click()
    expect(page.locator("#run-status-text")).to_contain_text("complete")
    capped.refresh_from_db()
    assert capped.status == JudgeRun.Status.COMPLETED
    shot(page, "run-budget-resumed-1440")


def test_run_page_of_an_adapted_drifting_cached_logprob_run(
    page, live_server, eager_tasks, fake_server
):
    base = fake_server(
        latency_ms=1,
        prefix_cache=True,
        answer_models=["judge-2025-06"] * 3 + ["judge-2024-11"] * 2,
        logprobs_spread={"0": 0.5, "+1": 0.3, "-1": 0.15, "other": 0.05},
    )
    config, user = make_config(
        base,
        model="reasoning-judge",
        temperature=0.0,
        price_cached_input_per_m=Decimal("0.1"),
        max_concurrency=1,
        logprobs=True,
    )
    run = off_the_loop(run_to_end, config, user, long_dataset())
    assert run.adaptations
    login(page, live_server, user)
    at_widths(page, f"{live_server.url}/runs/{run.pk}/", "run-notices", "h1")
    expect(page.locator("#run-adaptations")).to_contain_text("max_completion_tokens")
    expect(page.locator("#run-drift")).to_contain_text("judge-2024-11")
    expect(page.locator("#run-cached-share")).to_contain_text("% of input cached")
    expect(page.locator("#run-logprobs-note")).to_be_visible()
    # Calls made one by one: no batch discount is claimed beside the prices.
    expect(page.locator("#run-prices")).to_contain_text("cached in")
    expect(page.locator("#run-prices")).not_to_contain_text("Batch API")


def test_new_run_form_offers_batch_and_budget(page, live_server, fake_server):
    config, user = make_config(fake_server(latency_ms=1), default_budget=5)
    dataset = make_dataset()
    login(page, live_server, user)
    at_widths(page, f"{live_server.url}/runs/new/", "run-new", "h1")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.get_by_label("Judge", exact=True).select_option(value=str(config.pk))
    page.get_by_label("Dataset", exact=True).select_option(value=str(dataset.pk))
    # A cap below one call's estimate is refused beside the field, nothing made.
    page.get_by_label("Budget ($)").fill("0")
    estimate = page.locator("#run-estimate")
    expect(estimate).to_contain_text("calls made one by one")
    page.get_by_label("Send through the Batch API").check()
    # The estimate follows the option: at the batch price.
    expect(estimate).to_contain_text("calls through the Batch API (50% off)")
    page.get_by_role("button", name="Create run").click()
    budget_box = page.locator(".field:has([name=budget])")
    expect(budget_box).to_have_class(re.compile("has-error"))
    expect(budget_box.locator(".errorlist")).to_be_visible()
    shot(page, "run-new-budget-error-1440")
    assert not JudgeRun.objects.exists()

    page.get_by_label("Budget ($)").fill("3")
    page.get_by_role("button", name="Create run").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(config.name)
    run = JudgeRun.objects.get()
    assert run.budget == 3 and run.settings_snapshot.get("batch")


def test_taxonomy_edit_and_the_expected_score_option(page, live_server):
    from tests.factories import UserFactory

    researcher = UserFactory(username="round-researcher", role="researcher")
    human, judge_a, judge_b = score_tables()
    setup = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="round-agree",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
    )
    login(page, live_server, researcher)
    url = f"{live_server.url}/datasets/{setup.dataset.pk}/taxonomy/"
    at_widths(page, url, "taxonomy", "#taxonomy-form")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.get_by_label("Taxonomy", exact=False).first.fill('{"domains": 3}')
    page.get_by_role("button", name="Save the taxonomy").click()
    expect(page.locator("#taxonomy-problems")).to_contain_text("Nothing was saved")
    expect(page.locator("#taxonomy-field-problems li")).to_have_count(1)
    expect(page.locator("#taxonomy-field-problems")).to_contain_text("`domains`")
    shot(page, "taxonomy-error-1440")

    url = f"{live_server.url}/agreement/{setup.dataset.pk}/?judge_score=expected"
    at_widths(page, url, "agreement-expected", "h1")
    # These runs have no token probabilities: the note says what was used instead.
    note = page.locator("#judge-score-note")
    expect(note).to_be_visible()
    shot_of(note, "agreement-judge-score-note-800")
    page.locator("#agreement-choice > summary").click()
    expect(page.get_by_label("The judge’s score")).to_have_value("expected")
    expect(page.locator("#judge-score-help")).to_contain_text("QWK")
    shot_of(page.locator("#agreement-choice"), "agreement-choice-800")
