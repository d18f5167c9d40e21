"""Logins and API tokens: brute-force lockout on every way in (django-axes), and tokens
that are hashed, expire and can be revoked (django-rest-knox)."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery"


@pytest.fixture
def person(settings):
    settings.AXES_FAILURE_LIMIT = 5
    user = UserFactory(username="lab-member", role="researcher")
    user.set_password(PASSWORD)
    user.save()
    return user


def _login_page(client, password):
    return client.post(
        reverse("login"), {"username": "lab-member", "password": password}
    )


def _admin_login(client, password):
    return client.post(
        "/django-admin/login/",
        {"username": "lab-member", "password": password, "next": "/django-admin/"},
    )


def _token_post(client, password):
    return client.post(
        reverse("api-token"),
        {"username": "lab-member", "password": password},
        format="json",
    )


def test_the_login_page_locks_out_after_the_limit_and_refuses_the_right_password(
    person,
):
    client = Client()
    for _ in range(4):
        assert _login_page(client, "wrong").status_code == 200  # the form again
    locked = _login_page(client, "wrong")
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert int(locked["Retry-After"]) == 15 * 60
    right = _login_page(client, PASSWORD)
    assert right.status_code == 429
    assert "_auth_user_id" not in client.session


def test_the_admin_login_locks_out_too(person):
    person.is_staff = True
    person.save()
    client = Client()
    for _ in range(5):
        _admin_login(client, "wrong")
    assert _admin_login(client, PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session


def test_token_creation_locks_out_with_a_json_429(person):
    client = APIClient()
    for _ in range(4):
        wrong = _token_post(client, "wrong")
        assert wrong.status_code == 400
        assert [p["field"] for p in wrong.json()["problems"]] == ["password"]
    assert _token_post(client, "wrong").status_code == 429
    locked = _token_post(client, PASSWORD)
    assert locked.status_code == 429
    assert locked["Retry-After"] == str(15 * 60)
    assert "Too many failed logins" in locked.json()["detail"]
    assert not AuthToken.objects.exists()


def test_an_admin_unlocks_with_the_axes_command(person):
    client = Client()
    for _ in range(5):
        _login_page(client, "wrong")
    assert _login_page(client, PASSWORD).status_code == 429
    call_command("axes_reset_username", "lab-member", stdout=StringIO())
    assert _login_page(client, PASSWORD).status_code == 302
    assert client.session["_auth_user_id"] == str(person.pk)


def test_a_successful_login_resets_the_count(person):
    client = Client()
    for _ in range(4):
        _login_page(client, "wrong")
    assert _login_page(client, PASSWORD).status_code == 302
    client.logout()
    for _ in range(4):
        _login_page(client, "wrong")
    assert _login_page(client, PASSWORD).status_code == 302


def test_another_username_from_the_same_address_is_not_locked(person):
    other = UserFactory(username="other-member", role="rater")
    other.set_password(PASSWORD)
    other.save()
    client = Client()
    for _ in range(5):
        _login_page(client, "wrong")
    response = client.post(
        reverse("login"), {"username": "other-member", "password": PASSWORD}
    )
    assert response.status_code == 302


# --- tokens -----------------------------------------------------------------------------


def _new_token(password=PASSWORD) -> str:
    response = _token_post(APIClient(), password)
    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) == {"token", "token_prefix", "created", "expiry"}
    return body["token"]


def _with(token: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def test_a_token_is_stored_hashed_and_expires_after_the_ttl(person, settings):
    token = _new_token()
    stored = AuthToken.objects.get()
    assert token not in (stored.digest, stored.token_key)
    assert stored.digest != token and len(stored.digest) == 128
    assert token.startswith(stored.token_key)
    ttl = stored.expiry - stored.created
    assert abs(ttl - timedelta(days=settings.API_TOKEN_TTL_DAYS)) < timedelta(minutes=1)
    assert _with(token).get("/api/datasets/").status_code == 200


def test_an_expired_token_is_refused_on_every_path(person, rater):
    token = _new_token()
    AuthToken.objects.update(expiry=timezone.now() - timedelta(seconds=1))
    assert _with(token).get("/api/datasets/").status_code == 401
    # The rater loop's one-query authentication refuses it as well.
    from flaskapp.tokens import token_create

    rater_token = token_create(user=rater).token
    AuthToken.objects.filter(user=rater).update(
        expiry=timezone.now() - timedelta(seconds=1)
    )
    response = _with(rater_token).get("/api/rate/campaigns/1/next/")
    assert response.status_code == 401


def test_revoking_the_current_token_and_all_tokens(person):
    first, second, third = _new_token(), _new_token(), _new_token()
    assert _with(first).delete(reverse("api-token")).status_code == 204
    assert _with(first).get("/api/datasets/").status_code == 401
    assert _with(second).get("/api/datasets/").status_code == 200
    revoked = _with(second).delete(reverse("api-tokens"))
    assert revoked.status_code == 200 and revoked.json() == {"revoked": 2}
    for token in (second, third):
        assert _with(token).get("/api/datasets/").status_code == 401


def test_the_list_shows_own_tokens_without_their_secret(person, rater):
    from flaskapp.tokens import token_create

    token_create(user=rater)  # someone else's
    mine, other = _new_token(), _new_token()
    rows = _with(mine).get(reverse("api-tokens")).json()
    assert len(rows) == 2
    assert {r["current"] for r in rows} == {True, False}
    assert all(set(r) == {"token_prefix", "created", "expiry", "current"} for r in rows)
    text = str(rows)
    assert mine not in text and other not in text


def test_token_endpoints_refuse_the_anonymous(person):
    anonymous = APIClient()
    assert anonymous.get(reverse("api-tokens")).status_code == 401
    assert anonymous.delete(reverse("api-tokens")).status_code == 401
    assert anonymous.delete(reverse("api-token")).status_code == 401
    assert _with("0" * 64).get(reverse("api-tokens")).status_code == 401


def test_an_inactive_user_gets_no_token(person):
    person.is_active = False
    person.save()
    assert _token_post(APIClient(), PASSWORD).status_code == 400
    assert not AuthToken.objects.exists()


def test_the_operator_command_makes_lists_and_revokes_tokens(person):
    out, err = StringIO(), StringIO()
    call_command("token", "lab-member", stdout=out, stderr=err)
    token = out.getvalue().strip()
    assert "not shown again" in err.getvalue()
    assert _with(token).get("/api/datasets/").status_code == 200
    listed = StringIO()
    call_command("token", "lab-member", "--list", stdout=listed)
    assert token[:15] in listed.getvalue() and token not in listed.getvalue()
    call_command("token", "lab-member", "--revoke-all", stdout=StringIO())
    assert _with(token).get("/api/datasets/").status_code == 401


def test_behind_proxies_the_lockout_counts_the_client_address(person, settings):
    settings.LOGIN_PROXY_COUNT = 1
    attacker = Client(HTTP_X_FORWARDED_FOR="203.0.113.9")
    for _ in range(5):
        _login_page(attacker, "wrong")
    assert _login_page(attacker, PASSWORD).status_code == 429
    # The same proxy (REMOTE_ADDR), another client: not locked.
    colleague = Client(HTTP_X_FORWARDED_FOR="198.51.100.7")
    assert _login_page(colleague, PASSWORD).status_code == 302
