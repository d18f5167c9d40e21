"""Score export API: `GET /api/datasets/{id}/export/?format=csv|jsonl|parquet|hf&campaign=..`
`&run=..[&include_test=1&reason=..]` (columns: `analysis.exports.scores.FIELDS`;
`hf`: the dataset with all its scores as a zipped Hugging Face dataset directory,
`analysis.exports.hub`).

A dataset with a development / test split exports its development rows only; with
``include_test=1`` and a ``reason`` the test rows are in too, and the export is logged
as a look at the test split first (`exports.scores.export_test_rows`). The
``X-Test-Split`` header says which: "no split", "test rows left out" or "test rows
included (test look N)".

Researchers and admins only (raters 403, anonymous 401); `dataset_get_for_user` checks
the role again. The body is streamed (flat memory); errors are JSON.
"""

from __future__ import annotations

from functools import partial

from django.http import StreamingHttpResponse
from django.utils.text import slugify
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.views import APIView

from analysis.exports.hub import hub_export_zip
from analysis.exports.scores import (
    FORMATS,
    export_chunks,
    export_filters_check,
    export_format_check,
    export_test_rows,
)
from analysis.services.exports import export_audit
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
    "hf": "application/zip",
}
# The file name's ending per format: `hf` is a zipped Hugging Face dataset directory.
SUFFIXES = {"hf": "hf.zip"}


class _IgnoreFormatParameter(DefaultContentNegotiation):
    """`?format=` names the export format here, not a DRF renderer: without this DRF
    would answer 404 to `?format=csv`. Errors are always rendered as JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


def _ids(request, name: str) -> list[int] | None:
    """`?name=1&name=2` or `?name=1,2` -> [1, 2]; absent -> None; a value that is not
    an id is a 400 naming `name` (`flaskapp.params`)."""
    return int_list_param(request.query_params, name, max_value=ID.high) or None


FLAG_VALUES = {"1": True, "true": True, "yes": True, "0": False, "false": False,
               "no": False, "": False}  # fmt: skip


def _flag(request, name: str) -> bool:
    """`?name=1|true|yes|0|false|no` (absent: False); anything else is a 400 naming
    `name`."""
    raw = request.query_params.get(name, "")
    value = FLAG_VALUES.get(raw.strip().lower())
    if value is None:
        raise DomainError(
            f"`{name}` is not a yes/no value",
            [Problem(f"use 1 or 0 (true or false), not {raw[:20]!r}", field=name)],
        )
    return value


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
            OpenApiParameter(
                "include_test",
                bool,
                default=False,
                description="Also the rows of the dataset's locked test split (needs "
                "`reason`; logged as a look at the test split). The `X-Test-Split` "
                "response header says whether they are in.",
            ),
            OpenApiParameter(
                "reason", str, description="Why the test split is looked at."
            ),
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/x-ndjson"): OpenApiTypes.STR,
            (200, "application/vnd.apache.parquet"): OpenApiTypes.BINARY,
            (200, "application/zip"): OpenApiTypes.BINARY,
            400: OpenApiResponse(ProblemOutputSerializer, description="Bad input."),
        },
    )
    def get(self, request, dataset_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        fmt = request.query_params.get("format", "csv")
        export_format_check(fmt)
        campaign_ids, run_ids = _ids(request, "campaign"), _ids(request, "run")
        export_filters_check(
            dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids
        )
        test_rows = export_test_rows(
            dataset=dataset,
            user=request.user,
            include_test=_flag(request, "include_test"),
            reason=request.query_params.get("reason", ""),
            run_ids=run_ids,
        )
        export_audit(
            user=request.user, dataset=dataset, what="scores", fmt=fmt,
            details={"campaigns": campaign_ids, "runs": run_ids,
                     "test_split": test_rows.label},
        )  # fmt: skip
        # `hf`: the responses too, as a zipped Hugging Face dataset directory.
        write = hub_export_zip if fmt == "hf" else partial(export_chunks, fmt=fmt)
        chunks = write(
            dataset=dataset,
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            test_rows=test_rows,
        )
        response = StreamingHttpResponse(chunks, content_type=CONTENT_TYPES[fmt])
        response["X-Test-Split"] = test_rows.label
        filename = (
            f"{slugify(dataset.name) or 'dataset'}-scores.{SUFFIXES.get(fmt, fmt)}"
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
