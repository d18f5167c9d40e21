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

from analysis.exports.report import PART_KEYS, PARTS
from analysis.selectors.agreement.sources import (
    agreement_defaults,
    agreement_sources_for_user,
)
from analysis.selectors.jobs import job_list_for_user
from analysis.services.jobs import job_start
from annotation import selectors as annotation_selectors
from annotation.scales import scale_of
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.errors import TooManyRequests
from flaskapp.params import ascii_int
from flaskapp.throttling import heavy_page, too_many_response


def _chosen_ids(request, name: str, known: list[dict], problems: list) -> list[int]:
    """The ids ticked for `name`, each one of `known` (the dataset's own); a bad or
    foreign id is a problem naming the parameter."""
    ids = []
    allowed = {item["id"] for item in known}
    for raw in request.GET.getlist(name):
        value = ascii_int(raw)
        if value is None or value not in allowed:
            problems.append(f"`{name}`: {raw!r} is not one of this dataset's")
        else:
            ids.append(value)
    return sorted(set(ids))


@login_required
@heavy_page
@require_GET
def dataset_report(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """The report page: what the zip will hold (its parts with their files, the
    campaigns and judge runs, the rubric's criteria and which figures each gets)
    with checkboxes, all ticked at first (the agreement's default campaigns and
    runs); `download=1` starts the job with the ticked ones. A part not ticked is
    listed in the zip's README as left out by choice."""
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    sources = agreement_sources_for_user(user=request.user, dataset=dataset)
    problems = []
    n_boot = ascii_int(request.GET.get("n_boot", "1000"))
    seed = ascii_int(request.GET.get("seed", "0"))
    if n_boot is None or not N_BOOT.contains(n_boot):
        problems.append(f"`n_boot`: {N_BOOT.message()}")
    if seed is None or not SEED.contains(seed):
        problems.append(f"`seed`: {SEED.message()}")
    submitted = bool(request.GET.get("download"))
    parts = [p for p in request.GET.getlist("part") if p in PART_KEYS]
    unknown = [p for p in request.GET.getlist("part") if p not in PART_KEYS]
    if unknown:
        problems.append(f"`part`: {unknown[0]!r} is not a part of the report")
    campaign_ids = _chosen_ids(request, "campaign", sources["campaigns"], problems)
    run_ids = _chosen_ids(request, "run", sources["runs"], problems)
    # The page's form says `choose=1`: then its ticks are the choice. A link without
    # it (older links, the API's docs) asks for everything.
    chosen = bool(request.GET.get("choose"))
    if submitted and chosen and not parts:
        problems.append("`part`: tick at least one part of the report")
    if submitted and not problems:
        params: dict = {"n_boot": n_boot, "seed": seed}
        if chosen:
            params["parts"] = parts
        if campaign_ids:
            params["campaign_ids"] = campaign_ids
        if run_ids:
            params["run_ids"] = run_ids
        try:
            job = job_start(
                kind="report", owner=request.user, dataset=dataset, params=params
            )
        except TooManyRequests as exc:
            return too_many_response(exc.retry_after, str(exc))
        return redirect("analysis:job-detail", job_id=job.pk)
    if not submitted or not chosen:
        defaults = agreement_defaults(dataset=dataset)
        parts = list(PART_KEYS)
        campaign_ids = campaign_ids or list(defaults.campaign_ids)
        run_ids = run_ids or list(defaults.run_ids)
    return render(
        request,
        "analysis/dataset_report.html",
        {
            "dataset": dataset,
            "n_boot": n_boot if n_boot is not None else 1000,
            "seed": seed if seed is not None else 0,
            "problems": problems,
            "parts": [(k, label, files, k in parts) for k, label, files in PARTS],
            "campaigns": sources["campaigns"],
            "runs": sources["runs"],
            "campaign_ids": campaign_ids,
            "run_ids": run_ids,
            "criteria": [
                (skill, scale_of(skill)) for skill in dataset.rubric.skills.all()
            ],
            "jobs": job_list_for_user(
                user=request.user, dataset=dataset, kind="report"
            ),
        },
        status=400 if problems else 200,
    )
