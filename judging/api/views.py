"""REST API of the judging app: thin views that parse, call one selector or service and
render. Researchers and admins only (raters get 403, anonymous requests 401); the
selectors and services check the role again."""

from __future__ import annotations

from django.db.models import Q
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as annotation_selectors
from annotation.api.datasets import ListApi
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import ProblemOutputSerializer
from annotation.services.imports import import_check_sizes
from flaskapp import workspaces
from flaskapp.api import WORKSPACE_CREATE_PARAMETER, WORKSPACE_FILTER_PARAMETER
from flaskapp.errors import DomainError, Problem
from judging.api.serializers import (
    JudgeCallFilterInputSerializer,
    JudgeCallOutputSerializer,
    JudgeConfigCreateInputSerializer,
    JudgeConfigOutputSerializer,
    JudgeConfigUpdateInputSerializer,
    JudgeCritiqueOutputSerializer,
    JudgeRunCreateInputSerializer,
    JudgeRunImportInputSerializer,
    JudgeRunListFilterInputSerializer,
    JudgeRunOutputSerializer,
    JudgeRunStartInputSerializer,
    JudgeScoreOutputSerializer,
    PairwiseVerdictOutputSerializer,
    RetryOutputSerializer,
)
from judging.fewshot import FewShotRequest
from judging.models import JudgeRun, PromptTemplate, StoredKey
from judging.selectors import runs as selectors
from judging.selectors.pairwise import pairwise_verdict_list
from judging.services.configs import judge_config_create, judge_config_update
from judging.services.run_imports import judge_run_import
from judging.services.runs import (
    judge_run_cancel,
    judge_run_create,
    judge_run_retry_failed,
    judge_run_start,
)

REFUSED = OpenApiResponse(
    ProblemOutputSerializer, description="Bad input: each problem names its field."
)


def run_data(run: JudgeRun, request) -> dict:
    """The API body of one run: its serializer output with its live progress
    (counts, tokens, cost, calls/s, ETA)."""
    progress = selectors.judge_run_progress(run=run)
    return JudgeRunOutputSerializer(
        run, context={"request": request, "progress": progress}
    ).data


# --- Judge configs ------------------------------------------------------------------------


class JudgeConfigListApi(ListApi):
    """GET: every judge config. POST: create one (the API key by env var NAME only)."""

    permission_classes = [IsResearcher]
    output_serializer_class = JudgeConfigOutputSerializer

    @extend_schema(
        parameters=[WORKSPACE_FILTER_PARAMETER],
        tags=["judges"],
        responses=JudgeConfigOutputSerializer(many=True),
    )
    def get(self, request):
        return self.paginated_response(
            workspaces.filter_by_workspace_param(
                selectors.judge_config_list_for_user(user=request.user),
                request.user,
                request.query_params.get("workspace"),
            )
        )

    @extend_schema(
        parameters=[WORKSPACE_CREATE_PARAMETER],
        tags=["judges"],
        request=JudgeConfigCreateInputSerializer,
        responses={201: JudgeConfigOutputSerializer, 400: REFUSED},
    )
    def post(self, request):
        serializer = JudgeConfigCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        workspace = workspaces.workspace_for_create(
            request.user, request.query_params.get("workspace")
        )
        fields = _config_fields(serializer.validated_data, workspace.pk)
        config = judge_config_create(user=request.user, workspace=workspace, **fields)
        config = selectors.judge_config_get_for_user(
            user=request.user, config_id=config.pk
        )
        return Response(
            JudgeConfigOutputSerializer(config).data, status=status.HTTP_201_CREATED
        )


class JudgeConfigDetailApi(APIView):
    """GET: one judge config. PATCH: change some of its fields (a new endpoint needs
    endpoint rights; see `judging.endpoints`)."""

    permission_classes = [IsResearcher]

    @extend_schema(tags=["judges"], responses=JudgeConfigOutputSerializer)
    def get(self, request, config_id: int):
        config = selectors.judge_config_get_for_user(
            user=request.user, config_id=config_id
        )
        return Response(JudgeConfigOutputSerializer(config).data)

    @extend_schema(
        tags=["judges"],
        request=JudgeConfigUpdateInputSerializer,
        responses={200: JudgeConfigOutputSerializer, 400: REFUSED},
    )
    def patch(self, request, config_id: int):
        config = selectors.judge_config_get_for_user(
            user=request.user, config_id=config_id
        )
        serializer = JudgeConfigUpdateInputSerializer(data=request.data, partial=True)
        serializer.is_valid(raise_exception=True)
        fields = _config_fields(serializer.validated_data, config.workspace_id)
        judge_config_update(user=request.user, config=config, **fields)
        config = selectors.judge_config_get_for_user(
            user=request.user, config_id=config.pk
        )
        return Response(JudgeConfigOutputSerializer(config).data)


def _config_fields(validated: dict, workspace_id: int) -> dict:
    """The service's fields from a config input: `prompt_id` becomes `prompt`,
    `stored_key_id` becomes `stored_key` (who may use it: the service). Only the
    config's workspace's keys and prompt templates (and the built-in templates) are
    looked up: an id of another workspace gets the answer of an id that names
    nothing, so the answer does not tell that it exists."""
    fields = dict(validated)
    if "extra_body" in fields and fields["extra_body"] is None:
        fields["extra_body"] = {}  # null: no extra request fields
    if "stored_key_id" in fields:
        key_id = fields.pop("stored_key_id")
        fields["stored_key"] = None
        if key_id is not None:
            fields["stored_key"] = StoredKey.objects.filter(
                pk=key_id, workspace_id=workspace_id
            ).first()
            if fields["stored_key"] is None:
                raise DomainError(
                    "the judge config was not saved",
                    [Problem(f"no stored key with id {key_id}", field="stored_key")],
                )
    if "prompt_id" in fields:
        prompt_id = fields.pop("prompt_id")
        fields["prompt"] = None
        if prompt_id is not None:
            fields["prompt"] = PromptTemplate.objects.filter(
                Q(workspace__isnull=True) | Q(workspace_id=workspace_id), pk=prompt_id
            ).first()
            if fields["prompt"] is None:
                raise DomainError(
                    "the judge config was not saved",
                    [
                        Problem(
                            f"no prompt template with id {prompt_id}", field="prompt_id"
                        )
                    ],
                )
    return fields


# --- Runs ---------------------------------------------------------------------------------


class JudgeRunListApi(ListApi):
    """GET: runs, newest first, with counts, tokens and cost. POST: create a run."""

    permission_classes = [IsResearcher]
    output_serializer_class = JudgeRunOutputSerializer

    @extend_schema(
        tags=["runs"],
        parameters=[JudgeRunListFilterInputSerializer, WORKSPACE_FILTER_PARAMETER],
        responses=JudgeRunOutputSerializer(many=True),
    )
    def get(self, request):
        filters = JudgeRunListFilterInputSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        runs = workspaces.filter_by_workspace_param(
            selectors.judge_run_list_for_user(
                user=request.user,
                status=filters.validated_data.get("status"),
                dataset_id=filters.validated_data.get("dataset"),
            ),
            request.user,
            request.query_params.get("workspace"),
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(runs, request, view=self)
        counts = selectors.judge_run_counts(run_ids=[r.pk for r in page])
        data = JudgeRunOutputSerializer(
            page, many=True, context={"request": request, "counts": counts}
        ).data
        return paginator.get_paginated_response(data)

    @extend_schema(
        tags=["runs"],
        request=JudgeRunCreateInputSerializer,
        responses={201: JudgeRunOutputSerializer, 400: REFUSED},
    )
    def post(self, request):
        serializer = JudgeRunCreateInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        config = get_or_400(
            lambda: selectors.judge_config_get_for_user(
                user=request.user, config_id=data["config"]
            ),
            "config",
            f"no judge config with id {data['config']}",
        )
        dataset = get_or_400(
            lambda: annotation_selectors.dataset_get_for_user(
                user=request.user, dataset_id=data["dataset"]
            ),
            "dataset",
            f"no dataset with id {data['dataset']}",
        )
        run = judge_run_create(
            config=config,
            dataset=dataset,
            user=request.user,
            kind=data["kind"],
            models=data["models"],
            instruction_limit=data.get("limit"),
            categories=data["categories"],
            sample=data.get("sample"),
            seed=data["seed"],
            allow_tie=data["allow_tie"],
            probe=data["probe"],
            cue=data["cue"],
            name=data.get("name", ""),
            few_shot=FewShotRequest(
                k=data.get("few_shot"),
                rule=data["few_shot_rule"],
                seed=data["few_shot_seed"],
                response_ids=tuple(data["few_shot_responses"]),
                criteria=tuple(data["few_shot_criteria"]),
            ),
            batch=data["batch"],
            budget=data.get("budget"),
        )
        if data["start"]:
            run = judge_run_start(run=run, user=request.user)
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run.pk)
        return Response(run_data(run, request), status=status.HTTP_201_CREATED)


def get_or_400(get, field: str, message: str):
    """`get()`'s result; when it raises Http404, a DomainError (400) naming `field`
    with `message` instead: an id in the request body that names nothing is bad
    input, not a missing page."""
    try:
        return get()
    except Http404:
        raise DomainError("not found", [Problem(message, field=field)]) from None


class JudgeRunDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["runs"], responses=JudgeRunOutputSerializer)
    def get(self, request, run_id: int):
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
        return Response(run_data(run, request))


class JudgeRunStartApi(APIView):
    """Start a pending run or resume a cancelled one (idempotent while running)."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["runs"],
        request=JudgeRunStartInputSerializer,
        responses={200: JudgeRunOutputSerializer, 400: REFUSED},
    )
    def post(self, request, run_id: int):
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
        serializer = JudgeRunStartInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        run = judge_run_start(
            run=run, user=request.user, budget=serializer.validated_data.get("budget")
        )
        return Response(run_data(run, request))


class JudgeRunCancelApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["runs"], request=None, responses=JudgeRunOutputSerializer)
    def post(self, request, run_id: int):
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
        run = judge_run_cancel(run=run, user=request.user)
        return Response(run_data(run, request))


class JudgeRunRetryFailedApi(APIView):
    """Put failed calls back to pending and start the run; returns how many."""

    permission_classes = [IsResearcher]

    @extend_schema(tags=["runs"], request=None, responses=RetryOutputSerializer)
    def post(self, request, run_id: int):
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
        n = judge_run_retry_failed(run=run, user=request.user)
        run.refresh_from_db()
        return Response({"retried": n, "run": run_data(run, request)})


class JudgeCallListApi(ListApi):
    """A run's calls (optionally of one status), with raw outputs and scores."""

    permission_classes = [IsResearcher]
    output_serializer_class = JudgeCallOutputSerializer

    @extend_schema(
        tags=["runs"],
        parameters=[JudgeCallFilterInputSerializer],
        responses=JudgeCallOutputSerializer(many=True),
    )
    def get(self, request, run_id: int):
        filters = JudgeCallFilterInputSerializer(data=request.query_params)
        filters.is_valid(raise_exception=True)
        return self.paginated_response(
            selectors.judge_call_list_for_user(
                user=request.user,
                run_id=run_id,
                status=filters.validated_data.get("status"),
            )
        )


class JudgeScoreListApi(ListApi):
    """A run's scores: one row per (response, skill, sample); a null score is N/A."""

    permission_classes = [IsResearcher]
    output_serializer_class = JudgeScoreOutputSerializer

    @extend_schema(tags=["runs"], responses=JudgeScoreOutputSerializer(many=True))
    def get(self, request, run_id: int):
        return self.paginated_response(
            selectors.judge_score_list_for_user(user=request.user, run_id=run_id)
        )


class JudgeCritiqueListApi(ListApi):
    """A run's critiques (FLAMe's open-ended task: a critique run's, or imported with
    a `critique` column): one row per (response, sample)."""

    permission_classes = [IsResearcher]
    output_serializer_class = JudgeCritiqueOutputSerializer

    @extend_schema(tags=["runs"], responses=JudgeCritiqueOutputSerializer(many=True))
    def get(self, request, run_id: int):
        return self.paginated_response(
            selectors.judge_critique_list_for_user(user=request.user, run_id=run_id)
        )


class JudgeRunImportApi(APIView):
    """Import judge results made elsewhere (multipart): FLASK review files or a
    generic JSONL/CSV. A file with any problem imports nothing: 400 with every
    problem's file, line and field. Warnings are listed in the run's `warnings` and
    `warning_count`; with `strict` they are a 400 like problems."""

    permission_classes = [IsResearcher]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        tags=["runs"],
        request={"multipart/form-data": JudgeRunImportInputSerializer},
        responses={201: JudgeRunOutputSerializer, 400: REFUSED},
    )
    def post(self, request):
        payload = {
            "dataset": request.data.get("dataset"),
            "format": request.data.get("format"),
            "files": request.FILES.getlist("files"),
            "model": request.data.get("model", ""),
            "name": request.data.get("name", ""),
            "mapping": request.data.getlist("mapping")
            if hasattr(request.data, "getlist")
            else request.data.get("mapping", []),
            "strict": request.data.get("strict", False),
        }
        serializer = JudgeRunImportInputSerializer(data=payload)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        dataset = get_or_400(
            lambda: annotation_selectors.dataset_get_for_user(
                user=request.user, dataset_id=data["dataset"]
            ),
            "dataset",
            f"no dataset with id {data['dataset']}",
        )
        uploads = data["files"]
        import_check_sizes(sizes=[(f.name, f.size) for f in uploads])
        run = judge_run_import(
            dataset=dataset,
            user=request.user,
            name=data.get("name", ""),
            fmt=data["format"],
            files=[(f.name, f.read()) for f in uploads],
            model=data.get("model") or None,
            mapping=data.get("mapping") or None,
            strict=data["strict"],
        )
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run.pk)
        return Response(run_data(run, request), status=status.HTTP_201_CREATED)


class PairwiseVerdictListApi(ListApi):
    """A pairwise run's verdicts: one row per (pair, order, sample) that has one (a
    failed call has none; see the run's calls for its error)."""

    permission_classes = [IsResearcher]
    output_serializer_class = PairwiseVerdictOutputSerializer

    @extend_schema(tags=["runs"], responses=PairwiseVerdictOutputSerializer(many=True))
    def get(self, request, run_id: int):
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
        return self.paginated_response(pairwise_verdict_list(run=run))
