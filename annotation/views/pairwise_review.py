"""The rater's amend page of one pairwise vote: the pair as they saw it, their vote
preselected, the same keys as on the compare page (pairwise.js), and a save that calls
`pairwise_amend`. While the campaign is open (paused included) the vote can change; once
it is closed the page shows the vote read-only and refuses a save.

One URL for the page and, for htmx, its `#amend-panel` fragment. Only the rater's own
assignments: another rater's id is a 404, as for a missing one (the selector's rule).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_http_methods

from annotation.items import PAIRWISE
from annotation.models import Assignment
from annotation.selectors import pairwise as pairwise_selectors
from annotation.services import pairwise as pairwise_services
from annotation.views.common import HTMX_INVALID
from annotation.views.pairwise_rows import pair_context, parse_pair_answer, shown_answer
from flaskapp.errors import DomainError, Problem
from flaskapp.htmx import render_page_or_fragment, wants_fragment

TEMPLATE = "annotation/pairwise_amend.html"


@login_required
@require_http_methods(["GET", "POST"])
def pairwise_amend(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """GET: the rater's submitted vote on a pair, editable while the campaign is not
    closed. POST: save the changed vote (labels as shown: A / B / tie); bad input or a
    closed campaign re-renders the form with the posted choices and the reason (400,
    or 422 for htmx), nothing changed. After a save: the page again (a redirect), or
    for htmx the panel with "saved". A pair still being compared goes to the compare
    page; a skipped one has no vote to amend (404)."""
    assignment = pairwise_selectors.pairwise_assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    campaign = assignment.campaign
    if assignment.status == Assignment.Status.SERVED:
        return redirect("annotation:pairwise-next", campaign_id=campaign.pk)
    preference = pairwise_selectors.pairwise_assignment_preference(
        assignment=assignment
    )
    if preference is None:
        raise Http404("This pair has no submitted vote to amend.")
    label, skill_labels = shown_answer(preference)
    values = {"label": label} | {f"skill-{k}": v for k, v in skill_labels.items()}
    rationale = preference.rationale
    problems: list[Problem] = []
    error = ""
    status = 200
    saved = False
    if request.method == "POST":
        label, skill_labels, rationale, values = parse_pair_answer(
            request.POST, campaign=campaign
        )
        try:
            amended = pairwise_services.pairwise_amend(
                assignment_id=assignment.pk,
                rater=request.user,
                label=label,
                skill_labels=skill_labels,
                rationale=rationale,
            )
        except DomainError as exc:
            problems, error = exc.problems, exc.message
            status = HTMX_INVALID if wants_fragment(request) else 400
        else:
            assignment.updated_at = amended.updated_at
            if not wants_fragment(request):
                messages.success(request, "Your changed vote is saved.")
                return redirect(
                    "annotation:pairwise-amend", assignment_id=assignment.pk
                )
            saved = True
    editable = not PAIRWISE.amend_refusal(assignment=assignment)
    context = {
        "campaign": campaign,
        "assignment": assignment,
        "editable": editable,
        "readonly": not editable,
        "error": error,
        "saved": saved,
        **pair_context(
            assignment=assignment,
            values=values,
            rationale=rationale,
            problems=problems,
        ),
    }
    return render_page_or_fragment(
        request, TEMPLATE, "amend-panel", context, status=status
    )
