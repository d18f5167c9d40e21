"""Executing judge runs: the event loop (`driver`), its database side (`store`), crash
recovery (`recovery`) and the per-kind handlers (`pairwise`, `metadata`; pointwise
scoring is the default)."""

from judging.services.execution.driver import judge_run_drive
from judging.services.execution.recovery import (
    judge_runs_recover,
    start_watchdog,
    stop_watchdog,
)
from judging.services.execution.store import judge_run_finish_if_done

__all__ = [
    "judge_run_drive",
    "judge_run_finish_if_done",
    "judge_runs_recover",
    "start_watchdog",
    "stop_watchdog",
]
