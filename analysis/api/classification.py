"""GET /api/datasets/{id}/classification/: the categorical criteria's figures.

The same figures as the agreement API's ``categorical`` key and the meta-evaluation
page's classification section (`analysis.selectors.classification`), for any
campaigns and runs: ``campaign`` and ``run`` (repeatable; default: the agreement
defaults), ``slice``, ``n_boot``, ``seed``. Researchers and admins only; a bad
parameter is a 400 naming it.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.api.agreement import QUERY, REFUSED, agreement_params, agreement_refusal
from analysis.selectors.agreement import AgreementError
from analysis.selectors.classification import classification_compute
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from flaskapp.throttling import HeavyApiMixin


class ClassificationApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["agreement"],
        parameters=[QUERY[0], QUERY[1], QUERY[4], QUERY[5], QUERY[6]],
        responses={200: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        p = agreement_params(request)
        try:
            result = classification_compute(
                dataset=dataset,
                campaign_ids=p.get("campaign", []),
                run_ids=p.get("run", []),
                slice_dim=p["slice_dim"],
                slice_value=p["slice_value"],
                n_boot=p["n_boot"],
                seed=p["seed"],
            )
        except AgreementError as exc:
            raise agreement_refusal(exc) from exc
        return Response(result)
