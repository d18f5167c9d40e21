"""Executing judge runs: the event loop (`driver`), its database side (`store`) and
crash recovery (`recovery`), the same for every kind; what differs by kind (the
prompt, the parser, the rows written) is the kind's (`judging.kinds`).

The package is the API: callers import from `judging.services.execution`, and
`__all__` lists what they may use; the other public names of its modules are the
steps the driver, the store and recovery share (tests of a step import its module)."""

from judging.services.execution.drive import judge_run_drive
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
