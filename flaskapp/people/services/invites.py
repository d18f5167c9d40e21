"""Invite links: an owner makes a link with a role, an expiry and a number of uses;
whoever opens it joins the workspace in that role, with a new account or the one
they are logged in with.

The token is 32 random bytes (`secrets.token_urlsafe`); only its SHA-256 is stored
(a token this long needs no slow hash: it cannot be guessed, only stolen), so the
link is shown once, in the answer that made it. A join spends one use with a
conditional ``UPDATE ... WHERE uses < max_uses AND not revoked AND not expired``, so
two people racing for a one-use link cannot both get in. Creation, use and
revocation are audited (``invite.created``, ``invite.used``, ``invite.revoked``);
the audit rows hold the token's prefix, never the token.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from flaskapp.credentials import password_problems, username_problems
from flaskapp.errors import DomainError, Problem
from flaskapp.models import InviteLink, Membership, Workspace
from flaskapp.people.services.members import member_enrol, role_problems
from flaskapp.workspaces import OWNER, ROLE_RANK, audit_record, require_workspace_role

TOKEN_BYTES = 32
PREFIX_CHARS = 6
# Bounds of what an owner may ask for: a link that lives at most 30 days and serves
# at most 1000 joins (a class of raters; beyond that, bulk accounts).
MAX_HOURS = 30 * 24
MAX_USES = 1000
UNIT_HOURS = {"hours": 1, "days": 24}

VALID = "valid"
EXPIRED = "expired"
USED_UP = "used_up"
REVOKED = "revoked"
STATE_MESSAGES = {
    EXPIRED: "This invite link has expired. Ask the workspace's owner for a new one.",
    USED_UP: "This invite link has been used as many times as it allows. Ask the "
    "workspace's owner for a new one.",
    REVOKED: "This invite link was revoked by the workspace's owner.",
}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def invite_state(invite: InviteLink) -> str:
    """``valid``, ``expired``, ``used_up`` or ``revoked`` (revoked wins)."""
    if invite.revoked_at is not None:
        return REVOKED
    if invite.uses >= invite.max_uses:
        return USED_UP
    if invite.expires_at <= timezone.now():
        return EXPIRED
    return VALID


def invite_find(token: str) -> InviteLink | None:
    """The invite link of `token` (None for an unknown or malformed token)."""
    if not token or len(token) > 100:
        return None
    return (
        InviteLink.objects.select_related("workspace")
        .filter(token_hash=token_hash(token))
        .first()
    )


@dataclass(frozen=True)
class NewInvite:
    invite: InviteLink
    token: str  # the secret: shown once, in the answer that made it


def _parse_positive(raw, field: str, high: int, what: str) -> tuple[int | None, list]:
    text = str(raw if raw is not None else "").strip()
    if not text.isascii() or not text.isdigit():
        return None, [Problem(f"must be a whole number of {what}", field=field)]
    value = int(text)
    if not 1 <= value <= high:
        return None, [Problem(f"must be between 1 and {high}", field=field)]
    return value, []


def invite_create(
    *,
    actor: User,
    workspace: Workspace,
    role: str,
    expires_in: object,
    unit: str = "days",
    max_uses: object = 1,
) -> NewInvite:
    """Make an invite link to `workspace` for `role`, valid for `expires_in` `unit`
    (``hours`` or ``days``, at most 30 days) and `max_uses` joins (1 to 1000). Needs
    the owner role there. `DomainError` naming ``role``, ``expires_in``, ``unit`` or
    ``max_uses``. Returns the row and the token, which exists nowhere else."""
    require_workspace_role(actor, workspace.pk, OWNER)
    problems = role_problems(role)
    if unit not in UNIT_HOURS:
        problems.append(Problem("must be hours or days", field="unit"))
        amount = None
    else:
        amount, more = _parse_positive(
            expires_in, "expires_in", MAX_HOURS // UNIT_HOURS[unit], unit
        )
        problems += more
    uses, more = _parse_positive(max_uses, "max_uses", MAX_USES, "uses")
    problems += more
    if problems:
        raise DomainError("the invite link was not made", problems)
    token = secrets.token_urlsafe(TOKEN_BYTES)
    with transaction.atomic():
        invite = InviteLink.objects.create(
            workspace=workspace,
            role=role,
            token_hash=token_hash(token),
            token_prefix=token[:PREFIX_CHARS],
            max_uses=uses,
            expires_at=timezone.now() + timedelta(hours=amount * UNIT_HOURS[unit]),
            created_by=actor,
        )
        audit_record(
            action="invite.created",
            actor=actor,
            workspace=workspace,
            target=invite,
            after=_snapshot(invite),
        )
    return NewInvite(invite=invite, token=token)


def _snapshot(invite: InviteLink) -> dict:
    return {
        "prefix": invite.token_prefix,
        "role": invite.role,
        "max_uses": invite.max_uses,
        "uses": invite.uses,
        "expires_at": invite.expires_at.isoformat(),
        "revoked": invite.revoked_at is not None,
    }


def invite_revoke(*, actor: User, workspace: Workspace, invite_id: int) -> InviteLink:
    """Revoke the invite link `invite_id` of `workspace`: it stops working at once.
    Needs the owner role. Idempotent (a revoked link stays revoked, one audit row).
    `DomainError` naming ``invite`` when `workspace` has no such link."""
    require_workspace_role(actor, workspace.pk, OWNER)
    with transaction.atomic():
        invite = (
            InviteLink.objects.select_for_update()
            .filter(workspace=workspace, pk=invite_id)
            .first()
        )
        if invite is None:
            raise DomainError(
                "nothing was revoked",
                [Problem("this workspace has no such invite link", field="invite")],
            )
        if invite.revoked_at is not None:
            return invite
        before = _snapshot(invite)
        invite.revoked_at = timezone.now()
        invite.save(update_fields=["revoked_at"])
        audit_record(
            action="invite.revoked",
            actor=actor,
            workspace=workspace,
            target=invite,
            before=before,
            after=_snapshot(invite),
        )
    return invite


def _refusal(state: str) -> DomainError:
    return DomainError(STATE_MESSAGES[state], [Problem(STATE_MESSAGES[state],
                                                       field="invite")])  # fmt: skip


def _spend(invite: InviteLink) -> None:
    """Spend one use of `invite` (in the caller's transaction) or raise the refusal
    that says why it cannot be used."""
    spent = InviteLink.objects.filter(
        pk=invite.pk,
        revoked_at__isnull=True,
        uses__lt=F("max_uses"),
        expires_at__gt=timezone.now(),
    ).update(uses=F("uses") + 1)
    if not spent:
        invite.refresh_from_db()
        raise _refusal(
            invite_state(invite) if invite_state(invite) != VALID else USED_UP
        )
    invite.refresh_from_db(fields=["uses"])


def _lock_workspace(invite: InviteLink) -> None:
    Workspace.objects.select_for_update().filter(pk=invite.workspace_id).first()


def _audit_use(invite: InviteLink, user: User, outcome: str) -> None:
    audit_record(
        action="invite.used",
        actor=user,
        workspace=invite.workspace,
        target=invite,
        after={**_snapshot(invite), "user": user.username, "outcome": outcome},
    )


def invite_join(*, invite: InviteLink, user: User) -> str:
    """The logged-in `user` joins through `invite`. Returns what happened:
    ``joined``, ``promoted`` (they were a member with a lower role: they get the
    link's role) or ``already`` (their role is the link's or higher: nothing
    changes and no use is spent). `DomainError` naming ``invite`` for an expired,
    used-up or revoked link."""
    state = invite_state(invite)
    if state != VALID:
        raise _refusal(state)
    with transaction.atomic():
        _lock_workspace(invite)
        membership = Membership.objects.filter(
            workspace_id=invite.workspace_id, user=user
        ).first()
        if (
            membership is not None
            and ROLE_RANK[membership.role] >= ROLE_RANK[invite.role]
        ):
            return "already"
        _spend(invite)
        if membership is None:
            member_enrol(actor=user, workspace=invite.workspace, user=user,
                        role=invite.role, via="invite")  # fmt: skip
            outcome = "joined"
        else:
            before = membership.role
            membership.role = invite.role
            membership.save(update_fields=["role"])
            audit_record(
                action="membership.role_changed",
                actor=user,
                workspace=invite.workspace,
                target=user,
                target_label=user.username,
                before={"user": user.username, "role": before},
                after={"user": user.username, "role": invite.role, "via": "invite"},
            )
            outcome = "promoted"
        _audit_use(invite, user, outcome)
    return outcome


def invite_sign_up(
    *, invite: InviteLink, username: str, password: str, password2: str, email: str = ""
) -> User:
    """Create an account through `invite` and make it a member in the link's role.
    The password follows the project's rules and is the person's own (not
    temporary). `DomainError` naming ``username``, ``email``, ``password`` or
    ``password2`` (the two passwords differ), or ``invite`` for an expired, used-up or
    revoked link; nothing is written then."""
    state = invite_state(invite)
    if state != VALID:
        raise _refusal(state)
    username = (username or "").strip()
    email = (email or "").strip()
    problems = username_problems(username)
    if email:
        try:
            validate_email(email)
        except ValidationError:
            problems.append(
                Problem(f"{email!r} is not an e-mail address", field="email")
            )
    if not password:
        problems.append(Problem("is empty", field="password"))
    else:
        problems += password_problems(password, User(username=username, email=email))
        if password != password2:
            problems.append(Problem("does not match the password", field="password2"))
    if problems:
        raise DomainError("the account was not created", problems)
    user = User(username=username, email=email, is_active=True)
    user.set_password(password)
    try:
        with transaction.atomic():
            # The workspace row first, then the link's: the order of `invite_join`
            # and of every membership change, so concurrent joins cannot deadlock.
            _lock_workspace(invite)
            _spend(invite)
            user.save()
            _signed_up(invite, user)
    except IntegrityError:  # the username was taken since the check above
        raise DomainError(
            "the account was not created",
            [Problem(f"{username!r} is taken", field="username")],
        ) from None
    return user


def _signed_up(invite: InviteLink, user: User) -> None:
    """The rows of a sign-up after the account: its audit, its membership, the use."""
    audit_record(
        action="account.created",
        actor=user,
        workspace=invite.workspace,
        target=user,
        target_label=user.username,
        after={"user": user.username, "via": "invite", "invite": invite.token_prefix},
    )
    member_enrol(actor=user, workspace=invite.workspace, user=user, role=invite.role,
                 via="invite")  # fmt: skip
    _audit_use(invite, user, "signed_up")
