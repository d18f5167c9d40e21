"""Self-consistency API: a run's figures per criterion, for notebooks and scripts.

    GET /api/runs/{id}/consistency/[?campaign=1&campaign=2][&slice=split:dev]

Without `campaign`, every pointwise campaign of the run's dataset. Researchers and
admins only (raters 403, anonymous 401). Bad parameters give 400 with the parameter
named in `problems[].field`. The response is the JSON of
`analysis.selectors.consistency.self_consistency`.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.agreement import REFUSED, agreement_params, agreement_refusal
from analysis.selectors.agreement import AgreementError
from analysis.selectors.consistency import self_consistency
from annotation.api.permissions import IsResearcher
from flaskapp.throttling import HeavyApiMixin
from judging.selectors.runs import judge_run_get_for_user


class RunConsistencyApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[
            OpenApiParameter(
                "campaign",
                OpenApiTypes.INT,
                many=True,
                description="Campaign ids (default: every pointwise campaign)",
            ),
            OpenApiParameter(
                "slice", OpenApiTypes.STR, description="DIM:VALUE, e.g. split:dev"
            ),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, run_id: int):
        run = judge_run_get_for_user(user=request.user, run_id=run_id)
        p = agreement_params(request)
        try:
            result = self_consistency(
                dataset=run.dataset,
                run_id=run.pk,
                campaign_ids=p.get("campaign", []),
                slice_dim=p["slice_dim"],
                slice_value=p["slice_value"],
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)
