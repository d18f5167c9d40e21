"""The landing page: what this user can work on. In analysis because its first-run
checklist reads both apps (data and campaigns, judges and runs, their agreement)."""

from __future__ import annotations

from dataclasses import replace

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from analysis.selectors.checklist import ChecklistStep, first_run_checklist
from annotation import selectors as annotation_selectors
from flaskapp import roles
from flaskapp.workspaces import current_workspace
from judging.endpoints import can_manage_endpoints

ENDPOINT_NOTE = (
    "A new endpoint (base URL and key variable) needs an admin or endpoint rights; "
    "you can use an endpoint already configured, or a built-in baseline."
)


def _with_role_notes(steps: list[ChecklistStep], user) -> list[ChecklistStep]:
    """The steps with what `user` may not do there said up front."""
    if can_manage_endpoints(user):
        return steps
    return [
        replace(step, note=ENDPOINT_NOTE) if step.key == "judge" else step
        for step in steps
    ]


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """A researcher's datasets, recent imports and first-run checklist in the current
    workspace; a rater's rating work."""
    context: dict = {}
    workspace = current_workspace(request)
    if roles.is_researcher(request.user) and workspace is not None:
        context["datasets"] = annotation_selectors.dataset_overview_list_for_user(
            user=request.user, workspace=workspace
        )[:10]
        context["imports"] = annotation_selectors.import_job_list_for_user(
            user=request.user, workspace=workspace
        )[:5]
        steps = _with_role_notes(
            first_run_checklist(workspace_id=workspace.pk), request.user
        )
        context["checklist"] = steps
        context["checklist_done"] = sum(step.done for step in steps)
    # The rater's work: the same rows as /rate/ (one selector, one rule).
    context["rater_rows"] = annotation_selectors.rater_campaign_rows(user=request.user)
    return render(request, "home.html", context)
