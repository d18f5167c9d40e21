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
