"""Narrow screens (800 px, a laptop's half screen or a tablet) in Chromium: the header
stays one row with its links behind a menu button (wide screens still show every link
of the navigation), and the agreement dashboard's controls stack as full-width rows."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_views_agreement import MODELS, N_INSTR, score_tables
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NARROW = {"width": 800, "height": 900}
WIDE = {"width": 1440, "height": 900}


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
    expect(page.locator("#agreement-table")).to_be_visible()

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
