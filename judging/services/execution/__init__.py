"""Executing judge runs: the event loop (`driver`), its database side (`store`) and
crash recovery (`recovery`), the same for every kind; what differs by kind (the
prompt, the parser, the rows written) is the kind's (`judging.kinds`)."""

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
