"""Sampling campaigns' pages (researchers and admins).

    /campaigns/sampling/new/?dataset=ID   draw a sample from a judge run and create
                                          its campaign (`judging.services.sampling`)
    /campaigns/<id>/sampling/[?skill=KEY] the estimates from the labels so far and the
                                          CI width against labels spent, this
                                          strategy vs uniform (simulated, said so)

Thin: the service draws and creates, `analysis.selectors.sampling` computes. A bad
field re-renders the form with the problems (400), nothing written.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from analysis.charts.lines import width_curve_chart
from analysis.selectors.sampling import campaign_sampling_report
from annotation import selectors as annotation_selectors
from annotation.selectors.datasets import dataset_get_for_user
from flaskapp.errors import DomainError
from flaskapp.params import ascii_int
from judging.designs import STRATEGIES
from judging.models import JudgeRun
from judging.services.sampling import sampling_campaign_start


@login_required
@require_http_methods(["GET", "POST"])
def sampling_campaign_new(request: HttpRequest) -> HttpResponse:
    """The form; on POST, `sampling_campaign_start` and a redirect to the report."""
    params = request.POST if request.method == "POST" else request.GET
    dataset_id = ascii_int(params.get("dataset"))
    dataset = dataset_get_for_user(user=request.user, dataset_id=dataset_id or 0)
    error, problems = "", []
    if request.method == "POST":
        try:
            campaign = sampling_campaign_start(
                user=request.user,
                name=params.get("name", ""),
                dataset=dataset,
                run_id=ascii_int(params.get("run")) if params.get("run") else None,
                budget=ascii_int(params.get("budget")),
                strategy=params.get("strategy", "uncertainty"),
                seed=ascii_int(params.get("seed") or "0"),
                skill=params.get("skill", "").strip(),
            )
        except DomainError as exc:
            error, problems = exc.message, exc.problems
        else:
            return redirect("analysis:campaign-sampling", campaign.pk)
    context = {
        "dataset": dataset,
        "runs": JudgeRun.objects.filter(dataset=dataset).order_by("-pk")[:50],
        "strategies": STRATEGIES,
        "values": params,
        "error": error,
        "problems": problems,
    }
    return render(request, "analysis/sampling_new.html", context,
                  status=400 if error else 200)  # fmt: skip


@login_required
@require_GET
def campaign_sampling(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The report of one sampling campaign (404 for another campaign)."""
    campaign = annotation_selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    report = campaign_sampling_report(
        campaign=campaign, skill=request.GET.get("skill", "").strip()
    )
    chart = ""
    if report.curve is not None:
        curve = report.curve
        label = f"{campaign.sampling.get('why', '')} sampling (this campaign)"
        series = [(label if s == campaign.sampling.get("strategy") else f"{s} sampling",
                   curve.labels[s], curve.widths[s]) for s in curve.widths]  # fmt: skip
        point = None
        if report.width_so_far is not None:
            point = (report.labelled, report.width_so_far, "real labels so far")
        chart = width_curve_chart(
            title=f"CI width vs human labels spent on {report.skill} (simulated, "
            "synthetic labels from this campaign's judge scores)",
            series=series,
            point=point,
        )
    return render(
        request,
        "analysis/campaign_sampling.html",
        {"campaign": campaign, "report": report, "chart": chart},
    )
