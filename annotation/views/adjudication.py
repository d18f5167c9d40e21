"""Reviewers' pages: the campaigns with disagreements to settle, a campaign's
adjudication queue (and, for researchers, its rule), one response with every rater's
scores and rationales (not blind here) and the form that settles a criterion, and the
history of a campaign's human judgments."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.models import Campaign
from annotation.selectors import adjudication as selectors
from annotation.services.adjudication import adjudication_rule_set, adjudication_set
from flaskapp import roles
from flaskapp.errors import DomainError
from flaskapp.params import ascii_int
from flaskapp.workspaces import current_workspace


@login_required
@require_GET
def adjudication_home(request: HttpRequest) -> HttpResponse:
    """Every pointwise campaign with its disputed criteria to settle."""
    rows = selectors.campaigns_for_review(
        user=request.user, workspace=current_workspace(request)
    )
    return render(request, "annotation/adjudication_home.html", {"rows": rows})


def _queue_context(request: HttpRequest, campaign: Campaign, **extra) -> dict:
    state = request.GET.get("state", "open")
    if state not in selectors.STATES:
        state = "open"
    page = ascii_int(request.GET.get("page")) or 1
    return {
        "campaign": campaign,
        "queue": selectors.adjudication_queue(
            campaign=campaign, state=state, page=page
        ),
        "states": selectors.STATES,
        "split_rules": Campaign.SplitRule.choices,
        "can_set_rule": roles.is_researcher(request.user),
        **extra,
    }


@login_required
@require_GET
def adjudication_queue(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """The campaign's queue: responses whose raters disagree beyond the rule, open
    ones first (`state`: open / settled / all; `page`)."""
    campaign = selectors.campaign_get_for_reviewer(
        user=request.user, campaign_id=campaign_id
    )
    return render(
        request,
        "annotation/adjudication_queue.html",
        _queue_context(request, campaign),
    )


@login_required
@require_POST
def adjudication_rule(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Change the campaign's rule (researchers); a refused value re-renders the
    queue with the problems (400), nothing changed."""
    campaign = selectors.campaign_get_for_reviewer(
        user=request.user, campaign_id=campaign_id
    )
    try:
        adjudication_rule_set(
            campaign=campaign,
            spread=request.POST.get("adjudication_range", ""),
            split=request.POST.get("adjudication_split", ""),
            user=request.user,
        )
    except DomainError as exc:
        return render(
            request,
            "annotation/adjudication_queue.html",
            _queue_context(request, campaign, rule_error=exc),
            status=400,
        )
    messages.success(request, "The adjudication rule is saved.")
    return redirect("annotation:adjudication-queue", campaign_id=campaign.pk)


@login_required
@require_http_methods(["GET", "POST"])
def adjudication_item(
    request: HttpRequest, campaign_id: int, response_id: int
) -> HttpResponse:
    """One response: every rater's scores and rationales per criterion, the rule's
    verdict, and a form per criterion to set the adjudicated value with a note."""
    campaign = selectors.campaign_get_for_reviewer(
        user=request.user, campaign_id=campaign_id
    )
    item = selectors.adjudication_item(campaign=campaign, response_id=response_id)
    error, posted = None, {}
    if request.method == "POST":
        posted = {
            "criterion": request.POST.get("criterion", ""),
            "score": request.POST.get("score", ""),
            "note": request.POST.get("note", ""),
        }
        try:
            adjudication_set(
                campaign=campaign,
                response_id=response_id,
                criterion=posted["criterion"],
                score=posted["score"],
                note=posted["note"],
                user=request.user,
            )
        except DomainError as exc:
            error = exc
        else:
            messages.success(request, "Adjudication saved.")
            return redirect(
                "annotation:adjudication-item",
                campaign_id=campaign.pk,
                response_id=response_id,
            )
    return render(
        request,
        "annotation/adjudication_item.html",
        {
            "campaign": campaign,
            "item": item,
            "error": error,
            "posted": posted,
        },
        status=400 if error else 200,
    )


@login_required
@require_GET
def score_history(request: HttpRequest, campaign_id: int) -> HttpResponse:
    """Every recorded change of the campaign's human judgments, newest first."""
    campaign = selectors.campaign_get_for_reviewer(
        user=request.user, campaign_id=campaign_id
    )
    return render(
        request,
        "annotation/score_history.html",
        {
            "campaign": campaign,
            "events": selectors.score_history(campaign=campaign, limit=1000),
        },
    )
