"""GET /api/campaigns/{id}/reliability/: each rater's reliability in a pointwise
campaign (`analysis.selectors.reliability`): items, time, gold accuracy, agreement
with the leave-one-out consensus overall and per criterion, severity,
straight-lining, speed outliers, drift by quarter, flags with their reasons, and
whether the rater is excluded or paused.

GET /api/campaigns/{id}/rater-models/?model=dawid_skene|mace|glad: the rater models
of the campaign's criteria (`analysis.selectors.competence`): every annotator's
competence, kind (human or judge run), labels and rank per criterion, and each
judge's place among the human raters. A bad `model` is a 400 naming it. A fit that
is not cached is made in the request for a small campaign; for a large one
(`analysis.selectors.budget.rater_models_inline`) the answer is a 202 with the
background job that fits it (`GET /api/jobs/{id}/`: its result is this JSON; once it
is done, this endpoint answers 200 from the cache).

Researchers and admins only."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.jobs import job_dict
from analysis.selectors.budget import rater_models_inline
from analysis.selectors.competence import (
    METHODS,
    RaterModelError,
    cached_rater_models,
    campaign_rater_models,
    parse_method,
    rater_models_dict,
)
from analysis.selectors.reliability import campaign_reliability, reliability_dict
from analysis.services.jobs import job_start
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from flaskapp.params import BadParameter
from flaskapp.throttling import HeavyApiMixin


class CampaignReliabilityApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["campaigns"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, campaign_id: int):
        campaign = annotation_selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        return Response(reliability_dict(campaign_reliability(campaign=campaign)))


class CampaignRaterModelsApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        parameters=[
            OpenApiParameter(
                "model",
                OpenApiTypes.STR,
                enum=list(METHODS),
                description="The rater model (default: dawid_skene)",
            )
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, campaign_id: int):
        campaign = annotation_selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        try:
            method = parse_method(request.query_params.get("model"))
        except RaterModelError as exc:
            raise BadParameter("model", str(exc).removeprefix("model: ")) from exc
        report = cached_rater_models(campaign=campaign, method=method)
        if report is None and not rater_models_inline(campaign=campaign):
            job = job_start(
                kind="rater_models", owner=request.user, dataset=campaign.dataset,
                params={"campaign_id": campaign.pk, "method": method},
            )  # fmt: skip
            return Response({"job": job_dict(job)}, status=202)
        if report is None:
            report = campaign_rater_models(campaign=campaign, method=method)
        return Response(rater_models_dict(report))
