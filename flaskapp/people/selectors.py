"""Reads of workspaces and people, permission-scoped: a workspace another user is
not a member of is a 404 for them (`flaskapp.workspaces.workspace_get_for_user`);
the member lists, invite links and audit rows are the owners'."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db.models import Case, Count, Prefetch, QuerySet, Value, When

from flaskapp import roles
from flaskapp.models import AuditEvent, InviteLink, Membership, Workspace
from flaskapp.people.services.invites import invite_state
from flaskapp.workspaces import (
    OWNER,
    ROLE_RANK,
    workspace_get_for_user,
    workspace_role,
)


@dataclass(frozen=True)
class WorkspaceRow:
    workspace: Workspace
    role: str | None  # the user's role there (None: an admin who is not a member)
    member_count: int


def workspace_list_for_user(*, user: User) -> list[WorkspaceRow]:
    """The workspaces `user` belongs to with their role there, by name; every
    workspace for an instance admin (their `role` is their membership's, or None).
    Two queries."""
    qs = Workspace.objects.annotate(member_count=Count("memberships")).order_by("name")
    mine = dict(
        Membership.objects.filter(user_id=user.pk).values_list("workspace_id", "role")
    )
    if not roles.is_admin(user):
        qs = qs.filter(pk__in=list(mine))
    return [WorkspaceRow(ws, mine.get(ws.pk), ws.member_count) for ws in qs]


def workspace_get_for_owner(*, user: User, workspace_id: int) -> Workspace:
    """The workspace when `user` owns it (or is an instance admin): 404 for a
    non-member, 403 naming the owner role below it."""
    return workspace_get_for_user(user, workspace_id, OWNER)


def member_list(*, workspace: Workspace) -> QuerySet[Membership]:
    """The members of `workspace` with their accounts, owners first then by name.
    One query."""
    rank = Case(
        *[When(role=role, then=Value(n)) for role, n in ROLE_RANK.items()],
        default=Value(0),
    )
    return (
        Membership.objects.filter(workspace=workspace)
        .select_related("user")
        .annotate(role_rank=rank)
        .order_by("-role_rank", "user__username")
    )


def member_get(*, workspace: Workspace, user_id: int) -> Membership | None:
    return (
        Membership.objects.filter(workspace=workspace, user_id=user_id)
        .select_related("user")
        .first()
    )


def owner_count(*, workspace: Workspace) -> int:
    return Membership.objects.filter(workspace=workspace, role=OWNER).count()


@dataclass(frozen=True)
class InviteRow:
    invite: InviteLink
    state: str


def invite_list(*, workspace: Workspace, limit: int = 50) -> list[InviteRow]:
    """The newest invite links of `workspace` with their state. One query."""
    return [
        InviteRow(invite, invite_state(invite))
        for invite in InviteLink.objects.filter(workspace=workspace)
        .select_related("created_by")
        .order_by("-created_at", "-id")[:limit]
    ]


# How the settings page words the people's audit actions.
ACTION_WORDS = {
    "workspace.created": "created the workspace",
    "workspace.renamed": "renamed the workspace",
    "membership.added": "added",
    "membership.role_changed": "changed the role of",
    "membership.removed": "removed",
    "invite.created": "made the invite link",
    "invite.used": "joined through the invite link",
    "invite.revoked": "revoked the invite link",
    "account.created": "created the account",
    "account.password_reset": "reset the password of",
}


def audit_list(*, workspace: Workspace, limit: int = 20) -> list[AuditEvent]:
    """The newest audit rows of `workspace`'s people (memberships, invites,
    accounts, the workspace itself), each with `words` saying what happened. One
    query."""
    rows = list(
        AuditEvent.objects.filter(
            workspace=workspace, action__in=list(ACTION_WORDS)
        ).order_by("-created_at", "-id")[:limit]
    )
    for row in rows:
        before, after = row.before or {}, row.after or {}
        row.words = ACTION_WORDS[row.action]
        if row.action.startswith("invite."):
            row.subject = f"{after.get('prefix') or before.get('prefix', '')}…"
            row.note = after.get("role", "")
        else:
            row.subject = row.target_label
            row.note = ""
        if row.action.startswith("membership."):
            new = after.get("role") or "no longer a member"
            row.note = f"{before['role']} → {new}" if before.get("role") else new
    return rows


def user_list_for_admin(*, user: User) -> QuerySet[User]:
    """Every account (imported score holders left out) with its memberships, for an
    instance admin (`PermissionDenied` otherwise). Two queries."""
    roles.require_admin(user)
    return (
        User.objects.exclude(username__startswith=roles.IMPORTED_PREFIX)
        .order_by("username")
        .prefetch_related(
            Prefetch(
                "workspace_memberships",
                queryset=Membership.objects.select_related("workspace").order_by(
                    "workspace__name"
                ),
            ),
            "groups",
        )
    )


def role_of(*, user: User, workspace: Workspace) -> str | None:
    return workspace_role(user, workspace.pk)
