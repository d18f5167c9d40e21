"""Raters' pages of pointwise campaigns: their campaigns, and the pointwise
`LoopPage` of the rater loop's pages (next, submit, skip, history and the review
(amend) of a submitted rating: `annotation.views.loop`)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import selectors as selectors
from annotation.items import POINTWISE
from annotation.models import Assignment, Campaign
from annotation.scales import scale_of
from annotation.services.gold import gold_feedback
from annotation.services.rating import assignment_next
from annotation.views.common import HISTORY_PER_PAGE, LoopPage
from annotation.views.rows import (
    critique_context,
    help_context,
    parse_scores,
    score_value,
    skill_rows,
)
from flaskapp.bounds import ID
from flaskapp.errors import Problem
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
    """Everything `item_next.html#item-panel` shows of a response (a fixed number of queries).

    `counts`: the rater's ``(submitted, skipped)`` when `assignment_next`
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
        # The keyboard help names this item's criteria, not every one of the
        # campaign's (it is part of the panel, so it changes with the item).
        context.update(help_context(skills))
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
    result = assignment_next(campaign=campaign, rater=request.user)
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


class PointwisePage(LoopPage):
    """The rater loop's pages of responses to score (`annotation.views.loop`)."""

    kind = POINTWISE
    partial = "annotation/partials/rate_item.html"
    title = "Rate"
    page_class = "rate-page"
    styles = ("css/rating.css",)
    scripts = ("js/rater.js", "js/rating.js")
    home_url = "annotation:rate-home"
    home_label = "My campaigns"
    history_url = "annotation:rate-history"
    history_label = "My ratings"
    panel_id = "rating-panel"
    panel_class = "rating-panel"
    guidelines_auto_open = True
    next_label = "Back to rating"  # the history page's way back
    next_url = "annotation:rate-next"
    amend_url = "annotation:assignment-review"
    amend_title = "Your rating"
    amended_message = "Your changes are saved."

    def campaign(self, request: HttpRequest, campaign_id: int) -> Campaign:
        return selectors.campaign_get_for_rater(
            user=request.user, campaign_id=campaign_id
        )

    def assignment(self, request: HttpRequest, assignment_id: int) -> Assignment:
        return selectors.assignment_get_for_rater(
            user=request.user, assignment_id=assignment_id
        )

    def next_context(self, request: HttpRequest, campaign: Campaign) -> dict:
        context = _serve_next(request, campaign)
        context["saved_id"] = _saved_assignment(request)
        if context["saved_id"] and campaign.training_phase:
            saved = selectors.assignment_get_for_rater(
                user=request.user, assignment_id=context["saved_id"]
            )
            # The expected answers of a gold item, after the redirect of a submit.
            context["feedback"] = gold_feedback(saved)
        return context

    def served(
        self, request: HttpRequest, campaign: Campaign, *, saved: Assignment | None
    ) -> dict:
        context = _serve_next(request, campaign)
        context["saved_id"] = saved.pk if saved else None
        context["feedback"] = gold_feedback(saved) if saved else None
        return context

    def saved_query(self, assignment: Assignment) -> str:
        return str(assignment.pk)

    def parse(
        self, post: QueryDict, *, campaign: Campaign
    ) -> tuple[dict[str, Any], dict]:
        scores, rationales, raw = parse_scores(post)
        critique = post.get("critique")
        answer = {"scores": scores, "rationales": rationales, "critique": critique}
        return answer, {
            "values": raw,
            "rationales": rationales,
            "critique": critique or "",
        }

    def panel_context(
        self,
        request: HttpRequest,
        *,
        campaign: Campaign,
        assignment: Assignment,
        **state,
    ) -> dict:
        return _panel_context(
            request, campaign=campaign, assignment=assignment, **state
        )

    def page_context(self, campaign: Campaign) -> dict:
        return help_context(selectors.campaign_skills(campaign=campaign))

    def stored(self, assignment: Assignment) -> dict:
        existing = list(assignment.scores.all())
        return {
            "values": {s.skill.key: score_value(s.skill, s.score) for s in existing},
            "rationales": {s.skill.key: s.rationale for s in existing},
            "critique": assignment.critique,
        }

    def amend_context(
        self,
        assignment: Assignment,
        *,
        problems: list,
        error: str,
        saved: bool,
        values: dict[str, str],
        rationales: dict[str, str],
        critique: str,
    ) -> dict:
        # The rater's own submitted scores, editable while the campaign is not
        # closed; a skipped response shows no form.
        campaign = assignment.campaign
        submitted = assignment.status == Assignment.Status.SUBMITTED
        editable = submitted and campaign.status != Campaign.Status.CLOSED
        skills = selectors.assignment_skills(assignment=assignment)
        if not submitted or campaign.critique == Campaign.Critique.ONLY:
            skills_shown = []
        else:
            skills_shown = skills
        problems, critique_ctx = critique_context(
            campaign=campaign, critique=critique, problems=problems
        )
        if not submitted:
            critique_ctx["critique_asked"] = False
        instruction = assignment.response.instruction
        rows, questions, general_errors = skill_rows(
            skills=skills_shown,
            checklist=instruction.checklist,
            values=values,
            rationales=rationales,
            problems=problems,
        )
        return {
            **critique_ctx,
            **help_context(skills),
            "campaign": campaign,
            "assignment": assignment,
            "instruction": instruction,
            "response_text": assignment.response.text,
            "model_name": assignment.response.model_name
            if campaign.show_model_names
            else "",
            "reference": instruction.reference_answer
            if campaign.show_reference
            else "",
            "rows": rows,
            "general_questions": questions,
            "general_errors": general_errors,
            "error": error,
            "editable": editable,
            "readonly": not editable,
        }

    def history_context(self, request: HttpRequest, campaign: Campaign) -> dict:
        assignments = selectors.rater_assignments(user=request.user, campaign=campaign)
        page = Paginator(assignments, HISTORY_PER_PAGE).get_page(
            request.GET.get("page")
        )
        for assignment in page.object_list:
            for score in assignment.scores.all():
                # As the rater chose it: the label's name for a categorical criterion.
                score.shown = scale_of(score.skill, anchors=False).name_of(score.score)
        return {
            "campaign": campaign,
            "page": page,
            "progress": selectors.rater_progress(user=request.user, campaign=campaign),
        }
