"""Pages of derived runs: the panel form, and the run page's "Calibrate on the dev
split" button. Thin: parse, one service call, redirect or re-render with the
problems. The researcher role is checked by the selectors and services.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotation import selectors as annotation_selectors
from flaskapp import roles
from flaskapp.errors import DomainError, Problem
from flaskapp.params import ascii_int
from flaskapp.workspaces import current_workspace
from judging.panels import METHODS
from judging.selectors import runs as selectors
from judging.selectors.item_scores import score_run_list
from judging.services.derived import judge_run_calibrate, judge_run_panel_create

METHOD_HELP = {
    "mean": "the mean of the runs' scores, rounded half up",
    "median": "the median of the runs' scores, rounded half up",
    "majority": "the most common score (ties toward the median); labels too",
    "weighted": "a weighted mean, the weights fitted on the development split",
}


@login_required
@require_http_methods(["GET", "POST"])
def run_panel_new(request: HttpRequest) -> HttpResponse:
    """Choose a dataset, then two or more of its runs and a method: the panel is
    made at once (no judge is called) and its page shown. A refusal re-renders the
    form with each problem (400)."""
    roles.require_researcher(request.user)
    datasets = annotation_selectors.dataset_list_for_user(
        user=request.user, workspace=current_workspace(request)
    )
    params = request.POST if request.method == "POST" else request.GET
    dataset_id = ascii_int(params.get("dataset"))
    dataset = datasets.filter(pk=dataset_id).first() if dataset_id else None
    chosen = [ascii_int(r) for r in params.getlist("run_ids")]
    method = params.get("method", "mean")
    problems: list[Problem] = []
    status = 200
    if request.method == "POST":
        try:
            if dataset is None:
                raise DomainError(
                    "the panel was not made",
                    [Problem("choose a dataset", field="dataset")],
                )
            run = judge_run_panel_create(
                user=request.user,
                dataset=dataset,
                run_ids=[r for r in chosen if r is not None],
                method=method,
                name=params.get("name", ""),
            )
        except DomainError as exc:
            problems = exc.problems or [Problem(exc.message)]
            status = 400
        else:
            messages.success(request, f"Made the panel “{run.name}”.")
            return redirect("judging:run-detail", run_id=run.pk)
    context = {
        "datasets": datasets,
        "dataset": dataset,
        "runs": score_run_list(dataset=dataset) if dataset else [],
        "chosen": set(chosen),
        "methods": [(m, METHOD_HELP[m]) for m in METHODS],
        "method": method,
        "name": params.get("name", ""),
        "problems": problems,
    }
    return render(request, "judging/run_panel_new.html", context, status=status)


@login_required
@require_POST
def run_calibrate(request: HttpRequest, run_id: int) -> HttpResponse:
    """Calibrate the run on the dev split; the new run's page, or back to this run
    with the reason it was refused."""
    run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
    try:
        derived = judge_run_calibrate(user=request.user, run=run)
    except DomainError as exc:
        messages.error(request, str(exc))
        return redirect("judging:run-detail", run_id=run.pk)
    messages.success(request, f"Made the calibrated run “{derived.name}”.")
    return redirect("judging:run-detail", run_id=derived.pk)
