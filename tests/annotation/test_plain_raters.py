"""Issue 34: a researcher manages plain rater accounts only. An account with the
staff or superuser flag, a permission of its own, another group or no longer active
is refused by every account-management path (password reset, adding to a campaign
on the page, replacing a campaign's raters through the API, creating a campaign with
raters), with the reason, and nothing changes."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.urls import reverse

from annotation.models import Campaign, TemporaryPassword
from flaskapp import roles
from tests.annotation.test_api_rating import make_campaign, make_dataset
from tests.factories import UserFactory

PASSWORD = "an-old-pass-123"


def _staff(user):
    user.is_staff = True
    user.save()


def _superuser(user):
    user.is_superuser = True
    user.save()


def _permission(user):
    user.user_permissions.add(Permission.objects.get(codename="change_user"))


def _reviewer(user):
    user.groups.add(Group.objects.get(name=roles.REVIEWER))


def _inactive(user):
    user.is_active = False
    user.save()


KINDS = {
    "staff": (_staff, "staff flag"),
    "superuser": (_superuser, "superuser"),
    "permission": (_permission, "permissions of its own"),
    "other group": (_reviewer, "also belongs to reviewer"),
    "inactive": (_inactive, "deactivated"),
}


@pytest.fixture(params=sorted(KINDS))
def powerful(request, db):
    make, words = KINDS[request.param]
    user = UserFactory(username=f"x-{request.param.replace(' ', '-')}", role="rater")
    user.set_password(PASSWORD)
    user.save()
    make(user)
    user.refresh_from_db()
    return user, words


def test_plain_rater_definition(rater, powerful):
    assert roles.plain_rater_problem(rater) == ""
    user, words = powerful
    assert words in roles.plain_rater_problem(user)


def test_password_reset_refuses_and_changes_nothing(client_for, researcher, powerful):
    user, words = powerful
    response = client_for(researcher).post(
        reverse("annotation:rater-password", args=[user.pk]),
        {"password": "a-brand-new-pass-42"},
    )
    assert response.status_code == 400
    assert words in response.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)
    assert not TemporaryPassword.objects.filter(user=user).exists()
    # The page offers no reset for it either.
    page = client_for(researcher).get(reverse("annotation:rater-list")).content
    assert reverse("annotation:rater-password", args=[user.pk]) not in page.decode()


def test_adding_to_a_campaign_refuses(client_for, researcher, rater, powerful):
    user, words = powerful
    campaign = make_campaign(researcher, [rater])
    response = client_for(researcher).post(
        reverse("annotation:rater-campaign-add", args=[user.pk]),
        {"campaign": campaign.pk},
    )
    assert response.status_code == 400
    assert words in response.content.decode()
    assert list(campaign.raters.all()) == [rater]


def test_replacing_raters_through_the_api_refuses(
    api_client_for, researcher, rater, powerful
):
    user, words = powerful
    campaign = make_campaign(researcher, [rater])
    response = api_client_for(researcher).put(
        f"/api/campaigns/{campaign.pk}/raters/",
        {"raters": [rater.username, user.username]},
        format="json",
    )
    assert response.status_code == 400, response.content
    problems = response.json()["problems"]
    assert problems[0]["field"] == "raters" and words in problems[0]["message"]
    assert list(campaign.raters.all()) == [rater]


def test_creating_a_campaign_with_such_a_rater_refuses(researcher, powerful):
    from annotation.services.campaign_spec import CampaignSpec
    from annotation.services.campaigns import campaign_create
    from flaskapp.errors import DomainError

    user, words = powerful
    with pytest.raises(DomainError) as caught:
        campaign_create(
            spec=CampaignSpec(name="c", dataset=make_dataset(), raters=[user]),
            created_by=researcher,
        )
    assert any(
        p.field == "raters" and words in p.message for p in caught.value.problems
    )
    assert not Campaign.objects.filter(name="c").exists()


def test_a_plain_rater_is_still_managed(client_for, researcher, rater):
    rater.set_password(PASSWORD)
    rater.save()
    response = client_for(researcher).post(
        reverse("annotation:rater-password", args=[rater.pk]),
        {"password": "a-brand-new-pass-42"},
    )
    assert response.status_code == 200
    rater.refresh_from_db()
    assert rater.check_password("a-brand-new-pass-42")
