"""`make run`'s terminal (issue 37, defect 31): a refused request logs one line, no
traceback; the embedded beat's upkeep prints nothing at INFO every 30 s, while its
warnings and every other task's lines still print."""

from __future__ import annotations

import io
import logging

from django.conf import settings

from flaskapp.logs import ForbiddenWithoutTraceback, quiet_worker_logs


def _console_handler() -> logging.Handler:
    """The handler `LOGGING` configured (the one with the 403 filter)."""
    for handler in logging.getLogger().handlers:
        if any(isinstance(f, ForbiddenWithoutTraceback) for f in handler.filters):
            return handler
    raise AssertionError("no handler carries ForbiddenWithoutTraceback")


def test_a_403_logs_one_line_without_its_traceback(client_for, rater):
    client = client_for(rater)
    handler = _console_handler()
    stream = io.StringIO()
    old = handler.setStream(stream)
    try:
        # A rater on a researchers' page: refused with PermissionDenied.
        response = client.get("/datasets/")
    finally:
        handler.setStream(old)
    assert response.status_code == 403
    text = stream.getvalue()
    assert "Forbidden (Permission denied): /datasets/" in text
    assert "Traceback" not in text
    assert len(text.strip().splitlines()) == 1


def test_a_500s_traceback_still_prints():
    handler = _console_handler()
    stream = io.StringIO()
    old = handler.setStream(stream)
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("django.request").error(
                "Internal Server Error: /x/", exc_info=True, extra={"status_code": 500}
            )
    finally:
        handler.setStream(old)
    assert "Traceback" in stream.getvalue()


def _worker_logger() -> tuple[logging.Logger, io.StringIO]:
    """A root-like logger with one handler, as Celery's worker sets up its own."""
    stream = io.StringIO()
    root = logging.Logger("worker-root", level=logging.INFO)
    root.addHandler(logging.StreamHandler(stream))
    quiet_worker_logs(root)
    return root, stream


def _child(root: logging.Logger, name: str) -> logging.Logger:
    child = logging.Logger(name, level=logging.INFO)
    child.parent = root
    return child


def test_the_worker_drops_the_upkeeps_info_lines_only():
    root, stream = _worker_logger()
    upkeep = settings.CELERY_BEAT_SCHEDULE["recover-judge-runs"]["task"]
    beat = _child(root, "celery.beat")
    beat.info("Scheduler: Sending due task %s (%s)", "recover-judge-runs", upkeep)
    strategy = _child(root, "celery.worker.strategy")
    strategy.info("Task %(name)s[%(id)s] received", {"name": upkeep, "id": "1"})
    trace = _child(root, "celery.app.trace")
    trace.info(
        "Task %(name)s[%(id)s] succeeded in %(runtime)ss: %(return_value)s",
        {"name": upkeep, "id": "1", "runtime": 0.01, "return_value": None},
    )
    assert stream.getvalue() == ""
    # Another task's lines and the upkeep's own failures still print.
    strategy.info(
        "Task %(name)s[%(id)s] received",
        {"name": "judging.tasks.judge_run_drive_task", "id": "2"},
    )
    trace.error(
        "Task %(name)s[%(id)s] raised unexpected: %(exc)s",
        {"name": upkeep, "id": "3", "exc": "boom"},
    )
    beat.warning("beat: cannot write the schedule")
    lines = stream.getvalue().splitlines()
    assert lines == [
        "Task judging.tasks.judge_run_drive_task[2] received",
        f"Task {upkeep}[3] raised unexpected: boom",
        "beat: cannot write the schedule",
    ]


def test_the_celery_app_wires_the_filters_into_the_worker():
    from celery.signals import after_setup_logger

    import flaskapp.celery  # noqa: F401  (connects the receiver)

    root = logging.Logger("worker-root-2", level=logging.INFO)
    stream = io.StringIO()
    root.addHandler(logging.StreamHandler(stream))
    after_setup_logger.send(sender=None, logger=root, loglevel=logging.INFO)
    _child(root, "celery.beat").info("Scheduler: Sending due task x (y)")
    assert stream.getvalue() == ""
