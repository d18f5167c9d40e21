"""HTML pages of the annotation app: datasets, instructions, rubrics and imports.

Function views, thin: parse the request, call one selector or service, render. A page
that htmx updates in place is served by one URL: the whole page normally, its fragment
(a `{% partialdef %}`) when htmx asks.
"""

from __future__ import annotations

import json
import re

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors as selectors
from annotation.forms import FORMAT_HELP, ImportForm, RubricImportForm, TaxonomyForm
from annotation.models import DATASET_FORMAT_CHOICES, ImportJob
from annotation.selectors.datasets import (
    dataset_work,
    import_job_rubric,
    import_problem_groups,
)
from annotation.selectors.rubric_files import (
    NEW_RUBRIC_TEMPLATE,
    criteria_file_data,
    rubric_file_yaml,
)
from annotation.services import rubrics as rubric_services
from annotation.services import taxonomy as taxonomy_services
from annotation.services.import_jobs import import_job_confirm, import_job_create
from annotation.services.imports import import_check_sizes
from annotation.templatetags.flask_ui import humanise_key, preview_cell
from annotation.views.rows import skill_rows
from flaskapp.errors import DomainError
from flaskapp.htmx import HTMX_STOP_POLLING, render_page_or_fragment, wants_fragment
from flaskapp.optional import HUB
from flaskapp.params import ascii_int
from flaskapp.workspaces import RESEARCHER, current_workspace, require_workspace_role

INSTRUCTIONS_PER_PAGE = 50
IMPORTS_SHOWN = 100


# --- Datasets and instructions -----------------------------------------------------------


@login_required
@require_GET
def dataset_list(request: HttpRequest) -> HttpResponse:
    datasets = selectors.dataset_overview_list_for_user(
        user=request.user, workspace=current_workspace(request)
    )
    return render(request, "annotation/dataset_list.html", {"datasets": datasets})


@login_required
@require_GET
def dataset_detail(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """A dataset's counts and its instruction browser (filtered, paginated).

    The instruction page (`analysis:instruction-detail`, which shows scores of both
    apps) is linked with the same query string, for its previous / next links.

    With htmx, only the `#instruction-results` fragment: the filter form and the page
    links ask for it, and the counts around it do not change.
    """
    dataset = selectors.dataset_get_for_user(user=request.user, dataset_id=dataset_id)
    filters = selectors.instruction_filters_parse(request.GET, dataset)
    instructions = selectors.instruction_list(dataset=dataset, **filters)
    page = Paginator(instructions, INSTRUCTIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "dataset": dataset,
        "page": page,
        "filters": filters,
        "params": request.GET,
        "is_filtered": bool(filters),
        # The Hugging Face download needs pyarrow, an optional package.
        "hub_export": HUB.available(),
    }
    if not wants_fragment(request):
        context["stats"] = selectors.dataset_stats(dataset=dataset)
        context["work"] = dataset_work(dataset=dataset)
    return render_page_or_fragment(
        request, "annotation/dataset_detail.html", "instruction-results", context
    )


@login_required
@require_http_methods(["GET", "POST"])
def dataset_taxonomy(request: HttpRequest, dataset_id: int) -> HttpResponse:
    """The dataset's taxonomy as JSON, and its edit (researchers and owners). A
    refused edit shows each problem with its field (400) and changes nothing; a
    saved one returns to the dataset page."""
    dataset = selectors.dataset_get_for_user(user=request.user, dataset_id=dataset_id)
    problems: list = []
    if request.method == "POST":
        form = TaxonomyForm(request.POST)
        if form.is_valid():
            try:
                taxonomy_services.dataset_taxonomy_update(
                    user=request.user,
                    dataset_id=dataset.pk,
                    taxonomy=form.cleaned_data["taxonomy"],
                )
            except DomainError as exc:
                # Each problem once (the message repeats the first), shown at the field.
                problems = [str(p) for p in exc.problems] or [exc.message]
            else:
                messages.success(request, "The taxonomy was saved.")
                return redirect("annotation:dataset-detail", dataset_id=dataset.pk)
    else:
        current = dataset.taxonomy
        form = TaxonomyForm(
            initial={
                "taxonomy": ""
                if current is None
                else json.dumps(current, indent=2, ensure_ascii=False)
            }
        )
    context = {
        "dataset": dataset,
        "form": form,
        "problems": problems,
        "taxonomy": dataset.declared_taxonomy,
    }
    status = 400 if request.method == "POST" else 200
    return render(request, "annotation/dataset_taxonomy.html", context, status=status)


# --- Rubrics -----------------------------------------------------------------------------


@login_required
@require_GET
def rubric_list(request: HttpRequest) -> HttpResponse:
    rubrics = selectors.rubric_list_for_user(
        user=request.user, workspace=current_workspace(request)
    )
    return render(request, "annotation/rubric_list.html", {"rubrics": rubrics})


@login_required
@require_GET
def rubric_detail(request: HttpRequest, rubric_id: int) -> HttpResponse:
    """A rubric version's criteria, grouped by the rubric's groups (FLASK's: its
    primary abilities), with their scale or labels and anchors."""
    rubric = selectors.rubric_get_for_user(user=request.user, rubric_id=rubric_id)
    skills = list(rubric.skills.all())
    groups = [
        (group["name"], [s for s in skills if s.group == group["key"]])
        for group in rubric.groups
    ]
    known = {group["key"] for group in rubric.groups}
    groups.append(("Other", [s for s in skills if s.group not in known]))
    context = {
        "rubric": rubric,
        "abilities": [(label, group) for label, group in groups if group],
        "flask_compatible": all(s.flask_compatible for s in skills),
        "import_form": RubricImportForm(initial={"name": rubric.name}),
    }
    return render(request, "annotation/rubric_detail.html", context)


@login_required
@require_GET
def rubric_file(request: HttpRequest, rubric_id: int) -> HttpResponse:
    """The rubric version as our rubric file (YAML), to download."""
    rubric = selectors.rubric_get_for_user(user=request.user, rubric_id=rubric_id)
    response = HttpResponse(
        rubric_file_yaml(rubric), content_type="application/yaml; charset=utf-8"
    )
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{rubric.name}-v{rubric.version}")
    response["Content-Disposition"] = f'attachment; filename="{name}.yaml"'
    return response


def _rubric_editor_target(request: HttpRequest, rubric_id: int | None):
    """(rubric or None, workspace) of the editor, after the researcher check: the
    rubric's workspace for an edit, the current one for a new rubric."""
    rubric = None
    workspace = current_workspace(request)
    if rubric_id is not None:
        rubric = selectors.rubric_get_for_user(user=request.user, rubric_id=rubric_id)
        if rubric.workspace_id is not None:
            workspace = rubric.workspace
    _require_researcher_in(request, workspace)
    return rubric, workspace


def _rubric_preview_context(rubric, text: str) -> dict:
    """The editor's preview of `text` (`services.rubrics.rubric_check`, the one
    validator; nothing written): either its problems, each with its line, or the
    rating form raters will see (`skill_rows`, the rater loop's rows) and the
    rubric as our file's mapping (`rubric_model`, JSON for the form builder)."""
    try:
        draft = rubric_services.rubric_check(
            name=rubric.name if rubric else None,
            data=text.encode("utf-8", errors="replace"),
            file="the text",
        )
    except DomainError as exc:
        problems = exc.problems or [exc.message]
        lines = sorted({p.line for p in problems if getattr(p, "line", None)})
        return {
            "preview_problems": problems,
            "problem_lines": " ".join(str(n) for n in lines),
            "rubric_model": "",
            "preview_rows": [],
        }
    skills = draft.unsaved_skills()
    model = {
        "name": draft.name,
        "description": draft.given_description,
        "groups": [{"key": g["key"], "name": g["name"]} for g in draft.groups],
        "criteria": criteria_file_data(skills),
    }
    rows, _, _ = skill_rows(skills=skills, checklist=None)
    return {
        "preview_problems": [],
        "problem_lines": "",
        "rubric_model": json.dumps(model, ensure_ascii=False),
        "preview_rows": rows,
    }


@login_required
@require_http_methods(["GET", "POST"])
def rubric_edit(request: HttpRequest, rubric_id: int | None = None) -> HttpResponse:
    """Write a rubric in our file's YAML (researchers): a new rubric (no `rubric_id`, from
    an example), or the next version of one (its text to start from; the name stays).
    Saving is an import of the text (`services.rubrics.rubric_import`): every problem is
    listed with its line and field, and nothing is written. Researchers of the
    workspace (the rubric's, or the current one for a new rubric). The page shows
    the preview of the text (`rubric_preview`) and, with JavaScript, a form that
    builds the same text (static/js/rubric_builder.js)."""
    rubric, workspace = _rubric_editor_target(request, rubric_id)
    problems: list = []
    text = rubric_file_yaml(rubric) if rubric else NEW_RUBRIC_TEMPLATE
    if request.method == "POST":
        text = request.POST.get("text", "")
        try:
            saved = rubric_services.rubric_import(
                name=rubric.name if rubric else None,
                data=text.encode("utf-8", errors="replace"),
                file="the text below",
                workspace=workspace,
            )
        except DomainError as exc:
            problems = exc.problems or [exc.message]
        else:
            messages.success(request, f"Saved {saved}.")
            return redirect("annotation:rubric-detail", rubric_id=saved.pk)
    context = {"rubric": rubric, "text": text, "problems": problems}
    context |= _rubric_preview_context(rubric, text)
    status = 400 if problems else 200
    return render(request, "annotation/rubric_edit.html", context, status=status)


@login_required
@require_POST
def rubric_preview(request: HttpRequest) -> HttpResponse:
    """The editor's live preview (htmx): the posted `text` checked as the save
    checks it, answered with the `#rubric-preview` fragment: the problems with
    their lines, or the raters' rating form and the rubric for the form builder.
    `rubric_id` (optional): the rubric being edited (its name stays). Always 200:
    a bad text is the answer, not an error; nothing is written. Researchers of the
    workspace, as for the editor."""
    raw_id = request.POST.get("rubric_id", "")
    rubric_id = ascii_int(raw_id) if raw_id else None
    if raw_id and rubric_id is None:
        return HttpResponse("`rubric_id` must be a rubric's id", status=400)
    rubric, _ = _rubric_editor_target(request, rubric_id)
    context = {"rubric": rubric} | _rubric_preview_context(
        rubric, request.POST.get("text", "")
    )
    return render(request, "annotation/rubric_edit.html#rubric-preview", context)


@login_required
@require_http_methods(["GET", "POST"])
def rubric_import(request: HttpRequest) -> HttpResponse:
    """Upload a rubric file (ours, or FLASK's `skillset_description.json`) as a new
    rubric version (researchers of the current workspace)."""
    workspace = current_workspace(request)
    _require_researcher_in(request, workspace)
    problems: list = []
    if request.method == "POST":
        form = RubricImportForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                rubric = rubric_services.rubric_import(
                    name=form.cleaned_data["name"] or None,
                    data=upload.read(),
                    file=upload.name,
                    workspace=workspace,
                )
            except DomainError as exc:
                problems = exc.problems or [exc.message]
            else:
                messages.success(request, f"Imported {rubric}.")
                return redirect("annotation:rubric-detail", rubric_id=rubric.pk)
    else:
        form = RubricImportForm(
            initial={"name": request.GET.get("name") or "FLASK official"}
        )
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "annotation/rubric_import.html",
        {"form": form, "problems": problems},
        status=status,
    )


# --- Imports -----------------------------------------------------------------------------


@login_required
@require_GET
def import_list(request: HttpRequest) -> HttpResponse:
    jobs = selectors.import_job_list_for_user(
        user=request.user, workspace=current_workspace(request)
    )[:IMPORTS_SHOWN]
    return render(request, "annotation/import_list.html", {"jobs": jobs})


@login_required
@require_http_methods(["GET", "POST"])
def import_new(request: HttpRequest) -> HttpResponse:
    """Upload files for an import. The service validates them (a dry run) into a job.

    A file over `IMPORT_MAX_BYTES` is refused on the form, before it is read.
    Researchers of the current workspace, which the import writes into.
    """
    workspace = current_workspace(request)
    _require_researcher_in(request, workspace)
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES, workspace=workspace)
        if form.is_valid():
            uploads = form.cleaned_data["files"]
            try:
                # Refuse oversized files before reading them into memory.
                import_check_sizes(sizes=[(f.name, f.size) for f in uploads])
            except DomainError as exc:
                for problem in exc.problems:
                    form.add_error("files", str(problem))
            else:
                job = import_job_create(
                    dataset_name=form.cleaned_data["dataset_name"],
                    fmt=form.cleaned_data["format"],
                    uploads=[(f.name, f.read()) for f in uploads],
                    options=form.import_options(),
                    user=request.user,
                    workspace=workspace,
                )
                return redirect("annotation:import-detail", job_id=job.pk)
        status = 400
    else:
        initial = {"dataset_name": request.GET.get("dataset", "")}
        form = ImportForm(initial=initial, workspace=workspace)
        status = 200
    context = {
        "form": form,
        "dataset_names": selectors.dataset_name_list(workspace=workspace),
        "format_help": [
            (value, label, FORMAT_HELP[value])
            for value, label in DATASET_FORMAT_CHOICES
        ],
    }
    return render(request, "annotation/import_new.html", context, status=status)


def _require_researcher_in(request: HttpRequest, workspace) -> None:
    """403 unless the user is a researcher (or owner) of `workspace`."""
    if workspace is None:
        raise PermissionDenied("This needs the researcher role in a workspace.")
    require_workspace_role(request.user, workspace.pk, RESEARCHER)


def _preview_columns(preview: list[dict]) -> list[str]:
    columns: list[str] = []
    for row in preview:
        columns.extend(key for key in row if key not in columns)
    return columns


def _option_rows(job: ImportJob) -> list[tuple[str, str, str]]:
    """The import's options as (label, value, link) for the page: the rubric by its
    name and version with a link, not "rubric_id 2" (issue 37, defect 24); other
    options by their humanised key."""
    rows = []
    for key, value in (job.options or {}).items():
        if key == "rubric_id":
            rubric = import_job_rubric(job=job)
            if rubric is not None:
                url = reverse("annotation:rubric-detail", args=[rubric.pk])
                rows.append(("Rubric", str(rubric), url))
                continue
            rows.append(("Rubric", f"#{value} (no longer exists)", ""))
            continue
        rows.append((humanise_key(key), preview_cell(value), ""))
    return rows


@login_required
@require_GET
def import_detail(request: HttpRequest, job_id: int) -> HttpResponse:
    """An import's report. While it runs, htmx polls `#import-progress` every 2s.

    The fragment answers with status 286 once the job is no longer queued or running,
    which tells htmx to stop polling.
    """
    job = selectors.import_job_get_for_user(user=request.user, job_id=job_id)
    in_progress = job.status in {ImportJob.Status.QUEUED, ImportJob.Status.RUNNING}
    context = {
        "job": job,
        "in_progress": in_progress,
        "preview_columns": _preview_columns(job.preview),
        "problems": import_problem_groups(job.errors or []),
        "option_rows": _option_rows(job),
    }
    status = HTMX_STOP_POLLING if wants_fragment(request) and not in_progress else 200
    return render_page_or_fragment(
        request,
        "annotation/import_detail.html",
        "import-progress",
        context,
        status=status,
    )


@login_required
@require_POST
def import_confirm(request: HttpRequest, job_id: int) -> HttpResponse:
    """Start a validated import (small ones finish before the redirect)."""
    job = selectors.import_job_get_for_user(user=request.user, job_id=job_id)
    try:
        job = import_job_confirm(job=job)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        if job.status == ImportJob.Status.SUCCEEDED:
            messages.success(request, f"Imported into {job.dataset_name}.")
    return redirect("annotation:import-detail", job_id=job.pk)
