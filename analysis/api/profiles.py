"""Skill-profiles API: the leaderboard page's numbers for notebooks and scripts.

    GET /api/datasets/{id}/leaderboard/profiles/?campaign=1&run=4&run=5
        [&slice=domain:math][&n_boot=1000][&seed=0]

Without `campaign` or `run`, the agreement defaults (`result["defaults"]` says which
were used). Researchers and admins only (raters 403, anonymous 401). Bad parameters
give 400 with the parameter named in `problems[].field`. The response is the JSON of
`analysis.selectors.skill_profiles.skill_profiles`.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.agreement import (
    REFUSED,
    agreement_budget_check,
    agreement_params,
    agreement_refusal,
)
from analysis.selectors.agreement import AgreementError
from analysis.selectors.skill_profiles import skill_profiles
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from flaskapp.throttling import HeavyApiMixin

QUERY = [
    OpenApiParameter(
        "campaign",
        OpenApiTypes.INT,
        many=True,
        description="Campaign ids of the human source (default: every pointwise "
        "campaign)",
    ),
    OpenApiParameter(
        "run",
        OpenApiTypes.INT,
        many=True,
        description="Judge run ids, one source each (default: per judge, its latest "
        "finished run with scores)",
    ),
    OpenApiParameter(
        "slice",
        OpenApiTypes.STR,
        description="DIM:VALUE: domain:math, difficulty:3, hard:hard, ...",
    ),
    OpenApiParameter("n_boot", OpenApiTypes.INT, description="Bootstrap resamples"),
    OpenApiParameter("seed", OpenApiTypes.INT),
]


class LeaderboardProfilesApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["leaderboard"],
        parameters=QUERY,
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = agreement_params(request)
        agreement_budget_check(request, dataset, p)
        try:
            result = skill_profiles(
                dataset=dataset,
                campaign_ids=p.get("campaign") or None,
                run_ids=p.get("run") or None,
                slice_dim=p["slice_dim"],
                slice_value=p["slice_value"],
                n_boot=p["n_boot"],
                seed=p["seed"],
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)
