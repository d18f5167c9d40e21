"""The agreement dashboard: how far each judge is from the human ceiling, skill by skill.

Function views, thin: read the query string (`analysis.display.parse_choice`, checked
against the dataset's campaigns, runs and slices), call the agreement selectors
(`analysis.selectors.agreement`, which compute and cache), shape and render.
Researchers and admins only: every view calls `roles.require_researcher`, so raters
get a 403 and anonymous users the login page.

Every URL here reads the same query string (documented in `analysis.display`), so a
page, its htmx fragment, its CSV and each chart's SVG show the same numbers: they
come from one `agreement_compute` call with the same arguments.

A large selection whose table is not in the cache (`analysis.services.agreement`)
is computed by a background job: the page and its fragment show a progress state
that polls the same URL with ``job=<id>`` (htmx, every 2 s) and swaps in the table
once it is cached; the CSV, the charts and the drill-down answer 202 with
Retry-After and the job's page until then (they never compute such a table inline).
Too many jobs of the user's: a 429 with Retry-After (the fragment lists it).
"""

from __future__ import annotations

import functools
import re

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET

from analysis import headline
from analysis.display import (
    CHART_KINDS,
    DRILL_LIMIT,
    N_BOOT_MAX,
    BadChoice,
    Choice,
    chart_svg,
    charts_context,
    disagreement_csv_lines,
    model_csv_lines,
    parse_choice,
    slice_dims,
    table_context,
    table_csv_lines,
)
from analysis.exports.encoding import csv_text
from analysis.glossary import agreement_glossary
from analysis.models import Job
from analysis.selectors import agreement as agreement
from analysis.selectors.budget import boot_budget_check
from analysis.selectors.classification import classification_for_agreement
from analysis.services.agreement import agreement_for_request
from annotation import selectors as annotation_selectors
from flaskapp import roles
from flaskapp.errors import DomainError, TooManyRequests
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.params import BadParameter
from flaskapp.throttling import heavy_page, too_many_response
from flaskapp.workspaces import current_workspace
from judging.selectors import drift as drift_selectors

COMPUTE_ERRORS = (DomainError, agreement.AgreementError)
PENDING_RETRY_AFTER = 5  # seconds: a download asked for while its job runs


def _load(request: HttpRequest, dataset_id: int):
    """The dataset, its slices, the parsed choice and (when the choice is valid) the
    computed result; sources not chosen are the defaults (`agreement_defaults`). A
    refusal of the computation becomes one more problem of the choice, or, when
    nothing was chosen, the reason the defaults give nothing (`choice.no_defaults`)."""
    roles.require_researcher(request.user)
    dataset = annotation_selectors.dataset_get_for_user(
        user=request.user, dataset_id=dataset_id
    )
    sources = agreement.agreement_sources_for_user(user=request.user, dataset=dataset)
    slice_values = agreement.agreement_slice_values(dataset=dataset)
    choice = parse_choice(request.GET, sources, slice_values)
    result = None
    if choice.ready:
        budget_check(dataset, choice, request.GET)
    if choice.ready:
        try:
            result = _result_or_job(request, dataset, choice)
        except COMPUTE_ERRORS as exc:
            if choice.explicit:
                choice.errors.append(str(exc))
            else:
                choice.no_defaults = str(exc)
    if result is not None:
        choice.adopt_sources(
            [c.id for c in result.campaigns], [r.id for r in result.runs]
        )
    elif choice.errors:
        # A refused choice keeps the boxes as the person left them: what they
        # ticked, and the defaults where they ticked nothing (issue 37).
        defaults = agreement.agreement_defaults(
            dataset=dataset, exclude_run_id=choice.reference_run_id
        )
        choice.adopt_sources(defaults.campaign_ids, defaults.run_ids)
    return dataset, sources, slice_values, choice, result


def _result_or_job(request: HttpRequest, dataset, choice: Choice):
    """The result (cached, or small enough to compute now), or None with
    ``choice.job`` set to the job computing it (`analysis.services.agreement`); a
    failed job's reason is one more problem of the choice. A full page refused for
    too many jobs raises `TooManyRequests` (`_too_many`: a 429); a fragment lists it
    (htmx swaps only 2xx answers)."""
    try:
        outcome = agreement_for_request(
            user=request.user, dataset=dataset, job_id=choice.job_id,
            **choice.compute_kwargs(),
        )  # fmt: skip
    except TooManyRequests as exc:
        if not wants_fragment(request):
            raise
        choice.errors.append(str(exc))
        return None
    if not isinstance(outcome, Job):
        return outcome
    if outcome.status == Job.Status.FAILED:
        choice.errors.append(f"The computation failed: {outcome.reason}")
    else:
        choice.job = outcome
    return None


def _too_many(view):
    """A view whose `_load` may be refused for too many jobs: a 429 with
    Retry-After (`flaskapp.throttling.too_many_response`), never a 500."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except TooManyRequests as exc:
            return too_many_response(exc.retry_after, str(exc))

    return wrapped


def _pending(job) -> HttpResponse:
    """A download (CSV, chart, drill-down) of a table its job is still computing:
    202, plain text naming the job's page, and Retry-After; the same URL answers
    the file once the job is done (the table is then in the cache)."""
    page = reverse("analysis:job-detail", args=[job.pk])
    response = HttpResponse(
        f"This table is being computed in the background (job {job.pk}, "
        f"{job.get_status_display().lower()}: {page}). Ask again when it is done.",
        status=202,
        content_type="text/plain; charset=utf-8",
    )
    response["Retry-After"] = str(PENDING_RETRY_AFTER)
    response["Location"] = page
    return response


def budget_check(dataset, choice: Choice, params) -> None:
    """Refuse, as one more problem of the choice, a bootstrap asked for above the
    budget of a web request; shrink the default one (`analysis.selectors.budget`).
    The profiles page shares it."""
    kwargs = choice.compute_kwargs()
    try:
        choice.n_boot = boot_budget_check(
            dataset=dataset, n_boot=choice.n_boot,
            explicit=bool(params.get("n_boot", "").strip()),
            campaign_ids=choice.campaign_ids,
            run_ids=choice.run_ids, reference_run_id=kwargs["reference_run_id"],
            retest=choice.retest,
        )  # fmt: skip
    except BadParameter as exc:
        choice.errors.append(f"`n_boot`: {exc.problems[0].message}")


class Pending(Exception):
    """The table is being computed by a job (`_pending` answers it)."""

    def __init__(self, job):
        super().__init__(f"job {job.pk}")
        self.job = job


def _require_result(choice: Choice, result) -> None:
    if choice.job is not None:
        raise Pending(choice.job)
    if result is None:
        raise BadChoice(
            "; ".join(choice.errors)
            or choice.no_defaults
            or "Choose at least one run (`run`) and a campaign (`campaign`), a "
            "reference run (`reference`) or test-retest (`retest=1`)."
        )


def _bad_request(exc: Exception) -> HttpResponse:
    return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _slug(*parts) -> str:
    """A file name from names users chose: only characters safe in a header."""
    text = "-".join(str(p) for p in parts if p not in (None, ""))
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text)[:150] or "agreement"


def _drift(choice: Choice) -> list[str]:
    """The judge drift notices of the runs compared (`judging.selectors.drift`)."""
    return drift_selectors.run_ids_drift_notices(
        [*choice.run_ids, choice.reference_run_id]
    )


@login_required
@require_GET
def agreement_home(request: HttpRequest) -> HttpResponse:
    """Choose a dataset; its dashboard is one click away."""
    roles.require_researcher(request.user)
    datasets = annotation_selectors.dataset_overview_list_for_user(
        user=request.user, workspace=current_workspace(request)
    )
    return render(request, "analysis/agreement_home.html", {"datasets": datasets})


def _job_poll(request: HttpRequest) -> bool:
    """The progress state polling its job (``job`` with htmx): a cached read or a
    job's row, never a computation (`agreement_for_request`), so the heavy-page
    limits leave it alone."""
    return wants_fragment(request) and bool(request.GET.get("job", "").strip())


@login_required
@heavy_page(unless=_job_poll)
@_too_many
@require_GET
def agreement_dashboard(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """The dashboard of one dataset: the choice form, the per-skill table, the charts.

    With htmx, the form, the slice links and the sortable headings ask for the
    `#agreement-results` fragment; the chart row links for `#agreement-charts`, the
    radar view links (`radar=shared|all`) for `#agreement-radars`.
    A choice with a problem lists each problem by parameter (400 for the page).
    """
    dataset, sources, slice_values, choice, result = _load(request, dataset_id)
    context = {
        "dataset": dataset,
        "agreement_url": reverse("analysis:agreement", args=[dataset.pk]),
        "sources": sources,
        "choice": choice,
        "result": result,
        "n_boot_max": N_BOOT_MAX,
        "slices": [
            (dim, label, slice_values.get(dim) or [])
            for dim, label in slice_dims(slice_values).items()
        ],
        "slice_key": f"{choice.slice_dim}:{choice.slice_value}"
        if choice.slice_dim
        else "",
    }
    if result is not None:
        context["categorical"] = classification_for_agreement(
            dataset=dataset, result=result
        )
        context["headlines"] = headline.headlines(result, context["categorical"])
        context["compact"] = headline.compact_table(result)
        context["table"] = table_context(result, choice)
        context["glossary"] = agreement_glossary()
        context.update(charts_context(result, choice))
        context["drift"] = _drift(choice)
    fragments = ("agreement-charts", "agreement-radars")
    target = request.htmx.target
    fragment = target if target in fragments else "agreement-results"
    # A bad choice is a 400 for the page; an htmx fragment answers 200 because htmx
    # swaps only 2xx answers, and the fragment itself lists the problems.
    status = 400 if choice.errors and not wants_fragment(request) else 200
    return render_page_or_fragment(
        request, "analysis/agreement.html", fragment, context, status
    )


@login_required
@heavy_page
@_too_many
@require_GET
def agreement_csv(request: HttpRequest, dataset_id: int, table: str) -> HttpResponse:
    """`table.csv` (every statistic of every row, long form) or `models.csv` (model
    means per row and run), for the same query string as the dashboard."""
    if table not in ("table", "models"):
        raise Http404("No such table.")
    dataset, _, _, choice, result = _load(request, dataset_id)
    try:
        _require_result(choice, result)
    except Pending as pending:
        return _pending(pending.job)
    except BadChoice as exc:
        return _bad_request(exc)
    lines = table_csv_lines(result) if table == "table" else model_csv_lines(result)
    name = _slug("agreement", dataset.name, table, choice.slice_dim, choice.slice_value)
    return _download(csv_text(lines), "text/csv; charset=utf-8", f"{name}.csv")


@login_required
@heavy_page
@_too_many
@require_GET
def agreement_chart(request: HttpRequest, dataset_id: int, kind: str) -> HttpResponse:
    """One chart as an SVG file: `radar.svg?model=..`, `heatmap.svg` and `scatter.svg`
    with `chart=<row key>&judge=<run id>`, `ranks.svg?chart=<row key>`."""
    if kind not in CHART_KINDS:
        raise Http404("No such chart.")
    dataset, _, _, choice, result = _load(request, dataset_id)
    try:
        _require_result(choice, result)
        svg, parts = chart_svg(kind, request.GET, result)
    except Pending as pending:
        return _pending(pending.job)
    except BadChoice as exc:
        return _bad_request(exc)
    name = _slug("agreement", dataset.name, kind, *parts, choice.slice_value)
    response = _download(svg, "image/svg+xml; charset=utf-8", f"{name}.svg")
    # Names in the SVG are escaped; this makes sure it never runs as a page either.
    response["Content-Security-Policy"] = (
        "default-src 'none'; style-src 'unsafe-inline'"
    )
    return response


def _disagreements(request: HttpRequest, dataset_id: int, skill_key: str):
    """The drill-down's data; BadChoice names a bad parameter, Http404 an unknown
    skill."""
    dataset, _, _, choice, result = _load(request, dataset_id)
    _require_result(choice, result)
    row = result.row(f"skill:{skill_key}")
    if row is None:
        raise Http404("No such skill in this table.")
    runs = result.run_labels
    judge = request.GET.get("judge", "") or (runs[0][0] if runs else "")
    if judge not in dict(runs):
        raise BadChoice(f"`judge`: “{judge}” is not one of the compared runs.")
    if not choice.campaign_ids or result.reference.kind != "humans":
        raise BadChoice(
            "`campaign`: the drill-down compares a judge with human raters; choose "
            "a campaign and no reference run or test-retest."
        )
    try:
        items = agreement.agreement_disagreements(
            dataset=dataset,
            campaign_ids=choice.campaign_ids,
            run_id=int(judge),
            skill_key=skill_key,
            slice_dim=choice.slice_dim,
            slice_value=choice.slice_value,
            limit=DRILL_LIMIT,
        )
    except COMPUTE_ERRORS as exc:
        raise BadChoice(str(exc)) from exc
    return dataset, choice, result, row, runs, judge, items


@login_required
@heavy_page
@_too_many
@require_GET
def agreement_skill(
    request: HttpRequest, dataset_id: int, skill_key: str
) -> HttpResponse:
    """Drill-down: the responses where the judge and the humans disagree most on one
    skill, the judge's rationale beside each human's score and rationale (raters
    anonymised). With htmx: the `#agreement-disagreements` fragment only."""
    try:
        dataset, choice, result, row, runs, judge, items = _disagreements(
            request, dataset_id, skill_key
        )
    except Pending as pending:
        return _pending(pending.job)
    except BadChoice as exc:
        if wants_fragment(request):
            # htmx swaps only 2xx answers: say why in the panel instead.
            response = render(
                request,
                "analysis/agreement_skill.html#agreement-disagreements",
                {"problem": str(exc)},
            )
            patch_vary_headers(response, ("HX-Request",))
            return response
        return _bad_request(exc)
    context = {
        "dataset": dataset,
        "choice": choice,
        "result": result,
        "row": row,
        "skill_key": skill_key,
        "runs": runs,
        "judge": judge,
        "judge_label": dict(runs)[judge],
        "items": items,
        "limit": DRILL_LIMIT,
    }
    return render_page_or_fragment(
        request, "analysis/agreement_skill.html", "agreement-disagreements", context
    )


@login_required
@heavy_page
@_too_many
@require_GET
def agreement_skill_csv(
    request: HttpRequest, dataset_id: int, skill_key: str
) -> HttpResponse:
    """The drill-down as CSV: one line per (response, human rater)."""
    try:
        dataset, choice, _, _, _, judge, items = _disagreements(
            request, dataset_id, skill_key
        )
    except Pending as pending:
        return _pending(pending.job)
    except BadChoice as exc:
        return _bad_request(exc)
    lines = disagreement_csv_lines(items, judge)
    name = _slug(
        "disagreements", dataset.name, skill_key, f"run{judge}", choice.slice_value
    )
    return _download(csv_text(lines), "text/csv; charset=utf-8", f"{name}.csv")
