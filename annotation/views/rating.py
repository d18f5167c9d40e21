"""Raters' pages: their campaigns, the next response to score, submit, skip, their
history and the review (amend) of a submitted rating."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import selectors as selectors
from annotation import services
from annotation.models import Assignment, Campaign
from annotation.scales import scale_of
from annotation.views.common import HISTORY_PER_PAGE, HTMX_INVALID
from annotation.views.rows import (
    critique_context,
    help_context,
    parse_active_seconds,
    parse_scores,
    score_value,
    skill_rows,
)
from flaskapp.bounds import ID
from flaskapp.errors import DomainError, Problem
from flaskapp.htmx import render_page_or_fragment, wants_fragment
from flaskapp.params import int_param


@login_required
@require_GET
def rate_home(request: HttpRequest) -> HttpResponse:
    """The rater's campaigns (pointwise and pairwise) with their own progress."""
    rows = selectors.rater_campaign_rows(user=request.user)
    return render(request, "annotation/rate_home.html", {"rows": rows})


def _panel_context(  # noqa: PLR0913 - the rating panel's context pieces, keyword-only
    request: HttpRequest,
    *,
    campaign: Campaign,
    assignment: Assignment | None,
    message: str = "",
    locked_by_others: int = 0,
    values: dict[str, str] | None = None,
    rationales: dict[str, str] | None = None,
    problems: list[Problem] | None = None,
    error: str = "",
    skip_error: str = "",
    skip_reason: str = "",
    saved: Assignment | None = None,
    counts: tuple[int, int] | None = None,
    critique: str = "",
) -> dict:
    """Everything `rate_next.html#rating-panel` shows (a fixed number of queries).

    `counts`: the rater's ``(submitted, skipped)`` when `services.assignment_next`
    handed them over (then the progress costs no query)."""
    context: dict = {
        "campaign": campaign,
        "assignment": assignment,
        "message": message,
        "locked_by_others": locked_by_others,
        "progress": selectors.rater_progress(
            user=request.user, campaign=campaign, counts=counts
        ),
        "error": error,
        "has_problems": bool(problems),
        "skip_error": skip_error,
        "skip_reason": skip_reason,
        "saved": saved,
    }
    problems, critique_ctx = critique_context(
        campaign=campaign, critique=critique, problems=problems
    )
    context.update(critique_ctx)
    if assignment is not None:
        instruction = assignment.response.instruction
        skills = selectors.assignment_skills(assignment=assignment)
        if campaign.critique == Campaign.Critique.ONLY:
            skills = []
        rows, questions, general_errors = skill_rows(
            skills=skills,
            checklist=instruction.checklist,
            values=values,
            rationales=rationales,
            problems=problems,
        )
        context.update(
            instruction=instruction,
            response_text=assignment.response.text,
            # Blind by default: the model name enters the page only when allowed.
            model_name=assignment.response.model_name
            if campaign.show_model_names
            else "",
            reference=instruction.reference_answer if campaign.show_reference else "",
            rows=rows,
            general_questions=questions,
            general_errors=general_errors,
        )
    return context


def _serve_next(request: HttpRequest, campaign: Campaign, **extra) -> dict:
    result = services.assignment_next(campaign=campaign, rater=request.user)
    assignment = None
    if result.assignment is not None:
        assignment = selectors.assignment_get_for_rater(
            user=request.user, assignment_id=result.assignment.pk
        )
    context = _panel_context(
        request,
        campaign=campaign,
        assignment=assignment,
        message=result.message,
        locked_by_others=result.locked_by_others,
        counts=result.counts,
        **extra,
    )
    # No query for a campaign without qualification.
    context["qualification"] = selectors.rater_qualification(
        campaign=campaign, rater=request.user
    )
    context["rater_paused"] = request.user.pk in (campaign.paused_raters or [])
    return context


def _saved_assignment(request: HttpRequest) -> int | None:
    return int_param(request.GET, "saved", None, min_value=1, max_value=ID.high)


@login_required
@require_GET
def rate_next(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The rater's current response (or the next one), ready to score.

    Full page normally; the `#rating-panel` fragment when htmx asks ("Check again").
    """
    campaign = selectors.campaign_get_for_rater(
        user=request.user, campaign_id=campaign_id
    )
    context = _serve_next(request, campaign)
    context["saved_id"] = _saved_assignment(request)
    if context["saved_id"] and campaign.training_phase:
        saved = selectors.assignment_get_for_rater(
            user=request.user, assignment_id=context["saved_id"]
        )
        context["feedback"] = services.gold_feedback(saved)
    if not wants_fragment(request):
        context.update(help_context(selectors.campaign_skills(campaign=campaign)))
    return render_page_or_fragment(
        request, "annotation/rate_next.html", "rating-panel", context
    )


def _after_rating(
    request: HttpRequest, assignment: Assignment, *, saved: bool, feedback=None
) -> HttpResponse:
    """The next response's panel for htmx; a redirect to rate-next otherwise
    (which shows the training-phase `feedback` of a gold item from `?saved=`)."""
    campaign = assignment.campaign
    if not wants_fragment(request):
        url = reverse("annotation:rate-next", args=[campaign.pk])
        return redirect(f"{url}?saved={assignment.pk}" if saved else url)
    context = _serve_next(request, campaign)
    context["saved_id"] = assignment.pk if saved else None
    context["feedback"] = feedback
    response = render(request, "annotation/rate_next.html#rating-panel", context)
    patch_vary_headers(response, ("HX-Request",))
    return response


def _invalid_panel(request: HttpRequest, context: dict) -> HttpResponse:
    # htmx does not swap 4xx answers by default; rater.js swaps 422 in, so the rater
    # sees the errors in place. A plain form post gets the usual 400.
    status = HTMX_INVALID if wants_fragment(request) else 400
    return render_page_or_fragment(
        request, "annotation/rate_next.html", "rating-panel", context, status=status
    )


@login_required
@require_POST
def assignment_submit(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Save the scores of one assignment, then serve the next response.

    Bad input re-renders the form with the posted values and each error next to its
    skill row (400, or 422 for htmx); nothing is saved then.
    """
    assignment = selectors.assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    scores, rationales, raw = parse_scores(request.POST)
    critique = request.POST.get("critique")
    try:
        submitted = services.rating_submit(
            assignment_id=assignment.pk,
            rater=request.user,
            scores=scores,
            rationales=rationales,
            critique=critique,
            active_seconds=parse_active_seconds(request.POST.get("active_seconds")),
        )
    except DomainError as exc:
        context = _panel_context(
            request,
            campaign=assignment.campaign,
            assignment=assignment,
            values=raw,
            rationales=rationales,
            problems=exc.problems,
            error=exc.message,
            critique=critique or "",
        )
        if not wants_fragment(request):
            context.update(
                help_context(selectors.campaign_skills(campaign=assignment.campaign))
            )
        return _invalid_panel(request, context)
    return _after_rating(
        request, assignment, saved=True, feedback=services.gold_feedback(submitted)
    )


@login_required
@require_POST
def assignment_skip(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """Skip the response with a reason; the next one is served."""
    assignment = selectors.assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    reason = request.POST.get("reason", "")
    try:
        services.assignment_skip(
            assignment_id=assignment.pk, rater=request.user, reason=reason
        )
    except DomainError as exc:
        context = _panel_context(
            request,
            campaign=assignment.campaign,
            assignment=assignment,
            skip_error=exc.message,
            skip_reason=reason,
        )
        return _invalid_panel(request, context)
    return _after_rating(request, assignment, saved=False)


@login_required
@require_GET
def rate_history(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The rater's own submitted and skipped responses in a campaign."""
    campaign = selectors.campaign_get_for_rater(
        user=request.user, campaign_id=campaign_id
    )
    assignments = selectors.rater_assignments(user=request.user, campaign=campaign)
    page = Paginator(assignments, HISTORY_PER_PAGE).get_page(request.GET.get("page"))
    for assignment in page.object_list:
        for score in assignment.scores.all():
            # As the rater chose it: the label's name for a categorical criterion.
            score.shown = scale_of(score.skill, anchors=False).name_of(score.score)
    context = {
        "campaign": campaign,
        "page": page,
        "progress": selectors.rater_progress(user=request.user, campaign=campaign),
    }
    return render(request, "annotation/rate_history.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def assignment_review(request: HttpRequest, assignment_id: int) -> HttpResponse:
    """The rater's own submitted scores; editable while the campaign is not closed."""
    assignment = selectors.assignment_get_for_rater(
        user=request.user, assignment_id=assignment_id
    )
    campaign = assignment.campaign
    if assignment.status == Assignment.Status.SERVED:
        # Still being rated: the rating page is where it is scored.
        return redirect("annotation:rate-next", campaign_id=campaign.pk)
    editable = (
        assignment.status == Assignment.Status.SUBMITTED
        and campaign.status != Campaign.Status.CLOSED
    )
    existing = list(assignment.scores.all())
    values = {s.skill.key: score_value(s.skill, s.score) for s in existing}
    rationales = {s.skill.key: s.rationale for s in existing}
    critique = assignment.critique
    problems: list[Problem] = []
    error = ""
    status = 200
    if request.method == "POST":
        scores, posted_rationales, raw = parse_scores(request.POST)
        posted_critique = request.POST.get("critique")
        try:
            services.rating_amend(
                assignment_id=assignment.pk,
                rater=request.user,
                scores=scores,
                rationales=posted_rationales,
                critique=posted_critique,
            )
        except DomainError as exc:
            values, rationales = raw, posted_rationales
            critique = posted_critique or ""
            problems, error, status = exc.problems, exc.message, 400
        else:
            messages.success(request, "Your changes are saved.")
            return redirect("annotation:assignment-review", assignment_id=assignment.pk)
    skills = selectors.assignment_skills(assignment=assignment)
    if (
        assignment.status != Assignment.Status.SUBMITTED
        or campaign.critique == Campaign.Critique.ONLY
    ):
        skills_shown = []
    else:
        skills_shown = skills
    problems, critique_ctx = critique_context(
        campaign=campaign, critique=critique, problems=problems
    )
    if assignment.status != Assignment.Status.SUBMITTED:
        critique_ctx["critique_asked"] = False
    instruction = assignment.response.instruction
    rows, questions, general_errors = skill_rows(
        skills=skills_shown,
        checklist=instruction.checklist,
        values=values,
        rationales=rationales,
        problems=problems,
    )
    context = {
        **critique_ctx,
        **help_context(skills),
        "campaign": campaign,
        "assignment": assignment,
        "instruction": instruction,
        "response_text": assignment.response.text,
        "model_name": assignment.response.model_name
        if campaign.show_model_names
        else "",
        "reference": instruction.reference_answer if campaign.show_reference else "",
        "rows": rows,
        "general_questions": questions,
        "general_errors": general_errors,
        "error": error,
        "editable": editable,
        "readonly": not editable,
    }
    return render(request, "annotation/assignment_review.html", context, status=status)
