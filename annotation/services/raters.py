"""Rater accounts, managed in the app by admins and researchers: create one, reset
its password. (Adding one to a campaign is the campaign's rule:
`services.campaigns.campaign_add_rater`.)

Passwords follow the project's one rule, Django's `AUTH_PASSWORD_VALIDATORS` (minimum
length, common passwords, all digits, similarity to the username), whether typed or
generated. A generated password is returned once, to be shown once and handed to the
rater; only its hash is stored. Either way the password is temporary
(`TemporaryPassword`): the rater must choose their own at their next login, and
cannot get an API token before.

Only plain rater accounts are managed here (`roles.plain_rater_problem`: active, the
rater role and no other group, no staff or superuser flag, no permission of its
own); any other account is refused, so that a researcher can never take over a more
powerful account by resetting its password. Those accounts are managed in the Django
admin.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.http import Http404

from annotation.models import TemporaryPassword
from flaskapp import roles, tokens, workspaces

# The account rules are the kernel's (`flaskapp.credentials`, one home); kept
# importable from here for the app's callers.
from flaskapp.credentials import (  # noqa: F401
    password_generate,
    password_problems,
    username_problems,
)
from flaskapp.errors import DomainError, Problem


def rater_create(
    *, user: User, username: str, password: str = "", workspace=None
) -> tuple[User, str]:
    """Create an active account with the rater role (and no other), a rater member
    of `workspace` (None: the user's first workspace as researcher), where the
    creating user must be a researcher.

    `password` empty: one is generated. Returns (rater, password_to_show), the second
    being the generated password, or "" when `password` was given (a typed password
    is never shown back). Needs the researcher role (`PermissionDenied`). Refuses,
    naming the field, an empty, malformed or taken `username` (case-insensitively)
    and a `password` the validators refuse (`DomainError`; nothing is written).
    """
    if workspace is None:
        workspace = workspaces.workspace_for_create(user)
    else:
        workspaces.require_workspace_role(user, workspace.pk, workspaces.RESEARCHER)
    username = (username or "").strip()
    problems = username_problems(username)
    generated = not password
    if generated:
        password = password_generate()
    else:
        problems += password_problems(password, User(username=username))
    if problems:
        raise DomainError("the rater was not created", problems)
    with transaction.atomic():
        rater = User(username=username, is_active=True)
        rater.set_password(password)
        rater.save()
        rater.groups.add(Group.objects.get(name=roles.RATER))
        workspaces.membership_ensure(
            workspace=workspace, user=rater, role=workspaces.RATER, actor=user
        )
        _mark_temporary(rater, user)
    return rater, password if generated else ""


def _mark_temporary(rater: User, by: User) -> None:
    """The rater must choose their own password at their next login."""
    password_mark_temporary(user=rater, by=by)


def password_mark_temporary(*, user: User, by: User) -> None:
    """`user`'s password was set by `by`: they must choose their own at their next
    login and get no API token before (`TemporaryPassword`). Idempotent."""
    TemporaryPassword.objects.update_or_create(user=user, defaults={"set_by": by})


def password_changed_by_owner(*, user: User) -> None:
    """`user` chose their own password: it is no longer temporary."""
    TemporaryPassword.objects.filter(user=user).delete()


def _require_plain_rater(rater: User) -> None:
    """`DomainError` naming ``rater`` unless `rater` is a plain rater account
    (`roles.plain_rater_problem`, the one definition)."""
    if problem := roles.plain_rater_problem(rater):
        raise DomainError(
            "not managed here: only plain rater accounts are",
            [Problem(problem, field="rater")],
        )


def rater_password_reset(*, user: User, rater: User, password: str = "") -> str:
    """Give the plain rater account `rater` a new password, generated when `password`
    is empty. Returns the password to show ("" when it was typed).

    Side effects: the rater's API tokens are revoked (whoever held the old password
    may have made some); their sessions end at the next request, as Django ends a
    session whose password hash changed. Needs the researcher role
    (`PermissionDenied`); `DomainError` naming ``rater`` for an account that is not a
    plain rater, ``password`` for a refused password (nothing changes).
    """
    roles.require_researcher(user)
    # Only a rater of a workspace where `user` is a researcher (else: no such rater).
    ids = workspaces.workspace_ids_with_role(user, workspaces.RESEARCHER)
    rater_ids = workspaces.workspace_ids_for_user(rater)  # None: an instance admin
    if ids is not None and rater_ids is not None and not set(ids) & set(rater_ids):
        raise Http404("No such rater.")
    _require_plain_rater(rater)
    generated = not password
    if generated:
        password = password_generate()
    elif problems := password_problems(password, rater):
        raise DomainError("the password was not changed", problems)
    with transaction.atomic():
        rater.set_password(password)
        rater.save(update_fields=["password"])
        tokens.token_revoke_all(user=rater)
        _mark_temporary(rater, user)
    return password if generated else ""
