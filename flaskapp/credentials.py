"""Account credentials in the kernel: the one rule for a new username and for a
password (Django's `AUTH_PASSWORD_VALIDATORS`), a generated password, and marking a
password as temporary (set by someone else: its owner must choose their own at the
next login and gets no API token before).

`flaskapp.people` (members, invite links, bulk accounts) and the annotation app's
rater accounts (`annotation.services.raters`) call these; the kernel imports no app
(the import contracts in pyproject.toml). Where a temporary password is recorded
belongs to the annotation app (its `TemporaryPassword` table): it registers its
recorder with `temporary_password_recorder_register` from its `AppConfig.ready`, so
the kernel calls it without importing it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

from django.contrib.auth.models import User
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ImproperlyConfigured, ValidationError

from flaskapp.errors import Problem

# 16 URL-safe characters (96 bits): far beyond any validator, easy to copy.
GENERATED_PASSWORD_BYTES = 12
USERNAME_MAX = User._meta.get_field("username").max_length

TemporaryPasswordRecorder = Callable[..., None]  # (*, user: User, by: User) -> None
_recorder: list[TemporaryPasswordRecorder] = []


def password_generate() -> str:
    """A random password that passes the validators (96 bits from `secrets`)."""
    while True:
        password = secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)
        # All-digit or validator-refused draws are astronomically rare; draw again.
        try:
            validate_password(password)
        except ValidationError:
            continue
        return password


def username_problems(username: str, *, field: str = "username") -> list[Problem]:
    """Why `username` cannot name a new account (empty list: it can): the one rule for
    every way an account is made in the app (a rater, an invite link's sign-up, the
    bulk accounts of `flaskapp.people`). Empty, too long, characters Django's
    validator refuses, or taken (case-insensitively). One query at most."""
    if not username:
        return [Problem("is empty", field=field)]
    if len(username) > USERNAME_MAX:
        return [Problem(f"is longer than {USERNAME_MAX} characters", field=field)]
    try:
        User.username_validator(username)
    except ValidationError:
        return [Problem("may contain only letters, digits and @ . + - _", field=field)]
    if User.objects.filter(username__iexact=username).exists():
        return [Problem(f"{username!r} is taken", field=field)]
    return []


def password_problems(password: str, user: User) -> list[Problem]:
    """The project's password rules (`AUTH_PASSWORD_VALIDATORS`) applied to
    `password` for `user` (unsaved is fine), one problem naming ``password`` each."""
    try:
        validate_password(password, user=user)
    except ValidationError as exc:
        return [Problem(message, field="password") for message in exc.messages]
    return []


def temporary_password_recorder_register(recorder: TemporaryPasswordRecorder) -> None:
    """Make `recorder(user=..., by=...)` the one that records a temporary password
    (called once, by the annotation app's `ready`; a second call replaces it, so a
    reloaded app registers without piling up)."""
    _recorder[:] = [recorder]


def password_mark_temporary(*, user: User, by: User) -> None:
    """`user`'s password was set by `by`: they must choose their own at their next
    login and get no API token before. Idempotent (as the registered recorder).
    `ImproperlyConfigured` when no app registered a recorder: a password set by
    someone else must never pass for the owner's own."""
    if not _recorder:
        raise ImproperlyConfigured(
            "No temporary-password recorder is registered (the annotation app's "
            "ready() registers it)."
        )
    _recorder[0](user=user, by=by)
