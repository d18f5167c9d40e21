"""The self-consistency page of a judge run (researchers and admins).

    /runs/<run_id>/consistency/[?campaign=..][&slice=split:dev]

Per criterion, sample 0 alone vs the median vs the mode of the run's samples, each
against the humans (QWK, Spearman), and the spread of the samples. Thin:
`analysis.selectors.consistency` computes; the run is fetched with the role check
(`judge_run_get_for_user`). A bad parameter shows the problem (400).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.selectors.agreement import AgreementError
from analysis.selectors.consistency import self_consistency
from flaskapp.params import ascii_int
from flaskapp.throttling import heavy_page
from judging.selectors.runs import judge_run_get_for_user


@login_required
@heavy_page
@require_GET
def run_consistency(request: HttpRequest, run_id: int) -> HttpResponse:
    """The run's self-consistency table, one row per criterion."""
    run = judge_run_get_for_user(user=request.user, run_id=run_id)
    campaigns = [ascii_int(c) for c in request.GET.getlist("campaign")]
    slice_dim, _, slice_value = request.GET.get("slice", "").partition(":")
    result, error = None, ""
    try:
        result = self_consistency(
            dataset=run.dataset,
            run_id=run.pk,
            campaign_ids=[c for c in campaigns if c is not None],
            slice_dim=slice_dim,
            slice_value=slice_value,
        )
    except AgreementError as exc:
        error = str(exc)
    context = {"run": run, "result": result, "error": error}
    return render(
        request, "analysis/run_consistency.html", context, status=400 if error else 200
    )
