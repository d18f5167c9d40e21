"""Metadata and checklist suggestions of a run: review, accept, reject (admins)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from flaskapp import workspaces
from flaskapp.errors import DomainError
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from judging.models import (
    JudgeRun,
    MetadataSuggestion,
)
from judging.selectors import runs as selectors
from judging.services.suggestions import (
    suggestion_accept,
    suggestion_accept_all,
    suggestion_reject,
)

RUNS_PER_PAGE = 50
CALLS_PER_PAGE = 25
SUGGESTIONS_PER_PAGE = 50


SUGGESTIONS_PER_PAGE = 50


def _suggestion_rows(run: JudgeRun, suggestions) -> list[dict]:
    """Each suggestion next to its instruction's current metadata, skills by name."""
    skills = {s.key: s for s in run.dataset.rubric.skills.all()}
    rows = []
    for s in suggestions:
        rows.append(_suggestion_row(s, skills))
    return rows


def _suggestion_row(s: MetadataSuggestion, skills: dict) -> dict:
    instruction = s.instruction
    current_skills = [link.skill for link in instruction.skill_links.all()]
    suggested_skills = [skills.get(k) or k for k in s.skills or []]
    current_checklist = instruction.checklist or []
    return {
        "s": s,
        "instruction": instruction,
        "current_skills": current_skills,
        "suggested_skills": suggested_skills,
        "skills_differ": [getattr(x, "key", x) for x in suggested_skills]
        != [x.key for x in current_skills],
        "domains_differ": bool(s.domains) and list(s.domains) != instruction.domains,
        "difficulty_differs": s.difficulty is not None
        and s.difficulty != instruction.difficulty,
        "current_checklist": current_checklist,
        "checklist_differs": s.checklist is not None
        and s.checklist != current_checklist,
    }


@login_required
@require_GET
def run_suggestions(request: HttpRequest, run_id: int) -> HttpResponse:
    """A metadata/checklist run's suggestions next to the current metadata.

    Researchers can read them; the workspace's owners (and instance admins) accept
    or reject them one by one or all at once (each decision is checked again by the
    service).
    """
    status = request.GET.get("status", "")
    if status not in MetadataSuggestion.Status.values:
        status = ""
    run, suggestions = selectors.suggestion_list_for_user(
        user=request.user, run_id=run_id, status=status or None
    )
    page = Paginator(suggestions, SUGGESTIONS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "run": run,
        "page": page,
        "rows": _suggestion_rows(run, page),
        "status": status,
        "statuses": MetadataSuggestion.Status.choices,
        "counts": selectors.suggestion_counts(run=run),
        "can_decide": workspaces.role_at_least(
            workspaces.workspace_role(request.user, run.workspace_id), workspaces.OWNER
        ),
    }
    return render_page_or_fragment(
        request, "judging/run_suggestions.html", "suggestion-table", context
    )


def _decide(request: HttpRequest, run_id: int, suggestion_id: int, decide):
    suggestion = selectors.suggestion_get_for_user(
        user=request.user, suggestion_id=suggestion_id
    )
    if suggestion.run_id != run_id:
        raise Http404("No such suggestion in this run.")
    error = ""
    try:
        suggestion = decide(suggestion)
    except DomainError as exc:
        error = str(exc)
    if wants_fragment(request):
        suggestion = selectors.suggestion_get_for_user(
            user=request.user, suggestion_id=suggestion.pk
        )
        skills = {s.key: s for s in suggestion.run.dataset.rubric.skills.all()}
        context = {
            "row": _suggestion_row(suggestion, skills),
            "run": suggestion.run,
            "can_decide": True,
            "row_error": error,
        }
        # 200 even when refused: htmx only swaps 2xx answers, and the row shows why.
        return render_page_or_fragment(
            request, "judging/run_suggestions.html", "suggestion-row", context
        )
    if error:
        messages.error(request, error)
    else:
        messages.success(
            request,
            f"Suggestion for instruction {suggestion.instruction.external_id} "
            f"{suggestion.get_status_display().lower()}.",
        )
    return redirect("judging:run-suggestions", run_id=run_id)


@login_required
@require_POST
def suggestion_accept_view(
    request: HttpRequest, run_id: int, suggestion_id: int
) -> HttpResponse:
    """Apply one suggestion to its instruction (the workspace's owners: the
    service checks; another workspace's suggestion is a 404 first)."""
    return _decide(
        request,
        run_id,
        suggestion_id,
        lambda s: suggestion_accept(suggestion=s, user=request.user),
    )


@login_required
@require_POST
def suggestion_reject_view(
    request: HttpRequest, run_id: int, suggestion_id: int
) -> HttpResponse:
    """Reject one suggestion; the instruction stays as it is (the workspace's
    owners)."""
    return _decide(
        request,
        run_id,
        suggestion_id,
        lambda s: suggestion_reject(suggestion=s, user=request.user),
    )


@login_required
@require_POST
def suggestion_accept_all_view(request: HttpRequest, run_id: int) -> HttpResponse:
    """Accept every proposed suggestion of the run, all or nothing (the workspace's
    owners)."""
    run = selectors.judge_run_get_for_user(user=request.user, run_id=run_id)
    try:
        n = suggestion_accept_all(run=run, user=request.user)
    except DomainError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"Accepted {n} suggestion{'s' if n != 1 else ''}.")
    return redirect("judging:run-suggestions", run_id=run.pk)
