"""The agreement dashboard opened with no parameters, at 1,280 px: the defaults are
computed, each judge has its headline, nothing scrolls sideways, and the full table
is one click away."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = os.environ.get("AGREEMENT_SCREENSHOTS", "")


@pytest.fixture
def setup(transactional_db):
    researcher = UserFactory(username="glance-researcher", role="researcher")
    human, judge_a, judge_b = score_tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b, judge_a, judge_b],  # four judges side by side
        n_instructions=N_INSTR,
        models=MODELS,
        name="glance-browser",
    )
    s.researcher = researcher
    return s


def test_dashboard_without_parameters_fits_1280_and_shows_headlines(
    browser, live_server, setup
):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    try:
        login(page, live_server, setup.researcher)
        page.goto(f"{live_server.url}/agreement/{setup.dataset.pk}/")
        headlines = page.locator(".headline")
        expect(headlines).to_have_count(len(setup.runs))
        expect(headlines.first).to_contain_text(re.compile(r"QWK -?\d\.\d\d \["))
        expect(headlines.first).to_contain_text("vs human ceiling α")
        expect(headlines.nth(1)).to_contain_text(
            re.compile(r"below ceiling on \d+ of 3")
        )
        expect(page.locator("#agreement-compact")).to_be_visible()
        if SCREENSHOTS:
            page.screenshot(
                path=os.path.join(SCREENSHOTS, "glance-1280.png"), full_page=True
            )
            page.screenshot(path=os.path.join(SCREENSHOTS, "glance-top.png"))
            page.locator("#agreement-compact").screenshot(
                path=os.path.join(SCREENSHOTS, "glance-compact.png")
            )
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        wrap = page.locator("#agreement-compact").locator("xpath=..")
        assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
        # hover text of a cell: its interval and n
        cell = page.locator(
            f'#agreement-compact tr[data-row="overall"] td[data-run="{setup.runs[0].pk}"]'
        )
        assert re.search(
            r"\[-?\d\.\d\d, -?\d\.\d\d\], n=\d+", cell.get_attribute("title")
        )

        # The radars: on shared items by default, all items one click away.
        radars = page.locator("#agreement-radars")
        expect(radars.locator("svg").first).to_have_attribute(
            "aria-label", re.compile(r"shared items$")
        )
        radars.locator('a[data-radar="all"]').click()
        expect(page.locator("#agreement-radars svg").first).to_have_attribute(
            "aria-label", re.compile(r"all scored items$")
        )
        expect(page).to_have_url(re.compile(r"[?&]radar=all(&|$)"))
        if SCREENSHOTS:
            page.locator("#agreement-radars figure").first.screenshot(
                path=os.path.join(SCREENSHOTS, "radar-all.png")
            )

        page.locator("#table-toggle").click()
        expect(page.locator("#agreement-table")).to_be_visible()
        expect(page).to_have_url(re.compile(r"[?&]full=1(&|$)"))
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        if SCREENSHOTS:
            page.locator("#agreement-table").screenshot(
                path=os.path.join(SCREENSHOTS, "full-table.png")
            )
    finally:
        context.close()
