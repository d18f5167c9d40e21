"""Reads of a Batch API run's batches (`judging.models.JudgeBatch`) for its page."""

from __future__ import annotations

from django.db.models import Count, Q

from judging.models import JudgeBatch, JudgeRun


def run_batches(*, run: JudgeRun) -> list[JudgeBatch]:
    """The run's provider batches, oldest first, each with `unknown_lines` (result
    lines for no key of it) and `retried_lines` (failed lines sent again) counted;
    [] for a run not made with ``batch`` (no query)."""
    if not (run.settings_snapshot or {}).get("batch"):
        return []
    return list(
        JudgeBatch.objects.filter(run=run)
        .annotate(
            unknown_lines=Count("failures", filter=Q(failures__kind="unknown_id")),
            retried_lines=Count("failures", filter=Q(failures__retried=True)),
        )
        .order_by("pk")
    )
