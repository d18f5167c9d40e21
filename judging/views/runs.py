"""Run pages: list, the run form (estimate), a run's live progress and results,
imports of judge results made elsewhere. Configs, prompts and suggestions have
their own modules beside this one.

Function views, thin: parse, call one service or selector, render. Every page needs
the researcher (or admin) role: the selectors check it, so raters get a 403 and never
see a judge score. A page that htmx updates in place is served by one URL: the whole
page normally, its `{% partialdef %}` fragment when htmx asks.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors as annotation_selectors
from annotation.models import Dataset
from annotation.services.imports import import_check_sizes
from flaskapp import roles
from flaskapp.bounds import FEW_SHOT_EXAMPLES, INSTRUCTION_LIMIT, SEED
from flaskapp.errors import DomainError
from flaskapp.htmx import HTMX_STOP_POLLING, render_page_or_fragment, wants_fragment
from flaskapp.params import ascii_int
from flaskapp.workspaces import current_workspace
from judging import kinds
from judging.fewshot import FewShotRequest
from judging.forms import IMPORT_FORMAT_HELP, RunForm, RunImportForm
from judging.models import (
    Experiment,
    JudgeCall,
    JudgeConfig,
    JudgeRun,
)
from judging.selectors import batches as batch_selectors
from judging.selectors import criteria as criteria_selectors
from judging.selectors import drift as drift_selectors
from judging.selectors import runs as selectors
from judging.selectors.fewshot import few_shot_shown
from judging.selectors.keys import stored_key_name
from judging.services.budgets import budget_summary
from judging.services.estimates import judge_run_estimate
from judging.services.experiments import experiment_join_new_run
from judging.services.run_imports import judge_run_import
from judging.services.runs import (
    judge_run_cancel,
    judge_run_create,
    judge_run_retry_failed,
    judge_run_start,
)

RUNS_PER_PAGE = 50
CALLS_PER_PAGE = 25


# --- Runs ---------------------------------------------------------------------------------


def _experiment(raw) -> Experiment | None:
    """The experiment a run form names (`experiment`), if any."""
    experiment_id = ascii_int(raw) if raw else None
    return (
        Experiment.objects.filter(pk=experiment_id).first() if experiment_id else None
    )


@login_required
@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    """Runs, newest first, with counts, tokens and cost (a constant number of queries)."""
    status = request.GET.get("status", "")
    if status not in JudgeRun.Status.values:
        status = ""
    runs = selectors.judge_run_list_for_user(
        user=request.user, status=status or None, workspace=current_workspace(request)
    )
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    counts = selectors.judge_run_counts(run_ids=[r.pk for r in page])
    rows = [(run, counts[run.pk]) for run in page]
    context = {
        "page": page,
        "rows": rows,
        "classification_ids": criteria_selectors.classification_run_ids(page),
        "status": status,
        "statuses": JudgeRun.Status.choices,
    }
    return render(request, "judging/run_list.html", context)


def _chosen(form_data, name: str, queryset):
    pk = ascii_int(form_data.get(name))
    return None if pk is None else queryset.filter(pk=pk).first()


def _estimate(config, dataset, params, available) -> dict | None:
    """The estimate for the form's current values: the same function and items as the
    run will record. Unknown models are ignored (they belong to the dataset chosen
    before); so are unparsable numbers (the form reports them)."""
    if config is None or dataset is None or not config.has_endpoint:
        return None  # a judge without an endpoint: the page says why, no figures
    task = _form_kind(params)
    options = {
        "config": config,
        "dataset": dataset,
        "kind": task.key,
        "models": [m for m in params.getlist("models") if m in available],
        "instruction_limit": _limit(params.get("instruction_limit")),
        "sample": _limit(params.get("pair_sample")),
        "batch": bool(params.get("batch")),
    }
    few_shot = _few_shot(params)
    if few_shot is None or "few_shot" not in task.takes:
        return judge_run_estimate(**options)
    try:
        return judge_run_estimate(**options, few_shot=few_shot)
    except DomainError as exc:
        # Shown with the estimate; the form names the field when it is sent.
        estimate = judge_run_estimate(**options)
        estimate["few_shot_problem"] = "; ".join(p.message for p in exc.problems)
        return estimate


def _form_kind(params) -> kinds.TaskKind:
    """The kind the form's values name; an unknown one is the default kind (the
    form reports it when sent)."""
    return kinds.find(params.get("kind")) or kinds.default()


def _few_shot(params) -> FewShotRequest | None:
    """The form's few-shot options, leniently (what does not parse is left out:
    the form reports it when sent), as the run service takes them."""
    k = ascii_int(params.get("few_shot"))
    seed = ascii_int(params.get("few_shot_seed"))
    words = (params.get("few_shot_responses") or "").replace(",", " ").split()
    request = FewShotRequest(
        k=k if k is not None and FEW_SHOT_EXAMPLES.contains(k) else None,
        rule=params.get("few_shot_rule") or "random",
        seed=seed if seed is not None and SEED.contains(seed) else 0,
        response_ids=tuple(i for w in words if (i := ascii_int(w)) is not None),
        criteria=tuple(
            (params.get("few_shot_criteria") or "").replace(",", " ").split()
        ),
    )
    return request if request.wanted else None


def _limit(raw) -> int | None:
    value = ascii_int(raw)
    return value if value is not None and INSTRUCTION_LIMIT.contains(value) else None


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    """Choose a judge, a dataset, models and a limit; see the estimate; create the run.

    With htmx the form asks this URL (GET with the form's values) for a fragment:
    `#run-models` when the dataset changes (its models), `#run-estimate` on any
    change (calls, tokens and cost the run would need). Nothing is sent to a judge
    before the run is started.
    """
    roles.require_researcher(request.user)
    # The current workspace's judges and datasets only: a posted id of another
    # workspace is refused by the form like a missing one, naming the field.
    workspace = current_workspace(request)
    configs = selectors.judge_config_list_for_user(
        user=request.user, workspace=workspace
    )
    datasets = annotation_selectors.dataset_list_for_user(
        user=request.user, workspace=workspace
    )
    params = request.POST if request.method == "POST" else request.GET
    dataset: Dataset | None = _chosen(params, "dataset", datasets)
    config: JudgeConfig | None = _chosen(params, "config", configs)
    available = selectors.dataset_model_names(dataset=dataset) if dataset else []
    model_choices = [(name, f"{name} ({n})") for name, n in available]
    status = 200
    if request.method == "POST":
        form = RunForm(
            request.POST,
            configs=configs,
            datasets=datasets,
            model_choices=model_choices,
        )
        if form.is_valid():
            data = form.cleaned_data
            try:
                run = judge_run_create(
                    config=data["config"],
                    dataset=data["dataset"],
                    user=request.user,
                    kind=data["kind"],
                    name=data["name"],
                    **form.run_options(),
                )
                experiment = _experiment(request.POST.get("experiment"))
                if experiment is not None:
                    # Started from an experiment: it joins before anything is paid
                    # for, or is removed (it judges other items than the baseline).
                    experiment_join_new_run(
                        user=request.user, experiment_id=experiment.pk, run=run
                    )
                if data["start"]:
                    run = judge_run_start(run=run, user=request.user)
            except DomainError as exc:
                form.add_problems(exc)
            else:
                messages.success(
                    request,
                    f"Run “{run.name}” created with {run.total_calls} call"
                    f"{'s' if run.total_calls != 1 else ''}"
                    + (" and started." if data["start"] else "; start it when ready."),
                )
                return redirect("judging:run-detail", run_id=run.pk)
        status = 400
    else:
        initial = {k: v for k, v in request.GET.items() if k in RunForm.base_fields}
        initial["models"] = request.GET.getlist("models")
        form = RunForm(
            initial=initial,
            configs=configs,
            datasets=datasets,
            model_choices=model_choices,
        )
    kind = params.get("kind") or kinds.default().key
    chosen_models = params.getlist("models")
    context = {
        "form": form,
        "dataset": dataset,
        "config": config,
        "kind": kind,
        "chosen_models": chosen_models,
        "task": _form_kind(params),
        "estimate": _estimate(config, dataset, params, {n for n, _ in available}),
        "experiment": _experiment(params.get("experiment")),
    }
    fragment = "run-models" if request.htmx.target == "run-models" else "run-estimate"
    return render_page_or_fragment(
        request, "judging/run_new.html", fragment, context, status=status
    )


def _run_actions(run: JudgeRun, progress: selectors.RunProgress) -> dict:
    """Which buttons the run page offers (the services refuse the rest anyway)."""
    executable = kinds.get(run.kind).executable and run.config_id is not None
    counts = progress.counts
    return {
        "can_start": executable
        and run.status
        in (
            JudgeRun.Status.PENDING,
            JudgeRun.Status.CANCELLED,
            JudgeRun.Status.STOPPED_BUDGET,
        )
        and counts.pending > 0,
        "is_resume": run.status
        in (JudgeRun.Status.CANCELLED, JudgeRun.Status.STOPPED_BUDGET)
        or counts.finished > 0,
        "can_cancel": executable and run.status == JudgeRun.Status.RUNNING,
        "can_retry": executable
        and run.status != JudgeRun.Status.RUNNING
        and counts.failed > 0,
    }


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    """A run: its settings, the estimate, live progress, recent errors and actions.

    While the run is running, htmx polls the `#run-progress` fragment every 2 s; once
    it is no longer running the fragment answers 286, which stops the polling.
    """
    run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
    progress = selectors.judge_run_progress(run=run)
    snapshot = run.settings_snapshot or {}
    env_name = snapshot.get("api_key_env", "")
    context = {
        "run": run,
        "progress": progress,
        "counts": progress.counts,
        "snapshot": snapshot,
        "is_dev_server": bool(snapshot.get("is_dev_server")),
        "is_baseline": str(snapshot.get("backend", "")).startswith("baseline"),
        "env_name": env_name,
        "env_set": selectors.api_key_is_set(env_name),
        "stored_key_name": stored_key_name(snapshot.get("stored_key_id")),
        "polling": progress.is_live,
        "few_shot": few_shot_shown(run=run),
        "task": kinds.get(run.kind),
        "batches": batch_selectors.run_batches(run=run),
        "request_settings": selectors.run_request_settings(run),
        "budget": budget_summary(
            run, spent=progress.counts.cost, pending=progress.counts.pending
        ),
        **_run_actions(run, progress),
    }
    fragment = wants_fragment(request)
    # A poll also brings the timing table and the labels given (out of band): the
    # finished time and the counts change while the run goes and when it ends, with
    # the status in the fragment (issue 37, defect 3: the counts stayed at 0).
    context["oob_timing"] = fragment
    context["label_counts"] = criteria_selectors.judge_run_label_counts(run=run)
    if not fragment:
        context["classification_ids"] = criteria_selectors.classification_run_ids([run])
        # What the run's kind shows besides (suggestion, verdict or critique counts).
        context.update(kinds.get(run.kind).page_context(run))
        context["drift"] = drift_selectors.run_drift_notices(run)
    status = HTMX_STOP_POLLING if fragment and not progress.is_live else 200
    return render_page_or_fragment(
        request, "judging/run_detail.html", "run-progress", context, status=status
    )


def _budget_param(request: HttpRequest):
    """The start form's optional new spend cap ("" or absent: keep the run's);
    one that is not a number is refused by the service, naming `budget`."""
    value = (request.POST.get("budget") or "").strip()
    return value or None


def _run_action(request: HttpRequest, run_id: int, action) -> HttpResponse:
    run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
    try:
        message = action(run)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, message)
    return redirect("judging:run-detail", run_id=run.pk)


@login_required
@require_POST
def run_start(request: HttpRequest, run_id: int) -> HttpResponse:
    """Start a pending run, or resume a cancelled one (its pending calls)."""

    def start(run):
        run = judge_run_start(run=run, user=request.user, budget=_budget_param(request))
        # An event, not the status: the status sentence in the live progress block
        # says what the run is doing now (this message would go stale).
        if run.status == JudgeRun.Status.RUNNING:
            return "The run was started."
        return "Nothing was pending: the run was not started."

    return _run_action(request, run_id, start)


@login_required
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    """Stop a run; calls in flight finish, pending ones wait for a resume."""

    def cancel(run):
        judge_run_cancel(run=run, user=request.user)
        return "The run was cancelled. Calls in flight finish; resume it at any time."

    return _run_action(request, run_id, cancel)


@login_required
@require_POST
def run_retry(request: HttpRequest, run_id: int) -> HttpResponse:
    """Put the run's failed calls back to pending and start it."""

    def retry(run):
        n = judge_run_retry_failed(run=run, user=request.user)
        if not n:
            return "No call had failed: nothing to retry."
        return f"Retrying {n} failed call{'s' if n != 1 else ''}."

    return _run_action(request, run_id, retry)


@login_required
@require_GET
def run_results(request: HttpRequest, run_id: int) -> HttpResponse:
    """A run's calls with their scores and raw outputs, filtered by status, paginated.

    With htmx, the status filter and the page links ask for `#run-results` only.
    """
    run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
    status = request.GET.get("status", "")
    if status not in JudgeCall.Status.values:
        status = ""
    task = kinds.get(run.kind)
    calls = task.results_queryset(
        selectors.judge_call_list(run=run, status=status or None)
    )
    page = Paginator(calls, CALLS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "run": run,
        "page": page,
        "status": status,
        "statuses": JudgeCall.Status.choices,
        "classification_ids": criteria_selectors.classification_run_ids([run]),
        # The kind's columns: is_annotation, is_pairwise or is_critique.
        **task.results_flags,
    }
    return render_page_or_fragment(
        request, "judging/run_results.html", "run-results", context
    )


# --- Imports of judge results made elsewhere -----------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def run_import(request: HttpRequest) -> HttpResponse:
    """Upload judge results made elsewhere (FLASK review files, generic JSONL/CSV).

    Every row is checked first; a file with a problem imports nothing and the page
    lists each problem with its file, line and field.
    """
    roles.require_researcher(request.user)
    datasets = annotation_selectors.dataset_list_for_user(
        user=request.user, workspace=current_workspace(request)
    )
    problems: list = []
    status = 200
    if request.method == "POST":
        form = RunImportForm(request.POST, request.FILES, datasets=datasets)
        if form.is_valid():
            data = form.cleaned_data
            uploads = data["files"]
            try:
                # Refuse oversized files before reading them into memory.
                import_check_sizes(sizes=[(f.name, f.size) for f in uploads])
                run = judge_run_import(
                    dataset=data["dataset"],
                    user=request.user,
                    name=data["name"],
                    fmt=data["format"],
                    files=[(f.name, f.read()) for f in uploads],
                    model=data["model"] or None,
                    mapping=form.mapping_pairs(),
                    strict=data["strict"],
                )
            except DomainError as exc:
                problems = exc.problems
                if not problems:
                    form.add_error(None, exc.message)
                else:
                    form.add_error(None, exc.message.capitalize() + ".")
            else:
                warned = run.settings_snapshot.get("warning_count", 0)
                messages.success(
                    request,
                    f"Imported “{run.name}”: {run.total_calls} call"
                    f"{'s' if run.total_calls != 1 else ''} with their scores"
                    + (
                        f", {warned} warning{'s' if warned != 1 else ''} (listed on "
                        "this page)."
                        if warned
                        else "."
                    ),
                )
                return redirect("judging:run-detail", run_id=run.pk)
        status = 400
    else:
        form = RunImportForm(
            initial={"dataset": request.GET.get("dataset")}, datasets=datasets
        )
    context = {
        "form": form,
        "problems": problems,
        "format_help": [
            (value, label, IMPORT_FORMAT_HELP[value])
            for value, label in form.fields["format"].choices
        ],
    }
    return render(request, "judging/run_import.html", context, status=status)
