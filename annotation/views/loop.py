"""The rater loop's pages, one set for both item kinds: the next item, submit, skip,
the rater's history and the amend page of a submitted answer.

The route fixes the item kind (``kwargs={"kind": ...}`` in `annotation.urls`: the
``rate/`` paths serve pointwise responses, the ``pairwise/compare/`` paths pairs); the
kind's `LoopPage` (`PAGES`, one per `annotation.items.REGISTRY` entry) says what
differs: which selector finds the campaign and the assignment (a campaign or an
assignment of the other kind is a 404), how a posted answer is read, what the panel
and the history show. The services are the kind's loop in `services.rating`.

Bad input re-renders the panel with the posted values and each error in place: 400
for a plain form post, 422 for htmx (rater.js swaps it in). After a submit or a skip
htmx gets the next item's panel; a plain post is redirected to the next page.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.models import Assignment
from annotation.services import rating as loop_services
from annotation.views.common import HTMX_INVALID, LoopPage
from annotation.views.pairwise import PairwisePage
from annotation.views.rating import PointwisePage
from annotation.views.rows import parse_active_seconds
from flaskapp.errors import DomainError, Problem
from flaskapp.htmx import render_page_or_fragment, wants_fragment

# One page per item kind (`annotation.items.REGISTRY`), by `Campaign.kind`.
PAGES: dict[str, LoopPage] = {
    page.kind.campaign_kind: page for page in (PointwisePage(), PairwisePage())
}


def _page(kind: str) -> LoopPage:
    return PAGES[kind]


def _invalid_panel(request: HttpRequest, page: LoopPage, context: dict) -> HttpResponse:
    # htmx does not swap 4xx answers by default; rater.js swaps 422 in, so the rater
    # sees the errors in place. A plain form post gets the usual 400.
    status = HTMX_INVALID if wants_fragment(request) else 400
    return render_page_or_fragment(
        request, page.template, page.panel, context | {"item_page": page}, status=status
    )


def _after_answer(
    request: HttpRequest,
    page: LoopPage,
    assignment: Assignment,
    *,
    saved: Assignment | None,
) -> HttpResponse:
    """The next item's panel for htmx; a redirect to the next page otherwise."""
    campaign = assignment.campaign
    if not wants_fragment(request):
        url = reverse(page.next_url, args=[campaign.pk])
        return redirect(f"{url}?saved={page.saved_query(saved)}" if saved else url)
    context = page.served(request, campaign, saved=saved) | {"item_page": page}
    response = render(request, f"{page.template}#{page.panel}", context)
    patch_vary_headers(response, ("HX-Request",))
    return response


def _add_page_context(context: dict, page, campaign) -> None:
    """The page's own context under the panel's: what the panel computed for its
    item (e.g. the keyboard help of the item's criteria) wins over the campaign's."""
    for key, value in page.page_context(campaign).items():
        context.setdefault(key, value)


@login_required
@require_GET
def item_next(request: HttpRequest, campaign_id: int, kind: str) -> HttpResponse:
    """The rater's current item (or the next one), ready to answer. Full page
    normally; the panel fragment when htmx asks ("Check again")."""
    page = _page(kind)
    campaign = page.campaign(request, campaign_id)
    context = page.next_context(request, campaign)
    context["item_page"] = page
    if not wants_fragment(request):
        _add_page_context(context, page, campaign)
    return render_page_or_fragment(request, page.template, page.panel, context)


@login_required
@require_POST
def item_submit(request: HttpRequest, assignment_id: int, kind: str) -> HttpResponse:
    """Save the rater's answer to one assignment, then serve the next item. Bad
    input re-renders the form with the posted values and each error next to its
    field (400, or 422 for htmx); nothing is saved then."""
    page = _page(kind)
    assignment = page.assignment(request, assignment_id)
    campaign = assignment.campaign
    answer, posted = page.parse(request.POST, campaign=campaign)
    try:
        submitted = loop_services.item_submit(
            kind=page.kind,
            assignment_id=assignment.pk,
            rater=request.user,
            answer=answer,
            active_seconds=parse_active_seconds(request.POST.get("active_seconds")),
        )
    except DomainError as exc:
        context = page.panel_context(
            request,
            campaign=campaign,
            assignment=assignment,
            problems=exc.problems,
            error=exc.message,
            **posted,
        )
        if not wants_fragment(request):
            _add_page_context(context, page, campaign)
        return _invalid_panel(request, page, context)
    return _after_answer(request, page, assignment, saved=submitted)


@login_required
@require_POST
def item_skip(request: HttpRequest, assignment_id: int, kind: str) -> HttpResponse:
    """Skip the item with a reason; the next one is served."""
    page = _page(kind)
    assignment = page.assignment(request, assignment_id)
    reason = request.POST.get("reason", "")
    try:
        loop_services.item_skip(
            kind=page.kind,
            assignment_id=assignment.pk,
            rater=request.user,
            reason=reason,
        )
    except DomainError as exc:
        context = page.panel_context(
            request,
            campaign=assignment.campaign,
            assignment=assignment,
            skip_error=exc.message,
            skip_reason=reason,
        )
        return _invalid_panel(request, page, context)
    return _after_answer(request, page, assignment, saved=None)


@login_required
@require_GET
def item_history(request: HttpRequest, campaign_id: int, kind: str) -> HttpResponse:
    """The rater's own submitted and skipped items in a campaign, with their answers
    as they gave them. Never another rater's."""
    page = _page(kind)
    campaign = page.campaign(request, campaign_id)
    context = page.history_context(request, campaign) | {"item_page": page}
    return render(request, page.history_template, context)


@login_required
@require_http_methods(["GET", "POST"])
def item_amend(request: HttpRequest, assignment_id: int, kind: str) -> HttpResponse:
    """GET: the rater's own submitted answer, editable while the kind allows it.
    POST: save the changed answer; bad input or a refusal re-renders the form with
    the posted values and the reason (400, or 422 for htmx where the page has a
    fragment), nothing changed. After a save: the page again (a redirect), or for
    htmx the panel with "saved". An item still being answered goes to the next-item
    page."""
    page = _page(kind)
    assignment = page.assignment(request, assignment_id)
    if assignment.status == Assignment.Status.SERVED:
        return redirect(page.next_url, campaign_id=assignment.campaign_id)
    shown = page.stored(assignment)
    problems: list[Problem] = []
    error = ""
    status = 200
    saved = False
    fragment = page.amend_panel is not None and wants_fragment(request)
    if request.method == "POST":
        answer, shown = page.parse(request.POST, campaign=assignment.campaign)
        try:
            amended = loop_services.item_amend(
                kind=page.kind,
                assignment_id=assignment.pk,
                rater=request.user,
                answer=answer,
            )
        except DomainError as exc:
            problems, error = exc.problems, exc.message
            status = HTMX_INVALID if fragment else 400
        else:
            assignment.updated_at = amended.updated_at
            if not fragment:
                messages.success(request, page.amended_message)
                return redirect(page.amend_url, assignment_id=assignment.pk)
            saved = True
    context = page.amend_context(
        assignment, problems=problems, error=error, saved=saved, **shown
    ) | {"item_page": page}
    if page.amend_panel is None:
        return render(request, page.amend_template, context, status=status)
    return render_page_or_fragment(
        request, page.amend_template, page.amend_panel, context, status=status
    )
