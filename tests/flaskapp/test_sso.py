"""Single sign-on against a real OpenID Connect provider (flaskapp/sso, issue 35).

The provider is django-oidc-provider in a tiny Django project of its own
(tests/flaskapp/oidc_op), started once for this module as a subprocess on a free
port. The browser's part is played by Django's test client on our side and by a
`requests` session on the provider's side (its login form, its redirects); the code
exchange, the keys and the userinfo go over real HTTP from our backend to the provider.
A tampered ID token comes from a real HTTP proxy in front of the token endpoint.
Between sign-ins, roles follow the provider (the refresh, with groups changed in the
provider's own database), and a single sign-on user makes API tokens on sso/token/.
"""

from __future__ import annotations

import io
import json
import logging
import re
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.exceptions import ImproperlyConfigured
from django.core.management import CommandError, call_command
from knox.models import AuthToken

from flaskapp.models import AuditEvent, Membership, SsoIdentity, Workspace
from flaskapp.sso.config import ROLES, role_map_parse
from flaskapp.sso.services import SsoRefused, sso_memberships_sync, sso_user_sync
from flaskapp.sso.views import VERIFIED_AT_SESSION_KEY
from tests.flaskapp.oidc_op import (
    CLIENT_ID,
    CLIENT_SECRET,
    PASSWORD,
    PEOPLE,
    free_port,
    running_provider,
    sso_settings,
)
from tests.flaskapp.test_deploy_settings import STRONG_KEY, manage

PROVIDER_NAME = "Lab IdP"
ROLE_MAP = (
    "lab-a-admins=lab-a:owner, lab-a=lab-a:researcher, lab-a=lab-b:rater, "
    "ghosts=no-such-workspace:rater"
)

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def provider_dir(tmp_path_factory):
    """The provider's working directory (its SQLite database: `op.sqlite3`)."""
    return tmp_path_factory.mktemp("op")


@pytest.fixture(scope="module")
def provider(provider_dir):
    """The running provider, for this module (the test client is http://testserver)."""
    with running_provider(provider_dir, app_urls=["http://testserver"]) as url:
        yield url


@pytest.fixture
def sso(settings, provider):
    """Single sign-on turned on against the provider; the workspaces of the map."""
    sso_settings(settings, provider, role_map=ROLE_MAP, name=PROVIDER_NAME)
    Workspace.objects.create(name="Lab A", slug="lab-a")
    Workspace.objects.create(name="Lab B", slug="lab-b")
    return provider


def _provider_login(browser: requests.Session, url: str, username: str) -> str:
    """Play the person at the provider from `url` (its authorize URL): log in on its
    form when asked, follow its redirects; the URL it finally sends the browser to
    outside the provider (our callback)."""
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    for _ in range(10):
        answer = browser.get(url, allow_redirects=False, timeout=10)
        if answer.status_code == 200 and "csrfmiddlewaretoken" in answer.text:
            token = re.search(
                r'name="csrfmiddlewaretoken" value="([^"]+)"', answer.text
            )
            nxt = re.search(r'name="next" value="([^"]*)"', answer.text)
            answer = browser.post(
                url,
                data={
                    "csrfmiddlewaretoken": token.group(1),
                    "username": username,
                    "password": PASSWORD,
                    "next": nxt.group(1).replace("&amp;", "&"),
                },
                allow_redirects=False,
                timeout=10,
            )
        assert answer.status_code == 302, answer.text[:500]
        location = answer.headers["Location"]
        url = location if "://" in location else origin + location
        if not url.startswith(origin):
            return url
    raise AssertionError("the provider kept redirecting")


def _sign_in(
    client, username: str, browser: requests.Session | None = None, next_url=""
):
    """The whole way in; our callback's answer (not followed)."""
    browser = browser or requests.Session()
    start = client.get("/sso/login/" + (f"?next={next_url}" if next_url else ""))
    assert start.status_code == 302
    callback = _provider_login(browser, start["Location"], username)
    assert callback.startswith("http://testserver/sso/callback/?")
    return client.get(callback.removeprefix("http://testserver"))


def _signed_in_user(client):
    user_id = client.session.get("_auth_user_id")
    return get_user_model().objects.get(pk=user_id) if user_id else None


def _roles(user) -> dict[str, str]:
    return dict(
        Membership.objects.filter(user=user).values_list("workspace__slug", "role")
    )


def csp_directive(response, name: str) -> str:
    """One directive of the response's Content-Security-Policy, as written."""
    policy = [d.strip() for d in response["Content-Security-Policy"].split(";")]
    return next(d for d in policy if d.split()[0] == name)


# --- off --------------------------------------------------------------------------------


def test_sso_off_shows_no_button_and_its_urls_are_404(client, settings):
    settings.SSO_ENABLED = False
    page = client.get("/login/")
    assert page.status_code == 200
    assert b"Sign in with" not in page.content
    assert csp_directive(page, "form-action") == "form-action 'self'"
    for url in ("/sso/login/", "/sso/callback/?code=x&state=y", "/sso/no-workspace/"):
        assert client.get(url).status_code == 404, url


def test_login_page_offers_the_provider_when_on(client, sso):
    page = client.get("/login/?next=/datasets/")
    assert page.status_code == 200
    assert f"Sign in with {PROVIDER_NAME}".encode() in page.content
    assert b'href="/sso/login/?next=/datasets/"' in page.content
    assert CLIENT_SECRET.encode() not in page.content
    # the logout form of every page may be redirected to the provider's logout
    assert csp_directive(page, "form-action") == f"form-action 'self' {sso}"


# --- the way in -------------------------------------------------------------------------


def test_first_sign_in_creates_the_user_with_the_mapped_roles(client, sso, caplog):
    caplog.set_level(logging.DEBUG)
    answer = _sign_in(client, "alice")
    assert answer.status_code == 302
    assert answer["Location"] == "/"
    user = _signed_in_user(client)
    assert user.username == "alice"
    assert user.email == "alice@lab-a.example"
    assert not user.has_usable_password()
    assert SsoIdentity.objects.get(user=user).issuer == f"{sso}/openid"
    # lab-a-admins -> owner beats lab-a -> researcher; lab-a -> lab-b rater
    assert _roles(user) == {"lab-a": "owner", "lab-b": "rater"}
    events = AuditEvent.objects.filter(
        action="membership.added", target_id=str(user.pk)
    )
    assert sorted((e.workspace.slug, e.after["role"]) for e in events) == [
        ("lab-a", "owner"),
        ("lab-b", "rater"),
    ]
    assert all(e.after["source"] == "sso" for e in events)
    # the home page opens to the signed-in user
    home = client.get("/")
    assert home.status_code == 200
    # neither the tokens (JWTs start "eyJ") nor the client secret in a page or a log
    for text in (home.content.decode(), caplog.text):
        assert "eyJ" not in text and CLIENT_SECRET not in text


def test_second_sign_in_finds_the_same_user_and_audits_nothing_new(client, sso):
    _sign_in(client, "bob")
    first = _signed_in_user(client)
    audited = AuditEvent.objects.count()
    client.logout()
    answer = _sign_in(client, "bob", next_url="/datasets/")
    assert answer["Location"] == "/datasets/"
    assert _signed_in_user(client) == first
    assert get_user_model().objects.filter(email="bob@lab-a.example").count() == 1
    assert AuditEvent.objects.count() == audited
    assert _roles(first) == {"lab-a": "researcher", "lab-b": "rater"}


def test_a_local_account_of_the_same_name_is_not_taken_over(client, sso):
    local = get_user_model().objects.create_user(
        "dave", email="dave@lab-a.example", password="local-password-123"
    )
    _sign_in(client, "dave")
    sso_user = _signed_in_user(client)
    assert sso_user != local
    assert sso_user.username.startswith("dave-")
    assert _roles(local) == {}
    client.logout()
    # the local account keeps working with its password
    answer = client.post(
        "/login/", {"username": "dave", "password": "local-password-123"}
    )
    assert answer.status_code == 302
    assert _signed_in_user(client) == local


def test_a_user_with_no_mapped_role_sees_only_the_no_workspace_page(client, sso):
    answer = _sign_in(client, "carol")
    assert answer.status_code == 302
    assert answer["Location"] == "/sso/no-workspace/"
    user = _signed_in_user(client)
    assert user.username == "carol"
    assert _roles(user) == {}
    page = client.get("/sso/no-workspace/")
    assert page.status_code == 200
    assert b"Your account has no workspace yet" in page.content
    assert b"Ask an owner" in page.content
    # no access elsewhere: pages send them back (htmx: the whole page), the API says why
    assert client.get("/")["Location"] == "/sso/no-workspace/"
    swap = client.get("/datasets/", headers={"HX-Request": "true"})
    assert swap["HX-Redirect"] == "/sso/no-workspace/"
    api = client.get("/api/datasets/")
    assert api.status_code == 403
    assert "no workspace yet" in api.json()["detail"]
    # once an owner adds them, the page lets them in
    Membership.objects.create(
        workspace=Workspace.objects.get(slug="lab-a"), user=user, role="rater"
    )
    assert client.get("/sso/no-workspace/")["Location"] == "/"
    assert client.get("/").status_code == 200


def test_an_off_site_next_is_ignored(client, sso):
    answer = _sign_in(client, "bob", next_url="https://evil.example/")
    assert answer["Location"] == "/"


def test_a_deactivated_account_is_refused(client, sso):
    _sign_in(client, "bob")
    user = _signed_in_user(client)
    client.logout()
    get_user_model().objects.filter(pk=user.pk).update(is_active=False)
    answer = _sign_in(client, "bob")
    assert answer.status_code == 403
    assert b"deactivated" in answer.content
    assert _signed_in_user(client) is None


def test_sso_on_needs_every_endpoint_and_a_valid_role_map(tmp_path):
    base = {"DJANGO_SECRET_KEY": STRONG_KEY, "OIDC_RP_CLIENT_ID": "flask-eval"}
    done = manage(tmp_path, "check", **base, OIDC_RP_CLIENT_SECRET=CLIENT_SECRET)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "OIDC_OP_ISSUER, OIDC_OP_AUTHORIZATION_ENDPOINT" in done.stderr
    assert CLIENT_SECRET not in done.stderr
    done = manage(
        tmp_path, "check", DJANGO_SECRET_KEY=STRONG_KEY, OIDC_ROLE_MAP="lab-a=lab-a"
    )
    assert done.returncode == 2
    assert "OIDC_ROLE_MAP: entry 'lab-a=lab-a'" in done.stderr


# --- the way out ------------------------------------------------------------------------


def test_logout_ends_the_local_and_the_provider_session(client, sso):
    browser = requests.Session()
    _sign_in(client, "bob", browser)
    answer = client.post("/logout/")
    assert answer.status_code == 302
    out = urlsplit(answer["Location"])
    assert f"{out.scheme}://{out.netloc}{out.path}" == f"{sso}/openid/end-session"
    query = parse_qs(out.query)
    assert query["post_logout_redirect_uri"] == ["http://testserver/login/"]
    assert query["client_id"] == [CLIENT_ID]
    assert _signed_in_user(client) is None
    assert client.get("/")["Location"].startswith("/login/")
    # the provider ends its session and sends the browser back to our login page
    back = browser.get(answer["Location"], allow_redirects=False, timeout=10)
    assert back.status_code == 302
    assert back.headers["Location"] == "http://testserver/login/"
    # signing in again asks for the provider's password again
    start = client.get("/sso/login/")
    asked = browser.get(start["Location"], allow_redirects=False, timeout=10)
    assert "/accounts/login/" in asked.headers["Location"]


def test_logout_of_a_local_account_stays_local(client, sso):
    get_user_model().objects.create_user("erin", password="local-password-123")
    client.post("/login/", {"username": "erin", "password": "local-password-123"})
    answer = client.post("/logout/")
    assert answer["Location"] == "/login/"
    assert _signed_in_user(client) is None


# --- refusals ---------------------------------------------------------------------------


class _TamperingProxy(BaseHTTPRequestHandler):
    """Forwards the token request to the provider and changes one character of the ID
    token's signature in its answer."""

    upstream = ""

    def do_POST(self):  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers["Content-Length"]))
        answer = requests.post(
            self.upstream,
            data=body,
            headers={"Content-Type": self.headers["Content-Type"]},
            timeout=10,
        )
        tokens = answer.json()
        header, payload, signature = tokens["id_token"].split(".")
        flipped = "A" if signature[10] != "A" else "B"
        tokens["id_token"] = ".".join(
            [header, payload, signature[:10] + flipped + signature[11:]]
        )
        data = json.dumps(tokens).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def tampering_proxy(sso, settings):
    handler = type("Proxy", (_TamperingProxy,), {"upstream": f"{sso}/openid/token"})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    settings.OIDC_OP_TOKEN_ENDPOINT = f"http://127.0.0.1:{server.server_port}/token"
    yield
    server.shutdown()


def _assert_nobody_signed_in(client, username):
    assert _signed_in_user(client) is None
    assert not get_user_model().objects.filter(username__startswith=username).exists()
    assert "oidc_id_token" not in client.session


def test_a_tampered_id_token_is_refused_with_a_clear_message(
    client, sso, tampering_proxy, caplog
):
    caplog.set_level(logging.INFO)
    answer = _sign_in(client, "dave")
    assert answer.status_code == 403
    text = answer.content.decode()
    assert "failed verification" in text
    assert "nobody was signed in" in text
    assert CLIENT_SECRET not in text and CLIENT_SECRET not in caplog.text
    assert "eyJ" not in text and "eyJ" not in caplog.text  # no token, in part or whole
    _assert_nobody_signed_in(client, "dave")


def test_an_id_token_of_another_issuer_is_refused(client, sso, settings):
    settings.OIDC_OP_ISSUER = "https://idp.other.example"
    answer = _sign_in(client, "dave")
    assert answer.status_code == 403
    assert b"issued by another provider" in answer.content
    _assert_nobody_signed_in(client, "dave")


def test_an_unreachable_provider_is_a_502_page_without_secrets(
    client, sso, settings, caplog
):
    settings.OIDC_OP_TOKEN_ENDPOINT = f"http://127.0.0.1:{free_port()}/token"
    answer = _sign_in(client, "dave")
    assert answer.status_code == 502
    assert b"could not be reached" in answer.content
    assert CLIENT_SECRET not in answer.content.decode() + caplog.text
    _assert_nobody_signed_in(client, "dave")


def test_a_wrong_client_secret_is_refused_naming_the_status(client, sso, settings):
    settings.OIDC_RP_CLIENT_SECRET = "not-the-secret"
    answer = _sign_in(client, "dave")
    assert answer.status_code == 502
    assert b"refused the sign-in (HTTP 400)" in answer.content
    _assert_nobody_signed_in(client, "dave")


def test_a_callback_this_browser_did_not_start_is_a_400(client, sso):
    assert client.get("/sso/callback/?code=abc&state=forged").status_code == 400
    client.get("/sso/login/")  # a state now exists, but not this one
    answer = client.get("/sso/callback/?code=abc&state=forged")
    assert answer.status_code == 400
    assert b"not started in this browser" in answer.content
    assert _signed_in_user(client) is None


def test_the_provider_saying_no_is_shown(client, sso):
    start = client.get("/sso/login/")
    state = parse_qs(urlsplit(start["Location"]).query)["state"][0]
    answer = client.get(f"/sso/callback/?error=access_denied&state={state}")
    assert answer.status_code == 403
    assert b"did not sign you in (access_denied)" in answer.content


# --- the role map and the membership rule -------------------------------------------------


def test_role_map_parse_reads_entries_and_refuses_a_bad_one():
    assert role_map_parse("/lab-a=lab-a:owner,/lab-a=lab-b:rater ,") == {
        "/lab-a": [("lab-a", "owner"), ("lab-b", "rater")]
    }
    with pytest.raises(ImproperlyConfigured, match="'lab-a=lab-a'"):
        role_map_parse("lab-a=lab-a")
    with pytest.raises(ImproperlyConfigured, match="role 'boss'"):
        role_map_parse("x=lab-a:boss")


def test_the_map_knows_exactly_the_membership_roles():
    assert set(ROLES) == {value for value, _ in Membership.ROLE_CHOICES}


def test_memberships_follow_the_claims_in_managed_workspaces_only(db):
    user = get_user_model().objects.create_user("frank")
    lab_a = Workspace.objects.create(name="Lab A", slug="lab-a")
    other = Workspace.objects.create(name="Other", slug="other")
    Membership.objects.create(workspace=other, user=user, role="owner")
    mapping = role_map_parse(ROLE_MAP)
    sso_memberships_sync(user=user, claims={"groups": ["lab-a"]}, role_map=mapping)
    assert _roles(user) == {"lab-a": "researcher", "other": "owner"}
    changes = sso_memberships_sync(
        user=user, claims={"groups": "lab-a-admins"}, role_map=mapping
    )
    assert changes == [{"workspace": "lab-a", "before": "researcher", "after": "owner"}]
    event = AuditEvent.objects.get(action="membership.role_changed")
    assert (event.workspace, event.before, event.after["role"]) == (
        lab_a,
        {"role": "researcher"},
        "owner",
    )
    # no claim maps any more: the managed membership goes, the other one stays
    sso_memberships_sync(user=user, claims={}, role_map=mapping)
    assert _roles(user) == {"other": "owner"}
    assert AuditEvent.objects.filter(action="membership.removed").count() == 1


def test_claims_without_a_subject_sign_nobody_in(db):
    with pytest.raises(SsoRefused, match="no `sub` claim"):
        sso_user_sync(issuer="https://idp.example", claims={"email": "x@y.example"})
    with pytest.raises(SsoRefused, match="longer than 255"):
        sso_user_sync(issuer="https://idp.example", claims={"sub": "s" * 256})
    assert not SsoIdentity.objects.exists()


def test_a_mapped_workspace_that_does_not_exist_is_skipped_and_logged(db, caplog):
    user = get_user_model().objects.create_user("grace")
    changes = sso_memberships_sync(
        user=user, claims={"groups": ["ghosts"]}, role_map=role_map_parse(ROLE_MAP)
    )
    assert changes == [] and _roles(user) == {}
    assert "'no-such-workspace', which does not exist" in caplog.text


def test_the_password_page_of_a_single_sign_on_account_says_where_it_is(client, sso):
    _sign_in(client, "bob")
    page = client.get("/account/password/")
    assert page.status_code == 200
    assert b"you sign in with Lab IdP, where your password is kept" in page.content
    assert b"Change password</button>" not in page.content


def test_oidc_discover_prints_the_provider_variables(provider):
    out = io.StringIO()
    call_command("oidc_discover", f"{provider}/openid", stdout=out)
    lines = dict(line.split("=", 1) for line in out.getvalue().splitlines())
    assert lines["OIDC_OP_ISSUER"] == f"{provider}/openid"
    assert lines["OIDC_OP_TOKEN_ENDPOINT"] == f"{provider}/openid/token"
    assert lines["OIDC_OP_JWKS_ENDPOINT"] == f"{provider}/openid/jwks"
    assert lines["OIDC_OP_END_SESSION_ENDPOINT"] == f"{provider}/openid/end-session"


def test_oidc_discover_names_what_is_wrong(provider):
    with pytest.raises(CommandError, match="names the issuer"):
        call_command("oidc_discover", f"{provider}/openid/")
    with pytest.raises(CommandError, match=r"could not read .* \(HTTP 404\)"):
        call_command("oidc_discover", f"{provider}/nowhere")
    with pytest.raises(CommandError, match="http\\(s\\) URL"):
        call_command("oidc_discover", "idp.example.org")


# --- between sign-ins: roles follow the provider (SsoRefreshMiddleware) -------------------
# A person's groups are changed in the provider's own database, as its admin would. The
# refresh deadline is the library's session value: the tests move it into the past
# rather than wait for it.


@pytest.fixture
def provider_groups(provider_dir):
    """`set(username, groups)`: the person's groups at the provider from now on;
    everyone's groups are put back after the test (the provider serves the module)."""
    db = provider_dir / "op.sqlite3"

    def set_groups(username: str, groups: list[str]) -> None:
        with sqlite3.connect(db) as conn:
            (user_id,) = conn.execute(
                "SELECT id FROM auth_user WHERE username = ?", (username,)
            ).fetchone()
            conn.execute("DELETE FROM auth_user_groups WHERE user_id = ?", (user_id,))
            for name in groups:
                conn.execute(
                    "INSERT OR IGNORE INTO auth_group (name) VALUES (?)", (name,)
                )
                (group_id,) = conn.execute(
                    "SELECT id FROM auth_group WHERE name = ?", (name,)
                ).fetchone()
                conn.execute(
                    "INSERT INTO auth_user_groups (user_id, group_id) VALUES (?, ?)",
                    (user_id, group_id),
                )

    yield set_groups
    for name, person in PEOPLE.items():
        set_groups(name, person["groups"])


def _expire(client) -> None:
    """The refresh deadline the callback set is past (as after waiting for it)."""
    session = client.session
    session["oidc_id_token_expiration"] = time.time() - 1
    session.save()


def test_a_role_changed_at_the_provider_applies_without_a_new_login(
    client, sso, provider_groups
):
    browser = requests.Session()
    _sign_in(client, "bob", browser)
    bob = _signed_in_user(client)
    assert _roles(bob) == {"lab-a": "researcher", "lab-b": "rater"}
    provider_groups("bob", ["lab-a-admins"])
    # Before the deadline nothing is asked of the provider.
    assert client.get("/datasets/").status_code == 200
    assert _roles(bob) == {"lab-a": "researcher", "lab-b": "rater"}
    _expire(client)
    answer = client.get("/datasets/")
    assert answer.status_code == 302
    authorize = urlsplit(answer["Location"])
    assert authorize.path.endswith("/openid/authorize")
    assert parse_qs(authorize.query)["prompt"] == ["none"]
    # The provider's session is open: it answers at once, with no login form.
    first = browser.get(answer["Location"], allow_redirects=False, timeout=10)
    assert first.status_code == 302
    callback = first.headers["Location"]
    assert callback.startswith("http://testserver/sso/callback/?code=")
    back = client.get(callback.removeprefix("http://testserver"))
    assert back.status_code == 302 and back["Location"] == "/datasets/"
    assert _signed_in_user(client) == bob
    # lab-a-admins: owner of lab-a; no lab-a group: no rater role in lab-b.
    assert _roles(bob) == {"lab-a": "owner"}
    changes = {
        e.action: (e.before["role"], e.after["role"], e.after["source"])
        for e in AuditEvent.objects.filter(
            target_id=str(bob.pk), action__startswith="membership."
        ).exclude(action="membership.added")
    }
    assert changes == {
        "membership.role_changed": ("researcher", "owner", "sso"),
        "membership.removed": ("rater", None, "sso"),
    }
    assert client.get("/datasets/").status_code == 200  # the next deadline is ahead


def test_a_provider_that_no_longer_signs_the_person_in_ends_the_local_session(
    client, sso
):
    browser = requests.Session()
    _sign_in(client, "bob", browser)
    browser.cookies.clear()  # the person's session at the provider is over
    _expire(client)
    answer = client.get("/datasets/")
    refused = browser.get(answer["Location"], allow_redirects=False, timeout=10)
    callback = refused.headers["Location"]
    assert "error=login_required" in callback
    page = client.get(callback.removeprefix("http://testserver"))
    assert page.status_code == 403
    assert _signed_in_user(client) is None
    assert client.get("/datasets/")["Location"].startswith("/login/")


def test_a_deactivated_account_is_signed_out_at_the_refresh(client, sso):
    browser = requests.Session()
    _sign_in(client, "bob", browser)
    get_user_model().objects.filter(username="bob").update(is_active=False)
    _expire(client)
    callback = _provider_login(browser, client.get("/")["Location"], "bob")
    page = client.get(callback.removeprefix("http://testserver"))
    assert page.status_code == 403
    assert _signed_in_user(client) is None


def test_an_htmx_request_after_the_deadline_goes_to_the_provider_from_its_page(
    client, sso
):
    _sign_in(client, "bob")
    _expire(client)
    answer = client.get(
        "/datasets/",
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="http://testserver/campaigns/?status=active",
    )
    assert answer.status_code == 200
    assert "/openid/authorize?" in answer["HX-Redirect"]
    assert client.session["oidc_login_next"] == "/campaigns/?status=active"
    # A page of another site is never where the refresh comes back to.
    client.get(
        "/datasets/",
        HTTP_HX_REQUEST="true",
        HTTP_HX_CURRENT_URL="https://evil.example/x",
    )
    assert client.session["oidc_login_next"] == "/"


def test_api_calls_and_password_sessions_are_never_sent_to_the_provider(client, sso):
    _sign_in(client, "bob")
    _expire(client)
    assert client.get("/api/datasets/").status_code == 200
    local = get_user_model().objects.create_user("erin", password="pw-local-12345")
    other = client.__class__()
    other.force_login(local)
    session = other.session
    session["oidc_id_token_expiration"] = time.time() - 1
    session.save()
    assert other.get("/").status_code == 200


# --- API tokens of a single sign-on account -------------------------------------------


def test_a_single_sign_on_user_makes_a_working_api_token_after_a_recent_sign_in(
    client, sso
):
    _sign_in(client, "bob")
    bob = _signed_in_user(client)
    page = client.get("/sso/token/")
    assert page.status_code == 200
    assert b"Make a token</button>" in page.content
    assert b"data-token-reverify" not in page.content
    made = client.post("/sso/token/")
    assert made.status_code == 200
    token = made.context["issued"].token
    assert token.encode() in made.content
    assert made["Cache-Control"].startswith("max-age=0")
    listed = client.__class__().get(
        "/api/auth/tokens/", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert listed.status_code == 200 and len(listed.json()) == 1
    assert AuthToken.objects.filter(user=bob).count() == 1


def test_an_old_sign_in_is_confirmed_at_the_provider_before_a_token(client, sso):
    browser = requests.Session()
    _sign_in(client, "bob", browser)
    session = client.session
    session[VERIFIED_AT_SESSION_KEY] = time.time() - 11 * 60
    session.save()
    assert b"data-token-reverify" in client.get("/sso/token/").content
    answer = client.post("/sso/token/")
    assert answer.status_code == 302
    assert answer["Location"] == "/sso/login/?next=%2Fsso%2Ftoken%2F"
    assert not AuthToken.objects.exists()
    # Through the provider (its session is open: no form) and back: now it works.
    start = client.get(answer["Location"])
    callback = _provider_login(browser, start["Location"], "bob")
    back = client.get(callback.removeprefix("http://testserver"))
    assert back["Location"] == "/sso/token/"
    assert client.post("/sso/token/").status_code == 200
    assert AuthToken.objects.count() == 1


def test_a_password_account_is_sent_to_the_token_api_and_gets_no_token_here(
    client, sso
):
    local = get_user_model().objects.create_user("erin", password="pw-local-12345")
    client.force_login(local)
    page = client.post("/sso/token/")
    assert page.status_code == 400
    assert b"POST /api/auth/token/" in page.content
    assert not AuthToken.objects.exists()


def test_the_token_api_points_single_sign_on_accounts_to_the_page(client, sso):
    _sign_in(client, "bob")
    answer = client.__class__().post(
        "/api/auth/token/",
        {"username": "bob", "password": "anything"},
        content_type="application/json",
    )
    assert answer.status_code == 400
    assert "/sso/token/" in answer.json()["problems"][0]["message"]
