"""Single sign-on in a real browser: the login page's button, the provider's own login
form (a real OpenID Connect provider in a subprocess, tests/flaskapp/oidc_op), back
signed in with the mapped role, logout at both ends; and a person whose groups map to
no workspace."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from flaskapp.models import Membership, Workspace
from tests.browser.conftest import shot
from tests.flaskapp.oidc_op import PASSWORD, running_provider, sso_settings

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def provider(tmp_path_factory, live_server):
    with running_provider(
        tmp_path_factory.mktemp("op"), app_urls=[live_server.url]
    ) as url:
        yield url


@pytest.fixture
def sso(settings, provider):
    sso_settings(settings, provider, role_map="lab-a=lab-a:researcher", name="Lab IdP")
    return Workspace.objects.create(name="Lab A", slug="lab-a")


def _sign_in_at_provider(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/login/")
    page.get_by_role("link", name="Sign in with Lab IdP").click()
    page.wait_for_url("http://127.0.0.1:*/accounts/login/**")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def test_sign_in_and_out_through_the_provider(page, live_server, sso):
    page.goto(f"{live_server.url}/login/")
    shot(page, "sso-login")
    _sign_in_at_provider(page, live_server, "bob")
    page.wait_for_url(f"{live_server.url}/")
    expect(page.get_by_text("bob", exact=True).first).to_be_visible()
    assert Membership.objects.get(workspace=sso).role == "researcher"
    page.get_by_role("button", name="Log out").click()
    # through the provider's end-session endpoint, back to our login page
    page.wait_for_url(f"{live_server.url}/login/")
    page.goto(f"{live_server.url}/")
    page.wait_for_url(f"{live_server.url}/login/?next=/")
    # the provider's session ended too: it asks for the password again
    page.get_by_role("link", name="Sign in with Lab IdP").click()
    page.wait_for_url("http://127.0.0.1:*/accounts/login/**")


def test_no_mapped_group_lands_on_the_no_workspace_page(page, live_server, sso):
    _sign_in_at_provider(page, live_server, "carol")
    page.wait_for_url(f"{live_server.url}/sso/no-workspace/")
    expect(page.get_by_role("heading")).to_contain_text(
        "Your account has no workspace yet"
    )
    shot(page, "sso-no-workspace")
    page.goto(f"{live_server.url}/datasets/")
    page.wait_for_url(f"{live_server.url}/sso/no-workspace/")
