"""The Content Security Policy in Chromium: the main pages, each opened as the user who
uses it, report no violation (no inline script, no inline <style>, no eval, nothing
from another origin), and their scripts still work under it: htmx swaps the rating
form and the agreement results, Swagger UI renders the API documentation."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import login, sky_rating_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Runs before any script of each page (Playwright injects it outside the page's CSP).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(
    e.violatedDirective + " blocked " + (e.blockedURI || "inline") +
    " at " + e.sourceFile + ":" + e.lineNumber
  );
});
"""


@pytest.fixture
def csp_page(page):
    """The page, recording CSP violations (the DOM event, and Chromium's console
    messages, which also cover what the event misses) and script errors."""
    page.add_init_script(RECORD_VIOLATIONS)
    page.console_messages_seen = []
    page.on(
        "console",
        lambda m: page.console_messages_seen.append(f"{m.type}: {m.text}"),
    )
    page.errors_seen = []
    page.on("pageerror", lambda e: page.errors_seen.append(str(e)))
    return page


def violations(page) -> list[str]:
    seen = page.evaluate("window.__cspViolations || []")
    console = [m for m in page.console_messages_seen if "Content Security Policy" in m]
    return seen + console + page.errors_seen


def visit(page, url: str) -> None:
    response = page.goto(url)
    assert response is not None and response.ok, (url, response and response.status)
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("load")


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="csp-rater", role="rater")


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="csp-researcher", role="researcher")


def test_login_and_rater_pages_pass_the_policy_and_htmx_submits(
    csp_page, live_server, rater
):
    page = csp_page
    campaign = sky_rating_campaign(raters=[rater])
    visit(page, f"{live_server.url}/login/")
    assert violations(page) == []

    login(page, live_server, rater)
    visit(page, f"{live_server.url}{reverse('annotation:rate-home')}")
    expect(page.get_by_role("link", name=campaign.name)).to_be_visible()

    visit(
        page, f"{live_server.url}{reverse('annotation:rate-next', args=[campaign.pk])}"
    )
    panel = page.locator("#rating-panel[data-assignment-id]")
    first = panel.get_attribute("data-assignment-id")
    page.wait_for_function(
        "() => document.activeElement"
        " && document.activeElement.closest('[data-skill-row]') !== null"
    )
    # rater.js (keyboard) and htmx (the submit swaps in the next response) still work.
    page.evaluate("window.__noFullReload = 'still here'")
    for key in ("4", "5", "3", "Enter"):
        page.keyboard.press(key)
    page.wait_for_function(
        "id => document.querySelector('#rating-panel')?.dataset.assignmentId !== id",
        arg=first,
    )
    assert page.evaluate("window.__noFullReload") == "still here"
    expect(page.locator("#rater-progress")).to_contain_text("1 rated")
    assert violations(page) == []


def test_researcher_pages_pass_the_policy_and_htmx_swaps(
    csp_page, live_server, researcher
):
    page = csp_page
    human, judge_a, judge_b = score_tables()
    setup = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="csp-agree",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
    )
    login(page, live_server, researcher)

    for url in (
        reverse("annotation:campaign-detail", args=[setup.campaign.pk]),
        reverse("annotation:dataset-detail", args=[setup.dataset.pk]),
    ):
        visit(page, f"{live_server.url}{url}")
        assert violations(page) == [], url

    dashboard = reverse("analysis:agreement", args=[setup.dataset.pk])
    query = f"?campaign={setup.campaign.pk}&run={setup.runs[0].pk}&n_boot=50"
    visit(page, f"{live_server.url}{dashboard}{query}")
    expect(page.locator("#agreement-compact")).to_be_visible()
    # The charts are inline SVG; the full table and a slice switch are htmx swaps,
    # not reloads.
    page.evaluate("window.__agreementMarker = 'still here'")
    page.locator("#table-toggle").click()
    expect(page.locator("#agreement-table")).to_be_visible()
    page.locator('a[data-slice="difficulty:2"]').click()
    expect(page).to_have_url(re.compile(r"[?&]slice=difficulty%3A2(&|$)"))
    expect(page.locator('a[data-slice="difficulty:2"]')).to_have_attribute(
        "aria-current", "true"
    )
    assert page.evaluate("window.__agreementMarker") == "still here"
    assert violations(page) == []


def test_api_docs_render_under_the_policy(csp_page, live_server, researcher):
    page = csp_page
    login(page, live_server, researcher)
    visit(page, f"{live_server.url}{reverse('api-docs')}")
    # Swagger UI ran (from the split view's script URL) and loaded the schema.
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("FLASK Eval API")
    expect(page.locator(".opblock").first).to_be_visible()
    assert page.locator("script:not([src])").count() == 0
    assert violations(page) == []
