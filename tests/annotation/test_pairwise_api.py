"""Pairwise rater API: next, submit, skip, own progress; every refused role and bad
input (errors name the field), blindness and the mapping to the original numbering."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from annotation.models import Assignment, HumanPreference
from annotation.services.campaign_spec import (
    CampaignSpec,
    DisplayPolicy,
    PairPolicy,
)
from annotation.services.campaigns import campaign_create, campaign_set_status
from annotation.services.pairwise import pairwise_next
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    api_token,
)


def make_dataset(n_instructions=2):
    dataset = DatasetFactory()
    for i in range(n_instructions):
        inst = InstructionFactory(dataset=dataset, reference_answer="REF-ANSWER")
        for j, model in enumerate(("model-alpha", "model-beta")):
            ResponseFactory(instruction=inst, model_name=model, text=f"TEXT-{i}-{j}")
    return dataset


@pytest.fixture
def campaign(researcher, rater, other_rater):
    return campaign_create(
        spec=CampaignSpec(
            name="api pairs",
            dataset=make_dataset(),
            skills=["factuality"],
            raters=[rater, other_rater],
            display=DisplayPolicy(show_reference=False),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )


@pytest.fixture
def outsider(db):
    return UserFactory(username="api-outsider", role="rater")


def next_url(campaign):
    return reverse("annotation_api:pairwise-next", args=[campaign.pk])


def submit_url(assignment_id):
    return reverse("annotation_api:pairwise-submit", args=[assignment_id])


def skip_url(assignment_id):
    return reverse("annotation_api:pairwise-skip", args=[assignment_id])


def progress_url(campaign):
    return reverse("annotation_api:pairwise-progress", args=[campaign.pk])


def test_next_serves_a_blind_pair_in_the_shown_order(api_client_for, rater, campaign):
    response = api_client_for(rater).post(next_url(campaign))
    assert response.status_code == 200
    data = response.json()
    assignment = Assignment.objects.get(pk=data["assignment"]["id"])
    pair = assignment.pair
    first = pair.response_1 if assignment.shown_order == "12" else pair.response_2
    assert data["assignment"]["response_a"] == {"text": first.text, "model_name": None}
    assert data["assignment"]["instruction"] == pair.instruction.text
    assert data["assignment"]["reference_answer"] is None
    assert [s["key"] for s in data["assignment"]["skills"]] == ["factuality"]
    assert "shown_order" not in data["assignment"]
    assert "model-alpha" not in response.content.decode()
    assert data["progress"]["submitted"] == 0
    again = api_client_for(rater).post(next_url(campaign)).json()
    assert again["assignment"]["id"] == assignment.pk  # resumed


def test_next_says_why_nothing_is_served(api_client_for, researcher, rater, campaign):
    campaign_set_status(campaign=campaign, status="paused", user=researcher)
    data = api_client_for(rater).post(next_url(campaign)).json()
    assert data["assignment"] is None and "paused" in data["message"]


def test_submit_maps_the_shown_label_back(api_client_for, rater, campaign):
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    Assignment.objects.filter(pk=a.pk).update(shown_order="21")
    response = api_client_for(rater).post(
        submit_url(a.pk),
        {
            "label": "A",
            "skill_labels": {"factuality": "B"},
            "rationale": "clearer",
            "active_seconds": 4.5,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["label"] == "A" and data["skill_labels"] == {"factuality": "B"}
    pref = HumanPreference.objects.get(assignment=a)
    assert pref.label == "2" and pref.skill_labels == {"factuality": "1"}
    # Idempotent: the same answer again returns the saved answer and writes nothing;
    # another answer is a 409 (nothing changed), not a silent 200.
    retry = api_client_for(rater).post(
        submit_url(a.pk),
        {"label": "A", "skill_labels": {"factuality": "B"}, "rationale": "clearer"},
        format="json",
    )
    assert retry.status_code == 200 and retry.json()["label"] == "A"
    other = api_client_for(rater).post(
        submit_url(a.pk),
        {"label": "B", "skill_labels": {"factuality": "B"}},
        format="json",
    )
    assert other.status_code == 409
    assert HumanPreference.objects.count() == 1


def test_resubmit_with_another_answer_is_a_409_and_changes_nothing(
    api_client_for, rater, campaign
):
    client = api_client_for(rater)
    a = client.post(next_url(campaign)).json()["assignment"]
    answer = {"label": "A", "skill_labels": {"factuality": "tie"}, "rationale": "r"}
    assert client.post(submit_url(a["id"]), answer, format="json").status_code == 200
    for change in (
        {**answer, "label": "B"},
        {**answer, "skill_labels": {"factuality": "A"}},
        {**answer, "rationale": "another"},
    ):
        response = client.post(submit_url(a["id"]), change, format="json")
        assert response.status_code == 409, change
        assert "already submitted" in response.json()["detail"]
    pref = HumanPreference.objects.get(assignment_id=a["id"])
    assert pref.rationale == "r" and pref.skill_labels == {"factuality": "tie"}
    assert client.post(submit_url(a["id"]), answer, format="json").status_code == 200


@pytest.mark.parametrize("seconds, status", [(86401, 400), (86400, 200)])
def test_submit_active_seconds_is_bounded_at_a_day(
    api_client_for, rater, campaign, seconds, status
):
    client = api_client_for(rater)
    a = client.post(next_url(campaign)).json()["assignment"]
    response = client.post(
        submit_url(a["id"]),
        {"label": "A", "skill_labels": {"factuality": "A"}, "active_seconds": seconds},
        format="json",
    )
    assert response.status_code == status
    saved = Assignment.objects.get(pk=a["id"])
    if status == 400:
        fields = {p["field"] for p in response.json()["problems"]}
        assert "active_seconds" in fields
        assert saved.status == Assignment.Status.SERVED
    else:
        assert saved.active_seconds == seconds


@pytest.mark.parametrize(
    "body, field",
    [
        ({"label": "C", "skill_labels": {"factuality": "A"}}, "label"),
        ({"label": "", "skill_labels": {"factuality": "A"}}, "label"),
        ({"label": "A"}, "skill_labels.factuality"),
        (
            {"label": "A", "skill_labels": {"factuality": "maybe"}},
            "skill_labels.factuality",
        ),
        (
            {"label": "A", "skill_labels": {"factuality": "A", "harmlessness": "B"}},
            "skill_labels.harmlessness",
        ),
    ],
)
def test_submit_bad_input_names_the_field(api_client_for, rater, campaign, body, field):
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    response = api_client_for(rater).post(submit_url(a.pk), body, format="json")
    assert response.status_code == 400
    assert field in {p["field"] for p in response.json()["problems"]}
    assert not HumanPreference.objects.exists()


@pytest.mark.parametrize(
    "body, key",
    [
        ({}, "label"),
        ({"label": "A", "skill_labels": ["A"]}, "skill_labels"),
        ({"label": "A", "active_seconds": -1}, "active_seconds"),
    ],
)
def test_submit_wrong_types_are_refused_by_field(
    api_client_for, rater, campaign, body, key
):
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    response = api_client_for(rater).post(submit_url(a.pk), body, format="json")
    assert response.status_code == 400 and key in response.json()
    assert not HumanPreference.objects.exists()


def test_skip_and_progress(api_client_for, rater, campaign):
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    empty = api_client_for(rater).post(skip_url(a.pk), {"reason": ""}, format="json")
    assert empty.status_code == 400
    assert empty.json()["problems"][0]["field"] == "reason"
    done = api_client_for(rater).post(skip_url(a.pk), {"reason": "no idea"})
    assert done.status_code == 200 and done.json()["status"] == "skipped"
    progress = api_client_for(rater).get(progress_url(campaign)).json()
    assert progress["skipped"] == 1 and progress["submitted"] == 0
    # The pairs this rater may still be served: not the skipped one.
    assert progress["available"] == 1


def test_every_endpoint_refuses_outsiders_researchers_and_anonymous(
    api_client_for, researcher, admin_user, rater, other_rater, outsider, campaign
):
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    for user in (outsider, researcher, admin_user, other_rater):
        client = api_client_for(user)
        if user is not other_rater:  # a member may ask for their own next pair
            assert client.post(next_url(campaign)).status_code == 404
            assert client.get(progress_url(campaign)).status_code == 404
        assert (
            client.post(submit_url(a.pk), {"label": "A"}, format="json").status_code
            == 404
        )
        assert client.post(skip_url(a.pk), {"reason": "x"}).status_code == 404
    anonymous = api_client_for(None)
    for response in (
        anonymous.post(next_url(campaign)),
        anonymous.get(progress_url(campaign)),
        anonymous.post(submit_url(a.pk), {"label": "A"}),
        anonymous.post(skip_url(a.pk), {"reason": "x"}),
    ):
        assert response.status_code in (401, 403)
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED
    assert not HumanPreference.objects.exists()


def test_a_pointwise_campaign_is_404_here(api_client_for, researcher, rater):
    pointwise = campaign_create(
        spec=CampaignSpec(name="pw", dataset=make_dataset(), raters=[rater]),
        created_by=researcher,
    )
    url = reverse("annotation_api:pairwise-next", args=[pointwise.pk])
    assert api_client_for(rater).post(url).status_code == 404


# --- Researchers ---------------------------------------------------------------------------


def test_researcher_creates_lists_and_reads_a_campaign(
    api_client_for, researcher, rater, other_rater
):
    dataset = make_dataset(n_instructions=3)
    client = api_client_for(researcher)
    response = client.post(
        reverse("annotation_api:pairwise-campaign-list"),
        {
            "dataset": dataset.pk,
            "name": "api study",
            "pair_mode": "sample",
            "sample": 2,
            "seed": 5,
            "skills": ["readability"],
            "overlap": 2,
            "raters": [rater.username, other_rater.username],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["kind"] == "pairwise" and data["skills"] == ["readability"]
    assert data["progress"]["responses"] == 2
    assert data["progress"]["ratings_needed"] == 4
    assert sorted(r["username"] for r in data["raters"]) == sorted(
        [rater.username, other_rater.username]
    )
    listed = client.get(reverse("annotation_api:pairwise-campaign-list")).json()
    assert [c["name"] for c in listed["results"]] == ["api study"]
    assert listed["results"][0]["pair_count"] == 2
    detail = client.get(
        reverse("annotation_api:pairwise-campaign-detail", args=[data["id"]])
    )
    assert detail.status_code == 200 and detail.json()["name"] == "api study"


@pytest.mark.parametrize(
    "body, field",
    [
        ({"pair_mode": "triples"}, "pair_mode"),
        ({"pair_mode": "baseline"}, "baseline_model"),
        ({"skills": ["nope"]}, "skills"),
        ({"overlap": 0}, "overlap"),
        ({"pair_mode": "sample", "sample": 99}, "sample"),
    ],
)
def test_campaign_create_bad_input_names_the_field(
    api_client_for, researcher, body, field
):
    dataset = make_dataset()
    response = api_client_for(researcher).post(
        reverse("annotation_api:pairwise-campaign-list"),
        {"dataset": dataset.pk, "name": "x", **body},
        format="json",
    )
    assert response.status_code == 400
    assert field in {p["field"] for p in response.json()["problems"]}


def test_researcher_endpoints_refuse_raters_and_anonymous(
    api_client_for, rater, campaign
):
    list_url = reverse("annotation_api:pairwise-campaign-list")
    detail_url = reverse("annotation_api:pairwise-campaign-detail", args=[campaign.pk])
    body = {"dataset": campaign.dataset_id, "name": "sneaky"}
    assert api_client_for(rater).get(list_url).status_code == 403
    assert api_client_for(rater).post(list_url, body).status_code == 403
    assert api_client_for(rater).get(detail_url).status_code == 403
    for response in (
        api_client_for(None).get(list_url),
        api_client_for(None).post(list_url, body),
        api_client_for(None).get(detail_url),
    ):
        assert response.status_code in (401, 403)
    assert not type(campaign).objects.filter(name="sneaky").exists()


def test_campaign_detail_of_a_pointwise_campaign_is_404(api_client_for, researcher):
    pointwise = campaign_create(
        spec=CampaignSpec(name="pw", dataset=make_dataset()), created_by=researcher
    )
    url = reverse("annotation_api:pairwise-campaign-detail", args=[pointwise.pk])
    assert api_client_for(researcher).get(url).status_code == 404


def amend_url(assignment_id):
    return reverse("annotation_api:pairwise-amend", args=[assignment_id])


def test_amend_replaces_the_vote_in_shown_terms_until_the_campaign_closes(
    api_client_for, rater, campaign
):
    client = api_client_for(rater)
    a = client.post(next_url(campaign)).json()["assignment"]
    Assignment.objects.filter(pk=a["id"]).update(shown_order="21")
    first = {"label": "A", "skill_labels": {"factuality": "A"}, "rationale": "r"}
    assert client.post(submit_url(a["id"]), first, format="json").status_code == 200
    change = {"label": "B", "skill_labels": {"factuality": "tie"}, "rationale": "s"}
    response = client.put(amend_url(a["id"]), change, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["label"] == "B"
    assert response.json()["skill_labels"] == {"factuality": "tie"}
    pref = HumanPreference.objects.get(assignment_id=a["id"])
    # Shown as 2-1: the shown B is the original response 1.
    assert (pref.label, pref.skill_labels, pref.rationale) == (
        "1",
        {"factuality": "tie"},
        "s",
    )
    # Bad input names the field and changes nothing.
    bad = client.put(amend_url(a["id"]), {"label": "C"}, format="json")
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "label"
    campaign.status = campaign.Status.CLOSED
    campaign.save(update_fields=["status"])
    closed = client.put(amend_url(a["id"]), first, format="json")
    assert closed.status_code == 400
    assert "closed" in closed.json()["detail"]
    pref.refresh_from_db()
    assert pref.label == "1" and pref.rationale == "s"


def test_amend_refuses_other_people_unsubmitted_votes_and_anonymous(
    api_client_for, researcher, rater, other_rater, campaign
):
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    answer = {"label": "A", "skill_labels": {"factuality": "A"}}
    served = api_client_for(rater).put(amend_url(a.pk), answer, format="json")
    assert served.status_code == 400  # not submitted yet: nothing to amend
    for user in (other_rater, researcher):
        response = api_client_for(user).put(amend_url(a.pk), answer, format="json")
        assert response.status_code == 404
    anonymous = api_client_for(None).put(amend_url(a.pk), answer, format="json")
    assert anonymous.status_code in (401, 403)
    assert not HumanPreference.objects.exists()


# --- The raw-SQL hot path (PostgreSQL) ----------------------------------------------

# As the pointwise loop's (test_api_rating.py): authentication, the campaign, then
# BEGIN, the rater's row lock, one serving statement (which also returns the pair,
# its texts and the questions), COMMIT; submit: authentication, BEGIN, the locked
# read, one writing statement, COMMIT (the saved vote is handed over, not re-read).
SQL_NEXT_QUERIES = 4 + 2
SQL_SUBMIT_QUERIES = 4 + 2


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the raw-SQL path runs on PostgreSQL"
)
def test_sql_path_serves_what_the_orm_path_shows_in_as_few_queries_as_pointwise(
    django_assert_num_queries, settings, api_client_for, rater, other_rater, campaign
):
    settings.RATING_FAST_SQL = True
    # A vote already in, so the rubric is frozen (the first vote on a skill freezes it:
    # one more statement, once).
    first = api_client_for(other_rater)
    held = first.post(next_url(campaign)).json()["assignment"]
    body = {"label": "B", "skill_labels": {"factuality": "A"}}
    assert first.post(submit_url(held["id"]), body, format="json").status_code == 200
    client = APIClient()  # token authentication, as in production
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(rater)}")
    with django_assert_num_queries(SQL_NEXT_QUERIES):
        served = client.post(next_url(campaign)).json()["assignment"]

    def shown(assignment: dict) -> dict:  # a resumed lock is extended, nothing else
        return {k: v for k, v in assignment.items() if k != "expires_at"}

    # The same assignment rendered the ORM way (a re-read of every row it shows).
    settings.RATING_FAST_SQL = False
    assert shown(client.post(next_url(campaign)).json()["assignment"]) == shown(served)
    settings.RATING_FAST_SQL = True
    # Resumed through the raw path too: the same again.
    assert shown(client.post(next_url(campaign)).json()["assignment"]) == shown(served)
    with django_assert_num_queries(SQL_SUBMIT_QUERIES):
        saved = client.post(
            submit_url(served["id"]),
            {"label": "A", "skill_labels": {"factuality": "tie"}, "rationale": "r"},
            format="json",
        )
    assert saved.status_code == 200, saved.content
    answer = saved.json()
    assert (answer["label"], answer["skill_labels"]) == ("A", {"factuality": "tie"})
    stored = HumanPreference.objects.get(assignment_id=served["id"])
    assert answer["id"] == served["id"] and answer["rationale"] == stored.rationale
    # What the ORM path answers for the same vote (an idempotent repeat re-reads it).
    again = client.post(
        submit_url(served["id"]),
        {"label": "A", "skill_labels": {"factuality": "tie"}, "rationale": "r"},
        format="json",
    )
    assert again.json() == answer
