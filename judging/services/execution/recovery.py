"""Crash recovery of judge runs: driver heartbeats, and taking back a dead driver's work.

Every `Driver` registers a `JudgeDriver` row when it starts (`driver_register`), renews
its `beat_at` every `JUDGE_DRIVER_BEAT_SECONDS` while its event loop runs
(`driver_beat`) and deletes the row when it ends (`driver_unregister`). Its claims carry
its token (`JudgeCall.driver_token`).

`judge_runs_recover` is the one recovery routine. It needs no Celery beat: every worker
process runs it every `JUDGE_RECOVER_SECONDS` from a watchdog thread
(`start_watchdog`, started on `worker_ready`), `manage.py judge --wait` runs it while it
waits, and beat still runs it where beat is deployed. It is idempotent, and safe in
several processes at once (the run row is locked while a driver is dispatched):

1. a driver whose beat is older than `JUDGE_DRIVER_STALE_SECONDS` is dead: its running
   calls go back to pending (recorded in the log with the driver's host and pid) and its
   row is deleted;
2. a running call whose lease ran out (a claim from before driver tokens, or a driver
   whose row is gone) goes back to pending;
3. a running run with pending calls and no live driver, whose heartbeat is also older
   than the stale limit (no driver wrote results lately, and none was dispatched
   lately), gets a new driver task; a run with nothing open is finished.

From a SIGKILL of the only worker, the calls are back and a driver dispatched within
about STALE + RECOVER seconds of the last beat (12 s by default) once any worker runs.
A live driver wrongly presumed dead (its loop blocked past the stale limit) loses
nothing: its late results no longer match their claims and are dropped, with a warning,
and the calls are done by the new driver; it re-registers on its next beat.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from datetime import timedelta

from django.conf import settings
from django.db import close_old_connections, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from judging.models import JudgeBatch, JudgeCall, JudgeDriver, JudgeRun
from judging.services.execution.store import judge_run_finish_if_done
from judging.tasks import judge_run_drive_task

log = logging.getLogger(__name__)

_HOST = socket.gethostname()[:255]
BATCH_OPEN = JudgeBatch.OPEN_STATES


def driver_register(*, run_id: int, token: str) -> None:
    """Record a driver of run `run_id` as alive now (idempotent)."""
    now = timezone.now()
    alive = {"run_id": run_id, "host": _HOST, "pid": os.getpid(), "beat_at": now}
    JudgeDriver.objects.update_or_create(
        token=token, defaults=alive, create_defaults={**alive, "started_at": now}
    )


def driver_beat(*, run_id: int, token: str, in_flight: int = 0) -> bool:
    """Renew the driver's heartbeat and its count of HTTP requests in flight. Returns
    False when its row was gone (it had been presumed dead and its claims taken back);
    the row is then registered again."""
    if JudgeDriver.objects.filter(token=token).update(
        beat_at=timezone.now(), in_flight=in_flight
    ):
        return True
    log.warning(
        "run %s: driver %s had been presumed dead; its claims were taken back",
        run_id,
        token[:8],
    )
    driver_register(run_id=run_id, token=token)
    return False


def driver_unregister(*, token: str) -> None:
    """The driver ended normally."""
    JudgeDriver.objects.filter(token=token).delete()


def judge_runs_recover(*, now=None) -> dict:
    """Take back dead drivers' and expired claims, restart the driving of stalled runs.

    See the module docstring for the rules. Returns counts: ``dead_drivers``,
    ``reclaimed_calls`` and ``restarted_runs``.
    """
    now = now or timezone.now()
    stale = now - timedelta(seconds=settings.JUDGE_DRIVER_STALE_SECONDS)
    dead = list(
        JudgeDriver.objects.filter(beat_at__lt=stale).values_list(
            "token", "run_id", "host", "pid", "beat_at"
        )
    )
    reclaimed = 0
    if dead:
        tokens = [d[0] for d in dead]
        with transaction.atomic():
            reclaimed = JudgeCall.objects.filter(
                status=JudgeCall.Status.RUNNING, driver_token__in=tokens
            ).update(
                status=JudgeCall.Status.PENDING,
                claim_token="",
                driver_token="",
                lease_until=None,
            )
            JudgeDriver.objects.filter(token__in=tokens, beat_at__lt=stale).delete()
        for token, run_id, host, pid, beat_at in dead:
            log.warning(
                "run %s: driver %s on %s (pid %s) silent since %s: presumed dead, "
                "its running calls went back to pending",
                run_id,
                token[:8],
                host,
                pid,
                beat_at.isoformat(),
            )
    expired = JudgeCall.objects.filter(
        status=JudgeCall.Status.RUNNING, lease_until__lt=now
    ).update(
        status=JudgeCall.Status.PENDING,
        claim_token="",
        driver_token="",
        lease_until=None,
    )
    if expired:
        log.warning("%d running calls' leases ran out: back to pending", expired)
    live_driver = JudgeDriver.objects.filter(run_id=OuterRef("pk"), beat_at__gte=stale)
    candidates = list(
        JudgeRun.objects.filter(status=JudgeRun.Status.RUNNING)
        .filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True))
        .exclude(Exists(live_driver))
        .values_list("pk", flat=True)
    )
    restarted = 0
    for run_id in candidates:
        if _dispatch_driver(run_id, stale, now):
            restarted += 1
    return {
        "dead_drivers": len(dead),
        "reclaimed_calls": reclaimed + expired,
        "restarted_runs": restarted,
    }


def _dispatch_driver(run_id: int, stale, now) -> bool:
    """Start a driver for run `run_id` if it still needs one; finish it if nothing is
    open. The run row is locked (skipped if another process holds it) and its heartbeat
    set to now, so concurrent recoveries dispatch one driver, not one each."""
    with transaction.atomic():
        run = (
            JudgeRun.objects.select_for_update(skip_locked=True)
            .filter(pk=run_id, status=JudgeRun.Status.RUNNING)
            .filter(Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True))
            .first()
        )
        if run is None:
            return False
        pending = run.calls.filter(status=JudgeCall.Status.PENDING).exists()
        # A Batch API run's calls wait at the provider (running, no lease): its open
        # batches need a driver too (`execution.batch`).
        pending = pending or run.batches.filter(state__in=BATCH_OPEN).exists()
        if pending:
            JudgeRun.objects.filter(pk=run.pk).update(heartbeat_at=now)
            transaction.on_commit(
                lambda: judge_run_drive_task.apply_async((run_id,), queue="judge")
            )
    if not pending:
        judge_run_finish_if_done(run_id=run_id)
        return False
    log.info("run %s: no live driver; a new one was dispatched", run_id)
    return True


# --- the watchdog thread of a worker process ----------------------------------------------

_watchdog: threading.Thread | None = None
_watchdog_stop = threading.Event()


def _watch() -> None:
    while not _watchdog_stop.wait(settings.JUDGE_RECOVER_SECONDS):
        try:
            judge_runs_recover()
        except Exception:  # a database outage must not kill the thread
            log.exception("judge run recovery failed; retrying")
        finally:
            close_old_connections()


def start_watchdog() -> bool:
    """Start this process's recovery thread (once per process). Returns whether it was
    started now. The thread is a daemon: it ends with the process."""
    global _watchdog
    if _watchdog is not None and _watchdog.is_alive():
        return False
    _watchdog_stop.clear()
    _watchdog = threading.Thread(target=_watch, name="judge-recovery", daemon=True)
    _watchdog.start()
    return True


def stop_watchdog() -> None:
    """Stop the recovery thread (worker shutdown)."""
    _watchdog_stop.set()
