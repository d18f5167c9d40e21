"""The roles (Django groups) and the checks every view and API uses.

An admin can do everything a researcher can; a researcher everything about campaigns,
judge runs and results; a rater only their own rating work. Superusers count as admins.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef

ADMIN = "admin"
RESEARCHER = "researcher"
RATER = "rater"
# Settles the raters' disagreements of any campaign (`services.adjudication`); sees
# every rater's scores and rationales there, and nothing else of a researcher's.
REVIEWER = "reviewer"
ROLES = (ADMIN, RESEARCHER, RATER, REVIEWER)
# Not a role: the group that marks an account as synthetic, one whose "ratings" a
# program generated (the demo's example ratings). Its scores are never a person's
# judgment: pages label them and every export carries `synthetic: true` for them.
SYNTHETIC = "synthetic"
# Not a role either: the accounts that hold human scores imported with a dataset file
# are named "import:<dataset id>:<rater>" (`services.score_imports`). Django's username
# rules refuse ":", so no account made through the app or admin has this prefix.
IMPORTED_PREFIX = "import:"

User = AbstractBaseUser | AnonymousUser


def user_roles(user: User) -> set[str]:
    """The role names of `user` (cached on the user object for the request)."""
    if not user.is_authenticated:
        return set()
    cached = getattr(user, "_flask_roles", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))  # type: ignore[attr-defined]
        if user.is_superuser:  # type: ignore[attr-defined]
            cached.add(ADMIN)
        user._flask_roles = cached  # type: ignore[union-attr]
    return cached


def is_admin(user: User) -> bool:
    return ADMIN in user_roles(user)


def _highest_workspace_role(user: User) -> str | None:
    # Imported here: flaskapp.workspaces imports this module.
    from flaskapp.workspaces import highest_role

    return highest_role(user)


def is_researcher(user: User) -> bool:
    """Researchers (or owners) of some workspace, and admins (issue 35: the roles are
    held per workspace; objects are checked against their own workspace by
    `flaskapp.workspaces.require_object_role`, this is the gate of pages and lists
    that name no object)."""
    return _highest_workspace_role(user) in {"owner", RESEARCHER}


def is_reviewer(user: User) -> bool:
    """Reviewers, researchers and owners of some workspace, and admins: who may
    adjudicate (in their workspaces)."""
    return _highest_workspace_role(user) in {"owner", RESEARCHER, REVIEWER}


def is_rater(user: User) -> bool:
    """Whether `user`'s account is a rater's (the global ``rater`` group: who may be
    served items at all; removing it stops every rating operation). Which campaigns
    they rate in is the campaigns' raters, and only inside the campaigns' workspaces
    (`flaskapp.workspaces`; `annotation.membership.require_campaign_rater`)."""
    return RATER in user_roles(user)


def is_synthetic(user: User) -> bool:
    """Whether `user` is a synthetic account (member of the `SYNTHETIC` group)."""
    return user.is_authenticated and user.groups.filter(name=SYNTHETIC).exists()  # type: ignore[attr-defined]


def is_imported_account(username: str) -> bool:
    """Whether `username` is an account that holds imported human scores (nobody logs
    in as it; it is never a campaign's rater in the role sense)."""
    return username.startswith(IMPORTED_PREFIX)


def synthetic_rater(user_id_ref: str) -> Exists:
    """An `Exists` expression, true when the user whose id is at `user_id_ref` (an
    `OuterRef` path such as ``"assignment__rater_id"``) is a synthetic account: the
    one rule by which reads and exports mark generated scores."""
    from django.contrib.auth.models import User as UserModel

    return Exists(
        UserModel.groups.through.objects.filter(
            user_id=OuterRef(user_id_ref), group__name=SYNTHETIC
        )
    )


MANAGED_IN_ADMIN = "only an admin manages it, in the Django admin"


def plain_rater_problem(user: User, *, allow_synthetic: bool = False) -> str:
    """Why `user` is not a plain rater account ("" when it is): the one definition of
    the accounts that researchers may manage in the app (reset a password, add to a
    campaign, on the pages and through the API). A plain rater is active, holds the
    rater role and no other group (not researcher, admin, reviewer, synthetic, nor any
    other), has neither the staff nor the superuser flag and holds no permission of
    its own. Anything more could be turned into power: a researcher who resets a
    staff account's password logs in to the Django admin with it (issue 34).
    `allow_synthetic`: a synthetic account (generated ratings, nobody logs in) also
    counts, for campaign membership, where the demo's generated ratings need it. Reads
    the database (never the per-request role cache), two queries at most."""
    if not user.is_authenticated:
        return "no such account"
    name = user.get_username()
    if not user.is_active:
        return f"{name} is deactivated; {MANAGED_IN_ADMIN}"
    if user.is_superuser:  # type: ignore[union-attr]
        return f"{name} is a superuser; {MANAGED_IN_ADMIN}"
    if user.is_staff:  # type: ignore[union-attr]
        return f"{name} has the staff flag (Django admin access); {MANAGED_IN_ADMIN}"
    groups = set(user.groups.values_list("name", flat=True))  # type: ignore[union-attr]
    if RATER not in groups:
        return f"{name} has no rater role"
    if SYNTHETIC in groups and not allow_synthetic:
        return (
            f"{name} is a synthetic account: it holds generated ratings and nobody "
            "logs in as it"
        )
    if others := sorted(
        groups - {RATER, SYNTHETIC} if allow_synthetic else groups - {RATER}
    ):
        return f"{name} also belongs to {', '.join(others)}; {MANAGED_IN_ADMIN}"
    if user.user_permissions.exists():  # type: ignore[union-attr]
        return f"{name} holds permissions of its own; {MANAGED_IN_ADMIN}"
    return ""


def can_create_dataset(user: User, workspace_id: int | None = None) -> bool:
    """Researchers and owners of the workspace create datasets there (issue 35:
    self-service; `workspace_id` None: the default workspace). The one rule for every
    way a dataset can come into being: the dataset import (pages, API, job) and the
    preference import."""
    from flaskapp.workspaces import RESEARCHER as WS_RESEARCHER
    from flaskapp.workspaces import default_workspace, role_at_least, workspace_role

    if workspace_id is None:
        workspace_id = default_workspace().pk
    return role_at_least(workspace_role(user, workspace_id), WS_RESEARCHER)


def require_dataset_creator(
    user: User, dataset_name: str = "", workspace_id: int | None = None
) -> None:
    """`PermissionDenied` unless `can_create_dataset(user, workspace_id)`."""
    if not can_create_dataset(user, workspace_id):
        what = f"dataset {dataset_name!r}" if dataset_name else "a dataset"
        raise PermissionDenied(
            f"{what} does not exist, and creating a dataset needs the researcher "
            "role in this workspace; import into an existing dataset"
        )


def require_admin(user: User) -> None:
    if not is_admin(user):
        raise PermissionDenied("This needs the admin role.")


def require_reviewer(user: User) -> None:
    if not is_reviewer(user):
        raise PermissionDenied("This needs the reviewer, researcher or admin role.")


def require_researcher(user: User) -> None:
    if not is_researcher(user):
        raise PermissionDenied("This needs the researcher or admin role.")
