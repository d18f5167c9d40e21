"""The judge workbench's API (researchers and admins only).

    GET  /api/experiments/                       every experiment
    POST /api/experiments/                       {dataset, name, run_ids, baseline?,
                                                  campaign_ids?, description?}
    GET  /api/experiments/{id}/?part=dev|all&n_boot=&seed=&look=
                                                 the figures
                                                 (`analysis.selectors.experiments`)
    POST /api/experiments/{id}/runs/             {run_id}: add a run
    POST /api/experiments/{id}/baseline/         {run_id}
    POST /api/experiments/{id}/test-looks/       {reason}: log a look at the test
                                                 split, answer its figures (201)
    GET  /api/datasets/{id}/split/               the split (404 without one)
    POST /api/datasets/{id}/split/               {test_fraction, seed?}: make it

Bad input is a 400 naming the field (one DRF handler, `flaskapp.api`).
"""

from __future__ import annotations

from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.selectors.agreement.sources import AgreementError
from analysis.selectors.experiments import PARTS, experiment_figures
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from annotation.models import Dataset
from flaskapp import workspaces
from flaskapp.api import WORKSPACE_FILTER_PARAMETER, refusal
from flaskapp.params import BadParameter, ascii_int
from flaskapp.throttling import HeavyApiMixin
from judging.models import TestSplitLook
from judging.selectors.experiments import (
    experiment_get_for_user,
    experiment_list_for_user,
)
from judging.selectors.splits import eval_split_of, eval_split_summary
from judging.services.experiments import (
    experiment_add_run,
    experiment_create,
    experiment_set_baseline,
)
from judging.services.splits import eval_split_create, eval_split_look_record


def _int(request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw in (None, ""):
        return default
    value = ascii_int(raw)
    if value is None:
        raise BadParameter(name, f"must be an integer, not {str(raw)[:20]!r}")
    return value


def _brief(experiment) -> dict:
    return {
        "id": experiment.pk,
        "name": experiment.name,
        "dataset": experiment.dataset_id,
        "baseline": experiment.baseline_id,
        "runs": sorted(experiment.runs.values_list("pk", flat=True)),
        "campaign_ids": experiment.campaign_ids,
        "description": experiment.description,
        "created_at": experiment.created_at,
    }


def _split_dict(summary: dict) -> dict:
    last = summary["last_look"]
    return {
        **{k: v for k, v in summary.items() if k != "last_look"},
        "last_look": None
        if last is None
        else {
            "id": last.pk,
            "at": last.at,
            "user": last.user.username if last.user else "",
        },
    }


def _figures(experiment, **kwargs) -> dict:
    try:
        result = experiment_figures(experiment=experiment, **kwargs)
    except AgreementError as exc:
        raise refusal(exc) from exc
    if result.get("split"):
        result = {**result, "split": _split_dict(result["split"])}
    return result


class ExperimentListApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        parameters=[WORKSPACE_FILTER_PARAMETER],
        tags=["experiments"],
        operation_id="experiments_list",
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request):
        rows = workspaces.filter_by_workspace_param(
            experiment_list_for_user(user=request.user),
            request.user,
            request.query_params.get("workspace"),
        ).prefetch_related("runs")
        return Response({"experiments": [_brief(e) for e in rows]})

    @extend_schema(
        tags=["experiments"],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request):
        data = request.data if isinstance(request.data, dict) else {}
        dataset_id = ascii_int(data.get("dataset"))
        # Only a dataset of a workspace where the user is a researcher: another
        # workspace's is refused like a missing one.
        dataset = (
            workspaces.scope_for_role(
                Dataset.objects, request.user, workspaces.RESEARCHER
            )
            .filter(pk=dataset_id)
            .first()
            if dataset_id
            else None
        )
        if dataset is None:
            raise BadParameter("dataset", "no such dataset")
        run_ids = data.get("run_ids") or []
        if not isinstance(run_ids, list):
            raise BadParameter("run_ids", "must be a list of run ids")
        campaign_ids = data.get("campaign_ids") or []
        if not isinstance(campaign_ids, list):
            raise BadParameter("campaign_ids", "must be a list of campaign ids")
        experiment = experiment_create(
            user=request.user,
            dataset=dataset,
            name=str(data.get("name") or ""),
            run_ids=run_ids,
            baseline_id=data.get("baseline"),
            campaign_ids=campaign_ids,
            description=str(data.get("description") or ""),
        )
        return Response(_brief(experiment), status=201)


class ExperimentDetailApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["experiments"],
        parameters=[
            OpenApiParameter("part", OpenApiTypes.STR, enum=list(PARTS)),
            OpenApiParameter("n_boot", OpenApiTypes.INT),
            OpenApiParameter("seed", OpenApiTypes.INT),
            OpenApiParameter(
                "look", OpenApiTypes.INT, description="A logged test look (part=test)"
            ),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, experiment_id: int):
        experiment = experiment_get_for_user(
            user=request.user, experiment_id=experiment_id
        )
        look = None
        look_id = request.query_params.get("look")
        if look_id not in (None, ""):
            look = TestSplitLook.objects.filter(
                pk=ascii_int(look_id) or 0, split__dataset=experiment.dataset
            ).first()
            if look is None:
                raise BadParameter("look", "no such look at this dataset's test split")
        return Response(
            _figures(
                experiment,
                part=request.query_params.get("part") or None,
                test_look=look,
                n_boot=_int(request, "n_boot", 1000),
                seed=_int(request, "seed", 0),
            )
        )


class _ExperimentRunActionApi(APIView):
    """POST {run_id}: one service applied to the experiment and that run."""

    permission_classes = [IsResearcher]
    service = staticmethod(experiment_add_run)

    @extend_schema(
        tags=["experiments"],
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT},
    )
    def post(self, request, experiment_id: int):
        experiment = experiment_get_for_user(
            user=request.user, experiment_id=experiment_id
        )
        data = request.data if isinstance(request.data, dict) else {}
        experiment = self.service(
            user=request.user, experiment=experiment, run_id=data.get("run_id")
        )
        return Response(_brief(experiment))


class ExperimentRunsApi(_ExperimentRunActionApi):
    service = staticmethod(experiment_add_run)


class ExperimentBaselineApi(_ExperimentRunActionApi):
    service = staticmethod(experiment_set_baseline)


class ExperimentTestLookApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["experiments"],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request, experiment_id: int):
        experiment = experiment_get_for_user(
            user=request.user, experiment_id=experiment_id
        )
        split = eval_split_of(dataset=experiment.dataset)
        if split is None:
            raise BadParameter("part", "the dataset has no development / test split")
        data = request.data if isinstance(request.data, dict) else {}
        look = eval_split_look_record(
            split=split,
            user=request.user,
            run_ids=list(experiment.runs.values_list("pk", flat=True)),
            experiment=experiment,
            reason=str(data.get("reason") or ""),
        )
        figures = _figures(experiment, part="test", test_look=look)
        return Response({"look": look.pk, **figures}, status=201)


class DatasetSplitApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["experiments"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        summary = eval_split_summary(dataset=dataset)
        if summary is None:
            raise Http404("the dataset has no development / test split")
        return Response(_split_dict(summary))

    @extend_schema(
        tags=["experiments"],
        request=OpenApiTypes.OBJECT,
        responses={201: OpenApiTypes.OBJECT},
    )
    def post(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        data = request.data if isinstance(request.data, dict) else {}
        eval_split_create(
            dataset=dataset,
            user=request.user,
            test_fraction=data.get("test_fraction"),
            seed=data.get("seed", 0),
        )
        return Response(_split_dict(eval_split_summary(dataset=dataset)), status=201)
