"""The workspaces and people pages (`flaskapp.people.views`): the workspace list,
the settings page and its member actions (full page and htmx), the admin's create,
rename, delete and users pages. Every page: the happy path, each refused role, bad
input naming the field."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from annotation.models import TemporaryPassword
from flaskapp.models import AuditEvent, Membership, Workspace
from tests.flaskapp.people_lab import make_lab, member_role

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def lab(db):
    return make_lab()


def settings_url(ws) -> str:
    return f"/workspaces/{ws.pk}/settings/"


def test_workspace_list_shows_my_workspaces_and_roles(lab, client_for):
    Membership.objects.create(workspace=lab.b, user=lab.rater, role="reviewer")
    page = client_for(lab.rater).get("/workspaces/").content.decode()
    assert "Lab A" in page and "Lab B" in page and "reviewer" in page
    assert "Default" not in page
    assert settings_url(lab.a) not in page  # a rater manages nothing


def test_workspace_list_links_an_owner_to_settings(lab, client_for):
    page = client_for(lab.owner).get("/workspaces/").content.decode()
    assert settings_url(lab.a) in page
    assert "New workspace" not in page


def test_admin_sees_every_workspace_with_counts_and_creates_one(lab, client_for):
    client = client_for(lab.admin)
    page = client.get("/workspaces/").content.decode()
    assert "Lab A" in page and "Lab B" in page and "New workspace" in page
    response = client.post("/workspaces/new/", {"name": "Lab C", "owner": "outsider"})
    ws = Workspace.objects.get(name="Lab C")
    assert response.status_code == 302 and response["Location"] == settings_url(ws)
    assert member_role(ws, lab.outsider) == "owner"


def test_create_workspace_bad_input_and_refused_roles(lab, client_for):
    response = client_for(lab.admin).post("/workspaces/new/", {"name": "Lab B"})
    assert response.status_code == 400
    assert 'data-field="name"' in response.content.decode()
    assert (
        client_for(lab.owner).post("/workspaces/new/", {"name": "Z"}).status_code == 403
    )
    anonymous = client_for(None).post("/workspaces/new/", {"name": "Z"})
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    assert not Workspace.objects.filter(name="Z").exists()


def test_settings_page_lists_members_invites_and_changes(
    lab, client_for, django_assert_max_num_queries
):
    client = client_for(lab.owner)
    with django_assert_max_num_queries(14):
        response = client.get(settings_url(lab.a))
    page = response.content.decode()
    assert response.status_code == 200
    for name in ("a-owner", "a-researcher", "a-reviewer", "a-rater"):
        assert name in page
    assert "Invite links" in page and "Add a member" in page
    assert "Rename" not in page  # instance admins only


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 403), ("reviewer", 403), ("rater", 403), ("outsider", 404),
     ("owner_b", 404)],
)  # fmt: skip
def test_settings_page_refused(lab, client_for, who, status):
    response = client_for(getattr(lab, who)).get(settings_url(lab.a))
    assert response.status_code == status
    assert "member-table" not in response.content.decode()


def test_settings_page_sends_anonymous_to_login(lab, client_for):
    response = client_for(None).get(settings_url(lab.a))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_add_member_by_email(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/add/",
        {"user": "out@example.org", "role": "researcher"},
    )
    assert response.status_code == 302
    assert member_role(lab.a, lab.outsider) == "researcher"


def test_add_member_unknown_account_names_the_field(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/add/", {"user": "ghost", "role": "rater"}
    )
    page = response.content.decode()
    assert response.status_code == 400
    assert 'data-field="user"' in page and "invite link" in page
    assert 'value="ghost"' in page  # what was typed stays


@pytest.mark.parametrize("who", ["researcher", "reviewer", "rater"])
def test_add_member_refused_below_owner(lab, client_for, who):
    response = client_for(getattr(lab, who)).post(
        f"/workspaces/{lab.a.pk}/members/add/", {"user": "outsider", "role": "owner"}
    )
    assert response.status_code == 403
    assert member_role(lab.a, lab.outsider) is None


def test_role_change_with_htmx_answers_the_member_table(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.rater.pk}/role/",
        {"role": "reviewer"},
        **HX,
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body and 'id="member-section"' in body
    assert "a-rater is now reviewer." in body
    assert member_role(lab.a, lab.rater) == "reviewer"
    assert response["Vary"].find("HX-Request") >= 0


def test_role_change_without_htmx_redirects(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.rater.pk}/role/", {"role": "researcher"}
    )
    assert response.status_code == 302 and response["Location"] == settings_url(lab.a)
    assert member_role(lab.a, lab.rater) == "researcher"


def test_demoting_the_last_owner_is_refused_in_the_table(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.owner.pk}/role/", {"role": "rater"}, **HX
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "last owner" in body and 'data-field="role"' in body
    assert member_role(lab.a, lab.owner) == "owner"


def test_bad_role_is_refused_naming_the_field(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.rater.pk}/role/", {"role": "emperor"}
    )
    assert (
        response.status_code == 400 and 'data-field="role"' in response.content.decode()
    )


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 403), ("reviewer", 403), ("rater", 403), ("outsider", 404)],
)
def test_member_actions_refused(lab, client_for, who, status):
    client = client_for(getattr(lab, who))
    base = f"/workspaces/{lab.a.pk}/members/{lab.reviewer.pk}/"
    assert client.post(base + "role/", {"role": "owner"}, **HX).status_code == status
    assert client.post(base + "remove/", **HX).status_code == status
    assert client.post(base + "password/", **HX).status_code == status
    assert member_role(lab.a, lab.reviewer) == "reviewer"


def test_remove_member_with_htmx(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.reviewer.pk}/remove/", **HX
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert "a-reviewer was removed" in body
    assert 'id="member-' + str(lab.reviewer.pk) + '"' not in body
    assert member_role(lab.a, lab.reviewer) is None


def test_remove_the_last_owner_refused(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.owner.pk}/remove/"
    )
    assert response.status_code == 400 and "last owner" in response.content.decode()


def test_remove_a_non_member_names_the_field(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.outsider.pk}/remove/", **HX
    )
    assert (
        response.status_code == 400 and 'data-field="user"' in response.content.decode()
    )


def test_password_reset_shows_the_password_once(lab, client_for):
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.rater.pk}/password/", **HX
    )
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert (
        "no-cache" in response["Cache-Control"]
        or "no-store" in response["Cache-Control"]
    )
    import re

    password = re.search(r'<code class="mono">([^<]+)</code>', body).group(1)
    assert User.objects.get(pk=lab.rater.pk).check_password(password)
    assert TemporaryPassword.objects.filter(user=lab.rater).exists()
    # The next page does not show it again.
    assert (
        password not in client_for(lab.owner).get(settings_url(lab.a)).content.decode()
    )


def test_password_reset_refused_for_a_staff_member(lab, client_for):
    lab.researcher.is_staff = True
    lab.researcher.save()
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/members/{lab.researcher.pk}/password/"
    )
    assert response.status_code == 400
    assert "staff" in response.content.decode()


def test_admin_renames_and_deletes_workspaces(lab, client_for):
    client = client_for(lab.admin)
    assert "Rename" in client.get(settings_url(lab.b)).content.decode()
    renamed = client.post(f"/workspaces/{lab.b.pk}/rename/", {"name": "Lab Beta"})
    assert renamed.status_code == 302
    assert Workspace.objects.get(pk=lab.b.pk).name == "Lab Beta"
    bad = client.post(f"/workspaces/{lab.b.pk}/rename/", {"name": ""})
    assert bad.status_code == 400 and 'data-field="name"' in bad.content.decode()
    default = Workspace.objects.get(slug="default")
    refused = client.post(f"/workspaces/{default.pk}/delete/")
    assert refused.status_code == 400 and "never deleted" in refused.content.decode()
    assert client.post(f"/workspaces/{lab.b.pk}/delete/").status_code == 302
    assert not Workspace.objects.filter(pk=lab.b.pk).exists()
    assert AuditEvent.objects.filter(action="workspace.deleted").exists()


def test_an_owner_neither_renames_nor_deletes(lab, client_for):
    client = client_for(lab.owner)
    assert (
        client.post(f"/workspaces/{lab.a.pk}/rename/", {"name": "X"}).status_code == 403
    )
    assert client.post(f"/workspaces/{lab.a.pk}/delete/").status_code == 403
    assert (
        client_for(lab.rater).post(f"/workspaces/{lab.a.pk}/delete/").status_code == 403
    )
    assert (
        client_for(lab.outsider).post(f"/workspaces/{lab.a.pk}/delete/").status_code
        == 404
    )
    assert Workspace.objects.get(pk=lab.a.pk).name == "Lab A"


def test_users_page_for_admins_only(lab, client_for):
    page = client_for(lab.admin).get("/users/").content.decode()
    assert "a-reviewer" in page and "Lab A" in page and "instance admin" in page
    assert client_for(lab.owner).get("/users/").status_code == 403
    assert client_for(lab.rater).get("/users/").status_code == 403


def test_users_page_is_paginated_with_constant_queries(
    lab, client_for, django_assert_max_num_queries
):
    from tests.factories import UserFactory

    for i in range(105):
        UserFactory(username=f"many-{i:03d}")
    client = client_for(lab.admin)
    with django_assert_max_num_queries(12):
        first = client.get("/users/").content.decode()
    assert "Page 1 of 2" in first and "many-000" in first and "outsider" not in first
    assert "outsider" in client.get("/users/?page=2").content.decode()
