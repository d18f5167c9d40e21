"""Filters that keep the terminal of `make run` readable (issue 37, defect 31).

- `ForbiddenWithoutTraceback`: Django logs every refused request ("Forbidden
  (Permission denied): /path") with the PermissionDenied's traceback; a 403 is an
  answer, not a fault, so its record keeps its one line and loses the traceback.
  Every other record (a 500's traceback above all) passes unchanged.
- `QuietUpkeep`: the embedded beat sends its upkeep tasks every 30-60 s
  (`CELERY_BEAT_SCHEDULE`), and at INFO each one printed three lines (beat's "Sending
  due task", the worker's "received" and "succeeded"). Those INFO lines are dropped;
  a warning or an error of the same tasks, and every line of any other task, passes.

The web's handler gets the first through `LOGGING`; the worker's handlers, which
Celery sets up itself, get both through `quiet_worker_logs` (flaskapp/celery.py).
"""

from __future__ import annotations

import logging

from django.conf import settings


class ForbiddenWithoutTraceback(logging.Filter):
    """A 403's record prints one line: its traceback is dropped, the record kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info = None
            record.exc_text = None
        return True


def upkeep_task_names() -> frozenset[str]:
    """The task names the beat schedule sends (its periodic upkeep)."""
    schedule = getattr(settings, "CELERY_BEAT_SCHEDULE", {}) or {}
    return frozenset(entry["task"] for entry in schedule.values())


class QuietUpkeep(logging.Filter):
    """Drops the INFO lines of the beat's periodic upkeep; keeps warnings and errors."""

    def __init__(self, name: str = ""):
        super().__init__(name)
        self.tasks = upkeep_task_names()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno > logging.INFO:
            return True
        if record.name.startswith("celery.beat"):
            return False
        args = record.args if isinstance(record.args, dict) else {}
        return args.get("name") not in self.tasks


def quiet_worker_logs(logger: logging.Logger | None = None, **kwargs) -> None:
    """Celery's `after_setup_logger` receiver: both filters on the worker's handlers."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, QuietUpkeep) for f in handler.filters):
            handler.addFilter(QuietUpkeep())
            handler.addFilter(ForbiddenWithoutTraceback())
