"""Pairwise leaderboard API, for notebooks and scripts.

    GET /api/datasets/{id}/leaderboard/pairwise/?source=humans|<run id>
        [&length_control=1][&compare=humans|<run id>][&n_boot=1000][&seed=0]

Researchers and admins only (raters 403, anonymous 401). Bad parameters give 400
with the parameter named in `problems[].field`. The response is the JSON of
`analysis.selectors.leaderboard.pairwise_leaderboard`.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.agreement import REFUSED
from analysis.selectors.leaderboard import (
    HUMANS,
    LeaderboardError,
    pairwise_leaderboard,
)
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from flaskapp.api import refusal, validated
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.throttling import HeavyApiMixin


class LeaderboardInputSerializer(serializers.Serializer):
    source = serializers.CharField(required=False, default=HUMANS, max_length=20)
    compare = serializers.CharField(required=False, default="", allow_blank=True)
    length_control = serializers.BooleanField(required=False, default=False)
    n_boot = serializers.IntegerField(
        required=False, default=1000, **N_BOOT.field_kwargs()
    )
    seed = serializers.IntegerField(required=False, default=0, **SEED.field_kwargs())


class PairwiseLeaderboardApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[
            OpenApiParameter(
                "source", OpenApiTypes.STR, description="humans (default) or a run id"
            ),
            OpenApiParameter(
                "compare",
                OpenApiTypes.STR,
                description="Another source: adds the rank correlation with it",
            ),
            OpenApiParameter("length_control", OpenApiTypes.BOOL),
            OpenApiParameter("n_boot", OpenApiTypes.INT),
            OpenApiParameter("seed", OpenApiTypes.INT),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = validated(LeaderboardInputSerializer, request.query_params)
        try:
            result = pairwise_leaderboard(
                dataset=dataset,
                source=p["source"],
                n_boot=p["n_boot"],
                seed=p["seed"],
                length_control=p["length_control"],
                compare=p["compare"] or None,
            )
        except LeaderboardError as exc:
            raise refusal(exc, "Leaderboard refused") from exc
        return Response(result)
