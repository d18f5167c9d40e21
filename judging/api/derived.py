"""REST API of derived runs: a panel of runs, a run calibrated on the dev split.

    POST /api/runs/panel/              {"dataset", "run_ids", "method"[, "name", "campaign_ids"]}
    POST /api/runs/{id}/calibrate/     {[, "name", "campaign_ids"]}

Both answer 201 with the new run (`JudgeRunOutputSerializer`) and its recipe
(`settings_snapshot`). Researchers and admins only (raters 403, anonymous 401);
the services check the role again. Bad input: 400, each problem naming its field
(`judging.services.derived`).
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.datasets import ProblemOutputSerializer
from flaskapp.bounds import ID
from judging.api.views import get_or_400, run_data
from judging.panels import METHODS
from judging.selectors import runs as selectors
from judging.services.derived import judge_run_calibrate, judge_run_panel_create

REFUSED = OpenApiResponse(
    ProblemOutputSerializer, description="Bad input: each problem names its field."
)


class _HumansInputSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=200, required=False, allow_blank=True, default=""
    )
    campaign_ids = serializers.ListField(
        child=serializers.IntegerField(**ID.field_kwargs()),
        required=False,
        allow_null=True,
        default=None,
        help_text="Human campaigns to fit on (default: every pointwise campaign).",
    )


class JudgeRunPanelInputSerializer(_HumansInputSerializer):
    dataset = serializers.IntegerField(help_text="Dataset id.", **ID.field_kwargs())
    run_ids = serializers.ListField(
        child=serializers.IntegerField(**ID.field_kwargs()),
        help_text="The panel's runs (at least 2, of the dataset).",
    )
    # Checked by the service, so that an unknown method is refused in its words.
    method = serializers.CharField(max_length=40, help_text=", ".join(METHODS))


class JudgeRunCalibrateInputSerializer(_HumansInputSerializer):
    pass


def _created(run, request) -> Response:
    run = selectors.judge_run_get_for_user(user=request.user, run_id=run.pk)
    body = {**run_data(run, request), "recipe": run.settings_snapshot}
    return Response(body, status=status.HTTP_201_CREATED)


class JudgeRunPanelCreateApi(APIView):
    """Make a panel: a derived run combining the scores of several runs."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["runs"],
        request=JudgeRunPanelInputSerializer,
        responses={201: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def post(self, request):
        ser = JudgeRunPanelInputSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        dataset = get_or_400(
            lambda: annotation_selectors.dataset_get_for_user(
                user=request.user, dataset_id=data["dataset"]
            ),
            "dataset",
            f"no dataset with id {data['dataset']}",
        )
        run = judge_run_panel_create(
            user=request.user,
            dataset=dataset,
            run_ids=data["run_ids"],
            method=data["method"],
            name=data["name"],
            campaign_ids=data["campaign_ids"],
        )
        return _created(run, request)


class JudgeRunCalibrateApi(APIView):
    """Calibrate a run on the dev split: a derived run with the mapped scores."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["runs"],
        request=JudgeRunCalibrateInputSerializer,
        responses={201: OpenApiTypes.OBJECT, 400: REFUSED},
    )
    def post(self, request, run_id: int):
        run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
        ser = JudgeRunCalibrateInputSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data = ser.validated_data
        derived = judge_run_calibrate(
            user=request.user,
            run=run,
            name=data["name"],
            campaign_ids=data["campaign_ids"],
        )
        return _created(derived, request)
