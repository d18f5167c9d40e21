"""Shared by the judging commands (Django skips command modules starting with `_`)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from annotation import roles


def command_user(username: str | None):
    """The user a command acts as: `--user` (a researcher or admin), else the first
    active superuser or admin. The services check the role again."""
    User = get_user_model()
    if username:
        user = User.objects.filter(username=username, is_active=True).first()
        if user is None:
            raise CommandError(f"no active user named {username!r}")
        if not roles.is_researcher(user):
            raise CommandError(f"{username} is neither a researcher nor an admin")
        return user
    user = (
        User.objects.filter(is_active=True, is_superuser=True).order_by("pk").first()
        or User.objects.filter(is_active=True, groups__name=roles.ADMIN)
        .order_by("pk")
        .first()
    )
    if user is None:
        raise CommandError("no admin user exists; pass --user USERNAME")
    return user
