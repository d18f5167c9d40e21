"""Campaign membership: the one check of every rating operation that the rater still
holds the rater role and is still one of the campaign's raters, with the reasons a
removed rater is told."""

from __future__ import annotations

from annotation.models import Assignment, Campaign
from flaskapp.errors import RatingRefused
from flaskapp.roles import User, is_rater

# Why a rater who holds an assignment may no longer work on it (403, pages and API).
ROLE_REMOVED = (
    "Your rater role was removed, so you can no longer rate; your submitted work is "
    "kept."
)
REMOVED_FROM_CAMPAIGN = (
    "You are not a member of this campaign any more (removed from its raters); your "
    "submitted work is kept."
)


LEFT_WORKSPACE = (
    "You are not a member of this campaign's workspace any more; your submitted work "
    "is kept."
)


def require_campaign_rater(user: User, campaign_id: int) -> None:
    """The one check of every rating operation (serve, show, submit, amend, skip,
    progress, history; pointwise and pairwise; pages and API): `user` still has the
    rater role and is still one of the campaign's raters. `RatingRefused` (a
    `PermissionDenied`, 403) naming which is missing: code ``rater_role_removed`` or
    ``not_campaign_member``. Callers check ownership first, so another rater's id
    stays a plain 404. One query (the roles are cached on the user)."""
    if not is_rater(user):
        raise RatingRefused(ROLE_REMOVED, "rater_role_removed")
    links = Campaign.raters.through.objects.filter(
        campaign_id=campaign_id, user_id=user.pk
    )
    # Rating happens inside the campaign's workspace (issue 35): one query when all
    # is well, a second only to say which is missing.
    if not links.filter(campaign__workspace__memberships__user_id=user.pk).exists():
        if links.exists():
            raise RatingRefused(LEFT_WORKSPACE, "not_workspace_member")
        raise RatingRefused(REMOVED_FROM_CAMPAIGN, "not_campaign_member")


def explain_missing_campaign(user: User, campaign_id: int, kind: str) -> None:
    """For a campaign-scoped rating operation (next, progress, history; pages and API)
    that found no campaign of `kind` for `user`: a rater who worked in it before
    (holds an assignment there) and was removed learns why, through
    `require_campaign_rater` (`PermissionDenied`, 403). Anyone else learns nothing:
    this returns and the caller's 404 stands, so no campaign's existence leaks."""
    if not user.is_authenticated:
        return
    worked_here = Assignment.objects.filter(
        campaign_id=campaign_id, campaign__kind=kind, rater_id=user.pk
    ).exists()
    if worked_here:
        require_campaign_rater(user, campaign_id)
