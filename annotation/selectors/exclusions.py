"""Reads of researchers' decisions about raters (`RaterExclusion`): the open ones that
the analyses apply, and the full history a campaign page shows."""

from __future__ import annotations

from django.db.models import Exists, OuterRef

from annotation.models import Campaign, RaterExclusion


def excluded_scores(prefix: str = "assignment__") -> Exists:
    """True for a row whose assignment's rater is excluded (an open `exclude`) in the
    assignment's campaign; `prefix` is the path from the row to the assignment
    ("" on `Assignment` itself). Readers filter with ``.filter(~excluded_scores())``."""
    return Exists(
        RaterExclusion.objects.filter(
            campaign_id=OuterRef(f"{prefix}campaign_id"),
            rater_id=OuterRef(f"{prefix}rater_id"),
            kind=RaterExclusion.Kind.EXCLUDE,
            ended_at__isnull=True,
        )
    )


def open_exclusions(*, campaign_ids) -> list[RaterExclusion]:
    """The open exclusions of these campaigns, with rater and author (for the notes
    on the dashboards that apply them)."""
    return list(
        RaterExclusion.objects.filter(
            campaign_id__in=list(campaign_ids),
            kind=RaterExclusion.Kind.EXCLUDE,
            ended_at__isnull=True,
        )
        .select_related("rater", "created_by", "campaign")
        .order_by("campaign_id", "rater__username")
    )


def campaign_decisions(*, campaign: Campaign) -> list[RaterExclusion]:
    """Every exclusion and pause of the campaign, open or ended, newest first."""
    return list(
        RaterExclusion.objects.filter(campaign=campaign)
        .select_related("rater", "created_by", "ended_by")
        .order_by("-created_at", "-pk")
    )


def exclusions_note(campaign_ids) -> list[dict]:
    """The open exclusions of these campaigns as plain data, for the dashboards and
    APIs that leave those raters out (agreement, classification, meta-evaluation,
    training export): campaign, rater, who decided, when (ISO 8601) and why."""
    return [
        {
            "campaign_id": e.campaign_id,
            "campaign": e.campaign.name,
            "rater_id": e.rater_id,
            "rater": e.rater.username,
            "by": e.created_by.username if e.created_by else "",
            "at": e.created_at.isoformat(),
            "reason": e.reason,
        }
        for e in open_exclusions(campaign_ids=campaign_ids)
    ]
