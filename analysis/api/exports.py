"""Score export API: `GET /api/datasets/{id}/export/?format=csv|jsonl|parquet&campaign=..`
`&run=..` (columns: `analysis.exports.scores.FIELDS`).

Researchers and admins only (raters 403, anonymous 401); `dataset_get_for_user` checks
the role again. The body is streamed (flat memory); errors are JSON.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from analysis.exports.scores import (
    FORMATS,
    export_chunks,
    export_filters_check,
)
from annotation import selectors as selectors
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import ProblemOutputSerializer
from flaskapp.bounds import ID
from flaskapp.errors import DomainError, Problem
from flaskapp.params import int_list_param
from flaskapp.throttling import HeavyApiMixin

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
    "parquet": "application/vnd.apache.parquet",
}


class _IgnoreFormatParameter(DefaultContentNegotiation):
    """`?format=` names the export format here, not a DRF renderer: without this DRF
    would answer 404 to `?format=csv`. Errors are always rendered as JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _ids(request, name: str) -> list[int] | None:
    """`?name=1&name=2` or `?name=1,2` -> [1, 2]; absent -> None; a value that is not
    an id is a 400 naming `name` (`flaskapp.params`)."""
    return int_list_param(request.query_params, name, max_value=ID.high) or None


class DatasetExportApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _IgnoreFormatParameter

    @extend_schema(
        tags=["datasets"],
        parameters=[
            OpenApiParameter("format", str, enum=list(FORMATS), default="csv"),
            OpenApiParameter(
                "campaign", int, many=True, description="Only these campaigns."
            ),
            OpenApiParameter("run", int, many=True, description="Only these runs."),
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY,
            400: OpenApiResponse(ProblemOutputSerializer, description="Bad input."),
        },
    )
    def get(self, request, dataset_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        fmt = request.query_params.get("format", "csv")
        if fmt not in FORMATS:
            raise DomainError(
                "Unknown export format",
                [
                    Problem(
                        f"must be one of {', '.join(FORMATS)}, not {fmt!r}",
                        field="format",
                    )
                ],
            )
        campaign_ids, run_ids = _ids(request, "campaign"), _ids(request, "run")
        export_filters_check(
            dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids
        )
        chunks = export_chunks(
            dataset=dataset, fmt=fmt, campaign_ids=campaign_ids, run_ids=run_ids
        )
        response = StreamingHttpResponse(chunks, content_type=CONTENT_TYPES[fmt])
        filename = f"{slugify(dataset.name) or 'dataset'}-scores.{fmt}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
