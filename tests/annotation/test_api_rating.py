"""REST API of rating campaigns: researchers manage campaigns, raters rate blind.

Refusals follow the pages: anonymous 401; a rater (or a user without a role) on the
researcher endpoints 403; anyone who is not a rater of the campaign, or not the owner of
the assignment, 404 on the rater endpoints, and nothing changes.
"""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Assignment, Campaign, CampaignItem, HumanScore
from annotation.services.campaigns import campaign_set_status
from annotation.services.rating import assignment_next, rating_submit
from flaskapp import limits
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    api_token,
    campaign_from_fields,
)

pytestmark = pytest.mark.django_db

# The skills InstructionFactory links to every instruction, most relevant first.
SKILLS = ["comprehension", "factuality", "readability"]
MODELS = ("model-alpha", "model-beta")
SECRET = "rater-one-private-rationale"


def make_dataset(n_instructions: int = 3, models=MODELS):
    dataset = DatasetFactory()
    for _ in range(n_instructions):
        instruction = InstructionFactory(dataset=dataset)
        for model in models:
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


def make_campaign(researcher, raters, dataset=None, **kwargs) -> Campaign:
    return campaign_from_fields(
        name="API campaign",
        dataset=dataset or make_dataset(),
        created_by=researcher,
        raters=list(raters),
        **kwargs,
    )


def full_scores(value=4) -> dict:
    return {key: value for key in SKILLS}


def error_fields(response) -> set[str]:
    """The fields a 400 names (`problems[].field`: a DomainError's, or DRF's serializer
    errors as dotted paths, e.g. "scores.factuality")."""
    return {p["field"] for p in response.json()["problems"] if p["field"]}


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(user)}")
    return client


def next_url(campaign_id: int) -> str:
    return f"/api/rate/campaigns/{campaign_id}/next/"


def assignment_url(assignment_id: int, action: str = "") -> str:
    return f"/api/rate/assignments/{assignment_id}/" + (f"{action}/" if action else "")


def serve(client, campaign) -> dict:
    response = client.post(next_url(campaign.pk))
    assert response.status_code == 200, response.content
    assert response.json()["assignment"] is not None, response.json()
    return response.json()["assignment"]


def item_counts(campaign) -> list[tuple]:
    return list(
        CampaignItem.objects.filter(campaign=campaign)
        .order_by("pk")
        .values_list("submitted", "reserved", "open_slots")
    )


def pytest_generate_tests(metafunc):
    """On PostgreSQL every test here runs through both implementations of serve and
    submit (the raw-SQL hot path and the ORM path; SQLite has only the latter)."""
    if "rating_path" in metafunc.fixturenames:
        paths = ["sql", "orm"] if connection.vendor == "postgresql" else ["orm"]
        metafunc.parametrize("rating_path", paths, indirect=True)


@pytest.fixture(autouse=True)
def rating_path(request, settings):
    settings.RATING_FAST_SQL = request.param == "sql"
    return request.param


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """Each test makes several users; the default hasher would dominate the run time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def campaign(researcher, rater, other_rater) -> Campaign:
    """Two raters, two per response: rater B is served what rater A rated."""
    return make_campaign(researcher, [rater, other_rater], overlap=2)


@pytest.fixture
def outsider(db):
    """A rater who is not a member of `campaign`."""
    return UserFactory(username="rater-outsider", role="rater")


# --- Researchers: campaigns --------------------------------------------------------------


@pytest.mark.parametrize("role", ["researcher", "admin_user"])
def test_campaign_list_shows_every_campaign(request, api_client_for, role, campaign):
    user = request.getfixturevalue(role)
    response = api_client_for(user).get("/api/campaigns/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    row = body["results"][0]
    assert row["id"] == campaign.pk
    assert row["name"] == "API campaign"
    assert row["status"] == "active"
    assert row["overlap"] == 2
    assert row["dataset"] == {"id": campaign.dataset_id, "name": campaign.dataset.name}


def test_campaign_create_builds_the_items_and_returns_the_campaign(
    api_client_for, researcher, rater, other_rater
):
    dataset = make_dataset(n_instructions=3)
    payload = {
        "dataset": dataset.pk,
        "name": "  Pilot  ",
        "models": ["model-alpha"],
        "skill_mode": "chosen",
        "skills": ["factuality", "readability"],
        "overlap": 2,
        "overlap_percent": 100,
        "show_reference": False,
        "show_model_names": True,
        "lock_ttl_minutes": 15,
        "rater_quota": 5,
        "guidelines": "Read the rubric first.",
        "raters": [rater.username, other_rater.pk],
    }
    response = api_client_for(researcher).post(
        "/api/campaigns/", payload, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    campaign = Campaign.objects.get(pk=body["id"])
    assert campaign.name == "Pilot"
    assert campaign.created_by == researcher
    assert body["models"] == ["model-alpha"]
    assert body["skill_mode"] == "chosen"
    assert body["skills"] == ["factuality", "readability"]
    assert (body["show_reference"], body["show_model_names"]) == (False, True)
    assert (body["lock_ttl_minutes"], body["rater_quota"]) == (15, 5)
    assert body["guidelines"] == "Read the rubric first."
    assert sorted(r["username"] for r in body["raters"]) == ["rater-two", "rater-user"]
    # Three instructions x one model, two raters each.
    assert body["progress"]["responses"] == 3
    assert body["progress"]["ratings_needed"] == 6
    assert body["progress"]["ratings_submitted"] == 0
    assert CampaignItem.objects.filter(campaign=campaign).count() == 3


def test_campaign_create_defaults_to_every_model_and_instruction_skills(
    api_client_for, researcher
):
    dataset = make_dataset(n_instructions=2)
    response = api_client_for(researcher).post(
        "/api/campaigns/", {"dataset": dataset.pk, "name": "Defaults"}, format="json"
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["skill_mode"] == "instruction"
    assert body["overlap"] == 1
    assert body["progress"]["responses"] == 4


@pytest.mark.parametrize(
    "change, field",
    [
        ({"overlap": 0}, "overlap"),
        ({"overlap": 51}, "overlap"),
        ({"overlap": "abc"}, "overlap"),
        ({"overlap_percent": 101}, "overlap_percent"),
        ({"lock_ttl_minutes": 0}, "lock_ttl_minutes"),
        ({"rater_quota": 0}, "rater_quota"),
        ({"models": ["no-such-model"]}, "models"),
        ({"models": "model-alpha"}, "models"),
        ({"skill_mode": "chosen", "skills": ["no-such-skill"]}, "skills"),
        ({"skill_mode": "chosen"}, "skills"),
        ({"skill_mode": "some"}, "skill_mode"),
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"dataset": 999999}, "dataset"),
        ({"raters": ["nobody-by-that-name"]}, "raters"),
        ({"raters": ["researcher-user"]}, "raters"),  # not a rater
    ],
)
def test_campaign_create_rejects_bad_input_naming_the_field(
    api_client_for, researcher, change, field
):
    dataset = make_dataset(n_instructions=1)
    payload = {"dataset": dataset.pk, "name": "Bad", **change}
    response = api_client_for(researcher).post(
        "/api/campaigns/", payload, format="json"
    )
    assert response.status_code == 400, response.content
    assert field in error_fields(response), response.json()
    assert not Campaign.objects.exists()


def test_campaign_create_reports_every_problem_at_once(api_client_for, researcher):
    dataset = make_dataset(n_instructions=1)
    payload = {
        "dataset": dataset.pk,
        "name": "Bad",
        "skills": ["factuality"],
        "models": ["nope"],
    }
    response = api_client_for(researcher).post(
        "/api/campaigns/", payload, format="json"
    )
    assert response.status_code == 400
    assert {"skills", "models"} <= error_fields(response)
    assert "nope" in response.json()["detail"]
    # Numbers outside their bounds (flaskapp.bounds) are all named by the serializer.
    bounds = api_client_for(researcher).post(
        "/api/campaigns/",
        {"dataset": dataset.pk, "name": "Bad", "overlap": 0, "lock_ttl_minutes": 0},
        format="json",
    )
    assert bounds.status_code == 400
    assert {"overlap", "lock_ttl_minutes"} <= error_fields(bounds)


def test_campaign_detail_shows_settings_and_progress_per_rater(
    api_client_for, researcher, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores(), "active_seconds": 12.5},
        format="json",
    )
    response = api_client_for(researcher).get(f"/api/campaigns/{campaign.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == campaign.pk
    assert body["overlap"] == 2 and body["show_model_names"] is False
    progress = body["progress"]
    assert progress["responses"] == 6
    assert progress["ratings_needed"] == 12
    assert progress["ratings_submitted"] == 1
    assert progress["responses_done"] == 0
    assert progress["locked"] == 0
    (row,) = progress["raters"]
    assert row["username"] == "rater-user"
    assert (row["submitted"], row["skipped"], row["in_progress"]) == (1, 0, 0)
    assert row["median_seconds"] is not None and row["median_seconds"] >= 0
    assert row["median_active_seconds"] == 12.5


def test_campaign_status_pauses_resumes_and_closes(
    api_client_for, researcher, campaign
):
    client = api_client_for(researcher)
    url = f"/api/campaigns/{campaign.pk}/status/"
    for status in ("paused", "active", "closed"):
        response = client.post(url, {"status": status}, format="json")
        assert response.status_code == 200, response.content
        assert response.json()["status"] == status
    campaign.refresh_from_db()
    assert campaign.status == "closed" and campaign.closed_at is not None
    # Closing is final.
    response = client.post(url, {"status": "active"}, format="json")
    assert response.status_code == 400
    assert "closed" in response.json()["detail"]
    campaign.refresh_from_db()
    assert campaign.status == "closed"


@pytest.mark.parametrize("payload", [{"status": "frozen"}, {}])
def test_campaign_status_rejects_unknown_status_naming_it(
    api_client_for, researcher, campaign, payload
):
    response = api_client_for(researcher).post(
        f"/api/campaigns/{campaign.pk}/status/", payload, format="json"
    )
    assert response.status_code == 400
    assert "status" in error_fields(response)
    campaign.refresh_from_db()
    assert campaign.status == "active"


def test_campaign_raters_are_replaced(api_client_for, researcher, campaign, outsider):
    response = api_client_for(researcher).put(
        f"/api/campaigns/{campaign.pk}/raters/",
        {"raters": [outsider.username, "rater-user"]},
        format="json",
    )
    assert response.status_code == 200, response.content
    assert sorted(r["username"] for r in response.json()["raters"]) == [
        "rater-outsider",
        "rater-user",
    ]
    assert set(campaign.raters.values_list("username", flat=True)) == {
        "rater-outsider",
        "rater-user",
    }


@pytest.mark.parametrize(
    "raters", [["researcher-user"], ["ghost"], "rater-user", [], None]
)
def test_campaign_raters_rejects_bad_input_and_keeps_the_list(
    api_client_for, researcher, campaign, raters
):
    payload = {} if raters is None else {"raters": raters}
    response = api_client_for(researcher).put(
        f"/api/campaigns/{campaign.pk}/raters/", payload, format="json"
    )
    if raters == []:
        # An empty list is allowed: it removes every rater.
        assert response.status_code == 200
        assert response.json()["raters"] == []
        return
    assert response.status_code == 400
    assert "raters" in error_fields(response)
    assert campaign.raters.count() == 2


def test_campaign_locks_lists_who_holds_what(
    api_client_for, researcher, rater, campaign
):
    assignment = serve(api_client_for(rater), campaign)
    response = api_client_for(researcher).get(f"/api/campaigns/{campaign.pk}/locks/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    (lock,) = body["results"]
    held = Assignment.objects.get(pk=assignment["id"])
    assert lock["assignment_id"] == held.pk
    assert lock["rater"] == {"id": rater.pk, "username": "rater-user"}
    assert lock["response_id"] == held.response_id
    assert lock["model_name"] in MODELS  # researchers may see model names
    assert lock["is_expired"] is False
    # Once submitted, the lock is gone.
    api_client_for(rater).post(
        assignment_url(held.pk, "submit"), {"scores": full_scores()}, format="json"
    )
    assert (
        api_client_for(researcher)
        .get(f"/api/campaigns/{campaign.pk}/locks/")
        .json()["count"]
        == 0
    )


@pytest.mark.parametrize(
    "method, suffix",
    [("get", ""), ("post", "status/"), ("put", "raters/"), ("get", "locks/")],
)
def test_researcher_endpoints_of_unknown_campaign_are_404(
    api_client_for, researcher, method, suffix
):
    response = getattr(api_client_for(researcher), method)(
        f"/api/campaigns/999999/{suffix}",
        {"status": "paused", "raters": []},
        format="json",
    )
    assert response.status_code == 404


# --- Refusals per role -------------------------------------------------------------------

RESEARCHER_ENDPOINTS = [
    ("get", "/api/campaigns/"),
    ("post", "/api/campaigns/"),
    ("get", "/api/campaigns/{campaign}/"),
    ("post", "/api/campaigns/{campaign}/status/"),
    ("put", "/api/campaigns/{campaign}/raters/"),
    ("get", "/api/campaigns/{campaign}/locks/"),
]
RATER_CAMPAIGN_ENDPOINTS = [
    ("post", "/api/rate/campaigns/{campaign}/next/"),
    ("get", "/api/rate/campaigns/{campaign}/progress/"),
]
RATER_ASSIGNMENT_ENDPOINTS = [
    ("get", "/api/rate/assignments/{assignment}/"),
    ("post", "/api/rate/assignments/{assignment}/submit/"),
    ("post", "/api/rate/assignments/{assignment}/skip/"),
    ("put", "/api/rate/assignments/{assignment}/scores/"),
]
ALL_ENDPOINTS = (
    RESEARCHER_ENDPOINTS
    + [("get", "/api/rate/campaigns/")]
    + RATER_CAMPAIGN_ENDPOINTS
    + RATER_ASSIGNMENT_ENDPOINTS
)
# Bodies that would succeed for the rightful user, so a refusal is the permission's doing.
BODY = {"status": "paused", "raters": [], "scores": full_scores(), "reason": "unsure"}


@pytest.fixture
def held(campaign, rater) -> Assignment:
    """`rater`'s served assignment in `campaign`."""
    return assignment_next(campaign=campaign, rater=rater).assignment


def call(client, method, template, campaign, assignment=None):
    url = template.format(
        campaign=campaign.pk, assignment=assignment.pk if assignment else 0
    )
    return getattr(client, method)(url, BODY, format="json")


@pytest.mark.parametrize("method, template", ALL_ENDPOINTS)
def test_anonymous_is_asked_to_authenticate(
    api_client_for, campaign, held, method, template
):
    response = call(api_client_for(None), method, template, campaign, held)
    assert response.status_code == 401
    assert "WWW-Authenticate" in response.headers


@pytest.mark.parametrize("method, template", RESEARCHER_ENDPOINTS)
@pytest.mark.parametrize("role", ["rater", "no_role_user"])
def test_researcher_endpoints_refuse_raters_and_users_without_a_role(
    request, api_client_for, campaign, role, method, template
):
    user = request.getfixturevalue(role)
    response = call(api_client_for(user), method, template, campaign)
    assert response.status_code == 403
    campaign.refresh_from_db()
    assert campaign.status == "active"
    assert campaign.raters.count() == 2
    assert Campaign.objects.count() == 1


@pytest.mark.parametrize("method, template", RATER_CAMPAIGN_ENDPOINTS)
@pytest.mark.parametrize(
    "role", ["researcher", "admin_user", "outsider", "no_role_user"]
)
def test_rater_campaign_endpoints_are_404_for_non_members(
    request, api_client_for, campaign, role, method, template
):
    user = request.getfixturevalue(role)
    response = call(api_client_for(user), method, template, campaign)
    assert response.status_code == 404
    assert not Assignment.objects.exists()


def test_rater_campaign_endpoints_are_404_for_unknown_campaign(api_client_for, rater):
    client = api_client_for(rater)
    assert client.post(next_url(999999)).status_code == 404
    assert client.get("/api/rate/campaigns/999999/progress/").status_code == 404


def test_a_member_without_the_rater_role_is_404(api_client_for, campaign, researcher):
    campaign.raters.add(researcher)  # bypassing the service, which would refuse it
    assert api_client_for(researcher).post(next_url(campaign.pk)).status_code == 404


@pytest.mark.parametrize("method, template", RATER_ASSIGNMENT_ENDPOINTS)
@pytest.mark.parametrize(
    "role", ["other_rater", "outsider", "researcher", "admin_user"]
)
@pytest.mark.parametrize("submitted", [False, True])
def test_another_users_assignment_is_404_and_nothing_changes(
    request, api_client_for, campaign, rater, role, method, template, submitted
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    if submitted:
        response = client.post(
            assignment_url(assignment["id"], "submit"),
            {"scores": full_scores(3), "rationales": {"factuality": SECRET}},
            format="json",
        )
        assert response.status_code == 200
    before = (
        list(
            Assignment.objects.values_list("pk", "status", "skip_reason", "updated_at")
        ),
        list(HumanScore.objects.values_list("pk", "score", "rationale")),
        item_counts(campaign),
    )
    held = Assignment.objects.get(pk=assignment["id"])

    user = request.getfixturevalue(role)
    response = call(api_client_for(user), method, template, campaign, held)

    assert response.status_code == 404
    assert SECRET not in response.content.decode()
    after = (
        list(
            Assignment.objects.values_list("pk", "status", "skip_reason", "updated_at")
        ),
        list(HumanScore.objects.values_list("pk", "score", "rationale")),
        item_counts(campaign),
    )
    assert after == before


def test_unknown_assignment_is_404(api_client_for, rater):
    client = api_client_for(rater)
    assert client.get(assignment_url(999999)).status_code == 404
    submit = client.post(
        assignment_url(999999, "submit"), {"scores": full_scores()}, format="json"
    )
    assert submit.status_code == 404


def test_token_authentication_works_for_a_rater(rater, campaign):
    client = token_client(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores()},
        format="json",
    )
    assert response.status_code == 200
    assert client.get("/api/rate/campaigns/").json()["count"] == 1


def test_a_wrong_token_is_refused(campaign):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.post(next_url(campaign.pk)).status_code == 401


@pytest.mark.parametrize("endpoint", ["next", "submit"])
def test_hot_endpoints_refuse_bad_tokens_and_inactive_users(rater, campaign, endpoint):
    """The rater loop's own token check keeps DRF's contract: 401 and the same words."""
    assignment = serve(token_client(rater), campaign)
    url = (
        next_url(campaign.pk)
        if endpoint == "next"
        else assignment_url(assignment["id"], "submit")
    )
    body = {"scores": full_scores()}
    for header, detail in [
        ("Token not-a-real-token", "Invalid token."),
        ("Token", "Invalid token header. No credentials provided."),
        ("Token a b", "Invalid token header. Token string should not contain spaces."),
    ]:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=header)
        response = client.post(url, body, format="json")
        assert response.status_code == 401, header
        assert response.json() == {"detail": detail}
    client = token_client(rater)
    rater.is_active = False
    rater.save(update_fields=["is_active"])
    response = client.post(url, body, format="json")
    assert response.status_code == 401
    assert response.json() == {"detail": "User inactive or deleted."}
    assert not HumanScore.objects.exists()


def test_hot_endpoints_check_tokens_in_one_query_and_document_drfs_scheme():
    from knox.auth import TokenAuthentication

    from annotation.api.authentication import RaterTokenAuthentication
    from annotation.api.loop import LoopNextApi, LoopSubmitApi

    for view_class in (LoopNextApi, LoopSubmitApi):
        view = view_class()
        assert type(view.get_authenticators()[0]) is RaterTokenAuthentication
        view.swagger_fake_view = True
        assert type(view.get_authenticators()[0]) is TokenAuthentication


def test_hot_endpoints_with_a_token_refuse_non_raters_and_outsiders(
    researcher, rater, campaign, outsider
):
    """Roles come with the token's query: a member without the rater role and a rater
    outside the campaign both get 404, and nothing is served."""
    campaign.raters.add(researcher)
    held = serve(token_client(rater), campaign)
    for user in (researcher, outsider):
        client = token_client(user)
        assert client.post(next_url(campaign.pk)).status_code == 404
        submit = client.post(
            assignment_url(held["id"], "submit"),
            {"scores": full_scores()},
            format="json",
        )
        assert submit.status_code == 404
    assert Assignment.objects.filter(campaign=campaign).count() == 1
    assert not HumanScore.objects.exists()


def test_next_payload_is_the_same_on_both_paths(
    rater, other_rater, researcher, settings
):
    """The raw-SQL path's `next` renders the very JSON the ORM path renders."""
    if connection.vendor != "postgresql":
        pytest.skip("the raw-SQL path runs on PostgreSQL")
    # One response, so that both campaigns serve the same one.
    dataset = make_dataset(n_instructions=1, models=("model-alpha",))
    bodies = []
    for fast, user in ((True, rater), (False, other_rater)):
        settings.RATING_FAST_SQL = fast
        campaign = make_campaign(
            researcher, [user], dataset=dataset, show_model_names=True
        )
        first = token_client(user).post(next_url(campaign.pk)).json()
        resumed = token_client(user).post(next_url(campaign.pk)).json()
        for body in (first, resumed):
            a = body["assignment"]
            a.pop("id"), a.pop("campaign_id"), a.pop("served_at"), a.pop("expires_at")
        bodies.append((first, resumed))
    assert bodies[0][0] == bodies[1][0]
    assert bodies[0][1] == bodies[1][1]


# --- Raters: campaigns and progress ------------------------------------------------------


def test_rater_campaign_list_shows_own_open_campaigns_with_own_progress(
    api_client_for, researcher, rater, other_rater, campaign
):
    make_campaign(researcher, [other_rater])  # not a member
    closed = make_campaign(researcher, [rater])
    campaign_set_status(campaign=closed, status="closed", user=researcher)
    paused = make_campaign(researcher, [rater], rater_quota=4)
    campaign_set_status(campaign=paused, status="paused", user=researcher)
    # Another rater's work does not count in this rater's progress.
    other = assignment_next(campaign=campaign, rater=other_rater).assignment
    rating_submit(assignment_id=other.pk, rater=other_rater, scores=full_scores())

    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores()},
        format="json",
    )

    response = client.get("/api/rate/campaigns/")
    assert response.status_code == 200
    rows = {row["id"]: row for row in response.json()["results"]}
    assert set(rows) == {campaign.pk, paused.pk}
    assert rows[campaign.pk]["progress"]["submitted"] == 1
    assert rows[campaign.pk]["progress"]["skipped"] == 0
    assert rows[paused.pk]["status"] == "paused"
    assert rows[paused.pk]["progress"] == {
        "submitted": 0,
        "skipped": 0,
        "quota": 4,
        # The items this rater may still be served: 6, within a quota of 4.
        "available": 4,
        "label": "0 of 4",
    }
    assert "models" not in rows[campaign.pk]


@pytest.mark.parametrize(
    "role", ["researcher", "admin_user", "outsider", "no_role_user"]
)
def test_rater_campaign_list_is_empty_for_non_members(
    request, api_client_for, campaign, role
):
    response = api_client_for(request.getfixturevalue(role)).get("/api/rate/campaigns/")
    assert response.status_code == 200
    assert response.json()["count"] == 0


def test_rater_progress_counts_only_own_work(
    api_client_for, rater, other_rater, campaign
):
    other = assignment_next(campaign=campaign, rater=other_rater).assignment
    rating_submit(assignment_id=other.pk, rater=other_rater, scores=full_scores())
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "skip"), {"reason": "unsure"}, format="json"
    )

    response = client.get(f"/api/rate/campaigns/{campaign.pk}/progress/")
    assert response.status_code == 200
    assert response.json() == {
        "submitted": 0,
        "skipped": 1,
        "quota": None,
        # Items left for this rater (6 less the one they skipped), not the
        # campaign's open slots: a count a gold serve moves as a real one does.
        "available": 5,
        "label": "0 rated",
    }


# --- Raters: next ------------------------------------------------------------------------


def test_next_serves_everything_the_rating_form_needs(api_client_for, rater, campaign):
    response = api_client_for(rater).post(next_url(campaign.pk))
    assert response.status_code == 200
    body = response.json()
    assert body["message"] == ""
    assert body["locked_by_others"] == 0
    assert body["progress"]["submitted"] == 0
    assignment = body["assignment"]
    held = Assignment.objects.select_related("response__instruction").get(
        pk=assignment["id"]
    )
    assert held.rater == rater and held.status == "served"
    assert assignment["campaign_id"] == campaign.pk
    assert assignment["status"] == "served"
    assert assignment["reason"] == "new response; 2 raters wanted"
    assert assignment["served_at"] and assignment["expires_at"]
    instruction = held.response.instruction
    assert assignment["instruction"] == {
        "text": instruction.text,
        "reference_answer": "A reference answer.",
        "checklist": None,
    }
    # Blind by default: the response's text, not the model that wrote it.
    assert assignment["response"] == {"text": held.response.text}
    assert [s["key"] for s in assignment["skills"]] == SKILLS
    factuality = assignment["skills"][1]
    assert factuality["name"] == "Factuality"
    assert factuality["ability"] == "background_knowledge"
    assert factuality["ability_label"] == "Background Knowledge"
    assert factuality["criteria"]
    assert set(factuality["anchors"]) == {"1", "2", "3", "4", "5"}
    assert all(factuality["anchors"].values())
    assert assignment["scores"] == []
    content = response.content.decode()
    assert not any(model in content for model in MODELS)


def test_next_shows_model_name_and_hides_reference_when_the_campaign_says_so(
    api_client_for, researcher, rater
):
    dataset = make_dataset(n_instructions=1, models=("model-alpha",))
    instruction = dataset.instructions.get()
    instruction.checklist = [{"skill": "factuality", "question": "Is the date right?"}]
    instruction.save()
    campaign = make_campaign(
        researcher,
        [rater],
        dataset=dataset,
        show_model_names=True,
        show_reference=False,
    )
    assignment = serve(api_client_for(rater), campaign)
    assert assignment["response"]["model_name"] == "model-alpha"
    assert "reference_answer" not in assignment["instruction"]
    assert assignment["instruction"]["checklist"] == instruction.checklist


def test_next_serves_the_chosen_skills_in_rubric_order(
    api_client_for, researcher, rater
):
    campaign = make_campaign(
        researcher,
        [rater],
        skill_mode="chosen",
        skills=["harmlessness", "factuality"],
    )
    assignment = serve(api_client_for(rater), campaign)
    assert [s["key"] for s in assignment["skills"]] == ["factuality", "harmlessness"]


def test_next_resumes_the_assignment_the_rater_holds(api_client_for, rater, campaign):
    client = api_client_for(rater)
    first = serve(client, campaign)
    second = serve(client, campaign)
    assert second["id"] == first["id"]
    assert Assignment.objects.filter(rater=rater).count() == 1


def test_next_says_why_nothing_is_served(
    api_client_for, researcher, rater, other_rater
):
    dataset = make_dataset(n_instructions=1, models=("model-alpha",))
    campaign = make_campaign(researcher, [rater, other_rater], dataset=dataset)
    serve(api_client_for(other_rater), campaign)

    response = api_client_for(rater).post(next_url(campaign.pk))
    assert response.status_code == 200
    body = response.json()
    assert body["assignment"] is None
    assert body["locked_by_others"] == 1
    assert "being rated by others" in body["message"]
    assert body["progress"]["submitted"] == 0


def test_next_says_when_the_rater_is_done(api_client_for, researcher, rater):
    dataset = make_dataset(n_instructions=1, models=("model-alpha",))
    campaign = make_campaign(researcher, [rater], dataset=dataset)
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores()},
        format="json",
    )
    body = client.post(next_url(campaign.pk)).json()
    assert body["assignment"] is None
    assert body["message"].startswith("You are done")
    assert body["locked_by_others"] == 0
    assert body["progress"]["submitted"] == 1


def test_paused_campaign_serves_nothing_and_refuses_submit(
    api_client_for, researcher, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    campaign_set_status(campaign=campaign, status="paused", user=researcher)

    body = client.post(next_url(campaign.pk)).json()
    assert body["assignment"] is None
    assert body["message"] == "This campaign is paused."

    response = client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores()},
        format="json",
    )
    assert response.status_code == 400
    assert "paused" in response.json()["detail"]
    assert not HumanScore.objects.exists()
    assert Assignment.objects.get(pk=assignment["id"]).status == "served"


# --- Raters: assignment, submit, skip, amend ---------------------------------------------


def test_late_submit_is_refused_when_others_took_the_slot(
    api_client_for, researcher, rater, other_rater
):
    dataset = make_dataset(n_instructions=1, models=("model-alpha",))
    campaign = make_campaign(researcher, [rater, other_rater], dataset=dataset)
    late = api_client_for(rater)
    stale = serve(late, campaign)
    Assignment.objects.filter(pk=stale["id"]).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    prompt = api_client_for(other_rater)
    taken = serve(prompt, campaign)  # the expired lock went back to the pool
    prompt.post(
        assignment_url(taken["id"], "submit"), {"scores": full_scores()}, format="json"
    )

    response = late.post(
        assignment_url(stale["id"], "submit"), {"scores": full_scores()}, format="json"
    )
    assert response.status_code == 400
    assert "expired" in response.json()["detail"]
    assert not HumanScore.objects.filter(assignment_id=stale["id"]).exists()
    assert CampaignItem.objects.get(campaign=campaign).submitted == 1


def test_assignment_detail_shows_own_scores_once_submitted(
    api_client_for, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    detail = client.get(assignment_url(assignment["id"]))
    assert detail.status_code == 200
    assert detail.json() == assignment

    client.post(
        assignment_url(assignment["id"], "submit"),
        {
            "scores": {"comprehension": 5, "factuality": "na", "readability": 2},
            "rationales": {"comprehension": "Answers every part."},
        },
        format="json",
    )
    body = client.get(assignment_url(assignment["id"])).json()
    assert body["status"] == "submitted"
    assert body["submitted_at"]
    # In rubric order (the form's order is `skills`).
    assert sorted(body["scores"], key=lambda s: s["skill"]) == [
        {
            "skill": "comprehension",
            "score": 5,
            "value": 5,
            "is_na": False,
            "rationale": "Answers every part.",
        },
        {
            "skill": "factuality",
            "score": None,
            "value": None,
            "is_na": True,
            "rationale": "",
        },
        {
            "skill": "readability",
            "score": 2,
            "value": 2,
            "is_na": False,
            "rationale": "",
        },
    ]


def test_submit_saves_scores_na_rationales_and_time(api_client_for, rater, campaign):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "submit"),
        {
            "scores": {"comprehension": 5, "factuality": None, "readability": "3"},
            "rationales": {"factuality": "  Cannot check the date.  "},
            "active_seconds": 42.5,
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["assignment_id"] == assignment["id"]
    assert body["status"] == "submitted"
    assert body["active_seconds"] == 42.5
    assert {s["skill"]: s["score"] for s in body["scores"]} == {
        "comprehension": 5,
        "factuality": None,
        "readability": 3,
    }
    saved = {
        s.skill.key: (s.score, s.rationale)
        for s in HumanScore.objects.filter(
            assignment_id=assignment["id"]
        ).select_related("skill")
    }
    assert saved == {
        "comprehension": (5, ""),
        "factuality": (None, "Cannot check the date."),
        "readability": (3, ""),
    }
    held = Assignment.objects.get(pk=assignment["id"])
    assert held.status == "submitted" and held.active_seconds == 42.5
    assert CampaignItem.objects.get(pk=held.item_id).submitted == 1


@pytest.mark.parametrize(
    "body, field",
    [
        ({"scores": {**full_scores(), "factuality": 7}}, "scores.factuality"),
        ({"scores": {**full_scores(), "factuality": 0}}, "scores.factuality"),
        ({"scores": {**full_scores(), "factuality": "abc"}}, "scores.factuality"),
        ({"scores": {**full_scores(), "factuality": 4.5}}, "scores.factuality"),
        ({"scores": {**full_scores(), "factuality": True}}, "scores.factuality"),
        ({"scores": {"comprehension": 4, "factuality": 4}}, "scores.readability"),
        ({"scores": {**full_scores(), "harmlessness": 4}}, "scores.harmlessness"),
        ({"scores": {**full_scores(), "factuality": [4]}}, "scores.factuality"),
        ({"scores": [4, 4, 4]}, "scores"),
        # No scores at all: every listed skill is named as missing.
        ({}, "scores.readability"),
        (
            {
                "scores": full_scores(),
                "rationales": {"factuality": "x" * (limits.RATIONALE + 1)},
            },
            "rationales.factuality",
        ),
        ({"scores": full_scores(), "rationales": ["why"]}, "rationales"),
        ({"scores": full_scores(), "active_seconds": "soon"}, "active_seconds"),
        ({"scores": full_scores(), "active_seconds": -1}, "active_seconds"),
    ],
)
def test_submit_rejects_bad_input_naming_the_field(
    api_client_for, rater, campaign, body, field
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    before = item_counts(campaign)
    response = client.post(
        assignment_url(assignment["id"], "submit"), body, format="json"
    )
    assert response.status_code == 400, response.content
    assert field in error_fields(response), response.json()
    assert not HumanScore.objects.exists()
    assert Assignment.objects.get(pk=assignment["id"]).status == "served"
    assert item_counts(campaign) == before


def test_submit_names_every_bad_skill_at_once(api_client_for, rater, campaign):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": {"comprehension": 7, "factuality": "abc", "harmlessness": 3}},
        format="json",
    )
    assert response.status_code == 400
    assert error_fields(response) == {
        "scores.comprehension",
        "scores.factuality",
        "scores.readability",
        "scores.harmlessness",
    }


def test_submit_twice_saves_one_rating_and_answers_the_same(
    api_client_for, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    url = assignment_url(assignment["id"], "submit")
    payload = {"scores": full_scores(), "rationales": {"factuality": "ok"}}
    first = client.post(url, payload, format="json")
    second = client.post(url, payload, format="json")
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json()
    assert HumanScore.objects.filter(assignment_id=assignment["id"]).count() == len(
        SKILLS
    )
    assert (
        CampaignItem.objects.get(
            pk=Assignment.objects.get(pk=assignment["id"]).item_id
        ).submitted
        == 1
    )


@pytest.mark.parametrize(
    "change",
    [
        {"scores": full_scores(1), "rationales": {"factuality": "ok"}},
        {"scores": full_scores(), "rationales": {"factuality": "changed my mind"}},
        {"scores": {**full_scores(), "readability": "na"}},
    ],
    ids=["other scores", "other rationale", "a score made N/A"],
)
def test_resubmit_with_another_answer_is_a_409_naming_the_amend_endpoint(
    api_client_for, rater, campaign, change
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    url = assignment_url(assignment["id"], "submit")
    payload = {"scores": full_scores(), "rationales": {"factuality": "ok"}}
    assert client.post(url, payload, format="json").status_code == 200
    response = client.post(url, change, format="json")
    assert response.status_code == 409
    body = response.json()
    assert "already submitted" in body["detail"]
    assert body["problems"][0]["field"] == "scores"
    amend = assignment_url(assignment["id"], "scores")
    assert amend in body["problems"][0]["message"]
    # Nothing changed: the first answer stands, and amending it works.
    stored = HumanScore.objects.filter(assignment_id=assignment["id"])
    assert {s.skill.key: s.score for s in stored} == full_scores()
    assert stored.get(skill__key="factuality").rationale == "ok"
    assert client.put(amend, change, format="json").status_code == 200


def test_resubmit_with_the_same_answer_in_another_spelling_is_a_200(
    api_client_for, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    url = assignment_url(assignment["id"], "submit")
    first = {"scores": {**full_scores(), "readability": None}}
    assert client.post(url, first, format="json").status_code == 200
    # "N/A" and null are the same answer; a retried request is not a conflict.
    again = {"scores": {**full_scores(), "readability": "N/A"}}
    assert client.post(url, again, format="json").status_code == 200


@pytest.mark.parametrize("seconds, status", [(86401, 400), (10**9, 400), (86400, 200)])
def test_submit_active_seconds_is_bounded_at_a_day(
    api_client_for, rater, campaign, seconds, status
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores(), "active_seconds": seconds},
        format="json",
    )
    assert response.status_code == status, response.content
    saved = Assignment.objects.get(pk=assignment["id"])
    if status == 400:
        assert "active_seconds" in error_fields(response)
        assert saved.status == Assignment.Status.SERVED
        assert not HumanScore.objects.filter(assignment=saved).exists()
    else:
        assert saved.active_seconds == seconds


def test_skip_with_a_reason_frees_the_response(api_client_for, rater, campaign):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "skip"),
        {"reason": "outside my expertise"},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "skipped"
    assert body["skip_reason"] == "outside my expertise"
    held = Assignment.objects.get(pk=assignment["id"])
    item = CampaignItem.objects.get(pk=held.item_id)
    assert (item.reserved, item.open_slots) == (0, 2)
    # The rater is never served the skipped response again.
    assert serve(client, campaign)["id"] != assignment["id"]


@pytest.mark.parametrize("body", [{"reason": ""}, {"reason": "   "}, {}])
def test_skip_needs_a_reason(api_client_for, rater, campaign, body):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "skip"), body, format="json"
    )
    assert response.status_code == 400
    assert error_fields(response) == {"reason"}
    assert Assignment.objects.get(pk=assignment["id"]).status == "served"


def test_skip_reason_longer_than_500_characters_is_refused(
    api_client_for, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    response = client.post(
        assignment_url(assignment["id"], "skip"), {"reason": "x" * 501}, format="json"
    )
    assert response.status_code == 400
    assert error_fields(response) == {"reason"}


def test_submit_after_skip_is_refused(api_client_for, rater, campaign):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "skip"), {"reason": "unsure"}, format="json"
    )
    response = client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores()},
        format="json",
    )
    assert response.status_code == 400
    assert "skipped" in response.json()["detail"]
    assert not HumanScore.objects.exists()


def test_skip_after_submit_is_refused(api_client_for, rater, campaign):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores()},
        format="json",
    )
    response = client.post(
        assignment_url(assignment["id"], "skip"),
        {"reason": "changed my mind"},
        format="json",
    )
    assert response.status_code == 400
    assert Assignment.objects.get(pk=assignment["id"]).status == "submitted"


def test_amend_replaces_own_scores(api_client_for, rater, campaign):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores(4)},
        format="json",
    )
    response = client.put(
        assignment_url(assignment["id"], "scores"),
        {
            "scores": {"comprehension": 2, "factuality": "na", "readability": 4},
            "rationales": {"comprehension": "Missed the second question."},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["updated_at"] is not None
    assert {s["skill"]: s["score"] for s in body["scores"]} == {
        "comprehension": 2,
        "factuality": None,
        "readability": 4,
    }
    assert HumanScore.objects.filter(assignment_id=assignment["id"]).count() == len(
        SKILLS
    )
    assert (
        HumanScore.objects.get(
            assignment_id=assignment["id"], skill__key="comprehension"
        ).rationale
        == "Missed the second question."
    )


@pytest.mark.parametrize(
    "body, field",
    [
        ({"scores": {**full_scores(), "factuality": 7}}, "scores.factuality"),
        ({"scores": {"comprehension": 1}}, "scores.factuality"),
        ({"scores": {**full_scores(), "harmlessness": 1}}, "scores.harmlessness"),
        ({"scores": "4"}, "scores"),
    ],
)
def test_amend_rejects_bad_scores_and_keeps_the_old_ones(
    api_client_for, rater, campaign, body, field
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores(4)},
        format="json",
    )
    response = client.put(
        assignment_url(assignment["id"], "scores"), body, format="json"
    )
    assert response.status_code == 400
    assert field in error_fields(response)
    assert set(
        HumanScore.objects.filter(assignment_id=assignment["id"]).values_list(
            "score", flat=True
        )
    ) == {4}


def test_amend_needs_a_submitted_rating_and_an_open_campaign(
    api_client_for, researcher, rater, campaign
):
    client = api_client_for(rater)
    assignment = serve(client, campaign)
    url = assignment_url(assignment["id"], "scores")
    response = client.put(url, {"scores": full_scores()}, format="json")
    assert response.status_code == 400  # served, not submitted yet
    assert not HumanScore.objects.exists()

    client.post(
        assignment_url(assignment["id"], "submit"),
        {"scores": full_scores(4)},
        format="json",
    )
    campaign_set_status(campaign=campaign, status="closed", user=researcher)
    response = client.put(url, {"scores": full_scores(1)}, format="json")
    assert response.status_code == 400
    assert "closed" in response.json()["detail"]
    assert set(HumanScore.objects.values_list("score", flat=True)) == {4}


# --- Blind rating ------------------------------------------------------------------------


def test_raters_never_see_each_others_scores_or_model_names(
    api_client_for, rater, other_rater, campaign
):
    first = api_client_for(rater)
    a = serve(first, campaign)
    first.post(
        assignment_url(a["id"], "submit"),
        {"scores": full_scores(1), "rationales": {k: SECRET for k in SKILLS}},
        format="json",
    )
    second = api_client_for(other_rater)
    response = second.post(next_url(campaign.pk))
    b = response.json()["assignment"]
    # Overlap 2: the partly rated response is served next, to the other rater.
    assert b["response"]["text"] == a["response"]["text"]
    assert b["reason"].startswith("finishing a partly rated response")
    assert b["scores"] == []
    payloads = [
        response,
        second.get(assignment_url(b["id"])),
        second.get("/api/rate/campaigns/"),
        second.get(f"/api/rate/campaigns/{campaign.pk}/progress/"),
    ]
    for payload in payloads:
        assert payload.status_code == 200
        content = payload.content.decode()
        assert SECRET not in content
        assert not any(model in content for model in MODELS)
    # After B submits, B's own rating shows only B's scores.
    done = second.post(
        assignment_url(b["id"], "submit"), {"scores": full_scores(5)}, format="json"
    )
    assert {s["score"] for s in done.json()["scores"]} == {5}
    assert SECRET not in done.content.decode()


# --- Query counts ------------------------------------------------------------------------

# The ORM path, measured on PostgreSQL: next 15 (token, campaign, roles, live lock,
# expiry probe, the SKIP LOCKED pick, earlier assignment, insert, slot update, the form's
# 3 reads, own progress, 2 savepoints), submit 13. One spare each; what matters is that
# 60 responses cost what 5 do.
NEXT_MAX_QUERIES = 16
SUBMIT_MAX_QUERIES = 14
# The raw-SQL path (PostgreSQL), exactly: next = token with roles, campaign membership,
# the rater's row lock, one statement that serves; submit = token, the locked read, the
# rater's membership (membership.require_campaign_rater), one statement that saves; each +
# the savepoint and its release that stand for BEGIN and
# COMMIT inside the test's transaction.
SQL_NEXT_QUERIES = 4 + 2
SQL_SUBMIT_QUERIES = 4 + 2


@pytest.mark.parametrize("n_responses", [5, 60])
def test_next_and_submit_issue_a_bounded_number_of_queries(
    django_assert_max_num_queries,
    django_assert_num_queries,
    researcher,
    rater,
    other_rater,
    n_responses,
    rating_path,
):
    dataset = make_dataset(n_instructions=n_responses, models=("model-alpha",))
    campaign = make_campaign(
        researcher, [rater, other_rater], dataset=dataset, overlap=2
    )
    # Some history, so that the queries have rows to skip.
    for user in (other_rater, rater):
        for _ in range(2):
            held = assignment_next(campaign=campaign, rater=user).assignment
            rating_submit(assignment_id=held.pk, rater=user, scores=full_scores())
    client = token_client(rater)  # a fresh user per request, as in production
    if rating_path == "sql":
        next_queries = django_assert_num_queries(SQL_NEXT_QUERIES)
        submit_queries = django_assert_num_queries(SQL_SUBMIT_QUERIES)
    else:
        next_queries = django_assert_max_num_queries(NEXT_MAX_QUERIES)
        submit_queries = django_assert_max_num_queries(SUBMIT_MAX_QUERIES)

    with next_queries:
        response = client.post(next_url(campaign.pk))
    assignment = response.json()["assignment"]
    assert assignment is not None

    with submit_queries:
        response = client.post(
            assignment_url(assignment["id"], "submit"),
            {"scores": full_scores()},
            format="json",
        )
    assert response.status_code == 200


# --- Schema ------------------------------------------------------------------------------


def test_schema_documents_the_rating_endpoints(api_client_for, researcher):
    """(The whole schema's --fail-on-warn check is in test_api.py.)"""
    response = api_client_for(researcher).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    paths = schema["paths"]
    for path, method in [
        ("/api/campaigns/", "post"),
        ("/api/campaigns/{campaign_id}/status/", "post"),
        ("/api/campaigns/{campaign_id}/raters/", "put"),
        ("/api/campaigns/{campaign_id}/locks/", "get"),
        ("/api/rate/campaigns/", "get"),
        ("/api/rate/campaigns/{campaign_id}/next/", "post"),
        ("/api/rate/campaigns/{campaign_id}/progress/", "get"),
        ("/api/rate/assignments/{assignment_id}/", "get"),
        ("/api/rate/assignments/{assignment_id}/submit/", "post"),
        ("/api/rate/assignments/{assignment_id}/skip/", "post"),
        ("/api/rate/assignments/{assignment_id}/scores/", "put"),
    ]:
        assert method in paths[path], path
    submit = paths["/api/rate/assignments/{assignment_id}/submit/"]["post"]
    assert {"200", "400", "404"} <= set(submit["responses"])
    envelope = schema["components"]["schemas"]["RaterNextOutput"]
    assert set(envelope["required"]) == {
        "assignment",
        "message",
        "locked_by_others",
        "progress",
        "qualification",  # null unless the campaign has a qualification
    }


def test_campaign_create_refuses_an_overlap_above_the_chosen_raters(
    api_client_for, researcher, rater
):
    dataset = make_dataset(n_instructions=1)
    response = api_client_for(researcher).post(
        "/api/campaigns/",
        {"dataset": dataset.pk, "name": "x", "overlap": 3, "raters": [rater.username]},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert error_fields(response) == {"overlap"}
    assert not Campaign.objects.exists()
