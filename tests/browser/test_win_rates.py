"""The prediction-powered win-rate page in Chromium: a researcher goes from the
estimates page to the win rates, sees the three estimates per pair of models in the
table and the chart (its value texts inside the figure), at 1366 and 800 px without
a sideways page scroll, and the page passes an axe scan."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from analysis.selectors.ppi_pairwise import prediction_powered_win_rates
from tests.analysis.test_ppi_win_rates import make_pairwise
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _axe_failures(page) -> list:
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    return [v["id"] for v in violations if v["impact"] in ("serious", "critical")]


def test_researcher_reads_the_win_rates_from_the_estimates_page(page, live_server):
    researcher = UserFactory(username="wr-researcher", role="researcher")
    dataset, run, _ = make_pairwise("wr-browser")
    expected = prediction_powered_win_rates(dataset=dataset, run_id=run.pk)
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/estimates/{dataset.pk}/")
    page.get_by_role("link", name="Win rates (pairwise)").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Win rates")
    table = page.locator("#win-rates-table")
    for row in expected["pairs"]:
        cells = table.get_by_role("row").filter(
            has=page.get_by_role(
                "rowheader", name=f"{row['model_a']} vs {row['model_b']}"
            )
        )
        ppi = f"{row['ppi']['value']:.2f} [{row['ppi']['ci'][0]:.2f}, "
        expect(cells).to_contain_text(ppi)
        expect(cells).to_contain_text(f"{row['humans']['value']:.2f}")
    chart = page.locator("figure.chart-figure svg")
    expect(chart).to_have_count(1)
    expect(chart.locator("title").first).to_have_text(
        "Win rate of the first model over the second"
    )
    for width in (1366, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        # Every value text ends inside the chart's own box (none is cut off).
        overflow = chart.evaluate(
            """svg => { const box = svg.viewBox.baseVal;
              return [...svg.querySelectorAll('text.value')]
                .filter(t => { const b = t.getBBox(); return b.x + b.width > box.width; })
                .map(t => t.textContent); }"""
        )
        assert overflow == []
        shot(page, f"win-rates-{width}")
    assert _axe_failures(page) == []
