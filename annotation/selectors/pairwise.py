"""Reads for pairwise campaigns (researchers' pages and the raters' comparison UI).

Permission-scoped reads raise `Http404` for anything a user may not see, so a foreign
id looks exactly like a missing one. The membership rules are the pointwise ones
(`selectors.rating.campaign_get_for_user` / `campaign_get_for_rater`); these add the
campaign kind and the pair's rows.
"""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import Http404

from annotation import membership
from annotation.models import Assignment, Campaign, CampaignItem, HumanPreference
from annotation.selectors.rating import campaign_get_for_rater, campaign_get_for_user
from flaskapp import roles, workspaces


def pairwise_campaign_get_for_user(*, user, campaign_id: int) -> Campaign:
    """A pairwise campaign for its researchers' pages (researcher or admin only:
    `PermissionDenied` otherwise); a pointwise or missing id is a 404."""
    campaign = campaign_get_for_user(user=user, campaign_id=campaign_id)
    if campaign.kind != Campaign.Kind.PAIRWISE:
        raise Http404("No such pairwise campaign.")
    return campaign


def pairwise_campaign_get_for_rater(*, user, campaign_id: int) -> Campaign:
    """A pairwise campaign `user` rates in; any other id is a 404."""
    return campaign_get_for_rater(
        user=user, campaign_id=campaign_id, kind=Campaign.Kind.PAIRWISE
    )


def pairwise_campaign_list_for_user(*, user, workspace=None) -> QuerySet[Campaign]:
    """The pairwise campaigns of the workspaces where `user` is a researcher (only
    `workspace`'s when given) with `pair_count`, `votes_needed`, `votes_submitted`
    and `rater_count`, in one query."""
    roles.require_researcher(user)
    items = CampaignItem.objects.filter(campaign=OuterRef("pk")).values("campaign")
    links = Campaign.raters.through.objects.filter(campaign=OuterRef("pk")).values(
        "campaign"
    )

    def sub(qs, expr):
        return Coalesce(
            Subquery(qs.annotate(v=expr).values("v")[:1]),
            0,
            output_field=IntegerField(),
        )

    qs = workspaces.scope_for_role(Campaign.objects, user, workspaces.RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return (
        qs.filter(kind=Campaign.Kind.PAIRWISE)
        .select_related("dataset", "created_by")
        .annotate(
            pair_count=sub(items, Count("id")),
            votes_needed=sub(items, Sum("target")),
            votes_submitted=sub(items, Sum("submitted")),
            rater_count=sub(links, Count("id")),
        )
        .order_by("-created_at", "-id")
    )


def pairwise_assignment_get_for_rater(*, user, assignment_id: int) -> Assignment:
    """One of `user`'s own pairwise assignments with the campaign, the pair, its
    instruction and both responses loaded (what the comparison page shows)."""
    assignment = (
        Assignment.objects.select_related(
            "campaign",
            "campaign__dataset",
            "pair",
            "pair__instruction",
            "pair__response_1",
            "pair__response_2",
        )
        .filter(pk=assignment_id, rater=user, pair__isnull=False)
        .first()
    )
    if assignment is None:
        raise Http404("No such assignment.")
    membership.require_campaign_rater(user, assignment.campaign_id)
    return assignment


def shown_responses(assignment: Assignment) -> tuple:
    """The pair's responses in the order the rater sees them: (A, B)."""
    pair = assignment.pair
    if assignment.shown_order == "21":
        return pair.response_2, pair.response_1
    return pair.response_1, pair.response_2


def pairwise_rater_history(*, user, campaign: Campaign) -> QuerySet[Assignment]:
    """`user`'s own submitted and skipped pairs in `campaign`, newest first, with the
    pair's instruction and the rater's own preference (`preferences`) prefetched."""
    return (
        Assignment.objects.filter(campaign=campaign, rater=user, pair__isnull=False)
        .exclude(status=Assignment.Status.SERVED)
        .select_related("pair", "pair__instruction")
        .prefetch_related("preferences")
        .order_by("-closed_at", "-id")
    )


def pairwise_assignment_preference(*, assignment: Assignment) -> HumanPreference | None:
    """The vote recorded for one of the rater's pairwise assignments (loaded by
    `pairwise_assignment_get_for_rater`, which did the permission check), or None
    when it was skipped or never submitted."""
    return HumanPreference.objects.filter(assignment=assignment).first()
