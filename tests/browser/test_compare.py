"""Compare at a glance in Chromium (issue 37), at 1440 and 800 px: the experiment
page puts the judges side by side (coloured cells with readable text, the human
ceiling, a legend), draws the forest plot of each run against the baseline with its
summary line, says "baseline" once and does not scroll sideways at 800 px; its link
opens the item-level diff, filtered by criterion and paged; the full agreement
table keeps its header in view while it scrolls; every page passes an axe scan."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from judging.services.experiments import experiment_create
from tests.analysis.agreement_data import make_agreement_setup
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

N = 24
MODELS = ("alpha", "beta")
SKILLS = ("readability", "factuality")
WIDTHS = (1440, 800)


@pytest.fixture
def setup(transactional_db):
    researcher = UserFactory(username="cmp-b-researcher", role="researcher")
    human = {
        (i, m, s): [1 + (i + k + j) % 5, 1 + (i + j) % 5]
        for i in range(N)
        for k, m in enumerate(MODELS)
        for j, s in enumerate(SKILLS)
    }

    def judge(shift):
        return {
            (i, m, s): 1 + (i + k + j + (shift if i % 3 == 0 else 0)) % 5
            for i in range(N)
            for k, m in enumerate(MODELS)
            for j, s in enumerate(SKILLS)
        }

    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge(0), judge(2), judge(1)],
        n_instructions=N,
        models=MODELS,
        n_raters=2,
        name="Compare set",
    )
    experiment = experiment_create(
        user=researcher,
        dataset=s.dataset,
        name="three prompts",
        run_ids=[r.pk for r in s.runs],
    )
    return researcher, s, experiment


def part(locator, name: str) -> None:
    """A screenshot of one element in $FLASK_SCREENSHOTS (to look at), or nothing."""
    folder = os.environ.get("FLASK_SCREENSHOTS")
    if folder:
        locator.screenshot(path=os.path.join(folder, f"{name}.png"))


def _axe(page):
    from axe_playwright_python.sync_playwright import Axe

    violations = Axe().run(page).response["violations"]
    failing = [v for v in violations if v["impact"] in ("serious", "critical")]
    assert not failing, [(v["id"], v["nodes"][0]["target"]) for v in failing]


WIDE = """() => {
  const w = document.documentElement.clientWidth;
  return [...document.querySelectorAll('body *')]
    .filter(e => e.getBoundingClientRect().right > w + 1)
    .slice(0, 8)
    .map(e => e.tagName + '#' + e.id + '.' + e.className + ' ' +
         Math.round(e.getBoundingClientRect().right));
}"""


def _no_sideways_scroll(page):
    """The page itself never scrolls sideways (a wide table scrolls in its box)."""
    wide = page.evaluate(WIDE)
    assert page.evaluate(
        "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
    ), wide


def test_experiment_page_compares_at_a_glance(page, live_server, setup):
    researcher, s, experiment = setup
    login(page, live_server, researcher)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/experiments/{experiment.pk}/?n_boot=100")
        grid = page.locator("#experiment-grid")
        expect(grid).to_be_visible()
        expect(grid.locator("tbody tr")).to_have_count(len(SKILLS) + 1)
        cell = grid.locator(f'td[data-judge="{s.runs[1].pk}"]').first
        # coloured, its interval and n on hover and for a screen reader
        assert "background-color" in (cell.get_attribute("style") or "")
        assert re.search(
            r"95% interval \[-?\d\.\d\d, -?\d\.\d\d\], n=\d+",
            cell.get_attribute("title"),
        )
        expect(cell.locator(".visually-hidden")).to_contain_text("95% interval")
        expect(page.locator(".grid-legend").first).to_contain_text("cividis")
        summaries = page.locator(".compare-summary")
        expect(summaries).to_have_count(len(s.runs) - 1)
        expect(summaries.first).to_contain_text(
            re.compile(
                r"better than the baseline on \d of 2 criteria, worse on \d, no difference shown on \d"
            )
        )
        expect(page.locator("#experiment-forest svg")).to_be_visible()
        expect(page.locator("#experiment-forest .difference")).to_have_count(
            (len(s.runs) - 1) * (len(SKILLS) + 1)
        )
        expect(page.locator("#experiment-differences tbody")).not_to_contain_text(
            "baseline"
        )
        _no_sideways_scroll(page)
        _axe(page)
        shot(page, f"experiment-compare-{width}")
        part(page.locator("#experiment-compare"), f"experiment-grid-{width}")
        part(page.locator("#experiment-baseline"), f"experiment-baseline-{width}")

    # the statistic is the user's choice
    page.locator('a[data-stat="exact"]').click()
    expect(page.locator("#experiment-grid thead")).to_contain_text("exact agreement")

    # the item-level diff of judge B and the baseline
    page.set_viewport_size({"width": 1440, "height": 900})
    page.locator(".compare-summary").first.get_by_role(
        "link", name="items where the two differ"
    ).click()
    heading = page.locator("#diff-heading")
    expect(heading).to_contain_text(re.compile(r"^\d+ of 96 items differ$"))
    n_differ = int(heading.inner_text().split()[0])
    expect(page.locator("#diff-items tbody tr")).to_have_count(min(25, n_differ))
    _axe(page)
    shot(page, "run-diff-1440")
    part(page.locator("#diff-items"), "run-diff-table-1440")
    page.get_by_label("Criterion").select_option("factuality")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"criterion=factuality"))
    rows = page.locator("#diff-items tbody tr")
    expect(rows.first).to_be_visible()
    assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.criterion)")) == {
        "factuality"
    }
    page.set_viewport_size({"width": 800, "height": 900})
    _no_sideways_scroll(page)
    shot(page, "run-diff-800")


def test_full_agreement_table_keeps_its_header_in_view(page, live_server, setup):
    researcher, s, _ = setup
    login(page, live_server, researcher)
    page.set_viewport_size({"width": 800, "height": 400})
    page.goto(f"{live_server.url}/agreement/{s.dataset.pk}/?n_boot=50&full=1")
    table = page.locator("#agreement-table")
    expect(table).to_be_visible()
    wrap = table.locator("xpath=..")
    header = table.locator("thead tr").first.locator("th").nth(2)
    # scroll the table's own box down and sideways: the judge's heading stays in it
    wrap.evaluate(
        "w => { w.scrollTop = w.scrollHeight; w.scrollLeft = w.scrollWidth; }"
    )
    box, head = wrap.bounding_box(), header.bounding_box()
    assert wrap.evaluate("w => w.scrollTop > 0")
    assert box["y"] - 1 <= head["y"] <= box["y"] + 4, (box, head)
    shot(page, "agreement-full-scrolled-800")
    part(wrap, "agreement-full-wrap-800")
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(f"{live_server.url}/agreement/{s.dataset.pk}/?n_boot=50")
    expect(page.locator("#agreement-compact .grid-cell").first).to_have_attribute(
        "style", re.compile("background-color")
    )
    _axe(page)
    shot(page, "agreement-compact-1440")
    part(page.locator("#agreement-compact").locator("xpath=../.."), "compact-only")


def test_metaeval_opens_with_the_judges_grid(page, live_server, transactional_db):
    from tests.judging.pairwise_data import make_pref_setup

    researcher = UserFactory(username="cmp-b-meta", role="researcher")
    dataset, _, run_a, cued = make_pref_setup("cmp-b-pref")
    login(page, live_server, researcher)
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/metaeval/{dataset.pk}/?n_boot=50")
        grid = page.locator("#metaeval-grid")
        expect(grid).to_be_visible()
        expect(grid.locator("thead")).to_contain_text("Human ceiling")
        expect(grid.locator("tbody tr").last).to_contain_text("Overall")
        # each run's full figures are folded below, one click away
        details = page.locator(f"#metaeval-run-{run_a.pk}")
        expect(details.locator(f"#metaeval-overall-{run_a.pk}")).to_be_hidden()
        _no_sideways_scroll(page)
        _axe(page)
        shot(page, f"metaeval-{width}")
    details.locator("xpath=./summary").click()
    expect(details.locator(f"#metaeval-overall-{run_a.pk}")).to_be_visible()
