"""A workspace's members: add one (by username or e-mail), change a role, remove
one, reset a member's password. Owners of the workspace (and instance admins) only:
every service checks it (`require_workspace_role`: 404 for a non-member, 403 below
owner), so no caller can forget.

The last owner rule: a workspace that has an owner keeps at least one; demoting or
removing its last owner is refused naming ``role`` / ``user``. Every change locks the
workspace row first, so two owners demoting each other at once cannot both succeed.

Password resets: an owner may reset only the password of a plain account
(`member_account_problem`), so that a reset never hands anyone more power than they
hold: never a superuser, a staff account, an instance admin, an account with a global
role other than rater or permissions of its own, nor one that holds, in another
workspace, a role higher than the resetting owner holds there.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction

from flaskapp import roles, tokens
from flaskapp.credentials import (
    password_generate,
    password_mark_temporary,
    password_problems,
)
from flaskapp.errors import DomainError, Problem
from flaskapp.models import Membership, Workspace
from flaskapp.workspaces import (
    OWNER,
    RATER,
    ROLE_RANK,
    WORKSPACE_ROLES,
    audit_record,
    forget_roles,
    require_workspace_role,
    workspace_role,
)

ROLE_WORDS = ", ".join(WORKSPACE_ROLES)


def role_problems(role: str, *, field: str = "role") -> list[Problem]:
    """Why `role` is not a workspace role ([] when it is)."""
    if not role:
        return [Problem(f"is empty: choose one of {ROLE_WORDS}", field=field)]
    if role not in ROLE_RANK:
        return [Problem(f"{role!r} is not a role: use {ROLE_WORDS}", field=field)]
    return []


def account_find(who: str, *, field: str = "user") -> User:
    """The active account whose username (or else e-mail) is `who`,
    case-insensitively. `DomainError` naming `field` when there is none, when it is
    deactivated, or when several accounts share that e-mail."""
    who = (who or "").strip()
    if not who:
        raise DomainError("no account was found", [Problem("is empty", field=field)])
    user = User.objects.filter(username__iexact=who).first()
    if user is None and "@" in who:
        matches = list(User.objects.filter(email__iexact=who)[:2])
        if len(matches) > 1:
            raise DomainError(
                "no account was found",
                [Problem(f"several accounts have the e-mail {who!r}: give the "
                         "username", field=field)],
            )  # fmt: skip
        user = matches[0] if matches else None
    if user is None or roles.is_imported_account(user.username):
        raise DomainError(
            "no account was found",
            [Problem(f"no account has the username or e-mail {who!r}; send them "
                     "an invite link instead", field=field)],
        )  # fmt: skip
    if not user.is_active:
        raise DomainError(
            "no account was found",
            [Problem(f"{user.username} is deactivated", field=field)],
        )
    return user


def _lock(workspace: Workspace) -> None:
    Workspace.objects.select_for_update().filter(pk=workspace.pk).first()


def _membership(workspace: Workspace, user_id: int) -> Membership:
    membership = (
        Membership.objects.select_for_update()
        .select_related("user")
        .filter(workspace=workspace, user_id=user_id)
        .first()
    )
    if membership is None:
        raise DomainError(
            "nothing was changed",
            [Problem("is not a member of this workspace", field="user")],
        )
    return membership


def _is_last_owner(membership: Membership) -> bool:
    return (
        membership.role == OWNER
        and not Membership.objects.filter(
            workspace_id=membership.workspace_id, role=OWNER
        )
        .exclude(pk=membership.pk)
        .exists()
    )


def member_add(
    *, actor: User, workspace: Workspace, user: User, role: str, via: str = "owner"
) -> Membership:
    """Make `user` a member of `workspace` in `role`. Needs the owner role there.
    `DomainError` naming ``role`` for an unknown role and ``user`` for an account that
    is already a member (change its role instead). Audited as ``membership.added``
    (`via` says how: ``owner``, ``invite``, ``bulk``)."""
    require_workspace_role(actor, workspace.pk, OWNER)
    return member_enrol(actor=actor, workspace=workspace, user=user, role=role, via=via)


def member_enrol(
    *, actor: User | None, workspace: Workspace, user: User, role: str, via: str
) -> Membership:
    """`member_add` without the owner check, for the callers whose check is their
    own: an invite link's join (the link is the permission) and the bulk accounts
    (which check the owner role once for the whole file). Joins the caller's
    transaction."""
    if problems := role_problems(role):
        raise DomainError("the member was not added", problems)
    with transaction.atomic():
        _lock(workspace)
        existing = Membership.objects.filter(workspace=workspace, user=user).first()
        if existing is not None:
            raise DomainError(
                "the member was not added",
                [Problem(f"{user.username} is already a member ({existing.role}); "
                         "change their role instead", field="user")],
            )  # fmt: skip
        membership = Membership.objects.create(
            workspace=workspace, user=user, role=role
        )
        rater_account_ensure(user=user, role=role)
        audit_record(
            action="membership.added",
            actor=actor,
            workspace=workspace,
            target=user,
            target_label=user.username,
            after={"user": user.username, "role": role, "via": via},
        )
    forget_roles(user)
    return membership


def rater_account_ensure(*, user: User, role: str) -> None:
    """A workspace's rater can be served items: rating belongs to accounts of the
    rater kind (the global ``rater`` group, `roles.is_rater`), which a rater
    membership grants. Other roles add nothing (a researcher is not a rater). Joins
    the caller's transaction; idempotent."""
    if role == RATER:
        group, _ = Group.objects.get_or_create(name=roles.RATER)
        user.groups.add(group)


def member_role_change(
    *, actor: User, workspace: Workspace, user_id: int, role: str
) -> Membership:
    """Give the member `user_id` of `workspace` the role `role`. Needs the owner role.
    `DomainError` naming ``role`` for an unknown role or for demoting the last owner,
    ``user`` for an account that is not a member. Audited as
    ``membership.role_changed`` with both roles; the same role again changes and
    writes nothing."""
    require_workspace_role(actor, workspace.pk, OWNER)
    if problems := role_problems(role):
        raise DomainError("the role was not changed", problems)
    with transaction.atomic():
        _lock(workspace)
        membership = _membership(workspace, user_id)
        before = membership.role
        if before == role:
            return membership
        if role != OWNER and _is_last_owner(membership):
            raise DomainError(
                "the role was not changed",
                [Problem(f"{membership.user.username} is the last owner of this "
                         "workspace: make someone else an owner first", field="role")],
            )  # fmt: skip
        membership.role = role
        membership.save(update_fields=["role"])
        rater_account_ensure(user=membership.user, role=role)
        audit_record(
            action="membership.role_changed",
            actor=actor,
            workspace=workspace,
            target=membership.user,
            target_label=membership.user.username,
            before={"user": membership.user.username, "role": before},
            after={"user": membership.user.username, "role": role},
        )
    forget_roles(membership.user)
    return membership


def member_remove(*, actor: User, workspace: Workspace, user_id: int) -> None:
    """Remove the member `user_id` from `workspace` (the account stays). Needs the
    owner role. `DomainError` naming ``user`` for a non-member or the last owner.
    Audited as ``membership.removed`` with the role they held."""
    require_workspace_role(actor, workspace.pk, OWNER)
    with transaction.atomic():
        _lock(workspace)
        membership = _membership(workspace, user_id)
        if _is_last_owner(membership):
            raise DomainError(
                "the member was not removed",
                [Problem(f"{membership.user.username} is the last owner of this "
                         "workspace: make someone else an owner first", field="user")],
            )  # fmt: skip
        before = {"user": membership.user.username, "role": membership.role}
        membership.delete()
        audit_record(
            action="membership.removed",
            actor=actor,
            workspace=workspace,
            target=membership.user,
            target_label=membership.user.username,
            before=before,
        )
    forget_roles(membership.user)


def member_account_problem(*, actor: User, workspace: Workspace, user: User) -> str:
    """Why an owner of `workspace` may not reset `user`'s password ("" when they
    may): the rule of this module's docstring, in the style of
    `roles.plain_rater_problem`. A few queries; reads the database, not the role
    caches of `user`."""
    name = user.get_username()
    managed = "only an instance admin manages it"
    if user.pk == actor.pk:
        return "your own password is changed on your account's password page"
    if not user.is_active:
        return f"{name} is deactivated; {managed}"
    if user.is_superuser:
        return f"{name} is a superuser; {managed}"
    if user.is_staff:
        return f"{name} has the staff flag (Django admin access); {managed}"
    groups = set(user.groups.values_list("name", flat=True)) - {roles.RATER}
    if groups:
        return f"{name} also holds the instance-wide {', '.join(sorted(groups))} role; {managed}"  # noqa: E501
    if user.user_permissions.exists():
        return f"{name} holds permissions of its own; {managed}"
    elsewhere = (
        Membership.objects.filter(user=user)
        .exclude(workspace=workspace)
        .select_related("workspace")
        .order_by("workspace__name")
    )
    for membership in elsewhere:
        mine = workspace_role(actor, membership.workspace_id)
        if mine is None or ROLE_RANK[mine] < ROLE_RANK[membership.role]:
            return (
                f"{name} is {membership.role} in workspace "
                f"{membership.workspace.name!r}, where you are "
                f"{mine or 'not a member'}; its owners or an instance admin manage it"
            )
    return ""


def member_password_reset(
    *, actor: User, workspace: Workspace, user_id: int, password: str = ""
) -> tuple[User, str]:
    """Give the member `user_id` of `workspace` a new password, generated when
    `password` is empty. Returns (member, password to show once; "" when typed).
    Needs the owner role. `DomainError` naming ``user`` for a non-member or an
    account the owner may not reset (`member_account_problem`), ``password`` for a
    password the project's rules refuse; nothing changes then.

    Side effects: the password is temporary (they choose their own at their next
    login), their API tokens are revoked and their sessions end. Audited as
    ``account.password_reset`` (never with the password)."""
    require_workspace_role(actor, workspace.pk, OWNER)
    with transaction.atomic():
        membership = _membership(workspace, user_id)
        member = membership.user
        if problem := member_account_problem(
            actor=actor, workspace=workspace, user=member
        ):
            raise DomainError(
                "the password was not changed", [Problem(problem, field="user")]
            )
        generated = not password
        if generated:
            password = password_generate()
        elif problems := password_problems(password, member):
            raise DomainError("the password was not changed", problems)
        member.set_password(password)
        member.save(update_fields=["password"])
        tokens.token_revoke_all(user=member)
        password_mark_temporary(user=member, by=actor)
        audit_record(
            action="account.password_reset",
            actor=actor,
            workspace=workspace,
            target=member,
            target_label=member.username,
            after={"user": member.username, "temporary": True,
                   "generated": generated},
        )  # fmt: skip
    return member, password if generated else ""
