"""Celery tasks of the judging app: thin wrappers that take ids and call a service.

Services import these tasks at module top (as `*_task`); a task imports its service
inside the function (HackSoft's convention), so there is no import cycle.
"""

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown


@shared_task(acks_late=True, soft_time_limit=None, time_limit=None)
def judge_run_drive_task(run_id: int) -> str:
    """Drive a judge run from this worker until nothing is pending (idempotent).

    No time limit: a run of many thousand calls legitimately takes hours; a dead
    worker's claims are recovered through its driver's heartbeat
    (`judging.services.execution.recovery`).
    """
    from judging.services.execution import judge_run_drive

    return judge_run_drive(run_id=run_id)


@shared_task(acks_late=True)
def judge_runs_recover_task() -> dict:
    """Reclaim expired call leases and restart drivers of stalled runs (idempotent)."""
    from judging.services.execution import judge_runs_recover

    return judge_runs_recover()


@worker_ready.connect
def _recover_on_worker_start(sender=None, **kwargs) -> None:
    # A (re)started worker takes back what dead drivers held, at once and then every
    # JUDGE_RECOVER_SECONDS from its own thread: recovery does not wait for beat.
    from judging.services.execution import start_watchdog

    judge_runs_recover_task.apply_async(countdown=1)
    start_watchdog()


@worker_shutdown.connect
def _stop_recovery(sender=None, **kwargs) -> None:
    from judging.services.execution import stop_watchdog

    stop_watchdog()
