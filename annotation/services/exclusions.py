"""A researcher's decisions about a rater of a campaign: exclude their scores from the
analyses, or pause them (serve nothing new). Each is a `RaterExclusion` row with who,
when and why, ended (not deleted) when reversed, so the history stays complete.

Where they apply: an open `exclude` leaves the rater's scores of that campaign out of
the agreement, the classification figures, the disagreement lists and the training
export (the readers filter on `analysis.selectors.agreement.inputs.NOT_EXCLUDED`),
and the long export marks them `excluded: true`; an open `pause` makes
`services.assignment_next` serve the rater nothing, with `PAUSED_MESSAGE` (the
campaign row carries the paused ids, so serving needs no query for it). A paused
rater may still submit the item they hold. Each start and end is also a row of the
decision's history (`RaterExclusion.history`, with who and why).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.models import Assignment, Campaign, RaterExclusion
from flaskapp import limits, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.untrusted import text_problem

PAUSED_MESSAGE = (
    "A researcher has paused your work in this campaign; nothing new is served to "
    "you for now."
)
MAX_REASON = limits.NOTE  # RaterExclusion.reason and end_reason


def _reason(reason, field: str = "reason") -> str:
    reason = reason.strip() if isinstance(reason, str) else ""
    if not reason:
        raise DomainError("say why", [Problem("is empty", field=field)])
    if problem := text_problem(reason):
        raise DomainError(f"the reason {problem}", [Problem(problem, field=field)])
    if len(reason) > MAX_REASON:
        raise DomainError(
            "the reason is too long",
            [Problem(f"at most {MAX_REASON} characters", field=field)],
        )
    return reason


def _check_rater(campaign: Campaign, rater: User) -> None:
    member = campaign.raters.filter(pk=rater.pk).exists()
    worked = Assignment.objects.filter(campaign=campaign, rater=rater).exists()
    if not (member or worked):
        raise DomainError(
            f"{rater.username} neither rates in nor has work in this campaign",
            [Problem("not a rater of this campaign", field="rater")],
        )


def rater_decision_start(
    *, campaign: Campaign, rater: User, kind: str, reason, user: User
) -> RaterExclusion:
    """Exclude (`kind="exclude"`) or pause (`"pause"`) a rater of the campaign, with
    a reason. Refused (DomainError naming the field, nothing changed) for an unknown
    kind, an empty reason, a rater outside the campaign, or one already excluded /
    paused."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    if kind not in RaterExclusion.Kind.values:
        raise DomainError(
            f"unknown decision {kind!r}",
            [Problem(f"one of {', '.join(RaterExclusion.Kind.values)}", field="kind")],
        )
    reason = _reason(reason)
    _check_rater(campaign, rater)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        if RaterExclusion.objects.filter(
            campaign=locked, rater=rater, kind=kind, ended_at__isnull=True
        ).exists():
            label = "excluded" if kind == RaterExclusion.Kind.EXCLUDE else "paused"
            raise DomainError(
                f"{rater.username} is already {label} in this campaign",
                [Problem(f"already {label}", field="rater")],
            )
        decision = RaterExclusion(
            campaign=locked, rater=rater, kind=kind, reason=reason, created_by=user
        )
        # The history row (django-simple-history) records who and why.
        decision._history_user = user
        decision._change_reason = f"{kind} started"
        decision.save()
        if kind == RaterExclusion.Kind.PAUSE:
            locked.paused_raters = sorted({*(locked.paused_raters or []), rater.pk})
            locked.save(update_fields=["paused_raters"])
            campaign.paused_raters = locked.paused_raters
    return decision


def rater_decision_end(
    *, campaign: Campaign, rater: User, kind: str, reason="", user: User
) -> RaterExclusion:
    """Reverse an open exclusion or pause (the row stays, with who ended it, when and
    why). Refused when there is none open."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    reason = reason.strip() if isinstance(reason, str) else ""
    if reason:
        reason = _reason(reason)
    with transaction.atomic():
        locked = Campaign.objects.select_for_update().get(pk=campaign.pk)
        decision = (
            RaterExclusion.objects.select_for_update()
            .filter(campaign=locked, rater=rater, kind=kind, ended_at__isnull=True)
            .first()
        )
        if decision is None:
            raise DomainError(
                f"{rater.username} has no open {kind} decision in this campaign",
                [Problem("nothing to reverse", field="rater")],
            )
        decision.ended_at = timezone.now()
        decision.ended_by = user
        decision.end_reason = reason[:MAX_REASON]
        decision._history_user = user
        decision._change_reason = f"{kind} ended"
        decision.save(
            update_fields=["ended_at", "ended_by", "end_reason", "updated_at"]
        )
        if kind == RaterExclusion.Kind.PAUSE:
            locked.paused_raters = [
                r for r in (locked.paused_raters or []) if r != rater.pk
            ]
            locked.save(update_fields=["paused_raters"])
            campaign.paused_raters = locked.paused_raters
    return decision
