"""Pairwise campaigns' entry points to the rater loop (`services.rating`): next,
submit, amend and skip of a pair, with the pairwise answer's fields (creation:
`services.campaigns`; pairs: `services.pairs`; the pair item kind, its shown order
and labels: `annotation.items.pairwise`).

Raters answer in presented terms (A / B / tie), overall and per chosen skill; the
item kind stores them in the ORIGINAL numbering through the assignment's
`shown_order`.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User

from annotation.items import PAIRWISE
from annotation.models import Assignment, Campaign
from annotation.services.rating import item_amend, item_next, item_skip, item_submit
from annotation.services.serving import NextResult
from flaskapp.errors import DomainError, Problem


def pairwise_next(
    *, campaign: Campaign, rater: User, now: datetime | None = None
) -> NextResult:
    """`item_next` of a pairwise campaign: the assignment records the
    `shown_order` (stable per campaign, pair and rater, so a revived lock shows the
    same order). Raises `DomainError` for a pointwise campaign."""
    if campaign.kind != PAIRWISE.campaign_kind:
        raise DomainError(
            "this is not a pairwise campaign",
            [Problem("is a pointwise campaign", field="campaign")],
        )
    return item_next(campaign=campaign, rater=rater, now=now)


def pairwise_submit(
    *,
    assignment_id: int,
    rater: User,
    label: str,
    skill_labels: dict | None = None,
    rationale: str = "",
    active_seconds: float | None = None,
    now: datetime | None = None,
    conflict_if_changed: bool = False,
) -> Assignment:
    """`item_submit` of a preference on one served pair: `label` and
    `skill_labels` values are in PRESENTED terms ("A", "B" or "tie", as the rater
    saw the pair), stored as one `HumanPreference` (origin "campaign") in the
    original numbering. Problems name `label`, `skill_labels.<key>`, `rationale`."""
    return item_submit(
        kind=PAIRWISE,
        assignment_id=assignment_id,
        rater=rater,
        answer={"label": label, "skill_labels": skill_labels, "rationale": rationale},
        active_seconds=active_seconds,
        now=now,
        conflict_if_changed=conflict_if_changed,
    )


def pairwise_amend(
    *,
    assignment_id: int,
    rater: User,
    label: str,
    skill_labels: dict | None = None,
    rationale: str = "",
    now: datetime | None = None,
) -> Assignment:
    """`item_amend` of a submitted preference (`pairwise_submit`'s fields), while
    the campaign is not closed (a paused one still takes amendments)."""
    return item_amend(
        kind=PAIRWISE,
        assignment_id=assignment_id,
        rater=rater,
        answer={"label": label, "skill_labels": skill_labels, "rationale": rationale},
        now=now,
    )


def pairwise_skip(
    *, assignment_id: int, rater: User, reason: str, now: datetime | None = None
) -> Assignment:
    """`item_skip` of a served pair."""
    return item_skip(
        kind=PAIRWISE, assignment_id=assignment_id, rater=rater, reason=reason, now=now
    )
