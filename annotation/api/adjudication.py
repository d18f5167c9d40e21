"""REST API of adjudication (reviewers, researchers and admins; the rule:
researchers): a campaign's queue, one response with every rater's scores, setting a
settled value, and the history of the campaign's human judgments. Thin, as
`annotation.api.rating`: the rule lives in `annotation.selectors.adjudication`."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.permissions import IsResearcher, IsReviewer
from annotation.api.rating import REFUSED
from annotation.api.serializers.adjudication import (
    AdjudicationInputSerializer,
    AdjudicationItemOutputSerializer,
    AdjudicationOutputSerializer,
    AdjudicationQueueOutputSerializer,
    AdjudicationRuleSerializer,
    HistoryEventSerializer,
)
from annotation.models import Adjudication
from annotation.scales import scale_of
from annotation.selectors import adjudication as selectors
from annotation.services.adjudication import adjudication_rule_set, adjudication_set
from flaskapp.errors import DomainError, Problem
from flaskapp.params import ascii_int


def _rule(campaign) -> dict:
    return {
        "adjudication_range": campaign.adjudication_range,
        "adjudication_split": campaign.adjudication_split,
    }


def _adjudication(a: Adjudication | None) -> dict | None:
    if a is None:
        return None
    return {
        "response_id": a.response_id,
        "criterion": a.skill.key,
        "score": scale_of(a.skill, anchors=False).label_of(a.score),
        "note": a.note,
        "by": a.updated_by.username if a.updated_by else "",
        "at": a.updated_at,
    }


class AdjudicationQueueApi(APIView):
    """The campaign's adjudication queue, one page (50 responses) at a time: the
    responses with a disputed criterion (`state` open: not all settled; settled;
    all), how the raters split, and the rule."""

    permission_classes = [IsReviewer]

    @extend_schema(
        tags=["adjudication"],
        parameters=[
            OpenApiParameter("state", str, enum=list(selectors.STATES)),
            OpenApiParameter("page", int),
        ],
        responses={200: AdjudicationQueueOutputSerializer, 400: REFUSED},
    )
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_reviewer(
            user=request.user, campaign_id=campaign_id
        )
        state = request.query_params.get("state", "open")
        if state not in selectors.STATES:
            raise DomainError(
                f"unknown state {state!r}",
                [Problem(f"one of {', '.join(selectors.STATES)}", field="state")],
            )
        raw_page = request.query_params.get("page")
        page = ascii_int(raw_page) if raw_page is not None else 1
        if page is None or page < 1:
            raise DomainError(
                "page must be a positive integer",
                [Problem("must be a positive integer", field="page")],
            )
        q = selectors.adjudication_queue(campaign=campaign, state=state, page=page)
        return Response(
            {
                "campaign_id": campaign.pk,
                "rule": _rule(campaign),
                "state": q.state,
                "page": q.page,
                "pages": q.pages,
                "open_responses": q.open_count,
                "settled_responses": q.settled_count,
                "open_criteria": q.criteria_open,
                "settled_criteria": q.criteria_settled,
                "results": [
                    {
                        "response_id": row.response.pk,
                        "instruction_id": row.response.instruction_id,
                        "model": row.response.model_name,
                        "open": row.open,
                        "criteria": [
                            {
                                "criterion": c.skill.key,
                                "name": c.skill.name,
                                "split": c.split,
                                "settled": c.settled,
                            }
                            for c in row.criteria
                        ],
                    }
                    for row in q.rows
                ],
            }
        )


class AdjudicationRuleApi(APIView):
    """Set the campaign's adjudication rule (researchers and admins). 400 naming the
    field, nothing changed, when out of bounds."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["adjudication"],
        request=AdjudicationRuleSerializer,
        responses={200: AdjudicationRuleSerializer, 400: REFUSED},
    )
    def put(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_reviewer(
            user=request.user, campaign_id=campaign_id
        )
        data = request.data if isinstance(request.data, dict) else {}
        campaign = adjudication_rule_set(
            campaign=campaign,
            spread=data.get("adjudication_range"),
            split=data.get("adjudication_split"),
            user=request.user,
        )
        return Response(_rule(campaign))


class AdjudicationItemApi(APIView):
    """GET: one response with every rater's score and rationale per criterion (not
    blind), whether the rule disputes it, its adjudication, the raters' critiques and
    the response's history. POST: set (or change) a criterion's settled value with a
    note (201; 400 naming the field, nothing changed)."""

    permission_classes = [IsReviewer]

    @extend_schema(
        tags=["adjudication"],
        operation_id="campaigns_adjudication_item_retrieve",
        responses={200: AdjudicationItemOutputSerializer},
    )
    def get(self, request, campaign_id: int, response_id: int):
        campaign = selectors.campaign_get_for_reviewer(
            user=request.user, campaign_id=campaign_id
        )
        item = selectors.adjudication_item(campaign=campaign, response_id=response_id)
        return Response(
            {
                "campaign_id": campaign.pk,
                "response_id": item.response.pk,
                "instruction_id": item.response.instruction_id,
                "model": item.response.model_name,
                "criteria": [
                    {
                        "criterion": c.skill.key,
                        "name": c.skill.name,
                        "scale": c.scale.describe(),
                        "disputed": c.disputed,
                        "ratings": [
                            {
                                "rater": r.rater,
                                "score": r.value,
                                "rationale": r.rationale,
                                "excluded": r.excluded,
                            }
                            for r in c.ratings
                        ],
                        "adjudication": _adjudication(c.adjudication),
                    }
                    for c in item.criteria
                ],
                "critiques": [{"rater": r, "critique": t} for r, t in item.critiques],
                "history": HistoryEventSerializer(item.history, many=True).data,
                "next_open": item.next_open,
            }
        )

    @extend_schema(
        tags=["adjudication"],
        operation_id="campaigns_adjudication_item_create",
        request=AdjudicationInputSerializer,
        responses={201: AdjudicationOutputSerializer, 400: REFUSED},
    )
    def post(self, request, campaign_id: int, response_id: int):
        campaign = selectors.campaign_get_for_reviewer(
            user=request.user, campaign_id=campaign_id
        )
        data = request.data if isinstance(request.data, dict) else {}
        row = adjudication_set(
            campaign=campaign,
            response_id=response_id,
            criterion=data.get("criterion"),
            score=data.get("score"),
            note=data.get("note"),
            user=request.user,
        )
        row = Adjudication.objects.select_related("skill", "updated_by").get(pk=row.pk)
        return Response(_adjudication(row), status=status.HTTP_201_CREATED)


class ScoreHistoryApi(APIView):
    """Every recorded change of the campaign's human judgments, newest first (at most
    1,000): amended scores (with the submitted value first), adjudications, and
    exclusions / pauses of raters, with who and when. `response_id` narrows the
    score and adjudication changes to one response."""

    permission_classes = [IsReviewer]

    @extend_schema(
        tags=["adjudication"],
        parameters=[OpenApiParameter("response_id", OpenApiTypes.INT)],
        responses={200: HistoryEventSerializer(many=True), 400: REFUSED},
    )
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_reviewer(
            user=request.user, campaign_id=campaign_id
        )
        raw = request.query_params.get("response_id")
        response_id = None
        if raw is not None:
            response_id = ascii_int(raw)
            if response_id is None:
                raise DomainError(
                    "response_id must be an integer",
                    [Problem("must be an integer", field="response_id")],
                )
        events = selectors.score_history(
            campaign=campaign, response_id=response_id, limit=1000
        )
        return Response(HistoryEventSerializer(events, many=True).data)
