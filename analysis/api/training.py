"""Training-data and preference export API, streamed (flat memory).

- `GET /api/datasets/{id}/training-export/?kinds=&validation_fraction=&seed=&dedupe=`:
  human judgments as autorater training examples, JSON Lines
  (`analysis.exports.training`); the same bytes as `manage.py export_training`.
- `GET /api/datasets/{id}/preferences/export/?format=csv|jsonl`: human preferences and
  judge verdicts in one long format (`analysis.exports.preferences`).

Researchers and admins only (raters 403, anonymous 401); `dataset_get_for_user` checks
the role again. Every parameter is checked before the first byte is sent: a bad one
is a 400 whose problems name it.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from analysis.exports.preferences import FORMATS, preference_rows, preferences_encode
from analysis.exports.scores import export_jsonl
from analysis.exports.training import (
    DEDUPE_MODES,
    KINDS,
    training_examples,
    training_options_parse,
)
from analysis.services.exports import export_audit
from annotation import selectors as selectors
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import ProblemOutputSerializer
from flaskapp.errors import DomainError, Problem
from flaskapp.throttling import HeavyApiMixin

CONTENT_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson; charset=utf-8",
}


class _IgnoreFormatParameter(DefaultContentNegotiation):
    """`?format=` names the export format, not a DRF renderer (DRF would answer 404
    to `?format=csv`); errors are always JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _attachment(response, dataset, suffix: str) -> StreamingHttpResponse:
    filename = f"{slugify(dataset.name) or 'dataset'}-{suffix}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class DatasetTrainingExportApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _IgnoreFormatParameter

    @extend_schema(
        tags=["datasets"],
        parameters=[
            OpenApiParameter(
                "kinds",
                str,
                default=",".join(KINDS),
                description="Comma-separated: pointwise, pairwise.",
            ),
            OpenApiParameter("validation_fraction", float, default=0.1),
            OpenApiParameter("seed", int, default=0),
            OpenApiParameter("dedupe", str, enum=list(DEDUPE_MODES), default="none"),
        ],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            400: OpenApiResponse(ProblemOutputSerializer, description="Bad input."),
        },
    )
    def get(self, request, dataset_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        params = request.query_params
        options = training_options_parse(
            kinds=params.getlist("kinds") or None,
            validation_fraction=params.get("validation_fraction"),
            seed=params.get("seed"),
            dedupe=params.get("dedupe"),
        )
        export_audit(user=request.user, dataset=dataset, what="training", fmt="jsonl")
        response = StreamingHttpResponse(
            export_jsonl(training_examples(dataset=dataset, options=options)),
            content_type=CONTENT_TYPES["jsonl"],
        )
        return _attachment(response, dataset, "training.jsonl")


class DatasetPreferencesExportApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]
    renderer_classes = [JSONRenderer]
    content_negotiation_class = _IgnoreFormatParameter

    @extend_schema(
        tags=["datasets"],
        parameters=[OpenApiParameter("format", str, enum=list(FORMATS), default="csv")],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
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
        export_audit(user=request.user, dataset=dataset, what="preferences", fmt=fmt)
        response = StreamingHttpResponse(
            preferences_encode(preference_rows(dataset=dataset), fmt),
            content_type=CONTENT_TYPES[fmt],
        )
        return _attachment(response, dataset, f"preferences.{fmt}")
