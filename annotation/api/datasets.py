"""REST API of the annotation app: thin views that parse, call a selector or service,
and render. Permissions: researchers (and admins) read and import."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as selectors
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import (
    DatasetDetailOutputSerializer,
    DatasetImportInputSerializer,
    DatasetListOutputSerializer,
    GoldImportInputSerializer,
    GoldImportOutputSerializer,
    GoldItemInputSerializer,
    GoldItemOutputSerializer,
    ImportJobOutputSerializer,
    InstructionDetailOutputSerializer,
    InstructionListFilterInputSerializer,
    InstructionListOutputSerializer,
    ProblemOutputSerializer,
    ResponseListFilterInputSerializer,
    ResponseListOutputSerializer,
    RubricDetailOutputSerializer,
    RubricImportInputSerializer,
    RubricListOutputSerializer,
)
from annotation.importers.taxonomy import FACET_PREFIX
from annotation.models import ImportJob
from annotation.services.gold import gold_delete, gold_import_file, gold_set
from annotation.services.import_jobs import import_job_confirm, import_job_create
from annotation.services.rubrics import rubric_import
from annotation.services.taxonomy import dataset_taxonomy_update
from flaskapp import workspaces
from flaskapp.api import (
    WORKSPACE_CREATE_PARAMETER,
    WORKSPACE_FILTER_PARAMETER,
    Pagination,
    validated,
)
from flaskapp.errors import DomainError


class ListApi(APIView):
    """An APIView whose GET returns a LimitOffset page of `output_serializer_class`.

    `pagination_class` is also what makes drf-spectacular document the page envelope
    and the limit/offset parameters of a plain APIView.
    """

    pagination_class = Pagination
    output_serializer_class: type

    def paginated_response(self, queryset) -> Response:
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        data = self.output_serializer_class(
            page, many=True, context={"request": self.request}
        ).data
        return paginator.get_paginated_response(data)


# --- Rubrics -----------------------------------------------------------------------------


class RubricListApi(ListApi):
    permission_classes = [IsResearcher]
    output_serializer_class = RubricListOutputSerializer

    @extend_schema(
        parameters=[WORKSPACE_FILTER_PARAMETER],
        tags=["rubrics"],
        responses=RubricListOutputSerializer(many=True),
    )
    def get(self, request):
        return self.paginated_response(
            workspaces.filter_by_workspace_param(
                selectors.rubric_list_for_user(user=request.user),
                request.user,
                request.query_params.get("workspace"),
            )
        )


class RubricDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["rubrics"], responses=RubricDetailOutputSerializer)
    def get(self, request, rubric_id: int):
        rubric = selectors.rubric_get_for_user(user=request.user, rubric_id=rubric_id)
        return Response(RubricDetailOutputSerializer(rubric).data)


class RubricImportApi(APIView):
    """Import a rubric file (ours, JSON or YAML, or FLASK's `skillset_description.json`)
    as a new version of rubric `name` (default: the file's name)."""

    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser]

    @extend_schema(
        parameters=[WORKSPACE_CREATE_PARAMETER],
        tags=["rubrics"],
        request=RubricImportInputSerializer,
        responses={201: RubricDetailOutputSerializer, 400: ProblemOutputSerializer},
    )
    def post(self, request):
        serializer = RubricImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        rubric = rubric_import(
            name=serializer.validated_data.get("name") or None,
            data=upload.read(),
            file=upload.name,
            workspace=workspaces.workspace_for_create(
                request.user, request.query_params.get("workspace")
            ),
        )
        return Response(
            RubricDetailOutputSerializer(rubric).data, status=status.HTTP_201_CREATED
        )


# --- Datasets, instructions, responses ---------------------------------------------------


class DatasetListApi(ListApi):
    permission_classes = [IsResearcher]
    output_serializer_class = DatasetListOutputSerializer

    @extend_schema(
        parameters=[WORKSPACE_FILTER_PARAMETER],
        tags=["datasets"],
        responses=DatasetListOutputSerializer(many=True),
    )
    def get(self, request):
        return self.paginated_response(
            workspaces.filter_by_workspace_param(
                selectors.dataset_list_for_user(user=request.user),
                request.user,
                request.query_params.get("workspace"),
            )
        )


class DatasetDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["datasets"], responses=DatasetDetailOutputSerializer)
    def get(self, request, dataset_id: int):
        dataset, stats = selectors.dataset_detail_for_user(
            user=request.user, dataset_id=dataset_id
        )
        return Response(
            DatasetDetailOutputSerializer(dataset, context={"stats": stats}).data
        )


class DatasetTaxonomyInputSerializer(serializers.Serializer):
    taxonomy = serializers.JSONField(
        allow_null=True,
        help_text='The new declaration: {"domains", "difficulty", "facets"} as at '
        "import (annotation.importers.taxonomy); null or {}: FLASK's.",
    )


class DatasetTaxonomyOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    taxonomy = serializers.JSONField(allow_null=True)


class DatasetTaxonomyApi(APIView):
    """PUT: replace the dataset's taxonomy (researchers and owners of its
    workspace). 400 naming the field for a declaration that is not valid or that
    would orphan instructions; nothing changes then. Audited."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["datasets"],
        request=DatasetTaxonomyInputSerializer,
        responses=DatasetTaxonomyOutputSerializer,
    )
    def put(self, request, dataset_id: int):
        # The dataset first: another workspace's is a 404 whatever the body.
        selectors.dataset_get_for_user(user=request.user, dataset_id=dataset_id)
        data = validated(DatasetTaxonomyInputSerializer, request.data)
        dataset = dataset_taxonomy_update(
            user=request.user, dataset_id=dataset_id, taxonomy=data["taxonomy"]
        )
        return Response(DatasetTaxonomyOutputSerializer(dataset).data)


class InstructionListApi(ListApi):
    permission_classes = [IsResearcher]
    output_serializer_class = InstructionListOutputSerializer

    @extend_schema(
        tags=["datasets"],
        parameters=[InstructionListFilterInputSerializer],
        responses=InstructionListOutputSerializer(many=True),
    )
    def get(self, request, dataset_id: int):
        filters = InstructionListFilterInputSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        facets = {
            name: value
            for name, value in request.query_params.items()
            if name.startswith(FACET_PREFIX)
        }
        try:
            instructions = selectors.instruction_list_for_user(
                user=request.user,
                dataset_id=dataset_id,
                facets=facets,
                **filters.validated_data,
            )
        except DomainError as exc:
            # A refusal of the serializer's shape too ({param: [message]}), as
            # the other bad filters have always been answered.
            raise ValidationError({p.field: [p.message] for p in exc.problems}) from exc
        return self.paginated_response(instructions)


class InstructionDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["datasets"], responses=InstructionDetailOutputSerializer)
    def get(self, request, instruction_id: int):
        instruction = selectors.instruction_get_for_user(
            user=request.user, instruction_id=instruction_id
        )
        return Response(InstructionDetailOutputSerializer(instruction).data)


class ResponseListApi(ListApi):
    permission_classes = [IsResearcher]
    output_serializer_class = ResponseListOutputSerializer

    @extend_schema(
        tags=["datasets"],
        parameters=[ResponseListFilterInputSerializer],
        responses=ResponseListOutputSerializer(many=True),
    )
    def get(self, request, dataset_id: int):
        filters = ResponseListFilterInputSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        responses = selectors.response_list_for_user(
            user=request.user, dataset_id=dataset_id, **filters.validated_data
        )
        return self.paginated_response(responses)


# --- Imports -----------------------------------------------------------------------------

IMPORT_REFUSED = OpenApiResponse(
    PolymorphicProxySerializer(
        component_name="ImportRefusedOutput",
        serializers=[ImportJobOutputSerializer, ProblemOutputSerializer],
        resource_type_field_name=None,
    ),
    description="The files have problems: the job is recorded as `invalid` (or `failed`) "
    "with every problem (file, line, field) in `errors`; nothing was imported. A "
    "request refused before any job exists (no file, a bad option) gets `detail` and "
    "`problems`, each naming its field.",
)
# A job that ended in one of these imported nothing; the client gets a 400.
NOTHING_IMPORTED = {ImportJob.Status.INVALID, ImportJob.Status.FAILED}


def _job_response(job: ImportJob, request, *, ok_status: int) -> Response:
    data = ImportJobOutputSerializer(job, context={"request": request}).data
    return Response(
        data,
        status=status.HTTP_400_BAD_REQUEST
        if job.status in NOTHING_IMPORTED
        else ok_status,
    )


class DatasetImportApi(APIView):
    """Upload files into dataset `dataset_name` (created by the import if new).

    With `confirm=true` (the default) a valid upload is imported at once: inline when
    small, else queued as a background job (poll `url`). With `confirm=false` it is only
    validated; `POST /api/imports/{id}/confirm/` imports it later.
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
        request=DatasetImportInputSerializer,
        responses={201: ImportJobOutputSerializer, 400: IMPORT_REFUSED},
    )
    def post(self, request, dataset_name: str):
        serializer = DatasetImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        job = import_job_create(
            dataset_name=dataset_name,
            fmt=data["format"],
            uploads=[(upload.name, upload) for upload in data["uploads"]],
            options=serializer.options(),
            user=request.user,
            workspace=workspaces.workspace_for_create(
                request.user, request.query_params.get("workspace")
            ),
        )
        # Confirming is the second half of the same request, not a rule of its own:
        # the service decides inline versus queued and refuses an invalid job.
        if data["confirm"] and job.status == ImportJob.Status.VALIDATED:
            job = import_job_confirm(job=job)
        return _job_response(job, request, ok_status=status.HTTP_201_CREATED)


class ImportJobListApi(ListApi):
    permission_classes = [IsResearcher]
    output_serializer_class = ImportJobOutputSerializer

    @extend_schema(
        parameters=[WORKSPACE_FILTER_PARAMETER],
        tags=["imports"],
        responses=ImportJobOutputSerializer(many=True),
    )
    def get(self, request):
        return self.paginated_response(
            workspaces.filter_by_workspace_param(
                selectors.import_job_list_for_user(user=request.user),
                request.user,
                request.query_params.get("workspace"),
            )
        )


class ImportJobDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["imports"], responses=ImportJobOutputSerializer)
    def get(self, request, job_id: int):
        job = selectors.import_job_get_for_user(user=request.user, job_id=job_id)
        return Response(
            ImportJobOutputSerializer(job, context={"request": request}).data
        )


class ImportJobConfirmApi(APIView):
    """Import a validated job: inline when small, else queued. Idempotent.

    Answers with the job as it now is (`succeeded`, `queued`, or `failed` with its
    `errors`); only a job that never validated is refused with 400.
    """

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["imports"],
        request=None,
        responses={
            200: ImportJobOutputSerializer,
            400: OpenApiResponse(
                ProblemOutputSerializer,
                description="The job is invalid: fix the file and upload it again.",
            ),
        },
    )
    def post(self, request, job_id: int):
        job = selectors.import_job_get_for_user(user=request.user, job_id=job_id)
        job = import_job_confirm(job=job)
        return Response(
            ImportJobOutputSerializer(job, context={"request": request}).data
        )


# --- Gold items ----------------------------------------------------------------------------


class DatasetGoldApi(ListApi):
    """The dataset's gold items (known answers), or mark one response as gold
    (re-marking a response replaces its expected scores)."""

    permission_classes = [IsResearcher]
    output_serializer_class = GoldItemOutputSerializer

    @extend_schema(tags=["gold"], responses=GoldItemOutputSerializer(many=True))
    def get(self, request, dataset_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        return self.paginated_response(selectors.gold_list(dataset=dataset))

    @extend_schema(
        tags=["gold"],
        request=GoldItemInputSerializer,
        responses={201: GoldItemOutputSerializer, 400: ProblemOutputSerializer},
    )
    def post(self, request, dataset_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        serializer = GoldItemInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        gold = gold_set(
            dataset=dataset,
            response_id=data["response_id"],
            scores=data["scores"],
            tolerance=data.get("tolerance"),
            explanation=data["explanation"],
            kind=data["kind"],
            user=request.user,
        )
        gold = selectors.gold_get(dataset=dataset, response_id=gold.response_id)
        return Response(
            GoldItemOutputSerializer(gold).data, status=status.HTTP_201_CREATED
        )


class DatasetGoldImportApi(APIView):
    """Mark responses as gold from a CSV, JSON Lines or Parquet file: all rows or
    none (every problem named by line and field)."""

    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser]

    @extend_schema(
        tags=["gold"],
        request=GoldImportInputSerializer,
        responses={201: GoldImportOutputSerializer, 400: ProblemOutputSerializer},
    )
    def post(self, request, dataset_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        serializer = GoldImportInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        upload = serializer.validated_data["file"]
        result = gold_import_file(
            dataset=dataset,
            data=upload.read(),
            file=upload.name,
            fmt=serializer.validated_data.get("format"),
            user=request.user,
        )
        return Response(result, status=status.HTTP_201_CREATED)


class DatasetGoldDetailApi(APIView):
    """One gold item, by its response; DELETE unmarks it (scores given stay)."""

    permission_classes = [IsResearcher]

    def _gold(self, request, dataset_id: int, response_id: int):
        dataset = selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        gold = selectors.gold_get(dataset=dataset, response_id=response_id)
        if gold is None:
            raise NotFound(f"response {response_id} is not a gold item of this dataset")
        return gold

    @extend_schema(tags=["gold"], responses=GoldItemOutputSerializer)
    def get(self, request, dataset_id: int, response_id: int):
        gold = self._gold(request, dataset_id, response_id)
        return Response(GoldItemOutputSerializer(gold).data)

    @extend_schema(tags=["gold"], responses={204: None})
    def delete(self, request, dataset_id: int, response_id: int):
        gold = self._gold(request, dataset_id, response_id)
        gold_delete(gold=gold, user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
