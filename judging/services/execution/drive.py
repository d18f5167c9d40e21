"""The one entry that drives a run from a worker: the Batch API driver
(`execution.batch`) for a run made with ``batch``, the synchronous driver
(`execution.driver`) otherwise."""

from __future__ import annotations

from django.db import close_old_connections

from judging.models import JudgeRun
from judging.services.budgets import judge_run_stop_at_budget
from judging.services.execution import driver
from judging.services.execution.batch import batch_run_drive
from judging.services.execution.store import judge_run_finish_if_done


def judge_run_drive(*, run_id: int) -> str:
    """Drive run `run_id` from this process until nothing is open; returns its status.

    Precondition: none (a run that is not running returns at once). Idempotent and
    safe to run in several processes at once (`driver.judge_run_drive`; a batch run
    has one driver at a time, the others return at once)."""
    run = (
        JudgeRun.objects.select_related("config", "config__prompt", "dataset")
        .filter(pk=run_id)
        .first()
    )
    if run is None or not (run.settings_snapshot or {}).get("batch"):
        return driver.judge_run_drive(run_id=run_id)
    if run.status != JudgeRun.Status.RUNNING or run.config is None:
        return run.status
    try:
        batch_run_drive(run)
    finally:
        close_old_connections()
    status = judge_run_finish_if_done(run_id=run_id)
    if run.budget is not None and status == JudgeRun.Status.RUNNING:
        status = judge_run_stop_at_budget(run_id=run_id)
    return status
