"""A researcher reads a cache-friendly run's cost in Chromium: the cached share of
input the endpoint reported, and the share the estimate assumed before the run."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from judging.models import JudgeCall, JudgeRun
from judging.services.runs import judge_run_create, judge_run_start
from tests.browser.conftest import login, shot
from tests.judging.test_costs import mixed_criteria_dataset
from tests.judging.test_execution import eager_tasks, make_config  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("width", [1440, 800])
def test_the_run_page_shows_the_reported_and_the_assumed_cached_share(
    page,
    live_server,
    eager_tasks,  # noqa: F811
    fake_server,
    width,
):
    base = fake_server(latency_ms=1, prefix_cache=True)
    config, user = make_config(
        base,
        prompt_layout="cache_friendly",
        output_mode="text",
        price_input_per_m="1.25",
        price_cached_input_per_m="0.125",
        price_output_per_m="10",
    )
    run = judge_run_create(config=config, dataset=mixed_criteria_dataset(), user=user)
    judge_run_start(run=run, user=user)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    calls = JudgeCall.objects.filter(run=run)
    reported = round(
        100
        * sum(c.cached_input_tokens for c in calls)
        / sum(c.input_tokens for c in calls)
    )
    assumed = round(100 * run.estimate["assumes"]["cached_input_share"])
    assert reported > 50 and assumed > 50

    page.set_viewport_size({"width": width, "height": 900})
    login(page, live_server, user)
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    page.wait_for_load_state("load")
    expect(page.locator("#run-cached-share")).to_have_text(
        f"{reported}% of input cached"
    )
    expect(page.locator("#run-estimate-cached")).to_have_text(
        re.compile(rf"assumed\s+{assumed}% of input cached")
    )
    shot(page, f"run-cost-panel-{width}")
