"""The rater reliability page of a pointwise campaign (researchers and admins).

    /reliability/<campaign_id>/   every rater: items, time, gold accuracy, agreement
                                  with the others' consensus (overall and per
                                  criterion), severity, straight-lining, speed, drift,
                                  flags; exclude or pause a rater (with a reason) and
                                  the history of those decisions

Thin: `analysis.selectors.reliability` computes (cached), the annotation app's
services record decisions (`annotation:campaign-rater-decision`).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from analysis.selectors.reliability import (
    GOLD_CEILING,
    HIGH_SEVERITY,
    LOW_QWK,
    campaign_reliability,
)
from annotation import selectors as annotation_selectors
from annotation.models import Campaign


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


@login_required
@require_GET
def campaign_reliability_page(request: HttpRequest, campaign_id: int) -> HttpResponse:
    campaign = annotation_selectors.campaign_get_for_user(
        user=request.user, campaign_id=campaign_id
    )
    if campaign.kind == Campaign.Kind.PAIRWISE:
        return redirect("annotation:pairwise-campaign-detail", campaign_id=campaign.pk)
    report = campaign_reliability(campaign=campaign)
    context = {
        "campaign": campaign,
        "report": report,
        "flagged": sum(1 for r in report.raters if r.flags),
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
    return render(request, "analysis/reliability.html", context)
