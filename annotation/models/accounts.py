"""Accounts: which passwords were set by someone other than their owner."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class TemporaryPassword(models.Model):
    """The account's password was set by an admin or researcher (`services.raters`):
    its owner must choose their own before anything else (`flaskapp.middleware.
    TemporaryPasswordMiddleware`). Deleted when they do."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="temporary_password",
    )
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    set_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"temporary password of {self.user_id}"
