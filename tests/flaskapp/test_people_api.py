"""The workspaces and people API (`flaskapp.people.api`): every operation's happy
path, each refused role (rater, reviewer, researcher, a non-member, anonymous), bad
input naming the field, the last owner rule and the audit rows."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile

from annotation.models import TemporaryPassword
from flaskapp.models import AuditEvent, InviteLink, Membership, Workspace
from tests.factories import UserFactory
from tests.flaskapp.people_lab import make_lab, member_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(db):
    return make_lab()


def _fields(response) -> set[str]:
    return {p["field"] for p in response.json()["problems"]}


# --- /api/workspaces/ ---------------------------------------------------------------


def test_list_shows_a_members_workspaces_with_their_role(lab, api_client_for):
    Membership.objects.create(workspace=lab.b, user=lab.rater, role="reviewer")
    body = api_client_for(lab.rater).get("/api/workspaces/").json()
    assert {(w["slug"], w["role"]) for w in body["results"]} == {
        ("lab-a", "rater"),
        ("lab-b", "reviewer"),
    }
    assert next(w for w in body["results"] if w["slug"] == "lab-a")["member_count"] == 4


def test_list_shows_an_outsider_nothing_and_an_admin_everything(lab, api_client_for):
    assert api_client_for(lab.outsider).get("/api/workspaces/").json()["count"] == 0
    slugs = {
        w["slug"]
        for w in api_client_for(lab.admin).get("/api/workspaces/").json()["results"]
    }
    assert {"default", "lab-a", "lab-b"} <= slugs


def test_list_refuses_anonymous(lab, api_client_for):
    assert api_client_for(None).get("/api/workspaces/").status_code in (401, 403)


def test_admin_creates_a_workspace_with_its_first_owner(lab, api_client_for):
    response = api_client_for(lab.admin).post(
        "/api/workspaces/",
        {"name": "Lab C", "owner": "out@example.org"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["slug"] == "lab-c"
    ws = Workspace.objects.get(slug="lab-c")
    assert member_role(ws, lab.outsider) == "owner"
    actions = set(
        AuditEvent.objects.filter(workspace=ws).values_list("action", flat=True)
    )
    assert actions == {"workspace.created", "membership.added"}


@pytest.mark.parametrize("who", ["owner", "researcher", "rater", "outsider"])
def test_only_an_admin_creates_a_workspace(lab, api_client_for, who):
    response = api_client_for(getattr(lab, who)).post(
        "/api/workspaces/", {"name": "Lab C"}, format="json"
    )
    assert response.status_code == 403
    assert "admin" in response.json()["detail"]
    assert not Workspace.objects.filter(name="Lab C").exists()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "lab a"}, "name"),  # taken, case-insensitively
        ({"name": "Lab C", "slug": "Bad Slug!"}, "slug"),
        ({"name": "Lab C", "slug": "lab-b"}, "slug"),
        ({"name": "Lab C", "owner": "nobody-at-all"}, "owner"),
        ({"name": "x" * 101}, "name"),
    ],
)
def test_create_refuses_bad_input_naming_the_field(lab, api_client_for, body, field):
    response = api_client_for(lab.admin).post("/api/workspaces/", body, format="json")
    assert response.status_code == 400
    assert field in _fields(response)
    assert Workspace.objects.count() == 3


def test_a_member_reads_a_workspace_and_a_non_member_gets_404(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/"
    assert api_client_for(lab.rater).get(url).json()["role"] == "rater"
    assert api_client_for(lab.owner_b).get(url).status_code == 404
    assert api_client_for(lab.admin).get(url).json()["role"] == "owner"


def test_admin_renames_a_workspace_audited_before_and_after(lab, api_client_for):
    response = api_client_for(lab.admin).patch(
        f"/api/workspaces/{lab.a.pk}/", {"name": "Lab Alpha"}, format="json"
    )
    assert response.status_code == 200
    assert response.json()["name"] == "Lab Alpha"
    event = AuditEvent.objects.get(action="workspace.renamed")
    assert (event.before["name"], event.after["name"]) == ("Lab A", "Lab Alpha")
    assert event.actor == lab.admin


def test_rename_refusals(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/"
    assert (
        api_client_for(lab.owner).patch(url, {"name": "X"}, format="json").status_code
        == 403
    )
    assert (
        api_client_for(lab.owner_b).patch(url, {"name": "X"}, format="json").status_code
        == 404
    )
    bad = api_client_for(lab.admin).patch(url, {"name": "Lab B"}, format="json")
    assert bad.status_code == 400 and _fields(bad) == {"name"}
    assert Workspace.objects.get(pk=lab.a.pk).name == "Lab A"


def test_admin_deletes_an_empty_workspace_only(lab, api_client_for):
    admin = api_client_for(lab.admin)
    default = Workspace.objects.get(slug="default")
    refused = admin.delete(f"/api/workspaces/{default.pk}/")
    assert refused.status_code == 400 and _fields(refused) == {"workspace"}
    assert (
        api_client_for(lab.owner_b).delete(f"/api/workspaces/{lab.b.pk}/").status_code
        == 403
    )
    assert admin.delete(f"/api/workspaces/{lab.b.pk}/").status_code == 204
    assert not Workspace.objects.filter(pk=lab.b.pk).exists()
    event = AuditEvent.objects.get(action="workspace.deleted")
    assert event.before["name"] == "Lab B" and event.before["members"] == 1


# --- /api/workspaces/<id>/members/ ----------------------------------------------------


def test_owner_lists_members_owners_first(
    lab, api_client_for, django_assert_max_num_queries
):
    client = api_client_for(lab.owner)
    with django_assert_max_num_queries(8):
        body = client.get(f"/api/workspaces/{lab.a.pk}/members/").json()
    assert [m["username"] for m in body["results"]] == [
        "a-owner",
        "a-researcher",
        "a-reviewer",
        "a-rater",
    ]


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 403), ("reviewer", 403), ("rater", 403), ("outsider", 404),
     ("owner_b", 404), (None, 401)],
)  # fmt: skip
def test_members_refused_below_owner_and_to_non_members(
    lab, api_client_for, who, status
):
    client = api_client_for(getattr(lab, who) if who else None)
    url = f"/api/workspaces/{lab.a.pk}/members/"
    got = client.get(url).status_code
    assert got == status or (who is None and got == 403)
    posted = client.post(url, {"user": "outsider", "role": "rater"}, format="json")
    assert posted.status_code == got
    assert member_role(lab.a, lab.outsider) is None
    if status == 403:
        assert "owner" in client.get(url).json()["detail"]


def test_owner_adds_by_username_and_by_email(lab, api_client_for):
    client = api_client_for(lab.owner)
    url = f"/api/workspaces/{lab.a.pk}/members/"
    by_name = client.post(url, {"user": "OUTSIDER", "role": "reviewer"}, format="json")
    assert by_name.status_code == 201
    assert by_name.json()["username"] == "outsider"
    by_mail = client.post(url, {"user": "Owner@A.example.org", "role": "rater"},
                          format="json")  # fmt: skip
    assert by_mail.status_code == 400  # already a member: says so
    assert "already a member" in by_mail.json()["detail"]
    UserFactory(username="newbie", email="newbie@c.example.org")
    assert client.post(url, {"user": "newbie@c.example.org", "role": "rater"},
                       format="json").status_code == 201  # fmt: skip
    event = AuditEvent.objects.filter(action="membership.added").first()
    assert event.after == {"user": "newbie", "role": "rater", "via": "owner"}
    assert event.workspace == lab.a and event.actor == lab.owner


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user": "nobody", "role": "rater"}, "user"),
        ({"user": "", "role": "rater"}, "user"),
        ({"user": "outsider", "role": "boss"}, "role"),
        ({"user": "outsider"}, "role"),
    ],
)
def test_add_refuses_bad_input_naming_the_field(lab, api_client_for, body, field):
    response = api_client_for(lab.owner).post(
        f"/api/workspaces/{lab.a.pk}/members/", body, format="json"
    )
    assert response.status_code == 400
    assert field in _fields(response)
    assert Membership.objects.filter(workspace=lab.a).count() == 4


def test_owner_changes_a_role_audited(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.rater.pk}/"
    response = api_client_for(lab.owner).patch(url, {"role": "reviewer"}, format="json")
    assert response.status_code == 200 and response.json()["role"] == "reviewer"
    assert member_role(lab.a, lab.rater) == "reviewer"
    event = AuditEvent.objects.get(action="membership.role_changed")
    assert (event.before["role"], event.after["role"]) == ("rater", "reviewer")


def test_the_last_owner_cannot_be_demoted_or_removed(lab, api_client_for):
    client = api_client_for(lab.owner)
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.owner.pk}/"
    demoted = client.patch(url, {"role": "researcher"}, format="json")
    assert demoted.status_code == 400 and _fields(demoted) == {"role"}
    assert "last owner" in demoted.json()["detail"]
    removed = client.delete(url)
    assert removed.status_code == 400 and _fields(removed) == {"user"}
    assert member_role(lab.a, lab.owner) == "owner"
    # With a second owner, the first may step down.
    client.patch(f"/api/workspaces/{lab.a.pk}/members/{lab.researcher.pk}/",
                 {"role": "owner"}, format="json")  # fmt: skip
    assert client.patch(url, {"role": "researcher"}, format="json").status_code == 200


def test_owner_removes_a_member_audited(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.reviewer.pk}/"
    assert api_client_for(lab.owner).delete(url).status_code == 204
    assert member_role(lab.a, lab.reviewer) is None
    assert User.objects.filter(pk=lab.reviewer.pk).exists()
    event = AuditEvent.objects.get(action="membership.removed")
    assert event.before == {"user": "a-reviewer", "role": "reviewer"}


@pytest.mark.parametrize("who", ["researcher", "reviewer", "rater", "owner_b"])
def test_role_change_and_removal_refused_below_owner(lab, api_client_for, who):
    client = api_client_for(getattr(lab, who))
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.rater.pk}/"
    expected = 404 if who == "owner_b" else 403
    assert client.patch(url, {"role": "owner"}, format="json").status_code == expected
    assert client.delete(url).status_code == expected
    assert member_role(lab.a, lab.rater) == "rater"


def test_member_endpoints_of_a_non_member_user_are_404(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.outsider.pk}/"
    client = api_client_for(lab.owner)
    assert client.patch(url, {"role": "rater"}, format="json").status_code == 404
    assert client.delete(url).status_code == 404


def test_bad_role_on_change_names_the_field(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.rater.pk}/"
    response = api_client_for(lab.owner).patch(url, {"role": "king"}, format="json")
    assert response.status_code == 400 and _fields(response) == {"role"}


# --- password resets -------------------------------------------------------------------


def test_owner_resets_a_plain_members_password_once(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.rater.pk}/password/"
    response = api_client_for(lab.owner).post(url)
    assert response.status_code == 200
    assert response["Cache-Control"] == "no-store"
    password = response.json()["password"]
    lab.rater.refresh_from_db()
    assert lab.rater.check_password(password)
    assert TemporaryPassword.objects.filter(user=lab.rater).exists()
    event = AuditEvent.objects.get(action="account.password_reset")
    assert password not in str(event.after) and event.after["user"] == "a-rater"


@pytest.mark.parametrize("kind", ["staff", "superuser", "global-researcher", "perm"])
def test_reset_refused_for_accounts_an_owner_does_not_manage(lab, api_client_for, kind):
    from django.contrib.auth.models import Group, Permission

    target = lab.reviewer
    if kind == "staff":
        target.is_staff = True
        target.save()
    elif kind == "superuser":
        target.is_superuser = True
        target.save()
    elif kind == "global-researcher":
        target.groups.add(Group.objects.get(name="researcher"))
    else:
        target.user_permissions.add(Permission.objects.first())
    before = User.objects.get(pk=target.pk).password
    url = f"/api/workspaces/{lab.a.pk}/members/{target.pk}/password/"
    response = api_client_for(lab.owner).post(url)
    assert response.status_code == 400 and _fields(response) == {"user"}
    assert User.objects.get(pk=target.pk).password == before


def test_reset_refused_for_a_member_with_a_higher_role_elsewhere(lab, api_client_for):
    Membership.objects.create(workspace=lab.b, user=lab.rater, role="researcher")
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.rater.pk}/password/"
    response = api_client_for(lab.owner).post(url)
    assert response.status_code == 400
    assert "Lab B" in response.json()["detail"]
    # An owner of both workspaces may.
    Membership.objects.create(workspace=lab.b, user=lab.owner, role="owner")
    owner = User.objects.get(pk=lab.owner.pk)  # a new request's user, no role cache
    assert api_client_for(owner).post(url).status_code == 200


@pytest.mark.parametrize("who", ["researcher", "reviewer", "rater", "owner_b"])
def test_reset_refused_below_owner(lab, api_client_for, who):
    url = f"/api/workspaces/{lab.a.pk}/members/{lab.rater.pk}/password/"
    expected = 404 if who == "owner_b" else 403
    assert api_client_for(getattr(lab, who)).post(url).status_code == expected


# --- invites and bulk through the API ------------------------------------------------


def test_owner_makes_lists_and_revokes_an_invite(lab, api_client_for):
    client = api_client_for(lab.owner)
    url = f"/api/workspaces/{lab.a.pk}/invites/"
    made = client.post(url, {"role": "rater", "expires_in": 2, "unit": "hours",
                             "max_uses": 5}, format="json")  # fmt: skip
    assert made.status_code == 201, made.json()
    assert "/invite/" in made.json()["url"]
    token = made.json()["url"].rstrip("/").rsplit("/", 1)[1]
    invite = InviteLink.objects.get()
    assert invite.token_hash != token and token not in str(AuditEvent.objects.values())
    listed = client.get(url).json()["results"]
    assert [(i["prefix"], i["state"], i["max_uses"]) for i in listed] == [
        (token[:6], "valid", 5)
    ]
    assert "url" not in listed[0]
    assert client.delete(f"{url}{invite.pk}/").status_code == 204
    assert client.get(url).json()["results"][0]["state"] == "revoked"
    other = api_client_for(lab.owner_b).delete(
        f"/api/workspaces/{lab.b.pk}/invites/{invite.pk}/"
    )
    assert other.status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"role": "rater", "expires_in": 0}, "expires_in"),
        ({"role": "rater", "expires_in": 31, "unit": "days"}, "expires_in"),
        ({"role": "rater", "expires_in": 1, "unit": "weeks"}, "unit"),
        ({"role": "rater", "expires_in": 1, "max_uses": 0}, "max_uses"),
        ({"role": "chief", "expires_in": 1}, "role"),
    ],
)
def test_invite_bad_input_names_the_field(lab, api_client_for, body, field):
    response = api_client_for(lab.owner).post(
        f"/api/workspaces/{lab.a.pk}/invites/", body, format="json"
    )
    assert response.status_code == 400 and field in _fields(response)
    assert not InviteLink.objects.exists()


@pytest.mark.parametrize("who", ["researcher", "reviewer", "rater"])
def test_invites_refused_below_owner(lab, api_client_for, who):
    client = api_client_for(getattr(lab, who))
    url = f"/api/workspaces/{lab.a.pk}/invites/"
    assert client.get(url).status_code == 403
    assert client.post(url, {"role": "owner", "expires_in": 1},
                       format="json").status_code == 403  # fmt: skip


def test_bulk_api_creates_accounts_and_shows_passwords_once(lab, api_client_for):
    csv = b"username,email,role\nnew-one,one@x.org,rater\na-rater,,rater\noutsider,,reviewer\n"
    response = api_client_for(lab.owner).post(
        f"/api/workspaces/{lab.a.pk}/members/bulk/",
        {"file": SimpleUploadedFile("people.csv", csv, "text/csv")},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    rows = {r["username"]: r for r in response.json()}
    assert rows["new-one"]["outcome"] == "created" and rows["new-one"]["password"]
    assert rows["a-rater"]["outcome"] == "already a member"
    assert rows["outsider"]["outcome"] == "added" and rows["outsider"]["password"] == ""
    assert User.objects.get(username="new-one").check_password(
        rows["new-one"]["password"]
    )
    assert member_role(lab.a, lab.outsider) == "reviewer"


def test_bulk_api_refused_below_owner_and_bad_file(lab, api_client_for):
    url = f"/api/workspaces/{lab.a.pk}/members/bulk/"
    csv = SimpleUploadedFile("p.csv", b"username\nzed\n", "text/csv")
    assert api_client_for(lab.researcher).post(url, {"file": csv},
                                               format="multipart").status_code == 403  # fmt: skip
    bad = api_client_for(lab.owner).post(url, {}, format="multipart")
    assert bad.status_code == 400 and _fields(bad) == {"file"}
