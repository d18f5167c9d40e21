"""Celery tasks of the annotation app: thin wrappers that take ids and call a service.

Services import these tasks at module top (as `*_task`); a task imports its service
inside the function (HackSoft's convention), so there is no import cycle.
"""

from celery import shared_task


@shared_task(acks_late=True)
def import_job_execute_task(job_id: int) -> None:
    """Run import job `job_id` (idempotent: the service starts only a queued job)."""
    from annotation.services.import_jobs import import_job_execute

    import_job_execute(job_id=job_id)


@shared_task(acks_late=True)
def assignments_expire_task() -> int:
    """Return expired rating locks to the pool in every campaign (idempotent)."""
    from annotation.services.rating import assignments_expire

    return assignments_expire()


@shared_task(acks_late=True)
def uploads_expire_task() -> int:
    """Remove staged uploads and unconfirmed import previews past
    `UPLOAD_STAGED_EXPIRY_HOURS` (idempotent; beat runs it hourly)."""
    from annotation.services.upload_expiry import uploads_expire

    report = uploads_expire()
    return len(report.staged_folders) + len(report.deleted_jobs)
