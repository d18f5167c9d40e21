"""A workspace owner manages people in the browser: changes a role in place (htmx),
is refused demoting the last owner, makes an invite link that a new person opens to
sign up, creates accounts in bulk; an instance admin sees every workspace. Takes the
screenshots of these pages ($FLASK_SCREENSHOTS)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from flaskapp.models import Membership
from tests.browser.conftest import htmx_idle, login, shot
from tests.flaskapp.people_lab import make_lab, member_role

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_owner_manages_members_and_invites(page, live_server, browser):
    lab = make_lab()
    login(page, live_server, lab.owner)
    page.goto(f"{live_server.url}/workspaces/")
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Members")).to_be_visible()
    # The click returns once the page commits; htmx binds the selects when the
    # deferred scripts have run, so a change made before "load" would post nothing.
    page.wait_for_load_state("load")
    shot(page, "settings-1366")

    # A role changes in place: the select posts with htmx, the table comes back.
    page.get_by_label("Role of a-rater").select_option("reviewer")
    expect(page.locator("#member-note")).to_have_text("a-rater is now reviewer.")
    htmx_idle(page)  # the swapped-in selects are bound before the next change
    assert member_role(lab.a, lab.rater) == "reviewer"
    page.get_by_label("Role of a-owner").select_option("rater")
    expect(page.locator("#member-problems")).to_contain_text("last owner")
    shot(page, "settings-last-owner")
    assert member_role(lab.a, lab.owner) == "owner"

    page.get_by_label("Uses").fill("3")
    page.get_by_role("button", name="Make link").click()
    url = page.locator("#new-invite-url").input_value()
    assert "/invite/" in url
    shot(page, "settings-invite-made")

    # A new person opens the link in another browser and signs up.
    other = browser.new_context(viewport={"width": 800, "height": 900})
    newcomer = other.new_page()
    newcomer.goto(url)
    expect(newcomer.get_by_role("heading", name="Join Lab A")).to_be_visible()
    shot(newcomer, "invite-page-800")
    newcomer.get_by_label("Username").fill("newcomer")
    newcomer.get_by_label("Password", exact=True).fill("a long own passphrase 7")
    newcomer.get_by_label("Password again").fill("a long own passphrase 7")
    newcomer.get_by_role("button", name="Create account and join").click()
    expect(newcomer.get_by_text("Your account was created")).to_be_visible()
    shot(newcomer, "invite-joined-800")
    assert newcomer.evaluate("document.documentElement.scrollWidth") <= 800
    other.close()
    assert Membership.objects.get(user__username="newcomer").role == "rater"

    page.goto(f"{live_server.url}/workspaces/{lab.a.pk}/members/bulk/")
    page.get_by_label("Or paste the lines").fill(
        "username,email,role\nada,ada@example.org,rater\ngrace,,reviewer\n"
    )
    page.get_by_role("button", name="Create accounts").click()
    expect(page.locator("#bulk-table")).to_contain_text("new account")
    shot(page, "bulk-result")

    page.set_viewport_size({"width": 800, "height": 900})
    page.goto(f"{live_server.url}/workspaces/{lab.a.pk}/settings/")
    expect(page.locator("#member-table")).to_contain_text("newcomer")
    shot(page, "settings-800")


def test_admin_sees_every_workspace(page, live_server):
    lab = make_lab()
    login(page, live_server, lab.admin)
    page.goto(f"{live_server.url}/workspaces/")
    expect(page.locator("#workspace-table")).to_contain_text("Lab B")
    shot(page, "admin-workspaces")
    page.get_by_label("Name").fill("Lab C")
    page.get_by_label("First owner").fill("outsider")
    page.get_by_role("button", name="Create workspace").click()
    expect(page.get_by_text("Workspace “Lab C” created.")).to_be_visible()
    page.goto(f"{live_server.url}/users/")
    expect(page.locator("#user-table")).to_contain_text("outsider")
    shot(page, "admin-users")
