"""A researcher reads the categorical criteria in Chromium: the agreement dashboard's
"Categorical criteria" section (accuracy, kappa, per-label table, confusion matrix
with label names) and the classification runs on the meta-evaluation page."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from tests.analysis.classification_data import make_classification_setup
from tests.analysis.test_views_classification import _tables
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="browser-cls-researcher", role="researcher")


@pytest.fixture
def setup(researcher):
    human, judge_a, judge_b = _tables()
    return make_classification_setup(
        researcher, human=human, judges=[judge_a, judge_b], n_instructions=6,
        name="browser-classify",
    )  # fmt: skip


def test_researcher_reads_the_categorical_figures(page, live_server, researcher, setup):
    run_a = setup.runs[0].pk
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/agreement/{setup.dataset.pk}/?n_boot=200")
    section = page.locator("#categorical-agreement")
    expect(section).to_be_visible()
    expect(section.get_by_role("heading", name="Safety")).to_be_visible()
    confusion = page.locator(f"#categorical-consistent-confusion-{run_a}")
    expect(confusion.get_by_role("columnheader", name="Yes")).to_be_visible()
    expect(confusion.locator("td.confusion-agree").first).to_be_visible()
    labels = page.locator(f"#categorical-safety-labels-{run_a}")
    expect(labels.get_by_role("rowheader", name="Borderline")).to_be_visible()
    shot(page, "classification-dashboard")
    _no_serious_violation(page)
    if folder := os.environ.get("FLASK_SCREENSHOTS"):
        section.screenshot(path=f"{folder}/classification-dashboard-section.png")

    page.goto(f"{live_server.url}/metaeval/{setup.dataset.pk}/?n_boot=200")
    expect(page.locator("#categorical-heading")).to_contain_text(
        "Classification judges vs the human majority"
    )
    page.get_by_role("checkbox", name=f"#{setup.runs[1].pk} judge B").uncheck()
    page.get_by_role("checkbox", name=f"#{run_a} judge A").check()
    page.get_by_role("button", name="Show").click()
    expect(
        page.locator(f'#categorical-consistent-runs tr[data-run="{run_a}"]')
    ).to_be_visible()
    expect(
        page.locator(f'#categorical-consistent-runs tr[data-run="{setup.runs[1].pk}"]')
    ).to_have_count(0)
    expect(page.locator("#categorical-consistent-ceiling")).to_contain_text(
        "leave one out"
    )
    shot(page, "classification-metaeval")
    _no_serious_violation(page)


def _no_serious_violation(page) -> None:
    """axe-core finds nothing serious in the categorical section (the rules of
    tests/browser/test_accessibility; the rest of the page is scanned there)."""
    from axe_playwright_python.sync_playwright import Axe

    from tests.browser.test_accessibility import FAILING, describe

    violations = (
        Axe().run(page, context="#categorical-agreement").response["violations"]
    )
    failing = [v for v in violations if v["impact"] in FAILING]
    assert not failing, describe(failing)
