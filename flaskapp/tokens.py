"""API tokens: hashed, expiring, revocable (django-rest-knox's `AuthToken`).

A token is 64 hex characters shown once, when it is made; the database keeps only its
SHA-512 digest and its first 15 characters (`token_prefix`, to tell tokens apart in a
list). Every token expires `API_TOKEN_TTL_DAYS` days after it was made (30 by
default); an expired token is refused like an unknown one. Writes here, reads in
`token_list`; the views (`flaskapp.accounts`) and `manage.py api_token` call these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone
from knox.models import AuthToken


@dataclass(frozen=True)
class IssuedToken:
    token: str  # the secret: shown once, never stored
    token_prefix: str
    created: datetime
    expiry: datetime | None


def token_ttl() -> timedelta:
    return timedelta(days=settings.API_TOKEN_TTL_DAYS)


def token_create(*, user) -> IssuedToken:
    """Make a new token for `user`, valid for `token_ttl()`; returns its secret once."""
    instance, token = AuthToken.objects.create(user=user, expiry=token_ttl())
    return IssuedToken(token, instance.token_key, instance.created, instance.expiry)


def token_list(*, user) -> list[AuthToken]:
    """`user`'s tokens that are still valid, newest first (expired ones are deleted)."""
    AuthToken.objects.filter(user=user, expiry__lt=timezone.now()).delete()
    return list(AuthToken.objects.filter(user=user).order_by("-created"))


def token_revoke(*, token: AuthToken) -> None:
    """Revoke one token (the one a request was made with)."""
    AuthToken.objects.filter(digest=token.digest).delete()


def token_revoke_all(*, user) -> int:
    """Revoke every token of `user`; returns how many there were."""
    count, _ = AuthToken.objects.filter(user=user).delete()
    return count
