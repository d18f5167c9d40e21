"""The page of a background job (`analysis.models.Job`) and its result's download.

    /jobs/<id>/            what the job does, its status and a <progress> bar; with
                           htmx the `#job-progress` fragment, polled every 2 s until
                           the job ends (286 stops the polling)
    /jobs/<id>/download/   the result file of a finished job

The owner and the researchers who may see the dataset (`analysis.selectors.jobs`).
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from analysis.jobs import JOB_KINDS
from analysis.selectors.jobs import job_get_for_user
from flaskapp.htmx import HTMX_STOP_POLLING, render_page_or_fragment, wants_fragment


def job_context(job) -> dict:
    kind = JOB_KINDS.get(job.kind)
    return {
        "job": job,
        "job_label": kind.label if kind else job.kind,
        "job_params": kind.describe(job.params) if kind else "",
        "job_result_url": kind.result_url(job) if kind and kind.result_url else "",
        "file_expiry_days": settings.JOB_FILE_EXPIRY_DAYS,
    }


@login_required
@require_GET
def job_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_id=job_id)
    status = HTMX_STOP_POLLING if job.finished and wants_fragment(request) else 200
    return render_page_or_fragment(
        request, "analysis/job_detail.html", "job-progress", job_context(job), status
    )


@login_required
@require_GET
def job_download(request: HttpRequest, job_id: int) -> HttpResponse:
    job = job_get_for_user(user=request.user, job_id=job_id)
    if job.status != job.Status.DONE or not job.result_file:
        raise Http404("This job has no file (yet).")
    path = Path(settings.MEDIA_ROOT) / job.result_file
    if not path.is_file():
        raise Http404("The job's file is gone; start the job again.")
    return FileResponse(
        path.open("rb"), as_attachment=True, filename=job.result_name or path.name
    )
