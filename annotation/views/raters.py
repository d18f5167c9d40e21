"""Rater management (admins and researchers): the raters with their campaigns and
progress, creating a rater, resetting a rater's password, adding one to a campaign.

A generated password is shown once, in the answer to the POST that made it (never
stored in the session or a message, and the answer is marked not to be cached).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_GET, require_POST

from annotation.selectors import raters as selectors
from annotation.services.campaigns import campaign_add_rater
from annotation.services.raters import rater_create, rater_password_reset
from flaskapp.errors import DomainError, Problem
from flaskapp.params import ascii_int
from flaskapp.workspaces import current_workspace


def _page(request: HttpRequest, *, status: int = 200, **extra) -> HttpResponse:
    context = {
        "raters": selectors.rater_overview_list_for_user(
            user=request.user, workspace=current_workspace(request)
        ),
        "campaigns": selectors.campaign_choice_list_for_user(
            user=request.user, workspace=current_workspace(request)
        ),
        **extra,
    }
    return render(request, "annotation/rater_list.html", context, status=status)


@login_required
@require_GET
def rater_list(request: HttpRequest) -> HttpResponse:
    """Every rater with their campaigns and progress, and the forms to manage them."""
    return _page(request)


@sensitive_post_parameters("password")
@never_cache
@login_required
@require_POST
def rater_new(request: HttpRequest) -> HttpResponse:
    """Create a rater (`rater_create`): the page again, with the generated password
    shown once, or with the problems (400) naming the field."""
    username = request.POST.get("username", "")
    try:
        rater, password = rater_create(
            user=request.user,
            username=username,
            password=request.POST.get("password", ""),
            workspace=current_workspace(request),
        )
    except DomainError as exc:
        return _page(
            request, status=400, create_problems=exc.problems, typed_username=username
        )
    return _page(request, created=rater, shown_password=password)


@sensitive_post_parameters("password")
@never_cache
@login_required
@require_POST
def rater_password(request: HttpRequest, rater_id: int) -> HttpResponse:
    """Reset a rater's password (`rater_password_reset`): the page with the new
    password shown once, or the problem (400)."""
    rater = selectors.rater_get_for_user(user=request.user, rater_id=rater_id)
    try:
        password = rater_password_reset(
            user=request.user, rater=rater, password=request.POST.get("password", "")
        )
    except DomainError as exc:
        return _page(
            request, status=400, rater_problems=exc.problems, problem_rater=rater
        )
    return _page(request, reset=rater, shown_password=password)


@login_required
@require_POST
def rater_campaign_add(request: HttpRequest, rater_id: int) -> HttpResponse:
    """Add a rater to the chosen campaign (`campaign_add_rater`); back to the list."""
    rater = selectors.rater_get_for_user(user=request.user, rater_id=rater_id)
    campaign = selectors.campaign_choice_get(
        user=request.user,
        campaign_id=ascii_int(request.POST.get("campaign")),
        workspace=current_workspace(request),
    )
    if campaign is None:
        problem = Problem("choose a campaign", field="campaign")
        return _page(request, status=400, rater_problems=[problem], problem_rater=rater)
    try:
        added = campaign_add_rater(campaign=campaign, rater=rater, user=request.user)
    except DomainError as exc:
        return _page(
            request, status=400, rater_problems=exc.problems, problem_rater=rater
        )
    if added:
        messages.success(request, f"{rater.username} added to “{campaign.name}”.")
    else:
        messages.info(request, f"{rater.username} already rates “{campaign.name}”.")
    return redirect("annotation:rater-list")
