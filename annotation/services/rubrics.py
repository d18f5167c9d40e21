"""Rubric reads and writes that other services share."""

from __future__ import annotations

from django.utils import timezone

from annotation.builtin_rubric import BUILTIN_RUBRIC_NAME, BUILTIN_RUBRIC_VERSION
from annotation.models import Rubric


def rubric_get_default() -> Rubric:
    """The built-in FLASK rubric (created by migration 0002)."""
    return Rubric.objects.get(name=BUILTIN_RUBRIC_NAME, version=BUILTIN_RUBRIC_VERSION)


def rubric_freeze(*, rubric_id: int) -> None:
    """Mark a rubric version read-only. Idempotent; called when a score first uses it."""
    Rubric.objects.filter(pk=rubric_id, frozen_at__isnull=True).update(
        frozen_at=timezone.now()
    )
