"""Reads for the rater management page: every rater, their campaigns and progress."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef
from django.http import Http404

from annotation.models import Assignment, Campaign
from flaskapp import roles, workspaces
from flaskapp.models import Membership


@dataclass
class RaterCampaignProgress:
    """One rater's work in one campaign they are a member of.

    `done`: submitted items. `assigned`: the campaign's quota per rater when it has
    one, otherwise every item given to the rater so far (submitted, in progress or
    skipped; expired locks are not counted: the item went back to the pool)."""

    campaign: Campaign
    submitted: int = 0
    in_progress: int = 0
    skipped: int = 0

    @property
    def done(self) -> int:
        return self.submitted

    @property
    def assigned(self) -> int:
        if self.campaign.rater_quota:
            return self.campaign.rater_quota
        return self.submitted + self.in_progress + self.skipped


@dataclass
class RaterOverview:
    """A rater account and its campaigns, newest campaign first. `managed`: a plain
    rater account (`roles.plain_rater_problem`), whose password this page may reset
    (`services.raters`)."""

    user: User
    campaigns: list[RaterCampaignProgress] = field(default_factory=list)
    managed: bool = True

    @property
    def campaign_ids(self) -> set[int]:
        return {row.campaign.pk for row in self.campaigns}


def rater_overview_list_for_user(*, user, workspace=None) -> list[RaterOverview]:
    """Every account with the rater role (active or not), by username, with the
    campaigns it is a member of and its progress in each; `user.synthetic` marks a
    synthetic account (generated ratings, `roles.SYNTHETIC`). Researchers and admins only
    (`PermissionDenied`). Only the raters who are members of the workspaces where
    `user` is a researcher (of `workspace` when given), with those workspaces'
    campaigns. Four queries, whatever the number of raters and campaigns.
    """
    roles.require_researcher(user)
    ids = workspaces.workspace_ids_with_role(user, workspaces.RESEARCHER)
    if workspace is not None:
        ids = [workspace.pk] if ids is None or workspace.pk in ids else []
    in_scope = Membership.objects.filter(user_id=OuterRef("pk"))
    if ids is not None:
        in_scope = in_scope.filter(workspace_id__in=ids)
    memberships = User.groups.through.objects.filter(user_id=OuterRef("pk"))
    raters = list(
        User.objects.filter(
            Exists(memberships.filter(group__name=roles.RATER)), Exists(in_scope)
        )
        .annotate(
            power=Exists(
                memberships.filter(group__name__in=[roles.ADMIN, roles.RESEARCHER])
            ),
            synthetic=roles.synthetic_rater("pk"),
            other_groups=Exists(memberships.exclude(group__name=roles.RATER)),
            own_permissions=Exists(
                User.user_permissions.through.objects.filter(user_id=OuterRef("pk"))
            ),
        )
        .order_by("username")
    )
    # `managed` is `roles.plain_rater_problem` in one query for every account: no
    # other group, no permission of its own, active, neither staff nor superuser.
    rows = {
        r.pk: RaterOverview(
            user=r,
            managed=not (
                r.power
                or r.synthetic
                or r.other_groups
                or r.own_permissions
                or r.is_superuser
                or r.is_staff
                or not r.is_active
            ),
        )
        for r in raters
    }
    if not rows:
        return []
    links = Campaign.raters.through.objects.filter(user_id__in=rows)
    if ids is not None:
        links = links.filter(campaign__workspace_id__in=ids)
    links = links.select_related("campaign").order_by(
        "-campaign__created_at", "-campaign_id"
    )
    progress: dict[tuple[int, int], RaterCampaignProgress] = {}
    for link in links:
        row = RaterCampaignProgress(campaign=link.campaign)
        progress[(link.user_id, link.campaign_id)] = row
        rows[link.user_id].campaigns.append(row)
    progress_ids = sorted({campaign_id for _, campaign_id in progress})
    counts = (
        Assignment.objects.filter(rater_id__in=rows, campaign_id__in=progress_ids)
        .values_list("rater_id", "campaign_id", "status")
        .annotate(n=Count("id"))
        .order_by()
    )
    for rater_id, campaign_id, status, n in counts:
        row = progress.get((rater_id, campaign_id))
        if row is None:  # work in a campaign they were removed from: not listed
            continue
        if status == Assignment.Status.SUBMITTED:
            row.submitted = n
        elif status == Assignment.Status.SERVED:
            row.in_progress = n
        elif status == Assignment.Status.SKIPPED:
            row.skipped = n
    return list(rows.values())


def rater_get_for_user(*, user, rater_id: int) -> User:
    """The account `rater_id` if it has the rater role and is a member of a
    workspace where `user` is a researcher, else `Http404`. Researchers and admins
    only (`PermissionDenied`)."""
    roles.require_researcher(user)
    qs = User.objects.filter(pk=rater_id, groups__name=roles.RATER)
    ids = workspaces.workspace_ids_with_role(user, workspaces.RESEARCHER)
    if ids is not None:
        qs = qs.filter(workspace_memberships__workspace_id__in=ids)
    rater = qs.distinct().first()
    if rater is None:
        raise Http404("No such rater.")
    return rater


def campaign_choice_list_for_user(*, user, workspace=None) -> list[Campaign]:
    """The campaigns a rater can be added to (active or paused), newest first: of
    `workspace` (the page's current one) when given, else of every workspace where
    `user` is a researcher."""
    roles.require_researcher(user)
    qs = workspaces.scope_for_role(Campaign.objects, user, workspaces.RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return list(
        qs.exclude(status=Campaign.Status.CLOSED).order_by("-created_at", "-id")
    )


def campaign_choice_get(
    *, user, campaign_id: int | None, workspace=None
) -> Campaign | None:
    """The campaign `campaign_id` (any status; the service refuses closed ones), or
    None for no id, an unknown one or one of another workspace than `workspace`
    (when given). Researchers and admins only."""
    roles.require_researcher(user)
    if campaign_id is None:
        return None
    qs = workspaces.scope_for_role(Campaign.objects, user, workspaces.RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return qs.filter(pk=campaign_id).first()
