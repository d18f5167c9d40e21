"""The judge workbench pages (researchers and admins).

    /datasets/<id>/workbench/   the dataset's development / test split (make it once),
                                the log of looks at the test split, its experiments
    /experiments/               every experiment; create one (dataset, name, runs)
    /experiments/<id>/          the runs against the humans and against the baseline,
                                on the development split (``?part=all``: every item);
                                add a run, change the baseline, evaluate on the test
                                split (a logged action: POST, then ``?look=<id>``)

Thin: `analysis.selectors.experiments` computes (cached), the judging app's services
write (`judging.services.experiments`, `judging.services.splits`).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from analysis.charts.forest import forest_from_comparison
from analysis.selectors.agreement.sources import AgreementError
from analysis.selectors.experiments import experiment_comparison, experiment_figures
from annotation import selectors as annotation_selectors
from annotation.models import Dataset
from annotation.selectors.datasets import dataset_list_for_user
from flaskapp import roles
from flaskapp.errors import DomainError, Problem
from flaskapp.params import ascii_int
from flaskapp.throttling import heavy_page
from flaskapp.workspaces import current_workspace
from judging.models import JudgeRun, TestSplitLook
from judging.selectors.experiments import (
    experiment_get_for_user,
    experiment_list_for_user,
    experiment_run_choices,
)
from judging.selectors.splits import eval_split_of, eval_split_summary, test_look_list
from judging.services.experiments import (
    SCORE_KINDS,
    experiment_add_run,
    experiment_create,
    experiment_set_baseline,
)
from judging.services.splits import eval_split_create, eval_split_look_record

DEFAULT_BOOT = 1000


@login_required
@require_http_methods(["GET", "POST"])
def dataset_workbench(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """The dataset's split (a form to make it when there is none), the test-look
    log and the experiments."""
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    errors = None
    if request.method == "POST":
        try:
            eval_split_create(
                dataset=dataset,
                user=request.user,
                test_fraction=request.POST.get("test_fraction", ""),
                seed=request.POST.get("seed", "0") or "0",
            )
            messages.success(request, "The development / test split was made.")
            return redirect("analysis:dataset-workbench", dataset.pk)
        except DomainError as exc:
            errors = exc
    split = eval_split_of(dataset=dataset)
    return render(
        request,
        "analysis/dataset_workbench.html",
        {
            "dataset": dataset,
            "split": eval_split_summary(dataset=dataset),
            "looks": test_look_list(split=split) if split else [],
            "experiments": experiment_list_for_user(user=request.user, dataset=dataset),
            "errors": errors,
            "form": request.POST if errors else {},
            "form_runs": request.POST.getlist("runs") if errors else [],
        },
        status=400 if errors else 200,
    )


@login_required
@require_http_methods(["GET", "POST"])
def experiment_list(request: HttpRequest) -> HttpResponse:
    """Every experiment; POST creates one from a dataset, a name and runs."""
    roles.require_researcher(request.user)
    errors = None
    if request.method == "POST":
        dataset_id = ascii_int(request.POST.get("dataset"))
        dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id else None
        try:
            if dataset is None:
                raise DomainError(
                    "the experiment was not created",
                    [Problem("choose a dataset", field="dataset")],
                )
            experiment = experiment_create(
                user=request.user,
                dataset=dataset,
                name=request.POST.get("name", ""),
                run_ids=request.POST.getlist("runs"),
                baseline_id=request.POST.get("baseline") or None,
                description=request.POST.get("description", ""),
            )
            return redirect("analysis:experiment", experiment.pk)
        except DomainError as exc:
            errors = exc
    # The form offers the current workspace's datasets and runs only.
    workspace = current_workspace(request)
    return render(
        request,
        "analysis/experiment_list.html",
        {
            "experiments": experiment_list_for_user(
                user=request.user, workspace=workspace
            ),
            "datasets": dataset_list_for_user(
                user=request.user, workspace=workspace
            ).order_by("name"),
            "run_groups": experiment_run_choices(
                user=request.user, workspace=workspace
            ),
            "errors": errors,
            "form": request.POST if errors else {},
            "form_runs": request.POST.getlist("runs") if errors else [],
        },
        status=400 if errors else 200,
    )


def _look(request: HttpRequest, experiment) -> TestSplitLook | None:
    """The test look named by ``?look=``, when it is of this experiment's split."""
    look_id = ascii_int(request.GET.get("look"))
    if look_id is None:
        return None
    return TestSplitLook.objects.filter(
        pk=look_id, split__dataset=experiment.dataset
    ).first()


@login_required
@heavy_page
@require_http_methods(["GET", "POST"])
def experiment_detail(request: HttpRequest, experiment_id: int) -> HttpResponse:
    """The experiment's figures; POST `action` = add_run | baseline | test_look."""
    experiment = experiment_get_for_user(user=request.user, experiment_id=experiment_id)
    errors = None
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "add_run":
                experiment_add_run(
                    user=request.user,
                    experiment=experiment,
                    run_id=request.POST.get("run"),
                )
            elif action == "baseline":
                experiment_set_baseline(
                    user=request.user,
                    experiment=experiment,
                    run_id=request.POST.get("run"),
                )
            elif action == "test_look":
                split = eval_split_of(dataset=experiment.dataset)
                if split is None:
                    raise DomainError("the dataset has no development / test split")
                look = eval_split_look_record(
                    split=split,
                    user=request.user,
                    run_ids=list(experiment.runs.values_list("pk", flat=True)),
                    experiment=experiment,
                    reason=request.POST.get("reason", ""),
                )
                url = reverse("analysis:experiment", args=[experiment.pk])
                return redirect(f"{url}?part=test&look={look.pk}")
            else:
                raise DomainError(f"unknown action {action[:40]!r}")
            return redirect("analysis:experiment", experiment.pk)
        except DomainError as exc:
            errors = exc
    n_boot = ascii_int(request.GET.get("n_boot", DEFAULT_BOOT))
    part = request.GET.get("part") or None
    look = _look(request, experiment)
    figures, error, comparison = None, None, None
    try:
        figures = experiment_figures(
            experiment=experiment,
            part=part,
            test_look=look,
            n_boot=DEFAULT_BOOT if n_boot is None else n_boot,
        )
        comparison = experiment_comparison(figures, request.GET.get("stat") or "qwk")
    except AgreementError as exc:
        error = str(exc)
    candidates = (
        JudgeRun.objects.filter(dataset=experiment.dataset, kind__in=SCORE_KINDS)
        .exclude(pk__in=experiment.runs.values("pk"))
        .order_by("-pk")
    )
    status = 400 if (errors or error) else 200
    return render(
        request,
        "analysis/experiment_detail.html",
        {
            "experiment": experiment,
            "figures": figures,
            "comparison": comparison,
            "forest": forest_from_comparison(comparison) if comparison else "",
            "error": error,
            "errors": errors,
            "typed_reason": request.POST.get("reason", ""),
            "look": look,
            "candidates": candidates,
            "rows": _table(figures) if figures else [],
            "ceiling_rows": [
                (row, figures["ceiling"][row["key"]])
                for row in figures["rows"]
                if row["key"] in figures["ceiling"]
            ]
            if figures
            else [],
        },
        status=status,
    )


def _table(figures: dict) -> list[dict]:
    """Rows of the page's table: per run, per row key, the cells in order."""
    out = []
    for run in figures["runs"]:
        cells = []
        for row in figures["rows"]:
            fig = run["figures"].get(row["key"]) or {}
            vs = (run["vs_baseline"] or {}).get(row["key"])
            cells.append(
                {
                    "row": row,
                    "n": fig.get("n", 0),
                    "stats": [(s, fig.get(s)) for s in figures["stats"]],
                    "vs": vs,
                    "diffs": (
                        [(s, vs["diff"][s], vs["winner"][s]) for s in figures["stats"]]
                        if vs
                        else []
                    ),
                }
            )
        out.append({"run": run, "cells": cells})
    return out
