"""Rater management in the app: the list with campaigns and progress, creating a
rater, resetting a password, adding a rater to a campaign (admins and researchers;
never raters)."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import PermissionDenied
from django.urls import reverse
from knox.models import AuthToken

from annotation.models import Assignment, Campaign
from annotation.selectors.raters import rater_overview_list_for_user
from annotation.selectors.rating import assignment_skills
from annotation.services.campaigns import campaign_add_rater, campaign_set_status
from annotation.services.raters import rater_create, rater_password_reset
from annotation.services.rating import assignment_next, rating_submit
from flaskapp import roles, tokens
from flaskapp.errors import DomainError
from tests.annotation.test_views_rating import make_campaign, make_dataset
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LIST = reverse("annotation:rater-list")
NEW = reverse("annotation:rater-new")


def _password(url_or_body: str) -> str:
    found = re.search(r'<code class="mono">([^<]+)</code>', url_or_body)
    assert found, "no password shown"
    return found.group(1)


def _submit_one(campaign, rater):
    assignment = assignment_next(campaign=campaign, rater=rater).assignment
    scores = {s.key: 4 for s in assignment_skills(assignment=assignment)}
    rating_submit(assignment_id=assignment.pk, rater=rater, scores=scores)


# --- the list ---------------------------------------------------------------------------


def test_list_shows_each_raters_campaigns_and_progress(
    client_for, researcher, rater, other_rater, django_assert_max_num_queries
):
    campaign = make_campaign(researcher, [rater, other_rater], rater_quota=3)
    other = make_campaign(researcher, [rater], dataset=make_dataset(), name="Second")
    _submit_one(campaign, rater)
    _submit_one(campaign, rater)
    assignment_next(campaign=other, rater=rater)  # one in progress
    client = client_for(researcher)
    with django_assert_max_num_queries(12):
        response = client.get(LIST)
    assert response.status_code == 200
    rows = {r.user.username: r for r in response.context["raters"]}
    mine = {
        c.campaign.name: (c.done, c.assigned) for c in rows[rater.username].campaigns
    }
    assert mine == {"Sky campaign": (2, 3), "Second": (0, 1)}
    theirs = {
        c.campaign.name: (c.done, c.assigned)
        for c in rows[other_rater.username].campaigns
    }
    assert theirs == {"Sky campaign": (0, 3)}
    body = response.content.decode()
    assert "2 / 3" in body and "0 / 1" in body
    assert reverse("annotation:campaign-detail", args=[campaign.pk]) in body


def test_list_marks_accounts_with_more_power_as_not_managed_here(researcher, rater):
    both = UserFactory(username="rater-and-researcher", role="rater")
    both.groups.add(*both.groups.model.objects.filter(name=roles.RESEARCHER))
    bot = UserFactory(username="generated-rater", role="rater")
    bot.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    rows = {r.user.username: r for r in rater_overview_list_for_user(user=researcher)}
    assert rows[rater.username].managed is True
    assert rows["rater-and-researcher"].managed is False
    assert rows["generated-rater"].user.synthetic is True
    assert rows["generated-rater"].managed is False
    assert rows[rater.username].user.synthetic is False
    assert researcher.username not in rows


def _synthetic_rater():
    bot = UserFactory(username="generated-rater", role="rater")
    bot.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    return bot


def test_a_synthetic_account_gets_no_password_and_joins_no_campaign(
    client_for, researcher
):
    """Synthetic accounts hold generated ratings: nobody logs in as one, so the page
    offers neither a password reset nor a campaign for them, and the services refuse
    both, naming the field."""
    bot = _synthetic_rater()
    campaign = make_campaign(researcher, [])
    page = client_for(researcher).get(LIST).content.decode()
    assert reverse("annotation:rater-password", args=[bot.pk]) not in page
    assert reverse("annotation:rater-campaign-add", args=[bot.pk]) not in page
    response = client_for(researcher).post(
        reverse("annotation:rater-password", args=[bot.pk])
    )
    assert response.status_code == 400
    assert "synthetic account" in response.content.decode()
    bot.refresh_from_db()
    assert bot.check_password("pw-123456")
    with pytest.raises(DomainError) as caught:
        campaign_add_rater(campaign=campaign, rater=bot, user=researcher)
    assert caught.value.problems[0].field == "rater"
    assert not campaign.raters.filter(pk=bot.pk).exists()


def test_the_campaign_form_does_not_offer_synthetic_accounts(client_for, researcher):
    bot = _synthetic_rater()
    person = UserFactory(username="a-person", role="rater")
    page = (
        client_for(researcher).get(reverse("annotation:campaign-new")).content.decode()
    )
    assert person.username in page
    assert bot.username not in page


def test_list_and_actions_refuse_raters_and_anonymous(
    client_for, rater, no_role_user, admin_user
):
    urls = [
        ("get", LIST),
        ("post", NEW),
        ("post", reverse("annotation:rater-password", args=[rater.pk])),
        ("post", reverse("annotation:rater-campaign-add", args=[rater.pk])),
    ]
    for method, url in urls:
        assert getattr(client_for(rater), method)(url).status_code == 403, url
        assert getattr(client_for(no_role_user), method)(url).status_code == 403, url
        anonymous = getattr(client_for(None), method)(url)
        assert anonymous.status_code == 302, url
        assert anonymous["Location"].startswith(reverse("login"))
    assert client_for(admin_user).get(LIST).status_code == 200
    assert client_for(admin_user).get(NEW).status_code == 405


def test_navigation_links_raters_for_researchers_only(client_for, researcher, rater):
    assert f'href="{LIST}"' in client_for(researcher).get(LIST).content.decode()
    home = client_for(rater).get(reverse("home")).content.decode()
    assert f'href="{LIST}"' not in home


# --- creating a rater -------------------------------------------------------------------


def test_create_with_a_generated_password_shown_once(client_for, researcher):
    client = client_for(researcher)
    response = client.post(NEW, {"username": "new-rater", "password": ""})
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    password = _password(response.content.decode())
    user = User.objects.get(username="new-rater")
    assert roles.user_roles(user) == {roles.RATER}
    assert user.check_password(password) and password not in user.password
    # It logs in, and the list never shows the password again.
    login = client_for(None).post(
        reverse("login"), {"username": "new-rater", "password": password}
    )
    assert login.status_code == 302
    assert password not in client.get(LIST).content.decode()


def test_create_with_a_typed_password_never_shows_it(client_for, admin_user):
    typed = "violet harbour lantern"
    response = client_for(admin_user).post(
        NEW, {"username": "typed", "password": typed}
    )
    assert response.status_code == 200
    assert typed not in response.content.decode()
    assert User.objects.get(username="typed").check_password(typed)


@pytest.mark.parametrize(
    "username, password, field, words",
    [
        ("", "", "username", "is empty"),
        ("bad name!", "", "username", "letters, digits"),
        ("rater-user", "", "username", "is taken"),
        ("RATER-USER", "", "username", "is taken"),
        ("fresh", "12345678", "password", "too short"),
        ("fresh", "8375019264", "password", "entirely numeric"),
        ("fresh", "password123", "password", "too common"),
    ],
)
def test_create_refuses_bad_input_naming_the_field(
    client_for, researcher, rater, username, password, field, words
):
    before = User.objects.count()
    response = client_for(researcher).post(
        NEW, {"username": username, "password": password}
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert f'data-field="{field}"' in text and words in text
    assert "field `" not in text  # issue 37, defect 11: a plain sentence on forms
    assert password not in text or not password
    assert User.objects.count() == before


def test_create_service_refuses_raters(rater):
    with pytest.raises(PermissionDenied):
        rater_create(user=rater, username="sneaky")
    assert not User.objects.filter(username="sneaky").exists()


# --- resetting a password ---------------------------------------------------------------


def test_reset_generates_a_new_password_and_revokes_tokens(
    client_for, researcher, rater
):
    tokens.token_create(user=rater)
    url = reverse("annotation:rater-password", args=[rater.pk])
    response = client_for(researcher).post(url)
    assert response.status_code == 200
    password = _password(response.content.decode())
    rater.refresh_from_db()
    assert rater.check_password(password)
    assert not rater.check_password("pw-123456")
    assert not AuthToken.objects.filter(user=rater).exists()


def test_reset_refuses_an_account_with_more_power(client_for, researcher, admin_user):
    admin_user.groups.add(*admin_user.groups.model.objects.filter(name=roles.RATER))
    url = reverse("annotation:rater-password", args=[admin_user.pk])
    response = client_for(researcher).post(url)
    assert response.status_code == 400
    assert 'data-field="rater"' in response.content.decode()
    admin_user.refresh_from_db()
    assert admin_user.check_password("pw-123456")


def test_reset_of_a_non_rater_is_a_404(client_for, researcher, no_role_user):
    url = reverse("annotation:rater-password", args=[no_role_user.pk])
    assert client_for(researcher).post(url).status_code == 404
    assert (
        client_for(researcher)
        .post(reverse("annotation:rater-password", args=[99999]))
        .status_code
        == 404
    )


def test_reset_service_refuses_a_weak_typed_password(researcher, rater):
    with pytest.raises(DomainError) as caught:
        rater_password_reset(user=researcher, rater=rater, password="rater-user1")
    assert {p.field for p in caught.value.problems} == {"password"}
    assert (
        rater_password_reset(user=researcher, rater=rater, password="quiet meadow owl")
        == ""
    )
    rater.refresh_from_db()
    assert rater.check_password("quiet meadow owl")


# --- adding a rater to a campaign -------------------------------------------------------


def test_add_to_campaign_uses_the_membership_and_is_idempotent(
    client_for, researcher, rater, other_rater
):
    campaign = make_campaign(researcher, [other_rater])
    url = reverse("annotation:rater-campaign-add", args=[rater.pk])
    client = client_for(researcher)
    response = client.post(url, {"campaign": campaign.pk})
    assert response.status_code == 302 and response["Location"] == LIST
    assert set(campaign.raters.all()) == {rater, other_rater}
    # The rater can now be served work in it.
    assert assignment_next(campaign=campaign, rater=rater).assignment
    again = client.post(url, {"campaign": campaign.pk}, follow=True)
    assert "already rates" in again.content.decode()
    assert campaign.raters.count() == 2


@pytest.mark.parametrize("value", ["", "abc", "99999"])
def test_add_to_campaign_refuses_a_missing_campaign_naming_the_field(
    client_for, researcher, rater, value
):
    url = reverse("annotation:rater-campaign-add", args=[rater.pk])
    response = client_for(researcher).post(url, {"campaign": value})
    assert response.status_code == 400
    assert 'data-field="campaign"' in response.content.decode()


def test_add_to_a_closed_campaign_is_refused(
    client_for, researcher, rater, other_rater
):
    campaign = make_campaign(researcher, [other_rater])
    campaign_set_status(
        campaign=campaign, status=Campaign.Status.CLOSED, user=researcher
    )
    url = reverse("annotation:rater-campaign-add", args=[rater.pk])
    response = client_for(researcher).post(url, {"campaign": campaign.pk})
    assert response.status_code == 400
    assert "is closed" in response.content.decode()
    assert rater not in campaign.raters.all()


def test_add_service_refuses_a_user_without_the_rater_role(
    researcher, no_role_user, rater
):
    campaign = make_campaign(researcher, [rater])
    with pytest.raises(DomainError) as caught:
        campaign_add_rater(campaign=campaign, rater=no_role_user, user=researcher)
    assert caught.value.problems[0].field == "rater"
    assert not Assignment.objects.filter(rater=no_role_user).exists()
