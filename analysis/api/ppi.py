"""Prediction-powered estimates API.

    GET /api/datasets/{id}/estimates/?run=<id>[&campaign=<id>...][&criterion=KEY]
        [&slice=DIM:VALUE][&alpha=0.05][&lam=0..1]

Per ordinal criterion and model: humans only, judge only (its interval is marked
``valid: false``: no confidence interval for the human mean), prediction-powered
(PPI++, lam tuned unless `lam` is given; ``classic``: lam = 1), the effective
number of human labels. The JSON of `analysis.selectors.ppi.prediction_powered_means`.
    GET /api/datasets/{id}/estimates/win-rates/?[run=<pairwise run id>][&alpha=]
        [&lam=]

Per pair of models: the first's win rate from the human votes alone, the judge
alone and prediction-powered (`analysis.selectors.ppi_pairwise`); without `run`,
the newest pairwise run.

Researchers and admins (raters 403, anonymous 401); a bad parameter is a 400 naming
it in ``problems[].field``.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.agreement import REFUSED, agreement_refusal
from analysis.selectors.agreement import AgreementError
from analysis.selectors.ppi import prediction_powered_means
from analysis.selectors.ppi_pairwise import prediction_powered_win_rates
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from flaskapp.api import query_data, validated
from flaskapp.bounds import ID
from flaskapp.throttling import HeavyApiMixin

# The interval's error level and PPI++'s lam, on both endpoints.
ALPHA_LAM = [
    OpenApiParameter("alpha", OpenApiTypes.FLOAT, description="Error level"),
    OpenApiParameter(
        "lam", OpenApiTypes.FLOAT, description="Fixed lam (default: tuned)"
    ),
]


class EstimatesInputSerializer(serializers.Serializer):
    run = serializers.IntegerField(required=False, allow_null=True, **ID.field_kwargs())
    campaign = serializers.ListField(
        child=serializers.IntegerField(**ID.field_kwargs()), required=False
    )
    criterion = serializers.CharField(required=False, allow_blank=True, default="")
    slice = serializers.RegexField(
        r"^(|[a-z]+:.*)$", required=False, allow_blank=True, default=""
    )
    alpha = serializers.FloatField(required=False, default=0.05)
    lam = serializers.FloatField(required=False, allow_null=True, default=None)


def _params(request) -> dict:
    return validated(EstimatesInputSerializer, query_data(request, ("campaign",)))


class DatasetEstimatesApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[
            OpenApiParameter("run", OpenApiTypes.INT, description="Judge run id"),
            OpenApiParameter(
                "campaign",
                OpenApiTypes.INT,
                many=True,
                description="Campaign ids (default: every pointwise campaign)",
            ),
            OpenApiParameter("criterion", OpenApiTypes.STR, description="Skill key"),
            OpenApiParameter(
                "slice", OpenApiTypes.STR, description="DIM:VALUE (domain, ...)"
            ),
            *ALPHA_LAM,
        ],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = _params(request)
        dim, _, value = p["slice"].partition(":")
        try:
            result = prediction_powered_means(
                dataset=dataset,
                run_id=p.get("run"),
                campaign_ids=p.get("campaign") or None,
                criterion=p["criterion"] or None,
                slice_dim=dim,
                slice_value=value,
                alpha=p["alpha"],
                lam=p["lam"],
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)


class WinRatesInputSerializer(serializers.Serializer):
    run = serializers.IntegerField(required=False, allow_null=True, **ID.field_kwargs())
    alpha = serializers.FloatField(required=False, default=0.05)
    lam = serializers.FloatField(required=False, allow_null=True, default=None)


class DatasetWinRatesApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[
            OpenApiParameter(
                "run", OpenApiTypes.INT, description="Pairwise run (default: newest)"
            ),
            *ALPHA_LAM,
        ],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = validated(WinRatesInputSerializer, request.query_params)
        try:
            result = prediction_powered_win_rates(
                dataset=dataset, run_id=p.get("run"), alpha=p["alpha"], lam=p["lam"]
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)
