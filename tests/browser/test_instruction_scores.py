"""A researcher in Chromium finds where a judge and the raters disagree: filters a
dataset's responses, opens an instruction with every score side by side, steps to
the next matching instruction with the filter kept, and is told which parameter is
wrong when a filter cannot be used."""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import expect

from tests.analysis.agreement_data import make_agreement_setup
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SCREENSHOTS = os.environ.get("BROWSE_SCREENSHOTS", "")
SKILLS = ("comprehension", "factuality", "readability")


def shot(page, name: str) -> None:
    if SCREENSHOTS:
        page.screenshot(path=os.path.join(SCREENSHOTS, f"{name}.png"), full_page=True)


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="browse-researcher", role="researcher")


@pytest.fixture
def setup(researcher):
    """Four instructions x (alpha, beta); judge A is 3 points off the raters on
    factuality for alpha in q1 and q3, and agrees everywhere else."""
    human = {
        (i, m, k): [3, 4, 3]
        for i in range(4)
        for m in ("alpha", "beta")
        for k in SKILLS
    }
    judge = {(i, m, k): 3 for i in range(4) for m in ("alpha", "beta") for k in SKILLS}
    judge[(1, "alpha", "factuality")] = 1
    judge[(3, "alpha", "factuality")] = 1
    human[(3, "alpha", "factuality")] = [4, 4, 5]
    return make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=4,
        name="browse-ui",
    )


def test_researcher_filters_disagreements_and_steps_through_them(
    page, live_server, researcher, setup
):
    run = setup.runs[0]
    login(page, live_server, researcher)
    page.get_by_role("link", name="Datasets").first.click()
    page.get_by_role("link", name=setup.dataset.name).click()
    page.get_by_role("link", name="Responses and scores").click()

    page.get_by_label("Judge run").select_option(str(run.pk))
    page.get_by_label("Skill").select_option("factuality")
    page.get_by_label("Judge and raters differ by at least").fill("2")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#response-table tbody tr")
    expect(rows).to_have_count(2)
    expect(page.locator("#response-count")).to_contain_text("2 responses matching")
    assert "disagree=2" in page.url  # htmx pushed the filter into the address
    shot(page, "responses-filtered")

    rows.first.get_by_role("link").click()
    alpha = setup.responses[(1, "alpha")]
    expect(page).to_have_url(re.compile(rf"/instructions/{alpha.instruction_id}/\?"))
    block = page.locator(f'[data-response="{alpha.pk}"] [data-skill="factuality"]')
    expect(block).to_have_class(re.compile("is-disagreement"))
    expect(block.get_by_text("judge and raters disagree")).to_be_visible()
    raters = block.locator("tr.human-score th")
    expect(raters).to_have_count(3)
    expect(raters.nth(0)).to_contain_text("Rater A")
    expect(raters.nth(2)).to_contain_text("Rater C")
    expect(block.locator("tr.judge-score")).to_contain_text(
        "judge A says 1 for alpha on q1 factuality"
    )
    for rater in setup.raters:
        expect(page.locator("body")).not_to_contain_text(rater.username)
    # the other model's block on the same skill is not flagged
    beta = setup.responses[(1, "beta")]
    expect(
        page.locator(f'[data-response="{beta.pk}"] [data-skill="factuality"]')
    ).not_to_have_class(re.compile("is-disagreement"))
    expect(page.locator("#instruction-position")).to_have_text(
        re.compile(r"1 of 2 instructions matching the filters")
    )
    shot(page, "instruction-scores")

    page.get_by_role("link", name="Next →").click()
    following = setup.responses[(3, "alpha")].instruction_id
    expect(page).to_have_url(re.compile(rf"/instructions/{following}/\?.*disagree=2"))
    expect(page.locator("#instruction-position")).to_have_text(
        re.compile(r"2 of 2 instructions")
    )
    expect(page.locator("#next-instruction")).to_have_count(0)
    page.get_by_role("link", name="← Previous").click()
    expect(page).to_have_url(re.compile(rf"/instructions/{alpha.instruction_id}/\?"))


def test_a_filter_that_cannot_be_used_names_its_parameter(
    page, live_server, researcher, setup
):
    login(page, live_server, researcher)
    url = f"{live_server.url}/datasets/{setup.dataset.pk}/responses/"
    page.goto(url)
    # a difference with no judge run to compare: said in the results panel (htmx)
    page.get_by_label("Judge and raters differ by at least").fill("2")
    page.get_by_role("button", name="Filter").click()
    problem = page.locator("#filter-problem")
    expect(problem).to_contain_text("disagree")
    expect(problem).to_contain_text("choose a judge run")
    # a hand-edited address: the page says which parameter is wrong
    response = page.goto(f"{url}?run=abc")
    assert response.status == 400
    expect(page.locator("#filter-problem")).to_contain_text("run")
    expect(page.locator("#filter-problem")).to_contain_text("not a whole number")


def test_raters_and_judges_stand_side_by_side_only_where_there_is_room(
    page, live_server, researcher, setup
):
    alpha = setup.responses[(1, "alpha")]
    block = f'[data-response="{alpha.pk}"] [data-skill="factuality"]'
    login(page, live_server, researcher)
    for width, stacked in ((1440, False), (800, True)):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/instructions/{alpha.instruction_id}/")
        human = page.locator(f"{block} .human-side").bounding_box()
        judge = page.locator(f"{block} .judge-side").bounding_box()
        if stacked:
            assert judge["y"] >= human["y"] + human["height"], (width, human, judge)
        else:
            assert judge["y"] == human["y"] and judge["x"] > human["x"], width
        assert page.evaluate("document.documentElement.scrollWidth") <= width
