"""Meta-evaluation and bias report pages (researchers and admins; raters get 403).

    /metaeval/                       choose a dataset with pairwise judge runs
    /metaeval/<dataset_id>/          accuracy, consistency, kappa, ties, human ceiling,
                                     RM accuracy per category, and the bias probes of
                                     the chosen pairwise runs (?run=..&n_boot=..)
    /metaeval/<dataset_id>/probes/   pointwise probes of one run vs a campaign
                                     (length, score inflation, halo)

Thin: parse the query, call `analysis.selectors.metaeval`, render. Bad parameters are
shown on the page (status 400) with the parameter named.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis import charts
from analysis.glossary import figure, figure_rows, glossary
from analysis.selectors.agreement import (
    AgreementError,
    agreement_defaults,
    agreement_sources_for_user,
    run_label,
)
from analysis.selectors.classification import (
    classification_compute,
    classification_dataset_ids,
    classification_runs,
)
from analysis.selectors.metaeval import (
    MetaevalError,
    metaeval_comparison,
    metaeval_compute,
    pairwise_runs,
    pointwise_probes,
)
from annotation import selectors as annotation_selectors
from annotation.models import Dataset, PreferencePair
from flaskapp import roles
from flaskapp.bounds import ID, N_BOOT
from flaskapp.params import BadParameter, int_list_param, int_param
from flaskapp.throttling import heavy_page
from flaskapp.workspaces import current_workspace

# The figures of the overview table and the per-category columns, in order. Their
# labels, explanations and display kinds live in `analysis.glossary`.
OVERALL = (
    "accuracy_ab",
    "accuracy_ba",
    "accuracy_mean",
    "accuracy_both",
    "accuracy_mean_no_ties",
    "kappa",
    "kappa_no_ties",
    "consistency",
    "first_position_share",
    "second_position_share",
    "rm_accuracy",
    "human_loo",
)
CATEGORY_COLUMNS = (
    "accuracy_ab",
    "accuracy_ba",
    "accuracy_both",
    "consistency",
    "rm_accuracy",
    "kappa",
)


def _require_researcher(request: HttpRequest) -> None:
    if not roles.is_researcher(request.user):
        raise PermissionDenied("This page needs the researcher or admin role.")


def _ints(params, name: str) -> list[int] | None:
    """The ids of repeatable parameter `name`; None when one is not an id."""
    try:
        return int_list_param(params, name, max_value=ID.high)
    except BadParameter:
        return None


def _n_boot(params) -> tuple[int, str]:
    """(n_boot, "") or (the default, the error naming `n_boot`)."""
    try:
        return int_param(params, "n_boot", 1000, **N_BOOT.field_kwargs()), ""
    except BadParameter as exc:
        problem = exc.problems[0]
        return 1000, f"{problem.field}: {problem.message}"


def _rows(group: dict) -> list[dict]:
    return [
        {"key": k, "label": f.label, "help": f.help, "r": group[k], "kind": f.kind}
        for k, f in ((k, figure(k)) for k in OVERALL)
        if group.get(k) is not None
    ]


def probe_rows(probes: list[dict]) -> list[dict]:
    """Probes (as `analysis.selectors.metaeval` returns them) with their labels,
    explanations and display kinds, details included."""
    out = []
    for probe in probes:
        f = figure(probe.get("name", ""))
        out.append(
            {
                "name": probe.get("name", ""),
                "label": f.label,
                "help": f.help,
                "kind": f.kind,
                "value": probe.get("value"),
                "baseline": probe.get("baseline"),
                "details": figure_rows(probe.get("details") or {}, probe_detail=True),
            }
        )
    return out


def page_glossary(keys, probes: list[dict]) -> list:
    """What every figure shown on the page means (each label once)."""
    details = [d["key"] for p in probes for d in p["details"]]
    return glossary(list(keys) + [p["name"] for p in probes], probe_detail_keys=details)


@login_required
@require_GET
def metaeval_home(request: HttpRequest) -> HttpResponse:
    _require_researcher(request)
    with_pairs = PreferencePair.objects.values("dataset_id")
    classified = set(classification_dataset_ids())
    datasets = (
        annotation_selectors.dataset_list_for_user(
            user=request.user, workspace=current_workspace(request)
        )
        .filter(Q(pk__in=with_pairs) | Q(pk__in=classified))
        .order_by("name")
    )
    return render(
        request,
        "analysis/metaeval_home.html",
        {"datasets": datasets, "classified": classified},
    )


def _classification(request: HttpRequest, dataset: Dataset, n_boot: int) -> dict:
    """The classification section's context: the runs to choose from, the chosen
    ones, the result (or None) and a problem: `error` (naming the parameter) for a
    bad explicit choice, `note` when the defaults give nothing to compare.

    Runs: `crun` (default: every run with labels on a categorical criterion);
    humans: `campaign` (default: every pointwise campaign, the dashboard's rule)."""
    runs = classification_runs(dataset)
    out = {
        "classification_runs": [{"id": r.pk, "label": run_label(r)} for r in runs],
        "classification_chosen": [],
        "categorical": None,
        "categorical_error": "",
        "categorical_note": "",
    }
    chosen = _ints(request.GET, "crun")
    campaigns = _ints(request.GET, "campaign")
    if chosen is None:
        out["categorical_error"] = "crun: must be run ids"
        return out
    if campaigns is None:
        out["categorical_error"] = "campaign: must be campaign ids"
        return out
    if not runs and not chosen:
        return out
    try:
        result = classification_compute(
            dataset=dataset,
            campaign_ids=campaigns,
            run_ids=chosen or sorted(r.pk for r in runs),
            n_boot=n_boot,
        )
    except AgreementError as exc:
        out["categorical_error" if chosen or campaigns else "categorical_note"] = str(
            exc
        )
        return out
    out["categorical"] = result
    out["classification_chosen"] = [r["id"] for r in result["runs"]]
    return out


@login_required
@heavy_page
@require_GET
def metaeval_report(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    runs = pairwise_runs(dataset)
    chosen = _ints(request.GET, "run")
    result = None
    n_boot, error = _n_boot(request.GET)
    if chosen is None:
        error = "run: must be run ids"
    if not error and runs:
        try:
            result = metaeval_compute(dataset=dataset, run_ids=chosen, n_boot=n_boot)
        except MetaevalError as exc:
            error = str(exc)
    classification = _classification(request, dataset, n_boot)
    error = error or classification["categorical_error"]
    reports = []
    for run in (result or {}).get("runs", []):
        rep = run["report"]
        probes = list(rep.get("probes", {}).values())
        if run.get("cue"):
            probes.append(run["cue"])
        reports.append(
            {
                "run": run,
                "overall": _rows(rep["overall"]),
                "overall_counts": figure_rows(rep["overall"].get("counts", {})),
                "categories": [
                    {
                        "name": name or "(none)",
                        "cells": [(g.get(k), figure(k).kind) for k in CATEGORY_COLUMNS],
                        "counts": g.get("counts", {}),
                    }
                    for name, g in sorted(rep["categories"].items())
                ],
                "probes": probe_rows(probes),
                "chart_categories": charts.category_accuracy_from_metaeval(run),
                "chart_probes": charts.probe_effects_from_metaeval(run),
            }
        )
    context = {
        "dataset": dataset,
        "runs": [{"id": r.pk, "label": run_label(r), "probe": r.probe} for r in runs],
        "chosen": [r["run"]["id"] for r in reports],
        "n_boot": n_boot,
        "result": result,
        "reports": reports,
        "grid": metaeval_comparison(result) if reports else None,
        "category_headers": [figure(k) for k in CATEGORY_COLUMNS],
        "glossary": page_glossary(
            OVERALL,
            [p for rep in reports for p in rep["probes"]],
        )
        if reports
        else [],
        "error": error,
        **classification,
        "categorical_heading": "Classification judges vs the human majority",
    }
    return render(
        request, "analysis/metaeval.html", context, status=400 if error else 200
    )


@login_required
@heavy_page
@require_GET
def metaeval_pointwise_probes(request: HttpRequest, dataset_id: int) -> HttpResponse:
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    sources = agreement_sources_for_user(user=request.user, dataset=dataset)
    campaigns = _ints(request.GET, "campaign") or []
    run = _ints(request.GET, "run") or []
    defaulted = not (campaigns or run or "campaign" in request.GET)
    if defaulted:
        # The page opens with figures (issue 37, defect 21): the agreement defaults'
        # campaigns (real ratings only, when there are any) and their newest run.
        defaults = agreement_defaults(dataset=dataset)
        campaigns = defaults.campaign_ids[-1:]
        run = sorted(defaults.run_ids)[-1:]
    result = None
    n_boot, error = _n_boot(request.GET)
    if campaigns and run and not error:
        try:
            result = pointwise_probes(
                dataset=dataset, campaign_ids=campaigns, run_id=run[0], n_boot=n_boot
            )
        except ValueError as exc:
            error = str(exc)
    probes = probe_rows(list(result["probes"].values())) if result else []
    context = {
        "dataset": dataset,
        "sources": sources,
        "campaigns": campaigns,
        "run": run[0] if run else None,
        "result": result,
        "probes": probes,
        "glossary": page_glossary([], probes),
        "error": error,
        "defaulted": defaulted,
    }
    return render(
        request,
        "analysis/metaeval_probes.html",
        context,
        # The defaults are no bad request: their problem is shown, with a 200.
        status=400 if error and not defaulted else 200,
    )
