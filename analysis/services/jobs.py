"""Background jobs (`analysis.models.Job`): start one, run one. The only writer of jobs.

`job_start` is what a page or an API view calls instead of doing heavy work in the
request: it answers at once with a queued job (or the same job already queued or
running for the same owner and parameters: a reload or a double click starts
nothing new); the Celery task `analysis.tasks.job_execute_task` then calls
`job_execute` in a worker, which records progress, the result and, on failure, the
reason.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from analysis.jobs import JOB_KINDS, JobFailed
from analysis.models import Job
from analysis.tasks import job_execute_task
from flaskapp import limits
from flaskapp.errors import DomainError, Problem, TooManyRequests

logger = logging.getLogger(__name__)


def _stale_before():
    """A job running since before this has outlived the task's hard time limit: its
    worker was killed (or lost), so it will never finish."""
    return timezone.now() - timedelta(seconds=settings.CELERY_TASK_TIME_LIMIT + 60)


def jobs_fail_stale(*, owner=None) -> int:
    """Mark running jobs whose worker is gone (`_stale_before`) as failed, saying so.
    Idempotent (a conditional UPDATE); returns how many."""
    qs = Job.objects.filter(status=Job.Status.RUNNING, started_at__lt=_stale_before())
    if owner is not None:
        qs = qs.filter(owner=owner)
    return qs.update(
        status=Job.Status.FAILED,
        finished_at=timezone.now(),
        reason="the worker running this job stopped before it ended (a time limit "
        "or a crash); start it again",
    )


def job_start(*, kind: str, owner, dataset, params: dict) -> Job:
    """A queued job of `kind` for `owner` on `dataset`, enqueued after the caller's
    transaction commits; or the owner's job of the same kind, dataset and
    parameters that is still queued or running (nothing new is started).

    Preconditions: the caller checked that `owner` may see `dataset`. Raises
    `DomainError` naming a bad parameter (the kind's `check`) and `TooManyRequests`
    when the owner already has ``settings.JOBS_ACTIVE_PER_USER`` active jobs.
    Locks the owner's user row for its transaction; writes one row; enqueues
    `job_execute_task` on commit.
    """
    job_kind = JOB_KINDS.get(kind)
    if job_kind is None:
        raise DomainError("Unknown job", [Problem(f"{kind!r} is not a job", "kind")])
    params = job_kind.check(params)
    jobs_fail_stale(owner=owner)
    with transaction.atomic():
        # One start at a time per owner: the dedupe and the cap see every job.
        get_user_model().objects.select_for_update().filter(pk=owner.pk).first()
        active = Job.objects.filter(owner=owner, status__in=Job.ACTIVE)
        same = [
            j for j in active.filter(kind=kind, dataset=dataset) if j.params == params
        ]
        if same:
            return same[0]
        if active.count() >= settings.JOBS_ACTIVE_PER_USER:
            raise TooManyRequests(
                f"you already have {settings.JOBS_ACTIVE_PER_USER} jobs queued or "
                "running; wait for one to finish",
                retry_after=10,
            )
        job = Job.objects.create(
            workspace_id=dataset.workspace_id,
            kind=kind,
            owner=owner,
            dataset=dataset,
            params=params,
        )
        transaction.on_commit(lambda: job_execute_task.delay(job.pk))
    return job


def _claim(job_id: int) -> bool:
    """Queued -> running (once, whatever the number of deliveries); a running job
    is taken again only once it is stale (its worker died: `acks_late` redelivers)."""
    return bool(
        Job.objects.filter(pk=job_id)
        .filter(
            Q(status=Job.Status.QUEUED)
            | Q(status=Job.Status.RUNNING, started_at__lt=_stale_before())
        )
        .update(status=Job.Status.RUNNING, started_at=timezone.now(), reason="")
    )


def _store(job: Job, data: bytes, name: str) -> str:
    folder = Path(settings.MEDIA_ROOT) / "jobs" / str(job.pk)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return str(path.relative_to(settings.MEDIA_ROOT))


def _failure(exc: BaseException) -> str:
    if isinstance(exc, JobFailed | DomainError):
        return str(exc)
    if isinstance(exc, SoftTimeLimitExceeded):
        return (
            f"it took longer than {settings.CELERY_TASK_SOFT_TIME_LIMIT} s; ask for "
            "less (fewer resamples, fewer runs)"
        )
    return f"an internal error ({type(exc).__name__}); the server's log has the details"


def job_execute(*, job_id: int) -> None:
    """Run job `job_id` (in a worker): claim it, run its kind with a progress
    callback, then store its result (JSON, and a file under MEDIA_ROOT/jobs/<id>/)
    and mark it done, or mark it failed with the reason. Idempotent: a job that is
    not queued (nor stale) is left alone. No transaction is held while it runs."""
    if not _claim(job_id):
        return
    job = Job.objects.select_related("dataset").get(pk=job_id)

    def progress(done: int, total: int) -> None:
        Job.objects.filter(pk=job_id, status=Job.Status.RUNNING).update(
            progress_done=done, progress_total=total
        )

    try:
        output = JOB_KINDS[job.kind].run(job, progress)
    except Exception as exc:  # every failure is recorded on the row, with a reason
        if not isinstance(exc, JobFailed | DomainError | SoftTimeLimitExceeded):
            logger.exception("job %s (%s) failed", job_id, job.kind)
        Job.objects.filter(pk=job_id).update(
            status=Job.Status.FAILED,
            reason=limits.clip(_failure(exc), limits.CALL_ERROR),
            finished_at=timezone.now(),
        )
        return
    path = _store(job, output.file, output.file_name) if output.file else ""
    fresh = Job.objects.get(pk=job_id)
    Job.objects.filter(pk=job_id).update(
        status=Job.Status.DONE,
        result=output.result,
        result_file=path,
        result_name=output.file_name,
        progress_done=max(fresh.progress_total, 1),
        progress_total=max(fresh.progress_total, 1),
        finished_at=timezone.now(),
    )


# --- Expiry of result files -------------------------------------------------------------


def job_files_expire(*, now=None, dry_run: bool = False) -> list[tuple[int, str, int]]:
    """Delete the result files of jobs that finished more than
    `settings.JOB_FILE_EXPIRY_DAYS` ago and return (job id, file, bytes) of each.

    A queued or running job is never touched, nor a finished one younger than the
    expiry. The row stays (its JSON result, status and reason are the record):
    `result_file` becomes "" and `result_name` keeps the name, so the job page says
    the file expired. Logs one line listing what was removed. With `dry_run`, only
    report. Idempotent: a job whose file is gone is not selected again."""
    now = now or timezone.now()
    before = now - timedelta(days=settings.JOB_FILE_EXPIRY_DAYS)
    root = Path(settings.MEDIA_ROOT)
    removed: list[tuple[int, str, int]] = []
    expired = (
        Job.objects.filter(
            status__in=(Job.Status.DONE, Job.Status.FAILED), finished_at__lt=before
        )
        .exclude(result_file="")
        .order_by("pk")
        .values_list("pk", "result_file")
    )
    for job_id, relative in expired:
        path = root / relative
        size = path.stat().st_size if path.is_file() else 0
        removed.append((job_id, relative, size))
        if dry_run:
            continue
        # Cleared first: a download never finds a row pointing at a deleted file.
        updated = Job.objects.filter(
            pk=job_id, result_file=relative, finished_at__lt=before
        ).update(result_file="")
        if updated and path.resolve().is_relative_to((root / "jobs").resolve()):
            path.unlink(missing_ok=True)
            if path.parent.is_dir() and not any(path.parent.iterdir()):
                path.parent.rmdir()
    logger.info(
        "job files expired%s (finished before %s): %d file(s), %d bytes%s",
        " (dry run)" if dry_run else "",
        before.isoformat(timespec="seconds"),
        len(removed),
        sum(size for _, _, size in removed),
        "".join(f"; job {i}: {name}" for i, name, _ in removed),
    )
    return removed
