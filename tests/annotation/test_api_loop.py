"""The rater loop's API is one set of views for both item kinds (issue 33): the
``rate/...`` and ``pairwise/rate/...`` routes lead to the same view classes with the
kind fixed by the route, an id of the other kind is a 404 that changes nothing, and
the schema documents each route in its own kind's terms."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.urls import resolve, reverse

from annotation.models import Assignment, CampaignItem, HumanPreference, HumanScore
from annotation.services.campaign_spec import CampaignSpec, PairPolicy
from annotation.services.campaigns import campaign_create
from annotation.services.pairwise import pairwise_next
from annotation.services.rating import assignment_next
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

# (pointwise URL name, pairwise URL name) of each step of the loop.
STEPS = [
    ("assignment-next", "pairwise-next"),
    ("rater-progress", "pairwise-progress"),
    ("rating-submit", "pairwise-submit"),
    ("assignment-skip", "pairwise-skip"),
    ("rating-amend", "pairwise-amend"),
]
ROUTES = {
    "pointwise": [rate for rate, _ in STEPS],
    "pairwise": [compare for _, compare in STEPS],
}


@pytest.mark.parametrize(("rate", "compare"), STEPS)
def test_pointwise_and_pairwise_rater_endpoints_are_the_same_views(rate, compare):
    rate_route = resolve(reverse(f"annotation_api:{rate}", args=[7]))
    pair_route = resolve(reverse(f"annotation_api:{compare}", args=[7]))
    assert rate_route.func.view_class is pair_route.func.view_class
    assert rate_route.func.view_initkwargs == {"kind": "pointwise"}
    assert pair_route.func.view_initkwargs == {"kind": "pairwise"}


@pytest.fixture(params=["sql", "orm"])
def rating_path(request, settings):
    """Serve and submit through the raw-SQL path (PostgreSQL only) and the ORM path."""
    if request.param == "sql" and connection.vendor != "postgresql":
        pytest.skip("the raw-SQL path runs on PostgreSQL only")
    settings.RATING_FAST_SQL = request.param == "sql"
    return request.param


def _dataset():
    dataset = DatasetFactory()
    for i in range(2):
        instruction = InstructionFactory(dataset=dataset)
        for model in ("model-alpha", "model-beta"):
            ResponseFactory(instruction=instruction, model_name=model, text=f"T{i}")
    return dataset


@pytest.fixture
def served(db, rating_path, researcher, rater):
    """A pointwise and a pairwise campaign of `rater`, each with an item served."""
    pointwise = campaign_create(
        spec=CampaignSpec(name="scores", dataset=_dataset(), raters=[rater]),
        created_by=researcher,
    )
    pairwise = campaign_create(
        spec=CampaignSpec(
            name="pairs",
            dataset=_dataset(),
            skills=["factuality"],
            raters=[rater],
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    return {
        "pointwise": (
            pointwise,
            assignment_next(campaign=pointwise, rater=rater).assignment,
        ),
        "pairwise": (
            pairwise,
            pairwise_next(campaign=pairwise, rater=rater).assignment,
        ),
    }


# A well-formed answer of each kind: the refusal must come from the kind, not the body.
ANSWERS = {
    "pointwise": {"scores": {"comprehension": 4, "factuality": 4, "readability": 4}},
    "pairwise": {"label": "A", "skill_labels": {"factuality": "A"}},
}


def _state():
    return (
        sorted(Assignment.objects.values_list("pk", "status", "updated_at")),
        sorted(CampaignItem.objects.values_list("pk", "submitted", "reserved")),
        HumanScore.objects.count(),
        HumanPreference.objects.count(),
    )


@pytest.mark.parametrize(
    ("route_kind", "other_kind"), [("pointwise", "pairwise"), ("pairwise", "pointwise")]
)
def test_an_id_of_the_other_kind_is_404_on_every_endpoint_and_changes_nothing(
    api_client_for, rater, served, route_kind, other_kind
):
    campaign, assignment = served[other_kind]
    next_, progress, submit, skip, amend = ROUTES[route_kind]
    client = api_client_for(rater)
    before = _state()
    answer = ANSWERS[route_kind]
    for response in (
        client.post(reverse(f"annotation_api:{next_}", args=[campaign.pk])),
        client.get(reverse(f"annotation_api:{progress}", args=[campaign.pk])),
        client.post(
            reverse(f"annotation_api:{submit}", args=[assignment.pk]),
            answer,
            format="json",
        ),
        client.post(
            reverse(f"annotation_api:{skip}", args=[assignment.pk]),
            {"reason": "not mine"},
            format="json",
        ),
        client.put(
            reverse(f"annotation_api:{amend}", args=[assignment.pk]),
            answer,
            format="json",
        ),
    ):
        assert response.status_code == 404, (response.request, response.content)
    assert _state() == before
    # The same calls on the route of the assignment's own kind do work.
    response = client.post(
        reverse(f"annotation_api:{ROUTES[other_kind][2]}", args=[assignment.pk]),
        ANSWERS[other_kind],
        format="json",
    )
    assert response.status_code == 200, response.content


def test_the_schema_documents_each_route_in_its_kinds_terms(api_client_for, researcher):
    response = api_client_for(researcher).get("/api/schema/", {"format": "json"})
    paths = json.loads(response.content)["paths"]

    def ref(content) -> str:
        return content["application/json"]["schema"]["$ref"].rsplit("/", 1)[-1]

    for prefix, tag, next_out, submit_in, submit_out, amend in [
        (
            "/api/rate",
            "rate",
            "RaterNextOutput",
            "RatingSubmitInput",
            "RatingSubmitOutput",
            "scores",
        ),
        (
            "/api/pairwise/rate",
            "pairwise",
            "PairwiseNextOutput",
            "PairwiseSubmitInput",
            "PairwiseSubmitOutput",
            "preference",
        ),
    ]:
        submit = paths[f"{prefix}/assignments/{{assignment_id}}/submit/"]["post"]
        assert submit["tags"] == [tag]
        assert ref(submit["requestBody"]["content"]) == f"{submit_in}Request"
        assert ref(submit["responses"]["200"]["content"]) == submit_out
        assert set(submit["responses"]) == {"200", "400", "403", "404", "409"}
        # Each kind's own words: the amend endpoint its 409 names.
        assert f".../{amend}/" in submit["description"]
        next_ = paths[f"{prefix}/campaigns/{{campaign_id}}/next/"]["post"]
        assert next_["tags"] == [tag] and "requestBody" not in next_
        assert ref(next_["responses"]["200"]["content"]) == next_out
