"""Executing judge runs: the driver loop (`driver`) and the per-kind call handlers
(`pointwise` scoring lives in the driver; `pairwise` and `metadata` beside it)."""

from judging.services.execution.driver import (
    judge_run_drive,
    judge_run_finish_if_done,
    judge_runs_recover,
)

__all__ = ["judge_run_drive", "judge_run_finish_if_done", "judge_runs_recover"]
