"""Invite links (`flaskapp.people.services.invites` and their pages): an owner makes
one with a role, an expiry and a number of uses; a new person signs up through it,
a logged-in one joins; an expired, used-up or revoked link says so (no 500); tokens
are random and stored hashed; creation, use and revocation are audited."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from flaskapp.models import AuditEvent, InviteLink
from flaskapp.people.services.invites import invite_create, token_hash
from tests.flaskapp.people_lab import make_lab, member_role

pytestmark = pytest.mark.django_db

GOOD_PASSWORD = "a long own passphrase 7"


@pytest.fixture
def lab(db):
    return make_lab()


def _make(lab, role="rater", uses=1, hours=24):
    made = invite_create(actor=lab.owner, workspace=lab.a, role=role,
                         expires_in=hours, unit="hours", max_uses=uses)  # fmt: skip
    return made.invite, made.token


def _sign_up(client, token, username, password=GOOD_PASSWORD, password2=None):
    return client.post(
        f"/invite/{token}/accept/",
        {"username": username, "password": password,
         "password2": password if password2 is None else password2},
    )  # fmt: skip


def test_owner_makes_a_link_on_the_settings_page_shown_once(lab, client_for):
    client = client_for(lab.owner)
    response = client.post(
        f"/workspaces/{lab.a.pk}/invites/new/",
        {"role": "reviewer", "expires_in": "3", "unit": "days", "max_uses": "4"},
    )
    page = response.content.decode()
    assert response.status_code == 200
    url = re.search(r'value="(http[^"]+/invite/([^/"]+)/)"', page)
    assert url, page
    token = url.group(2)
    invite = InviteLink.objects.get()
    assert (invite.role, invite.max_uses, invite.uses) == ("reviewer", 4, 0)
    assert invite.token_hash == token_hash(token) and token not in invite.token_hash
    assert (
        timedelta(days=2, hours=23)
        < invite.expires_at - timezone.now()
        <= timedelta(days=3)
    )
    event = AuditEvent.objects.get(action="invite.created")
    assert token not in str(event.after) and event.after["prefix"] == token[:6]
    # The settings page lists it by prefix, never the whole token again.
    again = client.get(f"/workspaces/{lab.a.pk}/settings/").content.decode()
    assert token[:6] in again and token not in again


@pytest.mark.parametrize(
    ("post", "field"),
    [
        (
            {"role": "rater", "expires_in": "", "unit": "days", "max_uses": "1"},
            "expires_in",
        ),
        (
            {"role": "rater", "expires_in": "99", "unit": "days", "max_uses": "1"},
            "expires_in",
        ),
        (
            {"role": "rater", "expires_in": "2", "unit": "fortnights", "max_uses": "1"},
            "unit",
        ),
        (
            {"role": "rater", "expires_in": "2", "unit": "days", "max_uses": "x"},
            "max_uses",
        ),
        ({"role": "", "expires_in": "2", "unit": "days", "max_uses": "1"}, "role"),
    ],
)
def test_make_link_bad_input_names_the_field(lab, client_for, post, field):
    response = client_for(lab.owner).post(f"/workspaces/{lab.a.pk}/invites/new/", post)
    assert response.status_code == 400
    assert f'data-field="{field}"' in response.content.decode()
    assert not InviteLink.objects.exists()


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 403), ("reviewer", 403), ("rater", 403), ("outsider", 404)],
)
def test_make_and_revoke_refused_below_owner(lab, client_for, who, status):
    invite, _ = _make(lab)
    client = client_for(getattr(lab, who))
    post = {"role": "owner", "expires_in": "1", "unit": "days", "max_uses": "1"}
    assert (
        client.post(f"/workspaces/{lab.a.pk}/invites/new/", post).status_code == status
    )
    revoke = f"/workspaces/{lab.a.pk}/invites/{invite.pk}/revoke/"
    assert client.post(revoke).status_code == status
    assert (
        InviteLink.objects.count() == 1 and InviteLink.objects.get().revoked_at is None
    )


def test_anonymous_make_link_goes_to_login(lab, client_for):
    response = client_for(None).post(f"/workspaces/{lab.a.pk}/invites/new/", {})
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_a_new_person_signs_up_through_the_link_and_is_logged_in(lab, client_for):
    invite, token = _make(lab, role="reviewer")
    client = client_for(None)
    page = client.get(f"/invite/{token}/")
    assert page.status_code == 200
    assert "Lab A" in page.content.decode() and "reviewer" in page.content.decode()
    assert page["Referrer-Policy"] == "same-origin"
    response = _sign_up(client, token, "newcomer")
    assert response.status_code == 302 and response["Location"] == "/workspaces/"
    user = User.objects.get(username="newcomer")
    assert user.check_password(GOOD_PASSWORD)
    assert member_role(lab.a, user) == "reviewer"
    assert not hasattr(user, "temporary_password")
    welcome = client.get("/workspaces/").content.decode()
    assert "Welcome" in welcome and "newcomer" in welcome  # logged in
    invite.refresh_from_db()
    assert invite.uses == 1
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"account.created", "membership.added", "invite.used"} <= actions


@pytest.mark.parametrize(
    ("username", "password", "password2", "field"),
    [
        ("", GOOD_PASSWORD, None, "username"),
        ("a-rater", GOOD_PASSWORD, None, "username"),  # taken
        ("bad name!", GOOD_PASSWORD, None, "username"),
        ("newcomer", "short", None, "password"),
        ("newcomer", "1234567890123", None, "password"),
        ("newcomer", GOOD_PASSWORD, "something else 99", "password2"),
    ],
)
def test_sign_up_bad_input_names_the_field(lab, client_for, username, password,
                                           password2, field):  # fmt: skip
    invite, token = _make(lab)
    response = _sign_up(client_for(None), token, username, password, password2)
    assert response.status_code == 400
    assert f'data-field="{field}"' in response.content.decode()
    assert not User.objects.filter(username="newcomer").exists()
    invite.refresh_from_db()
    assert invite.uses == 0  # nothing was spent


def test_a_logged_in_person_joins(lab, client_for):
    _, token = _make(lab, role="researcher")
    client = client_for(lab.outsider)
    assert "Join as outsider" in client.get(f"/invite/{token}/").content.decode()
    response = client.post(f"/invite/{token}/accept/")
    assert response.status_code == 302
    assert member_role(lab.a, lab.outsider) == "researcher"


def test_a_member_with_a_lower_role_is_promoted_and_a_higher_one_keeps_it(
    lab, client_for
):
    invite, token = _make(lab, role="reviewer", uses=3)
    client_for(lab.rater).post(f"/invite/{token}/accept/")
    assert member_role(lab.a, lab.rater) == "reviewer"
    client_for(lab.researcher).post(f"/invite/{token}/accept/")
    assert member_role(lab.a, lab.researcher) == "researcher"
    invite.refresh_from_db()
    assert invite.uses == 1  # nothing changed for the researcher: no use spent


def test_a_one_use_link_works_once(lab, client_for):
    _, token = _make(lab, uses=1)
    assert _sign_up(client_for(None), token, "first-one").status_code == 302
    second = _sign_up(client_for(None), token, "second-one")
    assert second.status_code == 400
    assert "used as many times" in second.content.decode()
    assert not User.objects.filter(username="second-one").exists()
    page = client_for(None).get(f"/invite/{token}/")
    assert page.status_code == 410 and "used as many times" in page.content.decode()
    assert "Create your account" not in page.content.decode()


def test_an_n_use_link_stops_after_n(lab, client_for):
    invite, token = _make(lab, uses=2)
    for name in ("one-of-two", "two-of-two"):
        assert _sign_up(client_for(None), token, name).status_code == 302
    assert client_for(lab.outsider).post(f"/invite/{token}/accept/").status_code == 400
    assert member_role(lab.a, lab.outsider) is None
    invite.refresh_from_db()
    assert invite.uses == 2


def test_an_expired_link_says_so(lab, client_for):
    invite, token = _make(lab)
    InviteLink.objects.filter(pk=invite.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    page = client_for(None).get(f"/invite/{token}/")
    assert page.status_code == 410 and "has expired" in page.content.decode()
    joined = client_for(lab.outsider).post(f"/invite/{token}/accept/")
    assert joined.status_code == 400 and "has expired" in joined.content.decode()
    assert member_role(lab.a, lab.outsider) is None


def test_a_revoked_link_says_so_and_revoking_is_audited(lab, client_for):
    invite, token = _make(lab, uses=10)
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/invites/{invite.pk}/revoke/"
    )
    assert response.status_code == 302
    page = client_for(None).get(f"/invite/{token}/")
    assert page.status_code == 410 and "revoked" in page.content.decode()
    assert _sign_up(client_for(None), token, "late-comer").status_code == 400
    event = AuditEvent.objects.get(action="invite.revoked")
    assert event.before["revoked"] is False and event.after["revoked"] is True


def test_revoking_another_workspaces_link_is_refused(lab, client_for):
    other = invite_create(actor=lab.owner_b, workspace=lab.b, role="rater",
                          expires_in=1, unit="days", max_uses=1).invite  # fmt: skip
    response = client_for(lab.owner).post(
        f"/workspaces/{lab.a.pk}/invites/{other.pk}/revoke/"
    )
    assert (
        response.status_code == 400
        and 'data-field="invite"' in response.content.decode()
    )
    other.refresh_from_db()
    assert other.revoked_at is None


@pytest.mark.parametrize("token", ["nope", "x" * 300, "a.b"])
def test_an_unknown_link_is_a_clear_404(lab, client_for, token):
    page = client_for(None).get(f"/invite/{token}/")
    assert page.status_code == 404 and "does not work" in page.content.decode()
    assert client_for(None).post(f"/invite/{token}/accept/", {}).status_code == 404


def test_tokens_are_random(lab):
    tokens = {_make(lab)[1] for _ in range(5)}
    assert len(tokens) == 5 and all(len(t) >= 40 for t in tokens)


@pytest.mark.django_db(transaction=True)
def test_two_people_racing_for_a_one_use_link_cannot_both_get_in():
    import threading

    from django.db import connection

    from flaskapp.errors import DomainError
    from flaskapp.people.services.invites import invite_find, invite_sign_up

    lab = make_lab()
    _, token = _make(lab, uses=1)
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def sign_up(name: str) -> None:
        try:
            invite = invite_find(token)
            barrier.wait()
            invite_sign_up(invite=invite, username=name, password=GOOD_PASSWORD,
                           password2=GOOD_PASSWORD)  # fmt: skip
            outcomes.append("in")
        except DomainError as exc:
            outcomes.append(str(exc))
        finally:
            connection.close()

    threads = [
        threading.Thread(target=sign_up, args=(n,)) for n in ("racer-1", "racer-2")
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes)[-1] == "in" and outcomes.count("in") == 1, outcomes
    assert User.objects.filter(username__startswith="racer-").count() == 1
    assert InviteLink.objects.get().uses == 1


def test_a_rater_who_signs_up_through_a_link_is_served_items(lab, client_for):
    """A rater membership makes a rating account: once in a campaign of the
    workspace, the newcomer is served its items (not only listed as a member)."""
    from annotation.services.campaign_spec import CampaignSpec
    from annotation.services.campaigns import campaign_create
    from annotation.services.rating import assignment_next
    from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

    _, token = _make(lab, role="rater")
    assert _sign_up(client_for(None), token, "new-rater").status_code == 302
    newcomer = User.objects.get(username="new-rater")
    dataset = DatasetFactory(workspace=lab.a)
    ResponseFactory(instruction=InstructionFactory(dataset=dataset), model_name="m")
    campaign = campaign_create(
        spec=CampaignSpec(name="lab campaign", dataset=dataset, raters=[newcomer],
                          skill_mode="chosen", skills=["factuality"]),
        created_by=lab.owner,
    )  # fmt: skip
    assert assignment_next(campaign=campaign, rater=newcomer).assignment is not None
