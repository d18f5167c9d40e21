"""Helpers and constants shared by the campaign pages and the rating UI."""

from __future__ import annotations

from typing import Any, ClassVar

from django.contrib.auth import get_user_model
from django.http import HttpRequest, QueryDict

from annotation.items import ItemKind
from annotation.models import Assignment, Campaign
from flaskapp import roles, workspaces

# An htmx form answer that carries validation errors: rater.js swaps it in anyway.
HTMX_INVALID = 422
HISTORY_PER_PAGE = 50
LOCKS_SHOWN = 50
METACOGNITION = "metacognition"


def rater_users(*, user, workspace_id: int | None = None):
    """The users with the rater role, for the campaign pages' rater lists: members of
    `workspace_id` (a campaign's or a chosen dataset's workspace), else of the
    workspaces where `user` is a researcher (every rater for an instance admin); a
    campaign's raters must belong to its workspace, and another workspace's people
    are not shown. Not the synthetic accounts (their ratings are generated, never
    asked of a person)."""
    raters = (
        get_user_model()
        .objects.filter(groups__name=roles.RATER, is_active=True)
        .exclude(groups__name=roles.SYNTHETIC)
        .order_by("username")
        .distinct()
    )
    if workspace_id is not None:
        ids = [workspace_id]
    else:
        ids = workspaces.workspace_ids_with_role(user, workspaces.RESEARCHER)
    if ids is None:
        return raters
    return raters.filter(workspace_memberships__workspace_id__in=ids)


class LoopPage:
    """What the rater loop's pages (`annotation.views.loop`) need from one item
    kind: a subclass per kind, next to that kind's other pages."""

    # The templates read the page's attributes (`item_page`); none is to be called.
    do_not_call_in_templates = True
    kind: ClassVar[ItemKind]
    template: ClassVar[str] = "annotation/item_next.html"  # the next-item page
    panel: ClassVar[str] = "item-panel"  # its fragment, swapped by htmx
    # The kind's parts of that page: a file of partials #progress, #notices, #item
    # (the form of a served item) and #empty (nothing served, and why).
    partial: ClassVar[str]
    # The page's words and assets.
    title: ClassVar[str]
    page_class: ClassVar[str]
    styles: ClassVar[tuple[str, ...]]
    scripts: ClassVar[tuple[str, ...]]
    home_url: ClassVar[str]
    home_label: ClassVar[str]
    history_url: ClassVar[str]
    history_label: ClassVar[str]
    panel_id: ClassVar[str]  # the section htmx swaps (its JS finds it by this id)
    panel_class: ClassVar[str]
    guidelines_auto_open: ClassVar[bool] = False
    help_pairwise: ClassVar[bool] = False
    # The amend page: its URL name, template, htmx fragment (None: a full page only)
    # and the message after a save.
    amend_url: ClassVar[str]
    amend_template: ClassVar[str] = "annotation/item_amend.html"
    amend_title: ClassVar[str]
    amend_panel: ClassVar[str | None] = None
    amended_message: ClassVar[str]
    next_url: ClassVar[str]  # the URL name of the next-item page
    history_template: ClassVar[str] = "annotation/item_history.html"
    next_label: ClassVar[str]

    def campaign(self, request: HttpRequest, campaign_id: int) -> Campaign:
        """The rater's campaign of this kind (404 for any other)."""
        raise NotImplementedError

    def assignment(self, request: HttpRequest, assignment_id: int) -> Assignment:
        """The rater's own assignment of this kind, with what the panel shows."""
        raise NotImplementedError

    def next_context(self, request: HttpRequest, campaign: Campaign) -> dict:
        """The next-item page's context (serves the next item; reads ``?saved=``)."""
        raise NotImplementedError

    def served(
        self, request: HttpRequest, campaign: Campaign, *, saved: Assignment | None
    ) -> dict:
        """The next item's panel after a submit (`saved`) or a skip (None)."""
        raise NotImplementedError

    def saved_query(self, assignment: Assignment) -> str:
        """The ``?saved=`` value of the redirect after a submit."""
        raise NotImplementedError

    def parse(
        self, post: QueryDict, *, campaign: Campaign
    ) -> tuple[dict[str, Any], dict]:
        """A posted answer as the kind's service takes it, and the panel's
        arguments that show the posted values back with their errors."""
        raise NotImplementedError

    def panel_context(
        self,
        request: HttpRequest,
        *,
        campaign: Campaign,
        assignment: Assignment,
        **state,
    ) -> dict:
        """The panel of `assignment` with `state` (posted values, problems, error,
        skip error and reason)."""
        raise NotImplementedError

    def page_context(self, campaign: Campaign) -> dict:
        """What the full page adds to the panel (the rubric help)."""
        return {}

    def history_context(self, request: HttpRequest, campaign: Campaign) -> dict:
        """The rater's own submitted and skipped items, paginated."""
        raise NotImplementedError

    def stored(self, assignment: Assignment) -> dict:
        """The panel's arguments that show the stored answer of a submitted (or
        skipped) assignment, as `parse` shows a posted one; `Http404` when the kind
        has nothing to amend."""
        raise NotImplementedError

    def amend_context(
        self,
        assignment: Assignment,
        *,
        problems: list,
        error: str,
        saved: bool,
        **shown,
    ) -> dict:
        """The amend page of `assignment` showing `shown` (stored or posted)."""
        raise NotImplementedError
