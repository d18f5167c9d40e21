"""Prediction-powered estimates pages (researchers and admins; raters get 403).

    /estimates/<dataset_id>/?run=<id>&campaign=<id>[&criterion=KEY][&slice=DIM:VALUE]
    /estimates/<dataset_id>/win-rates/[?run=<pairwise run id>]

Per criterion, a table (model, humans only [CI] (n), judge only (no valid CI), PPI
[CI], effective n, lam) and a chart of the three estimates. Thin: parse, call
`analysis.selectors.ppi.prediction_powered_means`, render. Without `run` the page
opens on the newest run with scores (the first of the choice); a bad parameter is
shown (status 400) with its name.

The win-rate page: per pair of models, the first's win rate from the human votes,
the pairwise judge run and prediction-powered
(`analysis.selectors.ppi_pairwise.prediction_powered_win_rates`), a table and a
chart on the 0-1 axis.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.charts.estimates import means_chart
from analysis.charts.intervals import Interval
from analysis.charts.svg import Series
from analysis.selectors.agreement import AgreementError, agreement_sources_for_user
from analysis.selectors.ppi import prediction_powered_means
from analysis.selectors.ppi_pairwise import FEW_VOTES, prediction_powered_win_rates
from annotation import selectors as annotation_selectors
from flaskapp import roles
from flaskapp.bounds import ID
from flaskapp.params import BadParameter, int_list_param, int_param
from flaskapp.throttling import heavy_page

SERIES = (("humans", "humans only"), ("judge", "judge only"), ("ppi", "PPI++"))


def _interval(row: dict, name: str) -> Interval:
    est = row.get(name)
    if not est:
        return Interval(None, n=row.get("n_labelled", 0), reason=row.get("reason", ""))
    if not est["valid"]:
        return Interval(est["value"], n=est["n"])
    return Interval.from_result(est)


def _series(rows: list[dict]) -> list[Series]:
    return [
        Series(label, [_interval(r, name) for r in rows], index=k)
        for k, (name, label) in enumerate(SERIES)
    ]


def _chart(criterion: dict) -> str:
    rows = criterion["models"]
    low, high = criterion["scale"]
    return means_chart(
        title=f"{criterion['name']}: mean score by model",
        groups=[r["model"] for r in rows],
        series=_series(rows),
        low=low,
        high=high,
    )


@login_required
@heavy_page
@require_GET
def dataset_estimates(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = _researcher_dataset(request, dataset_id)
    sources = agreement_sources_for_user(user=request.user, dataset=dataset)
    error, result = "", None
    try:
        run = int_param(request.GET, "run", None, min_value=1, max_value=ID.high)
        campaigns = int_list_param(request.GET, "campaign", max_value=ID.high)
    except BadParameter as exc:
        run, campaigns = None, []
        error = f"{exc.name}: {exc.problems[0].message}"
    # First load: the newest run with scores and every pointwise campaign, so the
    # page opens on an answer; a problem with defaults is news, not bad input.
    defaults = run is None and not error and bool(sources["runs"])
    if defaults:
        run = sources["runs"][0]["id"]
    dim, _, value = request.GET.get("slice", "").partition(":")
    criterion = request.GET.get("criterion", "") or None
    if run is not None and not error:
        try:
            result = prediction_powered_means(
                dataset=dataset,
                run_id=run,
                campaign_ids=campaigns or None,
                criterion=criterion,
                slice_dim=dim,
                slice_value=value,
            )
        except AgreementError as exc:
            error = str(exc)
    tables = [
        {"criterion": c, "chart": _chart(c)} for c in (result or {}).get("criteria", [])
    ]
    context = {
        "dataset": dataset,
        "sources": sources,
        "run": run,
        "campaigns": campaigns,
        "result": result,
        "tables": tables,
        "error": error,
    }
    status = 400 if error and not defaults else 200
    return render(request, "analysis/estimates.html", context, status=status)


def _researcher_dataset(request: HttpRequest, dataset_id: int):
    roles.require_researcher(request.user)
    return annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )


@login_required
@heavy_page
@require_GET
def dataset_win_rates(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = _researcher_dataset(request, dataset_id)
    error, result, chart = "", None, ""
    try:
        run = int_param(request.GET, "run", None, min_value=1, max_value=ID.high)
    except BadParameter as exc:
        run, error = None, f"{exc.name}: {exc.problems[0].message}"
    if not error:
        try:
            result = prediction_powered_win_rates(dataset=dataset, run_id=run)
        except AgreementError as exc:
            error = str(exc)
    if result and result["pairs"]:
        rows = result["pairs"]
        chart = means_chart(
            title="Win rate of the first model over the second",
            groups=[f"{r['model_a']} vs {r['model_b']}" for r in rows],
            series=_series(rows),
            low=0.0,
            high=1.0,
        )
    context = {
        "dataset": dataset,
        "result": result,
        "chart": chart,
        "error": error,
        "few_votes": FEW_VOTES,
    }
    return render(
        request,
        "analysis/estimates_win_rates.html",
        context,
        status=400 if error else 200,
    )
