"""Narrow screens (800 px, a laptop's half screen or a tablet) in Chromium: the header
stays one row with its links behind a menu button, and wide screens still show every
link of the navigation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

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
