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

from flaskapp.models import (  # noqa: F401 (the slug: part of this module's API)
    DEFAULT_WORKSPACE_SLUG,
    AuditEvent,
    Membership,
    Workspace,
    default_workspace,
)
from flaskapp.roles import User, is_admin

OWNER = Membership.OWNER
RESEARCHER = Membership.RESEARCHER
REVIEWER = Membership.REVIEWER
RATER = Membership.RATER
# Higher is more power. `role_at_least` is the one comparison.
ROLE_RANK = {RATER: 1, REVIEWER: 2, RESEARCHER: 3, OWNER: 4}
WORKSPACE_ROLES = (OWNER, RESEARCHER, REVIEWER, RATER)

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
    return roles_by_workspace(user).get(workspace_id)


def roles_by_workspace(user: User) -> dict[int, str]:
    """{workspace id: role} of `user`'s memberships (instance admins' too: their
    own rows only). Cached on the user object: filled by `_memberships`' one query,
    or by whoever read it along with the user (the rater loop's token check)."""
    cached = getattr(user, "_flask_workspace_roles", None)
    if cached is None:
        _memberships(user)
        cached = user._flask_workspace_roles  # type: ignore[union-attr]
    return cached


def _memberships(user: User) -> list[tuple[Workspace, str]]:
    """`user`'s (workspace, role) pairs by workspace name: one query, cached on the
    user object for the request (it also fills `workspace_role`'s cache)."""
    cached = getattr(user, "_flask_memberships", None)
    if cached is None:
        cached = [
            (m.workspace, m.role)
            for m in Membership.objects.filter(user_id=user.pk)
            .select_related("workspace")
            .order_by("workspace__name")
        ]
        user._flask_memberships = cached  # type: ignore[union-attr]
        user._flask_workspace_roles = {ws.pk: role for ws, role in cached}  # type: ignore[union-attr]
    return cached


def forget_roles(user: User) -> None:
    """Drop the per-request role cache on `user` (after a membership change)."""
    for attr in ("_flask_workspace_roles", "_flask_roles", "_flask_memberships"):
        if hasattr(user, attr):
            delattr(user, attr)


def workspace_ids_for_user(user: User) -> list[int] | None:
    """The ids of the workspaces `user` is a member of; None means every workspace (an
    instance admin). Callers filter querysets with it (`scope_queryset`)."""
    if not user.is_authenticated:
        return []
    if is_admin(user):
        return None
    return list(roles_by_workspace(user))


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


def workspace_ids_with_role(user: User, needed: str) -> list[int] | None:
    """The ids of the workspaces where `user` holds at least `needed`; None means
    every workspace (an instance admin)."""
    if not user.is_authenticated:
        return []
    if is_admin(user):
        return None
    return [
        pk
        for pk, role in roles_by_workspace(user).items()
        if role_at_least(role, needed)
    ]


def scope_for_role(queryset, user: User, needed: str, *, field: str = "workspace"):
    """`queryset` restricted to the workspaces where `user` holds at least `needed`
    (`field` as in `scope_queryset`). A rater of workspace B does not see B's
    datasets in a researcher's list, nor does anyone see another workspace's."""
    ids = workspace_ids_with_role(user, needed)
    if ids is None:
        return queryset.all()  # a QuerySet, also when given a manager
    return queryset.filter(**{f"{field}_id__in": ids})


def highest_role(user: User) -> str | None:
    """The most powerful role `user` holds in any workspace (``owner`` for an
    instance admin; None when a member nowhere). The gate of pages and API lists that
    name no object; objects are checked against their own workspace."""
    if not user.is_authenticated:
        return None
    if is_admin(user):
        return OWNER
    roles = list(roles_by_workspace(user).values())
    return max(roles, key=ROLE_RANK.__getitem__) if roles else None


def require_object_role(user: User, obj: Any, needed: str) -> str:
    """`require_workspace_role` on `obj`'s workspace (`obj.workspace_id`). A row
    with no workspace (a built-in rubric or prompt template) is readable by anyone
    holding `needed` somewhere, and changed by nobody but instance admins."""
    if obj.workspace_id is None:
        role = highest_role(user)
        if role is None:
            raise Http404("No such object.")
        if not role_at_least(role, needed):
            raise PermissionDenied(f"This needs the {needed} role in a workspace.")
        return role
    return require_workspace_role(user, obj.workspace_id, needed)


def user_workspaces(user: User) -> list[tuple[Workspace, str]]:
    """The workspaces `user` may switch to, with the role there, by name (every
    workspace as owner for an instance admin)."""
    if not user.is_authenticated:
        return []
    if is_admin(user):
        cached = getattr(user, "_flask_all_workspaces", None)
        if cached is None:
            cached = [(ws, OWNER) for ws in Workspace.objects.order_by("name")]
            user._flask_all_workspaces = cached  # type: ignore[union-attr]
        return cached
    return _memberships(user)


def current_workspace(request) -> Workspace | None:
    """The workspace the request works in (cached on the request): ``?workspace=<id>``
    when the user may work there (remembered in the session), else the one the
    session remembers, else the user's first workspace by name (an instance admin's:
    the first they are a member of, if any). None for anonymous
    users and users who are a member nowhere. Pages list this workspace's objects;
    objects named in the URL are checked against their own workspace."""
    if hasattr(request, "_flask_workspace"):
        return request._flask_workspace
    choices = {ws.pk: ws for ws, _ in user_workspaces(request.user)}
    chosen = None
    raw = request.GET.get("workspace", "")
    if raw.isdigit() and int(raw) in choices:
        chosen = choices[int(raw)]
        request.session[SESSION_KEY] = chosen.pk
    elif (remembered := request.session.get(SESSION_KEY)) in choices:
        chosen = choices[remembered]
    elif choices:
        # An instance admin may switch to every workspace; they start in one they
        # are a member of (the demo's admin in the demo), else the first by name.
        own = [ws for ws, _ in _memberships(request.user) if ws.pk in choices]
        chosen = own[0] if own else next(iter(choices.values()))
    request._flask_workspace = chosen
    return chosen


def current_workspace_id(request) -> int | None:
    """`current_workspace(request)`'s id (None: no workspace)."""
    ws = current_workspace(request)
    return ws.pk if ws else None


def workspace_switch(request, workspace_id: int) -> Workspace:
    """Make `workspace_id` the session's workspace. 404 when `request.user` is not a
    member (a workspace of others does not exist for them)."""
    workspace = workspace_get_for_user(request.user, workspace_id, RATER)
    request.session[SESSION_KEY] = workspace.pk
    request._flask_workspace = workspace
    return workspace


def workspace_by_slug(slug: str | None) -> Workspace:
    """The workspace named by `slug` (the command line's ``--workspace``); the default
    workspace when `slug` is empty. `Workspace.DoesNotExist` when there is none."""
    if not slug:
        return default_workspace()
    return Workspace.objects.get(slug=slug)


def workspace_for_create(user: User, raw=None, needed: str = RESEARCHER) -> Workspace:
    """The workspace an API call creates in: the ``workspace`` parameter `raw` (an id;
    404 when `user` is not a member, 403 when the role there is below `needed`), else
    `user`'s first workspace by name where they hold `needed` (403 when none)."""
    if raw not in (None, ""):
        text = str(raw).strip()
        if not text.isdigit() or len(text) > 18:
            raise Http404("No such workspace.")
        return workspace_get_for_user(user, int(text), needed)
    for workspace, role in user_workspaces(user):
        if role_at_least(role, needed):
            return workspace
    raise PermissionDenied(f"This needs the {needed} role in a workspace.")


def filter_by_workspace_param(queryset, user: User, raw, *, field: str = "workspace"):
    """An API list's optional ``?workspace=<id>`` filter: `queryset` (already scoped
    by membership) narrowed to that workspace; 404 when `user` is not a member (or
    `raw` is not an id). No parameter: `queryset` unchanged."""
    if raw in (None, ""):
        return queryset
    text = str(raw).strip()
    if not text.isdigit() or len(text) > 18 or workspace_role(user, int(text)) is None:
        raise Http404("No such workspace.")
    return queryset.filter(**{f"{field}_id": int(text)})


def non_members(users, workspace_id: int) -> list:
    """Those of `users` who are not members of the workspace (one query): a
    campaign's raters must belong to its workspace."""
    users = list(users)
    if not users:
        return []
    inside = set(
        Membership.objects.filter(
            workspace_id=workspace_id, user_id__in=[u.pk for u in users]
        ).values_list("user_id", flat=True)
    )
    return [u for u in users if u.pk not in inside]


def membership_ensure(
    *, workspace: Workspace, user: User, role: str, actor: User | None = None
) -> Membership:
    """`user` is a member of `workspace` (with `role` when newly added; an existing
    member keeps their role). Records ``membership.added`` in the audit log when it
    adds. Joins the caller's transaction."""
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(
            workspace=workspace, user=user, defaults={"role": role}
        )
        if created:
            audit_record(
                action="membership.added",
                actor=actor,
                workspace=workspace,
                target=user,
                target_label=user.get_username(),
                after={"role": role},
            )
    forget_roles(user)
    return membership


def require_role_somewhere(user: User, needed: str) -> str:
    """`user`'s highest role when it includes `needed` somewhere, else a 403 naming
    the role. Checked before an object is read, so that the answer (403) is the same
    whether or not the object exists; the object's own workspace is checked after."""
    role = highest_role(user)
    if not role_at_least(role, needed):
        raise PermissionDenied(f"This needs the {needed} role in a workspace.")
    return role  # type: ignore[return-value]
