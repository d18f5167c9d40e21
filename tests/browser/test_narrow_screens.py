"""Narrow screens (800 px, a laptop's half screen or a tablet) in Chromium: the header
stays one row with its links behind a menu button (wide screens still show every link
of the navigation), the rating page keeps the response beside the rubric, the pairwise
page shows A and B one at a time with x to switch, and the agreement dashboard's
controls stack as full-width rows."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import (
    SKILLS,
    login,
    shot,
    sky_pairwise_campaign,
    sky_rating_campaign,
)
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NARROW = {"width": 800, "height": 900}
# A wide screen: an admin's twelve links, the workspace switch and the user block.
WIDE = {"width": 1600, "height": 900}


@pytest.fixture
def admin(transactional_db):
    # An admin sees the most links: the researcher's, Pairwise and Imports.
    return UserFactory(username="narrow-admin", role="admin")


def header_height(page) -> float:
    return page.locator("header.topbar").bounding_box()["height"]


def test_header_folds_into_a_menu_at_800_px(page, live_server, admin):
    page.set_viewport_size(NARROW)
    login(page, live_server, admin)
    toggle = page.get_by_role("button", name="Menu")
    expect(toggle).to_be_visible()
    expect(toggle).to_have_attribute("aria-expanded", "false")
    nav = page.get_by_role("navigation", name="Main")
    expect(nav).to_be_hidden()
    assert header_height(page) < 80
    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]

    # Keyboard: Tab from the brand reaches the button, Enter opens the menu and puts
    # the focus on its first link; every link is visible and clickable.
    page.locator("a.brand").focus()
    page.keyboard.press("Tab")
    expect(toggle).to_be_focused()
    page.keyboard.press("Enter")
    expect(toggle).to_have_attribute("aria-expanded", "true")
    expect(nav).to_be_visible()
    expect(nav.get_by_role("link", name="Datasets")).to_be_focused()
    for name in ("Datasets", "Runs", "Agreement", "API docs", "Pairwise", "Imports"):
        expect(nav.get_by_role("link", name=name)).to_be_visible()
    assert header_height(page) < 80  # the open menu lies over the page
    # Esc closes it and gives the focus back to the button.
    page.keyboard.press("Escape")
    expect(nav).to_be_hidden()
    expect(toggle).to_be_focused()
    expect(toggle).to_have_attribute("aria-expanded", "false")

    # With the mouse: open, follow a link.
    toggle.click()
    nav.get_by_role("link", name="Runs").click()
    page.wait_for_url(f"{live_server.url}/runs/")
    expect(page.get_by_role("button", name="Menu")).to_have_attribute(
        "aria-expanded", "false"
    )


def test_a_raters_few_links_stay_in_the_header_at_800_px(page, live_server):
    rater = UserFactory(username="narrow-nav-rater", role="rater")
    page.set_viewport_size(NARROW)
    login(page, live_server, rater)
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    nav = page.get_by_role("navigation", name="Main")
    expect(nav.get_by_role("link", name="Rate")).to_be_visible()
    expect(nav.get_by_role("link", name="Pairwise")).to_be_visible()
    assert header_height(page) < 80


def test_wide_screen_shows_the_whole_navigation_in_one_row(page, live_server, admin):
    page.set_viewport_size(WIDE)
    login(page, live_server, admin)
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    nav = page.get_by_role("navigation", name="Main")
    links = nav.get_by_role("link")
    assert links.count() >= 10
    for i in range(links.count()):
        expect(links.nth(i)).to_be_visible()
    assert header_height(page) < 80


def test_the_menu_folds_exactly_when_the_links_do_not_fit(page, live_server, admin):
    """A wide window holds an admin's whole navigation in one row; narrowing it
    folds the links into the menu, widening it again unfolds them (no reload)."""
    page.set_viewport_size({"width": 1600, "height": 900})
    login(page, live_server, admin)
    nav = page.get_by_role("navigation", name="Main")
    toggle = page.get_by_role("button", name="Menu")
    expect(toggle).to_be_hidden()
    links = nav.get_by_role("link")
    tops = {round(links.nth(i).bounding_box()["y"]) for i in range(links.count())}
    assert len(tops) == 1, tops  # one row
    assert header_height(page) < 80
    page.set_viewport_size({"width": 1100, "height": 900})
    expect(toggle).to_be_visible()
    expect(nav).to_be_hidden()
    assert header_height(page) < 80
    toggle.click()
    expect(nav.get_by_role("link", name="Imports")).to_be_visible()
    page.set_viewport_size({"width": 1600, "height": 900})
    expect(toggle).to_be_hidden()
    expect(nav.get_by_role("link", name="Imports")).to_be_visible()
    # Hidden, the button has no role to find it by; it was closed on unfolding.
    expect(page.locator("[data-nav-toggle]")).to_have_attribute(
        "aria-expanded", "false"
    )
    shot(page, "nav-unfolded-admin")


# Every visible control of the agreement form and the slice navigation (its pills are
# links, small by design, and not counted), with its width.
AGREEMENT_CONTROLS = """() => {
  const sel = '#agreement-form fieldset, #agreement-form select,'
    + ' #agreement-form input:not([type=checkbox]):not([type=radio]),'
    + ' #agreement-form button, .slice-nav select';
  return [...document.querySelectorAll(sel)]
    .filter(e => e.offsetParent !== null)
    .map(e => {
      const r = e.getBoundingClientRect();
      return {what: e.tagName + (e.name ? '[' + e.name + ']' : '') + ' '
        + (e.textContent || '').trim().slice(0, 30), width: r.width};
    });
}"""


def test_agreement_controls_stack_as_full_width_rows_at_800_px(
    page, live_server, transactional_db
):
    researcher = UserFactory(username="narrow-researcher", role="researcher")
    human, judge_a, judge_b = score_tables()
    setup = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="narrow-agree",
    )
    page.set_viewport_size(NARROW)
    login(page, live_server, researcher)
    runs = "".join(f"&run={run.pk}" for run in setup.runs)
    page.goto(
        f"{live_server.url}/agreement/{setup.dataset.pk}/"
        f"?campaign={setup.campaign.pk}{runs}&n_boot=20"
    )
    expect(page.locator("#agreement-compact")).to_be_visible()
    # The form is folded into a summary line; open it as a user would.
    page.locator("details.agreement-choice > summary").click()
    expect(page.locator("#agreement-form")).to_be_visible()

    assert page.evaluate("document.documentElement.scrollWidth") <= NARROW["width"]
    controls = page.evaluate(AGREEMENT_CONTROLS)
    assert len(controls) >= 6  # 3 fieldsets, the select, the number, the button
    narrow = [c for c in controls if c["width"] < 120]
    assert narrow == [], narrow
    # The three groups are rows as wide as the form, not three columns.
    cols = page.locator("#agreement-form .form-cols").bounding_box()
    fieldsets = page.locator("#agreement-form fieldset")
    assert fieldsets.count() == 3
    for i in range(3):
        box = fieldsets.nth(i).bounding_box()
        assert box["width"] >= 0.95 * cols["width"], (i, box, cols)
    # A run's label (name, kind, samples) stays on one line inside its group.
    label = page.locator("#agreement-form label.check", has_text="judge B")
    assert label.bounding_box()["height"] < 32
    # The reference select shows its whole first option.
    reference = page.get_by_label("Reference")
    assert reference.bounding_box()["width"] >= 300


def in_viewport(page, selector: str) -> bool:
    return page.evaluate(
        """s => { const r = document.querySelector(s).getBoundingClientRect();
          return r.top < innerHeight && r.bottom > 0 && r.height > 0; }""",
        selector,
    )


def test_rating_page_keeps_the_response_beside_the_rubric_at_800_px(
    page, live_server, transactional_db
):
    rater = UserFactory(username="narrow-rater", role="rater")
    campaign = sky_rating_campaign(raters=[rater])
    page.set_viewport_size({"width": 800, "height": 600})
    login(page, live_server, rater)
    page.goto(f"{live_server.url}/rate/{campaign.pk}/")
    page.wait_for_function("() => !!document.activeElement.closest('[data-skill-row]')")
    response = page.locator(".response-block").bounding_box()
    first_row = page.locator(f"#row-{SKILLS[0]}").bounding_box()
    # Side by side: the response column ends where the rubric column starts.
    assert response["x"] + response["width"] <= first_row["x"]
    # Scoring down to the last skill scrolls the rubric; the response stays in view.
    page.keyboard.press("4")
    page.keyboard.press("4")
    last = f"#row-{SKILLS[-1]}"
    expect(page.locator(last)).to_be_focused()
    page.locator(last).scroll_into_view_if_needed()
    assert page.evaluate("window.scrollY") > 100
    assert in_viewport(page, last)
    assert in_viewport(page, ".response-block")
    assert page.evaluate("document.documentElement.scrollWidth") <= 800


def test_pairwise_switches_between_a_and_b_by_key_when_stacked(
    page, live_server, transactional_db
):
    rater = UserFactory(username="narrow-pair-rater", role="rater")
    campaign = sky_pairwise_campaign(raters=[rater])
    page.set_viewport_size(NARROW)
    login(page, live_server, rater)
    page.goto(f"{live_server.url}/pairwise/compare/{campaign.pk}/")
    page.wait_for_function("() => !!document.activeElement.closest('[data-label-row]')")
    tab_a = page.get_by_role("tab", name="Response A")
    tab_b = page.get_by_role("tab", name="Response B")
    expect(tab_a).to_have_attribute("aria-selected", "true")
    expect(page.locator("#response-a")).to_be_visible()
    expect(page.locator("#response-b")).to_be_hidden()

    page.keyboard.press("x")
    expect(tab_b).to_have_attribute("aria-selected", "true")
    expect(page.locator("#response-b")).to_be_visible()
    expect(page.locator("#response-a")).to_be_hidden()
    # The focus stays on the question: the next key still answers it.
    expect(page.locator("#row-overall")).to_be_focused()
    page.keyboard.press("x")
    expect(page.locator("#response-a")).to_be_visible()
    page.keyboard.press("b")
    expect(page.locator("#l-overall-B")).to_be_checked()
    # The mouse works too.
    tab_b.click()
    expect(page.locator("#response-b")).to_be_visible()

    # Wide: side by side, no tabs, x changes nothing.
    page.set_viewport_size(WIDE)
    expect(tab_a).to_be_hidden()
    expect(page.locator("#response-a")).to_be_visible()
    expect(page.locator("#response-b")).to_be_visible()
    page.locator("#row-overall").focus()
    page.keyboard.press("x")
    expect(page.locator("#response-a")).to_be_visible()
    expect(page.locator("#response-b")).to_be_visible()
