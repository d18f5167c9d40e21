"""A password an admin or researcher set is temporary: its owner must choose their own
at their next login before anything else, and gets no API token before."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from annotation.models import TemporaryPassword
from annotation.services.raters import rater_create, rater_password_reset

pytestmark = pytest.mark.django_db

CHANGE = reverse("password-change")
FACTORY_PASSWORD = "pw-123456"  # tests.factories.UserFactory's
NEW_PASSWORD = "a fresh long passphrase 42"


def log_in(username: str, password: str) -> Client:
    client = Client()
    response = client.post(
        reverse("login"), {"username": username, "password": password}
    )
    assert response.status_code == 302, response.content.decode()[:500]
    return client


@pytest.fixture
def new_rater(researcher):
    rater, password = rater_create(user=researcher, username="fresh-rater")
    return rater, password


def test_a_created_rater_must_choose_a_password_first(new_rater, researcher):
    rater, password = new_rater
    assert TemporaryPassword.objects.get(user=rater).set_by == researcher
    client = log_in("fresh-rater", password)
    for path in ("/", "/rate/", "/pairwise/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith(f"{CHANGE}?next=")
    page = client.get(CHANGE)
    assert page.status_code == 200 and b'id="temporary-password"' in page.content
    api = client.get("/api/rate/campaigns/")
    assert api.status_code == 403 and "choose your own" in api.json()["detail"]
    # Logging out stays possible.
    assert client.post(reverse("logout")).status_code == 302


def test_choosing_a_password_ends_the_temporary_state_and_keeps_the_session(new_rater):
    rater, password = new_rater
    client = log_in("fresh-rater", password)
    wrong = client.post(
        CHANGE,
        {"old_password": "nope", "new_password1": NEW_PASSWORD,
         "new_password2": NEW_PASSWORD},
    )  # fmt: skip
    assert wrong.status_code == 200 and TemporaryPassword.objects.filter(user=rater)
    response = client.post(
        CHANGE,
        {"old_password": password, "new_password1": NEW_PASSWORD,
         "new_password2": NEW_PASSWORD, "next": "/rate/"},
    )  # fmt: skip
    assert response.status_code == 302 and response["Location"] == "/rate/"
    assert not TemporaryPassword.objects.filter(user=rater).exists()
    assert client.get("/rate/").status_code == 200  # same session, free to go
    log_in("fresh-rater", NEW_PASSWORD)


def test_next_must_stay_on_this_site(new_rater):
    rater, password = new_rater
    client = log_in("fresh-rater", password)
    response = client.post(
        CHANGE,
        {"old_password": password, "new_password1": NEW_PASSWORD,
         "new_password2": NEW_PASSWORD, "next": "https://evil.example/"},
    )  # fmt: skip
    assert response["Location"] == "/"


def test_no_api_token_with_a_temporary_password(new_rater, client):
    rater, password = new_rater
    response = client.post(
        "/api/auth/token/",
        {"username": "fresh-rater", "password": password},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert response.json()["problems"][0]["field"] == "password"
    assert "temporary" in response.json()["problems"][0]["message"]


def test_a_reset_password_is_temporary_again(new_rater, researcher):
    rater, password = new_rater
    TemporaryPassword.objects.filter(user=rater).delete()
    typed = "another long passphrase 7"
    rater_password_reset(user=researcher, rater=rater, password=typed)
    assert TemporaryPassword.objects.filter(user=rater).exists()
    client = log_in("fresh-rater", typed)
    assert client.get("/").status_code == 302


def test_other_users_are_not_held_and_may_change_their_password(researcher):
    client = log_in(researcher.username, FACTORY_PASSWORD)
    assert client.get("/").status_code == 200
    page = client.get(CHANGE)
    assert page.status_code == 200 and b'id="temporary-password"' not in page.content
    # The header's user name leads here.
    assert f'class="nav-account" href="{CHANGE}"'.encode() in client.get("/").content


def test_the_password_page_needs_a_login(client):
    response = client.get(CHANGE)
    assert response.status_code == 302 and response["Location"].startswith("/login/")
