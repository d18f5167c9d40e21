"""POST /api/campaigns/sampling/: draw a sample of a dataset's responses from a
judge run's scores and create its campaign (`judging.services.sampling`).

Body: ``{"dataset": id or name, "run": id, "budget": N, "name": "...",
"strategy": "uncertainty" | "uniform", "seed": S, "skill": "key", "models": [...],
"overlap": k}``. 201 with the campaign's id and plan; a bad field is a 400 naming
it (`run` for a run without judge scores, `budget` outside 1..N, `strategy`),
nothing written.

GET /api/campaigns/{id}/sampling/: the estimates so far and the simulated CI
widths per labels spent for both strategies (`analysis.selectors.sampling`).

Researchers and admins only."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.selectors.sampling import campaign_sampling_report
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from annotation.selectors.datasets import dataset_get_for_user
from flaskapp.api import validated
from flaskapp.bounds import ID, OVERLAP, SEED
from flaskapp.params import ascii_int
from judging.services.sampling import sampling_campaign_start


class SamplingInputSerializer(serializers.Serializer):
    """The body's types and bounds; what depends on the data (a run with scores,
    a budget within the population, a known strategy or criterion) the service
    checks, naming the same fields."""

    dataset = serializers.CharField(max_length=200)
    run = serializers.IntegerField(**ID.field_kwargs())
    budget = serializers.IntegerField(**ID.field_kwargs())
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
    strategy = serializers.CharField(
        max_length=40, required=False, default="uncertainty"
    )
    seed = serializers.IntegerField(required=False, default=0, **SEED.field_kwargs())
    skill = serializers.CharField(
        max_length=100, required=False, allow_blank=True, default=""
    )
    models = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list
    )
    overlap = serializers.IntegerField(
        required=False, default=1, **OVERLAP.field_kwargs()
    )


def _dataset(user, raw: str):
    dataset_id = ascii_int(raw)
    if dataset_id is not None:
        return dataset_get_for_user(user=user, dataset_id=dataset_id)
    return dataset_get_for_user(user=user, name=raw)


class SamplingCampaignCreateApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=SamplingInputSerializer,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        data = validated(SamplingInputSerializer, request.data, detail="Bad input")
        dataset = _dataset(request.user, data["dataset"])
        campaign = sampling_campaign_start(
            user=request.user,
            name=data["name"] or f"sampling of {dataset.name}",
            dataset=dataset,
            run_id=data["run"],
            budget=data["budget"],
            strategy=data["strategy"],
            seed=data["seed"],
            skill=data["skill"],
            models=data["models"],
            overlap=data["overlap"],
        )
        return Response(
            {"id": campaign.pk, "name": campaign.name, "sampling": campaign.sampling},
            status=status.HTTP_201_CREATED,
        )


class CampaignSamplingApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["campaigns"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, campaign_id: int):
        campaign = annotation_selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        report = campaign_sampling_report(
            campaign=campaign, skill=request.query_params.get("skill", "")
        )
        curve = report.curve
        return Response(
            {
                "sampling": campaign.sampling,
                "skill": report.skill,
                "problem": report.problem,
                "sampled": report.sampled,
                "labelled": report.labelled,
                "estimates": [
                    {
                        "model": e.model,
                        "responses": e.responses,
                        "labelled": e.labelled,
                        "judge_mean": e.judge_mean,
                        "estimate": e.estimate.as_dict() if e.estimate else None,
                    }
                    for e in report.estimates
                ],
                "curve": None
                if curve is None
                else {
                    "source": "simulated (synthetic labels from this campaign's "
                    "judge scores; " + report.spread_note + ")",
                    "reps": curve.reps,
                    "budgets": curve.budgets,
                    "labels": curve.labels,
                    "widths": curve.widths,
                },
            }
        )
