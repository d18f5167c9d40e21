"""REST API for pairwise preference data: `POST /api/datasets/{name}/preferences/`.

The same import as `manage.py import_preferences` (annotation.services.preferences),
for researchers and admins. Synchronous: the file is validated and written in one
request, or refused with every problem listed.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import (
    ImportProblemOutputSerializer,
    ProblemOutputSerializer,
)
from annotation.importers.preferences import FIELDS, FORMATS, LABEL_SCHEMES
from annotation.services.imports import import_check_sizes
from annotation.services.preference_imports import preferences_import
from flaskapp import workspaces
from flaskapp.api import WORKSPACE_CREATE_PARAMETER
from judging.services.verdicts import imported_verdicts

FORMAT_BY_SUFFIX = {"csv": "csv", "jsonl": "jsonl", "ndjson": "jsonl"}


class PreferenceImportInputSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.ChoiceField(
        choices=FORMATS,
        required=False,
        help_text="Default: from the file name's extension (.csv, .jsonl).",
    )
    map = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text=f"`field=column` pairs (repeat the field). Fields: {', '.join(FIELDS)}.",
    )
    label_scheme = serializers.ChoiceField(choices=LABEL_SCHEMES, default="one-based")
    judge = serializers.CharField(
        required=False,
        allow_blank=True,
        help_text="Import the `verdict` / `verdict_swapped` fields as this judge's run.",
    )
    swapped_mapped_back = serializers.BooleanField(
        default=False,
        help_text="`verdict_swapped` already uses the original numbering.",
    )
    dry_run = serializers.BooleanField(default=False)
    strict = serializers.BooleanField(
        default=False,
        help_text="Refuse the file when it has warnings (empty or identical responses, "
        "a voter voting twice on a pair) instead of importing it and listing them.",
    )

    def validate(self, attrs: dict) -> dict:
        if not attrs.get("format"):
            suffix = attrs["file"].name.rsplit(".", 1)[-1].lower()
            if suffix not in FORMAT_BY_SUFFIX:
                raise serializers.ValidationError(
                    {"format": "Cannot tell the format from the file name; give it."}
                )
            attrs["format"] = FORMAT_BY_SUFFIX[suffix]
        return attrs


class PreferenceImportOutputSerializer(serializers.Serializer):
    dataset = serializers.CharField()
    file = serializers.CharField()
    file_sha256 = serializers.CharField()
    dry_run = serializers.BooleanField()
    rows = serializers.IntegerField()
    dataset_created = serializers.BooleanField()
    created_instructions = serializers.IntegerField()
    reused_instructions = serializers.IntegerField()
    created_responses = serializers.IntegerField()
    reused_responses = serializers.IntegerField()
    created_pairs = serializers.IntegerField()
    reused_pairs = serializers.IntegerField()
    created_preferences = serializers.IntegerField()
    unchanged_preferences = serializers.IntegerField()
    labels = serializers.DictField(child=serializers.IntegerField())
    judge = serializers.CharField(allow_blank=True)
    judge_config_created = serializers.BooleanField()
    run_id = serializers.IntegerField(allow_null=True)
    run_created = serializers.BooleanField()
    created_verdicts = serializers.IntegerField()
    unchanged_verdicts = serializers.IntegerField()
    unusable_verdicts = serializers.IntegerField()
    ignored_verdicts = serializers.IntegerField(
        help_text="Rows with judge verdicts that were not imported (no `judge` given)."
    )
    warnings = ImportProblemOutputSerializer(
        many=True, help_text="Accepted but worth a look, with line and field."
    )


class PreferenceImportApi(APIView):
    """Import a preference file into dataset `dataset_name` (created if new).

    201 with the import's counts (200 for a dry run); 400 with every problem (line,
    field) when the file or an option is refused, and then nothing was written.
    """

    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser]

    @extend_schema(
        tags=["imports"],
        parameters=[
            WORKSPACE_CREATE_PARAMETER,
            OpenApiParameter(
                "dataset_name",
                str,
                OpenApiParameter.PATH,
                description="The dataset's name; a new name creates the dataset.",
            ),
        ],
        request=PreferenceImportInputSerializer,
        responses={
            201: PreferenceImportOutputSerializer,
            200: PreferenceImportOutputSerializer,
            400: ProblemOutputSerializer,
        },
    )
    def post(self, request, dataset_name: str):
        serializer = PreferenceImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        upload = data["file"]
        # Refuse an oversized upload before reading it into memory.
        import_check_sizes(sizes=[(upload.name, upload.size)])
        report = preferences_import(
            dataset_name=dataset_name,
            file=upload.name,
            data=upload.read(),
            fmt=data["format"],
            mapping=data.get("map") or None,
            label_scheme=data["label_scheme"],
            judge=data.get("judge") or None,
            swapped_mapped_back=data["swapped_mapped_back"],
            user=request.user,
            dry_run=data["dry_run"],
            verdict_writer=imported_verdicts,
            strict=data["strict"],
            workspace=workspaces.workspace_for_create(
                request.user, request.query_params.get("workspace")
            ),
        )
        return Response(
            PreferenceImportOutputSerializer(report).data,
            status=status.HTTP_200_OK if report.dry_run else status.HTTP_201_CREATED,
        )
