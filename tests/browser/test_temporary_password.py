"""A researcher creates a rater in the app; the rater's first login asks for their own
password before anything else, then goes on to the page they asked for."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_first_login_with_a_password_set_for_you(page, live_server):
    researcher = UserFactory(username="pw-researcher", role="researcher")
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/raters/")
    page.get_by_label("Username").fill("newcomer")
    page.get_by_role("button", name="Create rater").click()
    shown = page.locator("#shown-password")
    expect(shown).to_contain_text("temporary")
    password = shown.locator("code").inner_text()
    page.get_by_role("button", name="Log out").click()

    for width in (1440, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/login/?next=/rate/")
        page.get_by_label("Username").fill("newcomer")
        page.get_by_label("Password").fill(password)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url("**/account/password/?next=%2Frate%2F")
        expect(page.locator("#temporary-password")).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, f"temporary-password-{width}")
        # Every other page sends the rater back here.
        page.goto(f"{live_server.url}/pairwise/")
        page.wait_for_url("**/account/password/**")
        if width == 1440:
            page.get_by_role("button", name="Log out").click()

    page.get_by_label("Old password").fill(password)
    page.get_by_label("New password", exact=True).fill("my own long passphrase 9")
    page.get_by_label("New password confirmation").fill("my own long passphrase 9")
    page.get_by_role("button", name="Change password").click()
    page.wait_for_url(f"{live_server.url}/pairwise/")
    expect(page.get_by_text("Your password was changed.")).to_be_visible()
    page.goto(f"{live_server.url}/rate/")
    expect(page).to_have_url(f"{live_server.url}/rate/")
    shot(page, "after-password-800")
