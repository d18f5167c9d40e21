"""Background jobs in the API.

    GET  /api/jobs/{id}/                  a job's status, progress, reason and result
                                          (`analysis.selectors.jobs.job_dict`)
    POST /api/datasets/{id}/report/       start the report of a dataset (body or
                                          query: n_boot, seed): 202 with the job

The owner and the researchers who may see the dataset; raters 403, anonymous 401.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.jobs import JOB_KINDS
from analysis.models import Job
from analysis.selectors.jobs import job_get_for_user
from analysis.services.jobs import job_start
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher
from flaskapp.api import validated
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.throttling import HeavyApiMixin


def job_dict(job: Job) -> dict:
    """The job as the API shows it (`GET /api/jobs/{id}/`)."""
    kind = JOB_KINDS.get(job.kind)
    return {
        "id": job.pk,
        "kind": job.kind,
        "label": kind.label if kind else job.kind,
        "dataset_id": job.dataset_id,
        "owner": job.owner.username,
        "params": job.params,
        "status": job.status,
        "reason": job.reason,
        "progress": {"done": job.progress_done, "total": job.progress_total},
        "result": job.result,
        "download_url": reverse("analysis:job-download", args=[job.pk])
        if job.status == Job.Status.DONE and job.result_file
        else None,
        "status_url": reverse("analysis_api:job-detail", args=[job.pk]),
        "page_url": reverse("analysis:job-detail", args=[job.pk]),
        "created_at": job.created_at,
        "started_at": job.started_at,
        "finished_at": job.finished_at,
    }


class JobDetailApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["jobs"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, job_id: int):
        return Response(job_dict(job_get_for_user(user=request.user, job_id=job_id)))


class ReportInputSerializer(serializers.Serializer):
    n_boot = serializers.IntegerField(
        required=False, default=1000, **N_BOOT.field_kwargs()
    )
    seed = serializers.IntegerField(required=False, default=0, **SEED.field_kwargs())


class DatasetReportJobApi(HeavyApiMixin, APIView):
    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["jobs"],
        request=ReportInputSerializer,
        responses={202: OpenApiTypes.OBJECT},
    )
    def post(self, request, dataset_id: int):
        dataset = annotation_selectors.dataset_get_for_user(
            user=request.user, dataset_id=dataset_id
        )
        data = {**request.query_params.dict(), **request.data}
        params = validated(ReportInputSerializer, data)
        job = job_start(
            kind="report", owner=request.user, dataset=dataset, params=params
        )
        return Response(job_dict(job), status=status.HTTP_202_ACCEPTED)
