"""The report page (researchers): `/report/<dataset_id>/` shows what the report holds,
its parameters and the user's latest report jobs; `?download=1` starts the report as
a background job (`analysis.services.jobs`, kind ``report``) and sends the browser to
the job's page, whose progress bar ends in the zip's download link
(`analysis.exports.report`). Issue 34: built in the request, a report with
``n_boot=10000`` held a web thread for 282 s."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from analysis.selectors.jobs import job_list_for_user
from analysis.services.jobs import job_start
from annotation import selectors as annotation_selectors
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.errors import TooManyRequests
from flaskapp.params import ascii_int
from flaskapp.throttling import heavy_page, too_many_response


@login_required
@heavy_page
@require_GET
def dataset_report(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    problems = []
    n_boot = ascii_int(request.GET.get("n_boot", "1000"))
    seed = ascii_int(request.GET.get("seed", "0"))
    if n_boot is None or not N_BOOT.contains(n_boot):
        problems.append(f"`n_boot`: {N_BOOT.message()}")
    if seed is None or not SEED.contains(seed):
        problems.append(f"`seed`: {SEED.message()}")
    if request.GET.get("download") and not problems:
        try:
            job = job_start(
                kind="report",
                owner=request.user,
                dataset=dataset,
                params={"n_boot": n_boot, "seed": seed},
            )
        except TooManyRequests as exc:
            return too_many_response(exc.retry_after, str(exc))
        return redirect("analysis:job-detail", job_id=job.pk)
    return render(
        request,
        "analysis/dataset_report.html",
        {
            "dataset": dataset,
            "n_boot": n_boot if n_boot is not None else 1000,
            "seed": seed if seed is not None else 0,
            "problems": problems,
            "jobs": job_list_for_user(
                user=request.user, dataset=dataset, kind="report"
            ),
        },
        status=400 if problems else 200,
    )
