"""Bulk accounts from a CSV (`flaskapp.people.services.bulk` and its page): all or
nothing, every problem by line and field, existing accounts added as members, new
accounts with a temporary password shown once."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import TemporaryPassword
from flaskapp.models import AuditEvent, Membership
from tests.flaskapp.people_lab import make_lab, member_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(db):
    return make_lab()


def _post(client, ws, text: str | None = None, file: bytes | None = None):
    data = {"lines": text or ""}
    if file is not None:
        data["file"] = SimpleUploadedFile("people.csv", file, "text/csv")
    return client.post(f"/workspaces/{ws.pk}/members/bulk/create/", data)


def test_bulk_page_for_owners(lab, client_for):
    page = client_for(lab.owner).get(f"/workspaces/{lab.a.pk}/members/bulk/")
    assert page.status_code == 200 and "username,email,role" in page.content.decode()


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 403), ("reviewer", 403), ("rater", 403), ("outsider", 404)],
)
def test_bulk_refused_below_owner(lab, client_for, who, status):
    client = client_for(getattr(lab, who))
    assert client.get(f"/workspaces/{lab.a.pk}/members/bulk/").status_code == status
    assert _post(client, lab.a, "username\nsneaky\n").status_code == status
    assert not User.objects.filter(username="sneaky").exists()


def test_bulk_anonymous_goes_to_login(lab, client_for):
    response = client_for(None).get(f"/workspaces/{lab.a.pk}/members/bulk/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_bulk_creates_accounts_adds_existing_ones_and_shows_passwords_once(
    lab, client_for
):
    csv = (
        "username,email,role\n"
        "ada,ada@example.org,rater\n"
        "grace,,Reviewer\n"
        "outsider,out@example.org,researcher\n"
        "a-rater,,owner\n"
        "linus,,\n"
    )
    response = _post(client_for(lab.owner), lab.a, file=csv.encode())
    page = response.content.decode()
    assert response.status_code == 200, page
    assert (
        "no-cache" in response["Cache-Control"]
        or "no-store" in response["Cache-Control"]
    )
    passwords = dict(re.findall(r'data-password-for="([^"]+)">([^<]+)<', page))
    assert set(passwords) == {"ada", "grace", "linus"}
    for name, password in passwords.items():
        user = User.objects.get(username=name)
        assert user.check_password(password)
        assert TemporaryPassword.objects.filter(user=user).exists()
    assert User.objects.get(username="ada").email == "ada@example.org"
    assert member_role(lab.a, User.objects.get(username="grace")) == "reviewer"
    assert (
        member_role(lab.a, User.objects.get(username="linus")) == "rater"
    )  # empty role
    assert member_role(lab.a, lab.outsider) == "researcher"
    assert member_role(lab.a, lab.rater) == "rater"  # already a member: unchanged
    assert "already a member" in page
    audit = list(AuditEvent.objects.filter(action="account.created"))
    assert len(audit) == 3 and all("password" not in str(e.after) for e in audit)
    # Not shown again.
    again = (
        client_for(lab.owner).get(f"/workspaces/{lab.a.pk}/settings/").content.decode()
    )
    assert not any(p in again for p in passwords.values())


def test_bulk_with_any_problem_changes_nothing_and_names_every_line(lab, client_for):
    csv = (
        "username,email,role\n"
        "fine-one,fine@example.org,rater\n"  # line 2: fine
        "dup,dup1@example.org,rater\n"  # line 3
        "DUP,dup2@example.org,rater\n"  # line 4: duplicate of line 3
        "bad-mail,not-an-email,rater\n"  # line 5
        "bad-role,,king\n"  # line 6
        "mail-thief,owner@a.example.org,rater\n"  # line 7: another account's e-mail
        "a-reviewer,other@example.org,rater\n"  # line 8: existing, e-mail differs
        "bad name!,,rater\n"  # line 9
        "twice,fine@example.org,rater\n"  # line 10: e-mail repeats line 2
    )
    before_users = User.objects.count()
    before_members = Membership.objects.count()
    response = _post(client_for(lab.owner), lab.a, csv)
    page = response.content.decode()
    assert response.status_code == 400
    for expected in (
        'data-field="username" data-line="4"',
        'data-field="email" data-line="5"',
        'data-field="role" data-line="6"',
        'data-field="email" data-line="7"',
        'data-field="email" data-line="8"',
        'data-field="username" data-line="9"',
        'data-field="email" data-line="10"',
    ):
        assert expected in page, expected
    assert 'data-line="2"' not in page and 'data-line="3"' not in page
    assert User.objects.count() == before_users
    assert Membership.objects.count() == before_members
    assert csv.splitlines()[1] in page  # the pasted lines stay to fix them


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("", "choose a CSV file"),
        ("email,role\nx@y.org,rater\n", "name the columns"),
        ("username,email,role,age\nx,,rater,3\n", "unknown column"),
        ("username,email,role\n", "no line after the header"),
        ("username\n" + "\n".join(f"u{i}" for i in range(501)), "at most 500"),
    ],
)
def test_bulk_bad_files(lab, client_for, data, message):
    response = _post(client_for(lab.owner), lab.a, data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert 'data-field="file"' in response.content.decode()


def test_bulk_refuses_a_file_that_is_not_utf8(lab, client_for):
    response = _post(
        client_for(lab.owner), lab.a, file="username\nzoë\n".encode("latin-1")
    )
    assert response.status_code == 400 and "UTF-8" in response.content.decode()
