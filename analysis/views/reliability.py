"""The rater reliability page of a pointwise campaign (researchers and admins).

    /reliability/<campaign_id>/   every rater: items, time, gold accuracy, agreement
                                  with the others' consensus (overall and per
                                  criterion), severity, straight-lining, speed, drift,
                                  flags; exclude or pause a rater (with a reason) and
                                  the history of those decisions; the rater models
                                  (`?model=dawid_skene|mace|glad`): each annotator's
                                  competence per criterion, the judges among them

Thin: `analysis.selectors.reliability` and `analysis.selectors.competence` compute
(cached), the annotation app's services record decisions
(`annotation:campaign-rater-decision`).

The rater models take seconds to fit on a large campaign, so the page does not wait
for them: unless they are cached (or `model` is in the query string: a full reload),
the section is a link that htmx follows on load; the same URL with ``HX-Request``
answers the `#rater-models` fragment alone. A small campaign is fitted inline; a
large one (`analysis.selectors.budget.rater_models_inline`) by a background job
(issue 34): the section shows its progress, polling ``?model=..&job=<id>`` every
2 s until the fit is cached or the job failed (its reason shown). A user with too
many jobs already gets a 429 with Retry-After on a full page; the fragment (htmx
swaps only 2xx answers) shows the refusal in the section.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET

from analysis.selectors.budget import rater_models_inline
from analysis.selectors.competence import (
    DEFAULT_METHOD,
    METHODS,
    RaterModelError,
    cached_rater_models,
    campaign_rater_models,
    parse_method,
)
from analysis.selectors.jobs import job_get_for_user
from analysis.selectors.reliability import (
    GOLD_CEILING,
    HIGH_SEVERITY,
    LOW_QWK,
    campaign_reliability,
)
from analysis.services.jobs import job_start
from annotation import selectors as annotation_selectors
from annotation.models import Campaign
from flaskapp.errors import TooManyRequests
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.params import int_param
from flaskapp.throttling import heavy_page, too_many_response


def _f(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _cell(a) -> tuple[str, str, bool]:
    """(text, title, muted) of one rater x criterion cell: QWK, or exact agreement on
    a categorical criterion; formatted here (1,200 cells render in a few ms)."""
    if a is None or not a.n:
        return "–", "", False
    title = f"{a.n} shared scores; exact {_f(a.exact)}; severity {_f(a.severity)}"
    if a.qwk is not None:
        return _f(a.qwk), title, False
    return f"exact {_f(a.exact)}", title, True


def _rater_models(request: HttpRequest, campaign: Campaign) -> dict:
    """The context of the `#rater-models` section (module doc): the chosen model,
    its report (None: not fitted yet, htmx loads it) or the problem with `model`."""
    url = reverse("analysis:reliability", args=[campaign.pk])
    context = {"reliability_url": url, "rm_methods": list(METHODS.items())}
    try:
        method = parse_method(request.GET.get("model"))
    except RaterModelError as exc:
        return {**context, "rm_method": DEFAULT_METHOD, "rm_error": str(exc),
                "rm_report": None}  # fmt: skip
    context = {**context, "rm_method": method, "rm_name": METHODS[method],
               "rm_url": f"{url}?model={method}"}  # fmt: skip
    report = cached_rater_models(campaign=campaign, method=method)
    if report is None and (wants_fragment(request) or "model" in request.GET):
        if rater_models_inline(campaign=campaign):
            report = campaign_rater_models(campaign=campaign, method=method)
        else:
            return {**context, **_fit_job(request, campaign, method)}
    return {**context, "rm_report": report, "rm_overview": _overview(report)}


def _fit_job(request: HttpRequest, campaign: Campaign, method: str) -> dict:
    """The section's context while a job fits the models: the job asked for by
    ``job`` (the polling), else a new one (or the user's same one still active)."""
    job_id = int_param(request.GET, "job", None, min_value=1)
    try:
        job = job_get_for_user(user=request.user, job_id=job_id) if job_id else None
        if job is None or job.status == job.Status.DONE:
            # Done but not in the cache: new scores since, or the cache was emptied.
            job = job_start(
                kind="rater_models", owner=request.user, dataset=campaign.dataset,
                params={"campaign_id": campaign.pk, "method": method},
            )  # fmt: skip
    except TooManyRequests as exc:
        if not wants_fragment(request):
            raise  # a full page: a 429 with Retry-After (the view)
        return {"rm_report": None, "rm_error": str(exc)}
    if job.status == job.Status.FAILED:
        return {"rm_report": None, "rm_error": f"The fit failed: {job.reason}"}
    return {"rm_report": None, "rm_job": job}


def _overview(report) -> list:
    """Per criterion: (criterion, its most competent human or None, each judge run's
    place or None, in the report's run order)."""
    if report is None:
        return []
    rows = []
    for c in report.criteria:
        top = next((a for a in c.annotators if a.kind == "human"), None)
        places = {j.run_id: j for j in c.judges}
        rows.append((c, top, [places.get(run_id) for run_id, _ in report.runs]))
    return rows


def _job_poll(request: HttpRequest) -> bool:
    """The rater-models section polling its fitting job: a cached read or a job's
    row, no fit (`_fit_job`), so the heavy-page limits leave it alone."""
    return wants_fragment(request) and bool(request.GET.get("job"))


@login_required
@heavy_page(unless=_job_poll)
@require_GET
def campaign_reliability_page(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = annotation_selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    if campaign.kind == Campaign.Kind.PAIRWISE:
        return redirect("annotation:pairwise-campaign-detail", campaign_id=campaign.pk)
    try:
        models = _rater_models(request, campaign)
    except TooManyRequests as exc:  # too many jobs of the user's: not a bad request
        return too_many_response(exc.retry_after, str(exc))
    # A bad `model` is a 400 for the page; the htmx fragment answers 200 (htmx swaps
    # only 2xx answers) and shows the problem itself, as the agreement dashboard does.
    status = 400 if models.get("rm_error") and not wants_fragment(request) else 200
    if wants_fragment(request):
        return render_page_or_fragment(
            request, "analysis/reliability.html", "rater-models",
            {"campaign": campaign, **models}, status,
        )  # fmt: skip
    report = campaign_reliability(campaign=campaign)
    context = {
        **models,
        "campaign": campaign,
        "report": report,
        "flagged": sum(1 for r in report.raters if r.flags),
        # The gold column only where some rater answered gold items.
        "has_gold": any(r.gold_items for r in report.raters),
        # Two raters with shared items: leave-one-out makes their rows mirror images.
        "symmetric_pair": sum(1 for r in report.raters if r.overall.n) == 2,
        "decisions": annotation_selectors.campaign_decisions(campaign=campaign),
        "thresholds": {
            "qwk": LOW_QWK,
            "severity": HIGH_SEVERITY,
            "gold": GOLD_CEILING,
        },
        "criteria_rows": [
            (r, [_cell(r.criteria.get(key)) for key, _ in report.criteria])
            for r in report.raters
        ],
    }
    return render_page_or_fragment(
        request, "analysis/reliability.html", None, context, status
    )
