"""A researcher uses the agreement dashboard in Chromium: it opens with the defaults,
then chooses a campaign and a judge run, reads the flagged table, switches slices without a page reload, opens the
drill-down and downloads the table as CSV."""

from __future__ import annotations

import csv
import io
import os
import re

import pytest
from playwright.sync_api import expect

from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import follow_nav, login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = os.environ.get("AGREEMENT_SCREENSHOTS", "")


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="browser-researcher", role="researcher")


@pytest.fixture
def setup(researcher):
    human, judge_a, judge_b = score_tables()
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="browser-agree",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
        is_hard=[True, False] * 5,
    )


def shot(page, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}.png"), full_page=True)


def test_researcher_compares_a_judge_with_the_raters(
    page, live_server, researcher, setup
):
    judge_b = setup.runs[1]
    login(page, live_server, researcher)
    follow_nav(page, "Agreement")
    page.get_by_role("link", name=setup.dataset.name).click()
    # It opens with the defaults: every campaign and each judge's latest run.
    expect(page.locator("#agreement-defaults")).to_be_visible()
    page.locator("#agreement-choice > summary").click()  # open the choice form
    judge_a = page.get_by_role("checkbox", name=f"#{setup.runs[0].pk} judge A")
    expect(judge_a).to_be_checked()

    page.get_by_role("checkbox", name=setup.campaign.name).check()
    judge_a.uncheck()
    page.get_by_role("checkbox", name=f"#{judge_b.pk} judge B").check()
    page.get_by_label("Bootstrap resamples").fill("200")
    page.get_by_role("button", name="Show agreement").click()

    # The compact table first (one number per cell), the full one a click away.
    expect(page.locator("#agreement-compact")).to_be_visible()
    expect(page.locator(".headline")).to_have_count(1)
    page.locator("#table-toggle").click()
    table = page.locator("#agreement-table")
    expect(table).to_be_visible()
    factuality = table.locator('tr[data-row="skill:factuality"]')
    expect(factuality.locator(".flag-significant")).to_have_text(
        "▼▼ significantly below"
    )
    expect(page).to_have_url(re.compile(rf"[?&]run={judge_b.pk}(&|$)"))
    shot(page, "agreement-table")
    if SCREENSHOTS:
        table.screenshot(path=os.path.join(SCREENSHOTS, "table-only.png"))

    # A slice switch swaps the results in place: the page (and this marker) survive.
    page.evaluate("window.__agreementMarker = 'still here'")
    page.locator('a[data-slice="difficulty:2"]').click()
    expect(page).to_have_url(re.compile(r"[?&]slice=difficulty%3A2(&|$)"))
    expect(page.locator('a[data-slice="difficulty:2"]')).to_have_attribute(
        "aria-current", "true"
    )
    expect(page.locator("#table-heading")).to_contain_text("difficulty 2")
    assert page.evaluate("window.__agreementMarker") == "still here"

    # Sorting is a swap too.
    page.locator(f'a[data-sort="{judge_b.pk}.spearman"]').click()
    expect(
        page.locator(f'th:has(a[data-sort="{judge_b.pk}.spearman"])')
    ).to_have_attribute("aria-sort", "descending")
    assert page.evaluate("window.__agreementMarker") == "still here"

    # Drill-down: the judge's rationale beside the anonymous raters' scores.
    page.locator('tr[data-row="skill:factuality"] th a').click()
    drill = page.locator("#agreement-disagreements")
    expect(drill.get_by_role("heading", level=2)).to_contain_text("Factuality")
    expect(drill.locator(".disagreement").first).to_contain_text("judge B says")
    expect(drill.locator(".human-side").first).to_contain_text("rater 1")
    assert page.evaluate("window.__agreementMarker") == "still here"
    shot(page, "agreement-drilldown")

    with page.expect_download() as info:
        page.get_by_role("link", name="Table CSV").click()
    download = info.value
    assert download.suggested_filename.endswith(".csv")
    text = open(download.path(), encoding="utf-8").read()
    lines = list(csv.DictReader(io.StringIO(text)))
    assert {x["source"] for x in lines} >= {"reference", f"run:{judge_b.pk}"}
    assert any(
        x["row"] == "skill:factuality" and x["statistic"] == "flag_significant"
        for x in lines
    )

    # The back button restores the unsliced table.
    page.go_back()
    page.go_back()
    expect(page).not_to_have_url(re.compile(r"slice="))
    expect(page.locator("#agreement-table")).to_be_visible()
