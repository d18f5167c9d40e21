"""A rater taken out of a campaign, or whose rater role is removed, is refused at every
rating operation (pages and API, pointwise and pairwise); their live locks go back to
the pool with a recorded reason; their submitted scores stay and are marked on the
campaign page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.urls import reverse

from annotation import roles, services
from annotation.models import Assignment, CampaignItem, HumanPreference, HumanScore
from annotation.selectors import assignment_skills
from annotation.services.pairwise import (
    pairwise_campaign_create,
    pairwise_next,
    pairwise_submit,
)
from annotation.services.serving import REMOVED_NOTE, ROLE_REMOVED_NOTE
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_dataset(n_instructions=3):
    dataset = DatasetFactory()
    for i in range(n_instructions):
        instruction = InstructionFactory(dataset=dataset)
        for model in ("model-alpha", "model-beta"):
            ResponseFactory(instruction=instruction, model_name=model, text=f"T{i}")
    return dataset


def scores_for(assignment, value=4) -> dict:
    return {s.key: value for s in assignment_skills(assignment=assignment)}


@pytest.fixture
def pointwise(researcher, rater, other_rater):
    """A campaign where `rater` submitted one response and holds a lock on another."""
    campaign = services.campaign_create(
        name="removal",
        dataset=make_dataset(),
        user=researcher,
        raters=[rater, other_rater],
    )
    done = services.assignment_next(campaign=campaign, rater=rater).assignment
    services.rating_submit(assignment_id=done.pk, rater=rater, scores=scores_for(done))
    held = services.assignment_next(campaign=campaign, rater=rater).assignment
    assert held.status == Assignment.Status.SERVED
    return campaign, done, held


@pytest.fixture
def pairwise(researcher, rater, other_rater):
    campaign = pairwise_campaign_create(
        name="removal pairs",
        dataset=make_dataset(),
        user=researcher,
        raters=[rater, other_rater],
        skill_keys=["factuality"],
        show_reference=False,
    )
    done = pairwise_next(campaign=campaign, rater=rater).assignment
    pairwise_submit(
        assignment_id=done.pk,
        rater=rater,
        label="A",
        skill_labels={"factuality": "A"},
    )
    held = pairwise_next(campaign=campaign, rater=rater).assignment
    assert held.status == Assignment.Status.SERVED
    return campaign, done, held


def remove_from_campaign(campaign, rater, researcher):
    others = [u for u in campaign.raters.all() if u.pk != rater.pk]
    services.campaign_set_raters(campaign=campaign, raters=others, user=researcher)


def remove_role(rater):
    rater.groups.remove(Group.objects.get(name=roles.RATER))
    # The API test client reuses this user object (force_authenticate); a real
    # request loads the user afresh, without the roles cached on the object.
    rater.__dict__.pop("_flask_roles", None)


REMOVALS = ["campaign", "role"]


def remove(how, campaign, rater, researcher):
    if how == "campaign":
        remove_from_campaign(campaign, rater, researcher)
        return roles.REMOVED_FROM_CAMPAIGN
    remove_role(rater)
    return roles.ROLE_REMOVED


# --- Every operation is refused -----------------------------------------------------


@pytest.mark.parametrize("how", REMOVALS)
def test_pointwise_pages_refuse_a_removed_rater(
    how, pointwise, client_for, rater, researcher
):
    campaign, done, held = pointwise
    client = client_for(rater)
    remove(how, campaign, rater, researcher)
    refused = [
        client.get(reverse("annotation:assignment-review", args=[done.pk])),
        client.post(
            reverse("annotation:assignment-review", args=[done.pk]),
            {f"score-{k}": "2" for k in scores_for(done)},
        ),
        client.post(
            reverse("annotation:assignment-submit", args=[held.pk]),
            {f"score-{k}": "3" for k in scores_for(held)},
        ),
        client.post(
            reverse("annotation:assignment-skip", args=[held.pk]), {"reason": "no"}
        ),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    # next: the campaign is no longer this rater's (404 as for any other campaign)
    assert client.get(
        reverse("annotation:rate-next", args=[campaign.pk])
    ).status_code in (
        403,
        404,
    )
    assert set(
        HumanScore.objects.filter(assignment=done).values_list("score", flat=True)
    ) == {4}
    assert not HumanScore.objects.filter(assignment=held).exists()


@pytest.mark.parametrize("how", REMOVALS)
def test_pointwise_api_refuses_a_removed_rater(
    how, pointwise, api_client_for, rater, researcher
):
    campaign, done, held = pointwise
    client = api_client_for(rater)
    message = remove(how, campaign, rater, researcher)
    base = "/api/rate/assignments/"
    refused = [
        client.get(f"{base}{done.pk}/"),
        client.put(
            f"{base}{done.pk}/scores/", {"scores": scores_for(done, 2)}, format="json"
        ),
        client.post(
            f"{base}{held.pk}/submit/", {"scores": scores_for(held, 3)}, format="json"
        ),
        client.post(f"{base}{held.pk}/skip/", {"reason": "no"}, format="json"),
    ]
    assert [r.status_code for r in refused] == [403, 403, 403, 403]
    assert all(r.json()["detail"] == message for r in refused)
    assert client.post(f"/api/rate/campaigns/{campaign.pk}/next/").status_code in (
        403,
        404,
    )
    assert not HumanScore.objects.filter(assignment=held).exists()


@pytest.mark.parametrize("how", REMOVALS)
def test_pairwise_pages_and_api_refuse_a_removed_rater(
    how, pairwise, client_for, api_client_for, rater, researcher
):
    campaign, done, held = pairwise
    page, api = client_for(rater), api_client_for(rater)
    remove(how, campaign, rater, researcher)
    refused = [
        page.post(
            reverse("annotation:pairwise-submit", args=[held.pk]),
            {"label": "B", "skill-factuality": "B"},
        ),
        page.post(
            reverse("annotation:pairwise-submit", args=[done.pk]),
            {"label": "B", "skill-factuality": "B"},
        ),
        page.post(reverse("annotation:pairwise-skip", args=[held.pk]), {"reason": "x"}),
        api.post(
            reverse("annotation_api:pairwise-submit", args=[held.pk]),
            {"label": "B", "skill-factuality": "B"},
            format="json",
        ),
        api.post(
            reverse("annotation_api:pairwise-skip", args=[held.pk]),
            {"reason": "x"},
            format="json",
        ),
    ]
    assert [r.status_code for r in refused] == [403] * 5
    assert page.get(
        reverse("annotation:pairwise-next", args=[campaign.pk])
    ).status_code in (403, 404)
    assert (
        list(
            HumanPreference.objects.filter(assignment=done).values_list(
                "label", flat=True
            )
        )
        != []
    )
    assert not HumanPreference.objects.filter(assignment=held).exists()


def test_a_rater_still_in_the_campaign_keeps_working(pointwise, api_client_for, rater):
    campaign, done, held = pointwise
    response = api_client_for(rater).post(
        f"/api/rate/assignments/{held.pk}/submit/",
        {"scores": scores_for(held)},
        format="json",
    )
    assert response.status_code == 200


# --- Locks go back to the pool, with a reason ---------------------------------------


@pytest.mark.parametrize(
    "how, note", [("campaign", REMOVED_NOTE), ("role", ROLE_REMOVED_NOTE)]
)
def test_live_locks_are_released_with_the_reason(
    how, note, pointwise, rater, other_rater, researcher
):
    campaign, done, held = pointwise
    item = CampaignItem.objects.get(pk=held.item_id)
    before = (item.reserved, item.open_slots)
    remove(how, campaign, rater, researcher)
    held.refresh_from_db()
    item.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.note == note
    assert (item.reserved, item.open_slots) == (before[0] - 1, before[1] + 1)
    done.refresh_from_db()
    assert done.status == Assignment.Status.SUBMITTED
    # The released response is served to the other rater.
    served = set()
    while a := services.assignment_next(
        campaign=campaign, rater=other_rater
    ).assignment:
        served.add(a.response_id)
        services.rating_submit(
            assignment_id=a.pk, rater=other_rater, scores=scores_for(a)
        )
    assert held.response_id in served


def test_removal_through_the_admin_side_of_the_relation_releases_too(pointwise, rater):
    campaign, _, held = pointwise
    rater.rating_campaigns.clear()  # the user's side, as a shell or admin would do
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.note == REMOVED_NOTE


def test_pairwise_locks_are_released(pairwise, rater, researcher):
    campaign, _, held = pairwise
    remove_from_campaign(campaign, rater, researcher)
    held.refresh_from_db()
    assert held.status == Assignment.Status.EXPIRED and held.note == REMOVED_NOTE


# --- Submitted work stays and is marked -------------------------------------------------


def test_campaign_page_marks_work_from_a_removed_rater(
    pointwise, client_for, researcher, rater
):
    campaign, done, _ = pointwise
    url = reverse("annotation:campaign-detail", args=[campaign.pk])
    before = client_for(researcher).get(url).content.decode()
    assert "removed-raters-note" not in before
    remove_from_campaign(campaign, rater, researcher)
    html = client_for(researcher).get(url).content.decode()
    row = html.split(f"<td>{rater.username}", 1)[1].split("</tr>", 1)[0]
    assert ">removed</span>" in row
    assert "1 submitted assignment from removed raters" in html
    assert HumanScore.objects.filter(assignment=done).count() == len(scores_for(done))


# --- Resubmits and active seconds through the API ---------------------------------------


def test_api_resubmit_with_other_scores_is_a_409_and_changes_nothing(
    pointwise, api_client_for, rater
):
    _, done, _ = pointwise
    url = f"/api/rate/assignments/{done.pk}/submit/"
    client = api_client_for(rater)
    same = client.post(url, {"scores": scores_for(done, 4)}, format="json")
    assert same.status_code == 200
    other = client.post(url, {"scores": scores_for(done, 1)}, format="json")
    assert other.status_code == 409
    body = other.json()
    assert body["problems"][0]["field"] == "scores"
    assert f"/api/rate/assignments/{done.pk}/scores/" in body["detail"] + str(body)
    assert set(
        HumanScore.objects.filter(assignment=done).values_list("score", flat=True)
    ) == {4}


def test_pairwise_api_resubmit_with_another_answer_is_a_409(
    pairwise, api_client_for, rater
):
    _, done, _ = pairwise
    url = reverse("annotation_api:pairwise-submit", args=[done.pk])
    client = api_client_for(rater)
    body = {"label": "A", "skill_labels": {"factuality": "A"}}
    assert client.post(url, body, format="json").status_code == 200
    other = {"label": "B", "skill_labels": {"factuality": "A"}}
    response = client.post(url, other, format="json")
    assert response.status_code == 409
    assert response.json()["problems"][0]["field"] == "label"
    assert HumanPreference.objects.filter(assignment=done).count() == 1


@pytest.mark.parametrize("kind", ["pointwise", "pairwise"])
def test_api_active_seconds_above_a_day_is_a_400(kind, request, api_client_for, rater):
    campaign, _, held = request.getfixturevalue(kind)
    client = api_client_for(rater)
    if kind == "pointwise":
        url = f"/api/rate/assignments/{held.pk}/submit/"
        body = {"scores": scores_for(held)}
    else:
        url = reverse("annotation_api:pairwise-submit", args=[held.pk])
        body = {"label": "A", "skill_labels": {"factuality": "A"}}
    too_long = client.post(url, {**body, "active_seconds": 86401}, format="json")
    assert too_long.status_code == 400
    assert "active_seconds" in str(too_long.json())
    held.refresh_from_db()
    assert held.status == Assignment.Status.SERVED
    ok = client.post(url, {**body, "active_seconds": 86400}, format="json")
    assert ok.status_code == 200
    held.refresh_from_db()
    assert held.active_seconds == 86400
