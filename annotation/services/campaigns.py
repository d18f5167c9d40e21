"""Campaigns of every kind: creation from a `CampaignSpec` (items:
`services.campaign_items`), status, raters, critique and training settings."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from annotation.models import Campaign
from annotation.services.campaign_items import ITEMS_CREATE
from annotation.services.campaign_spec import CampaignSpec, CritiquePolicy
from annotation.services.gold import gold_items_create
from flaskapp import roles, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.notifications import notify


def campaign_set_critique(
    *, campaign: Campaign, critique: str, critique_min_length: int, user: User
) -> Campaign:
    """Change whether raters write a critique, and its minimum length (researchers).

    Applies to ratings submitted from now on; ratings already submitted keep what
    they have. A closed campaign is final and refused. `DomainError` naming the field
    for bad input; then nothing is written.
    """
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    if campaign.kind != Campaign.Kind.POINTWISE:
        raise DomainError(
            "pairwise campaigns ask for no critique",
            [Problem("is not used by pairwise campaigns", field="critique")],
        )
    if campaign.status == Campaign.Status.CLOSED:
        raise DomainError("this campaign is closed; its settings are final")
    problems = CritiquePolicy(mode=critique, min_length=critique_min_length).problems()
    if problems:
        raise DomainError("the critique settings were not saved", problems)
    campaign.critique = critique
    campaign.critique_min_length = critique_min_length
    campaign.save(update_fields=["critique", "critique_min_length"])
    return campaign


def campaign_create(*, spec: CampaignSpec, created_by: User) -> Campaign:
    """Create the campaign `spec` describes and its items, in one transaction.

    The items are the kind's (`services.campaign_items.ITEMS_CREATE`): one per
    response to rate (or per drawn response of a sampling campaign, served in the
    plan's order), or one per pair to compare. Items are served in a shuffled order
    seeded by the campaign id (so that model and instruction order do not bias
    raters), partly rated ones first. With a gold policy, the dataset's gold items
    are interleaved (`services.gold`) and are not real items of the campaign.

    Any rubric is rated on its own criteria's scales (`annotation.scales`); a campaign
    whose criteria are all categorical is a classification campaign (same serving,
    overlap, blinding and locking). Researchers and admins only (`PermissionDenied`).
    Raises `DomainError` naming each field for bad input (`CampaignSpec.problems`),
    or when no item matches; then nothing is written, pairs included. Not
    idempotent: each call creates a campaign.
    """
    # Researchers of the dataset's workspace, where the campaign is made (404 for
    # another workspace's dataset).
    workspaces.require_workspace_role(
        created_by, spec.dataset.workspace_id, workspaces.RESEARCHER
    )
    problems = spec.problems()
    if problems:
        raise DomainError("the campaign was not created", problems)
    with transaction.atomic():
        campaign = Campaign.objects.create(
            **spec.campaign_fields(), created_by=created_by
        )
        if chosen := spec.chosen_skills():
            campaign.chosen_skills.set(chosen)
        if spec.raters:
            campaign.raters.set(spec.raters)
        real = ITEMS_CREATE[spec.kind](campaign, spec)
        if real and campaign.uses_gold:
            gold_items_create(campaign, start=real)
    if connection.vendor == "postgresql":
        # Fresh statistics, so that the next-item query walks its partial index from
        # the first request on (stale ones can make the planner sort every item).
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_campaignitem")
    return campaign


def campaign_set_training(*, campaign: Campaign, on: bool, user: User) -> Campaign:
    """Start or end the campaign's training phase: while it is on, a rater sees the
    expected scores and explanation right after submitting a gold item
    (`services.gold.gold_feedback`); outside it, nothing. A closed campaign is refused."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    if campaign.status == Campaign.Status.CLOSED:
        raise DomainError("this campaign is closed; its settings are final")
    campaign.training_phase = bool(on)
    campaign.save(update_fields=["training_phase"])
    return campaign


def campaign_set_status(*, campaign: Campaign, status: str, user: User) -> Campaign:
    """Pause, resume or close a campaign. Closing is final; closed campaigns are read-only."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    if status not in Campaign.Status.values:
        raise DomainError(
            f"unknown status {status!r}", [Problem("unknown", field="status")]
        )
    if campaign.status == Campaign.Status.CLOSED and status != Campaign.Status.CLOSED:
        raise DomainError("a closed campaign cannot be reopened")
    if status == Campaign.Status.CLOSED:
        campaign.closed_at = campaign.closed_at or timezone.now()
    else:
        campaign.closed_at = None
    closing = (
        status == Campaign.Status.CLOSED and campaign.status != Campaign.Status.CLOSED
    )
    campaign.status = status
    campaign.save(update_fields=["status", "closed_at"])
    if closing:
        _campaign_closed_notify(campaign)
    return campaign


def _campaign_closed_notify(campaign: Campaign) -> None:
    """Tell the campaign's workspace it was closed (`flaskapp.notifications`; sent
    after the caller's commit)."""
    counts = dict(
        campaign.assignments.values_list("status").annotate(n=Count("id")).order_by()
    )
    notify(
        workspace_id=campaign.workspace_id,
        event="campaign.closed",
        obj={
            "type": "campaign",
            "id": campaign.pk,
            "name": campaign.name,
            "kind": campaign.kind,
            "dataset_id": campaign.dataset_id,
            "url": reverse("annotation:campaign-detail", args=[campaign.pk]),
        },
        counts={
            "submitted": counts.get("submitted", 0),
            "raters": campaign.raters.count(),
        },
    )


def campaign_set_raters(
    *, campaign: Campaign, raters: list[User], user: User
) -> Campaign:
    """Replace the campaign's raters (researchers and admins; only users with the
    rater role, and an account that joins must be a plain rater,
    `roles.plain_rater_problem`; nothing changes otherwise). Existing assignments are kept: a removed rater's submitted work
    stays and counts. Side effect: each removed rater's live locks in this campaign
    are released in the same transaction (status ``expired``, note
    `serving.REMOVED_NOTE`) and their items go back to the pool. That release is done
    by the `m2m_changed` receiver in `annotation.signals`, not here, so that every
    way of removing a rater (this service, the Django admin, a shell) does it; from
    then on every rating operation refuses the rater (`membership.require_campaign_rater`).
    """
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    not_raters = [u.username for u in raters if not roles.is_rater(u)]
    if not_raters:
        raise DomainError(
            "the raters were not changed",
            [Problem(f"not raters: {', '.join(not_raters)}", field="raters")],
        )
    current = set(campaign.raters.values_list("pk", flat=True))
    if outside := workspaces.non_members(
        [u for u in raters if u.pk not in current], campaign.workspace_id
    ):
        names = ", ".join(u.username for u in outside)
        raise DomainError(
            "the raters were not changed",
            [Problem(f"not members of this workspace: {names}", field="raters")],
        )
    current = set(campaign.raters.values_list("pk", flat=True))
    # Only plain rater accounts join (`roles.plain_rater_problem`); a member who is
    # kept stays, whatever it became meanwhile (removing it is always allowed).
    if problems := [
        Problem(why, field="raters")
        for u in raters
        if u.pk not in current
        and (why := roles.plain_rater_problem(u, allow_synthetic=True))
    ]:
        raise DomainError("the raters were not changed", problems)
    campaign.raters.set(raters)
    return campaign


def campaign_add_rater(*, campaign: Campaign, rater: User, user: User) -> bool:
    """Add one rater to the campaign's raters, keeping the others (researchers and
    admins; only plain rater accounts, `roles.plain_rater_problem`, naming
    ``rater``). A closed campaign is
    refused, naming ``campaign``: it serves no more work. Returns False, writing
    nothing, when `rater` already is one (idempotent)."""
    workspaces.require_object_role(user, campaign, workspaces.RESEARCHER)
    problems = []
    if why := roles.plain_rater_problem(rater):
        problems.append(Problem(why, field="rater"))
    elif workspaces.non_members([rater], campaign.workspace_id):
        problems.append(
            Problem(
                f"{rater.username} is not a member of this campaign's workspace",
                field="rater",
            )
        )
    if campaign.status == Campaign.Status.CLOSED:
        problems.append(Problem(f"{campaign.name!r} is closed", field="campaign"))
    if problems:
        raise DomainError("the rater was not added", problems)
    if campaign.raters.filter(pk=rater.pk).exists():
        return False
    campaign.raters.add(rater)
    return True
