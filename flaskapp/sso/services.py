"""Single sign-on's writes: the local account of a provider's person, and the
workspace memberships its claims give (`OIDC_ROLE_MAP`).

Membership rule: the provider decides the roles in the workspaces the role map names
(the *managed* workspaces): at each sign-in the user holds there the highest role any
of their claim values maps to, and no membership where none does. Workspaces the map
does not name are left to their owners. Every change is one audit row
(``membership.added``, ``membership.role_changed``, ``membership.removed``) with
``"source": "sso"`` and the claim values that decided it.
"""

from __future__ import annotations

import hashlib
import logging
import re

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from flaskapp.models import Membership, SsoIdentity, Workspace
from flaskapp.sso.config import RoleMap, groups_from_claims
from flaskapp.workspaces import ROLE_RANK, audit_record, forget_roles

log = logging.getLogger(__name__)

# Django's username rule (letters, digits and @.+-_), 150 characters at most.
_NOT_USERNAME = re.compile(r"[^\w.@+-]")
_USERNAME_MAX = 150
_SUBJECT_MAX = 255  # SsoIdentity's columns (OpenID Connect: `sub` is at most 255)


class SsoRefused(Exception):
    """The provider's answer cannot sign anyone in; the message says why and holds
    nothing secret (it is shown on the sign-in failure page, with `status`)."""

    status = 403


def _username_candidate(claims: dict, username_claim: str) -> str:
    for raw in (
        claims.get(username_claim),
        (claims.get("email") or "").partition("@")[0],
    ):
        if isinstance(raw, str):
            cleaned = _NOT_USERNAME.sub("", raw.strip())[:_USERNAME_MAX]
            if cleaned:
                return cleaned
    return "sso-" + hashlib.sha256(str(claims["sub"]).encode()).hexdigest()[:12]


def _free_username(candidate: str, *, issuer: str, subject: str) -> str:
    """`candidate`, or `candidate` with a suffix derived from the identity when a
    local account already has that name (a provider's "alice" never becomes the local
    "alice": that would hand over her account)."""
    user_model = get_user_model()
    if not user_model.objects.filter(username__iexact=candidate).exists():
        return candidate
    digest = hashlib.sha256(f"{issuer} {subject}".encode()).hexdigest()
    for size in (6, 12, 64):
        name = f"{candidate[: _USERNAME_MAX - size - 1]}-{digest[:size]}"
        if not user_model.objects.filter(username__iexact=name).exists():
            return name
    raise SsoRefused("no free username could be made for this account")


def _identity_create(
    *, issuer: str, subject: str, username: str, profile: dict
) -> SsoIdentity:
    """A new account and its identity row; when a concurrent first sign-in of the
    same person won the race (the unique constraint), that one's row."""
    try:
        with transaction.atomic():
            user = get_user_model().objects.create_user(username, **profile)
            identity = SsoIdentity.objects.create(
                user=user, issuer=issuer, subject=subject
            )
    except IntegrityError:
        identity = (
            SsoIdentity.objects.select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None:  # the username was taken meanwhile
            raise SsoRefused(
                "another account was being created with this name: sign in again"
            ) from None
        return identity
    log.info("single sign-on: new account %s for %s", username, identity)
    return identity


def _profile(claims: dict) -> dict:
    def text(key: str, limit: int) -> str:
        value = claims.get(key)
        return value.strip()[:limit] if isinstance(value, str) else ""

    return {
        "email": text("email", 254),
        "first_name": text("given_name", 150),
        "last_name": text("family_name", 150),
    }


def sso_user_sync(
    *, issuer: str, claims: dict, username_claim: str = "preferred_username"
) -> AbstractBaseUser:
    """The active local account of the provider's person (`issuer`, ``claims["sub"]``),
    created on their first sign-in (username from `username_claim`, else the e-mail's
    local part, else derived from `sub`; made unique; no usable password), its e-mail
    and names refreshed from the claims on every sign-in.

    Preconditions: the claims come from a verified ID token (and the userinfo answer
    for the same `sub`). Raises `SsoRefused` when `sub` is missing or the account was
    deactivated. Idempotent: a second call with the same claims changes nothing but
    `last_login_at`. Runs in its own transaction (joins the caller's)."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise SsoRefused("the provider's answer names no user (no `sub` claim)")
    if len(subject) > _SUBJECT_MAX or len(issuer) > _SUBJECT_MAX:
        raise SsoRefused("the provider's `sub` or `iss` is longer than 255 characters")
    profile = _profile(claims)
    with transaction.atomic():
        identity = (
            SsoIdentity.objects.select_for_update()
            .select_related("user")
            .filter(issuer=issuer, subject=subject)
            .first()
        )
        if identity is None:
            identity = _identity_create(
                issuer=issuer,
                subject=subject,
                username=_free_username(
                    _username_candidate(claims, username_claim),
                    issuer=issuer,
                    subject=subject,
                ),
                profile=profile,
            )
            user = identity.user
        else:
            user = identity.user
            if not user.is_active:
                raise SsoRefused(
                    "this account is deactivated here: ask an admin to reactivate it"
                )
            changed = [f for f, v in profile.items() if getattr(user, f) != v]
            for field in changed:
                setattr(user, field, profile[field])
            if changed:
                user.save(update_fields=changed)
        identity.last_login_at = timezone.now()
        identity.save(update_fields=["last_login_at"])
    return user


def _wanted_roles(groups: list[str], role_map: RoleMap) -> dict[str, tuple[str, list]]:
    """{workspace slug: (highest role, the claim values that give it)}."""
    wanted: dict[str, tuple[str, list]] = {}
    for value in groups:
        for slug, role in role_map.get(value, []):
            held = wanted.get(slug)
            if held is None or ROLE_RANK[role] > ROLE_RANK[held[0]]:
                wanted[slug] = (role, [value])
            elif role == held[0]:
                held[1].append(value)
    return wanted


def sso_memberships_sync(
    *, user: AbstractBaseUser, claims: dict, role_map: RoleMap
) -> list[dict]:
    """Make `user`'s memberships in the workspaces `role_map` names follow the groups
    in `claims` (module docstring: the highest mapped role, none when nothing maps).
    Workspaces of the map that do not exist are skipped with a warning in the log
    (an admin creates them). Returns the changes made, one dict per membership
    (``{"workspace", "before", "after"}``; role None = no membership), each also
    written as an audit row in the same transaction. Idempotent: with the same
    claims a second call changes nothing and audits nothing. Locks the user's
    memberships in the managed workspaces."""
    groups = groups_from_claims(claims)
    wanted = _wanted_roles(groups, role_map)
    managed = {slug for targets in role_map.values() for slug, _ in targets}
    changes: list[dict] = []
    with transaction.atomic():
        workspaces = {w.slug: w for w in Workspace.objects.filter(slug__in=managed)}
        for slug in sorted(set(wanted) - set(workspaces)):
            log.warning(
                "OIDC_ROLE_MAP names the workspace %r, which does not exist", slug
            )
        held = {
            m.workspace_id: m
            for m in Membership.objects.select_for_update().filter(
                user=user, workspace__in=workspaces.values()
            )
        }
        for slug, workspace in sorted(workspaces.items()):
            membership = held.get(workspace.pk)
            before = membership.role if membership else None
            after, values = wanted.get(slug, (None, []))
            if before == after:
                continue
            if membership is None:
                membership = Membership.objects.create(
                    workspace=workspace, user=user, role=after
                )
                action = "membership.added"
            elif after is None:
                membership.delete()
                action = "membership.removed"
            else:
                membership.role = after
                membership.save(update_fields=["role"])
                action = "membership.role_changed"
            audit_record(
                action=action,
                actor=None,
                workspace=workspace,
                target=user,
                before={"role": before},
                after={"role": after, "source": "sso", "claim_values": values},
            )
            changes.append({"workspace": slug, "before": before, "after": after})
    forget_roles(user)
    return changes


def sso_login(
    *, issuer: str, claims: dict, role_map: RoleMap, username_claim: str
) -> AbstractBaseUser:
    """A verified sign-in: `sso_user_sync` then `sso_memberships_sync`, in one
    transaction (a failure leaves no account and no membership half made)."""
    with transaction.atomic():
        user = sso_user_sync(
            issuer=issuer, claims=claims, username_claim=username_claim
        )
        sso_memberships_sync(user=user, claims=claims, role_map=role_map)
    return user
