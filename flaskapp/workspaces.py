"""Workspaces: the role order, who holds which role where, the request's workspace and
the audit log's one writer (issue 35). The one home of these rules: views, API views,
selectors and services call these functions and never read `Membership` themselves.

Roles, from most to least power: owner > researcher > reviewer > rater. A role
includes every power of the roles below it, except that rating work belongs to
raters only (a rater is served items; an owner is not, unless also made a rater of a
campaign). Instance admins (superusers, or members of the global ``admin`` group,
`flaskapp.roles.is_admin`) count as owners of every workspace.

Scoping rule: an object of a workspace the user is not a member of is a 404, never
a 403 (that would confirm it exists). A member whose role is too low for an action
gets a 403 naming the role needed.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404

from flaskapp.models import AuditEvent, Membership, Workspace
from flaskapp.roles import User, is_admin

OWNER = Membership.OWNER
RESEARCHER = Membership.RESEARCHER
REVIEWER = Membership.REVIEWER
RATER = Membership.RATER
# Higher is more power. `role_at_least` is the one comparison.
ROLE_RANK = {RATER: 1, REVIEWER: 2, RESEARCHER: 3, OWNER: 4}
WORKSPACE_ROLES = (OWNER, RESEARCHER, REVIEWER, RATER)

DEFAULT_WORKSPACE_SLUG = "default"
DEMO_WORKSPACE_SLUG = "demo"
# The session key that remembers which workspace a person is working in.
SESSION_KEY = "workspace_id"


def role_at_least(role: str | None, needed: str) -> bool:
    """Whether `role` (None: not a member) includes the powers of `needed`."""
    return role is not None and ROLE_RANK[role] >= ROLE_RANK[needed]


def workspace_role(user: User, workspace_id: int) -> str | None:
    """`user`'s role in the workspace (``owner`` for an instance admin; None when not
    a member, and for anonymous users). Cached per user object for the request: one
    query per user, whatever the number of workspaces asked about."""
    if not user.is_authenticated:
        return None
    if is_admin(user):
        return OWNER
    cache = getattr(user, "_flask_workspace_roles", None)
    if cache is None:
        cache = dict(
            Membership.objects.filter(user_id=user.pk).values_list(
                "workspace_id", "role"
            )
        )
        user._flask_workspace_roles = cache  # type: ignore[union-attr]
    return cache.get(workspace_id)


def forget_roles(user: User) -> None:
    """Drop the per-request role cache on `user` (after a membership change)."""
    for attr in ("_flask_workspace_roles", "_flask_roles"):
        if hasattr(user, attr):
            delattr(user, attr)


def workspace_ids_for_user(user: User) -> list[int] | None:
    """The ids of the workspaces `user` is a member of; None means every workspace (an
    instance admin). Callers filter querysets with it (`scope_queryset`)."""
    if not user.is_authenticated:
        return []
    if is_admin(user):
        return None
    workspace_role(user, 0)  # fills the cache
    return list(user._flask_workspace_roles)  # type: ignore[union-attr]


def scope_queryset(queryset, user: User, *, field: str = "workspace"):
    """`queryset` restricted to the workspaces `user` belongs to (`field` is the path to
    the row's workspace, e.g. ``"dataset__workspace"``). Adds no query of its own
    beyond the one cached membership read."""
    ids = workspace_ids_for_user(user)
    if ids is None:
        return queryset
    return queryset.filter(**{f"{field}_id__in": ids})


def require_workspace_role(user: User, workspace_id: int, needed: str) -> str:
    """`user`'s role in the workspace when it includes `needed`. `Http404` when
    `user` is not a member (another workspace's object does not exist for them);
    `PermissionDenied` naming the role needed when the role is too low."""
    role = workspace_role(user, workspace_id)
    if role is None:
        raise Http404("No such object.")
    if not role_at_least(role, needed):
        raise PermissionDenied(
            f"This needs the {needed} role in this workspace (you are {role})."
        )
    return role


def workspace_get_for_user(user: User, workspace_id: int, needed: str = RATER):
    """The `Workspace` with `workspace_id` when `user` holds at least `needed` there;
    404 / 403 as `require_workspace_role`."""
    require_workspace_role(user, workspace_id, needed)
    try:
        return Workspace.objects.get(pk=workspace_id)
    except Workspace.DoesNotExist:
        raise Http404("No such workspace.") from None


def default_workspace() -> Workspace:
    """The workspace that holds data created with no workspace named (the command
    line's imports and runs, and every row that existed before workspaces). Created on
    first use."""
    ws, _ = Workspace.objects.get_or_create(
        slug=DEFAULT_WORKSPACE_SLUG, defaults={"name": "Default"}
    )
    return ws


def audit_record(
    *,
    action: str,
    actor: User | None = None,
    workspace: Workspace | int | None = None,
    target: Any = None,
    target_type: str = "",
    target_id: str | int = "",
    target_label: str = "",
    before: dict | None = None,
    after: dict | None = None,
) -> AuditEvent:
    """Write one audit row. `target` (any model instance) fills the target fields
    unless they are given. `before`/`after` must hold nothing secret: callers pass
    what may be shown (a key's name and hosts, never its value). Joins the caller's
    transaction when there is one, so a rolled-back change leaves no audit row."""
    if target is not None:
        target_type = target_type or target._meta.label_lower
        target_id = target_id or target.pk
        target_label = target_label or str(target)[:200]
    actor_obj = actor if actor is not None and actor.is_authenticated else None
    with transaction.atomic():
        return AuditEvent.objects.create(
            action=action,
            actor=actor_obj,
            actor_name=actor_obj.get_username() if actor_obj else "",
            workspace_id=workspace.pk
            if isinstance(workspace, Workspace)
            else workspace,
            target_type=target_type,
            target_id=str(target_id),
            target_label=target_label,
            before=before,
            after=after,
        )
