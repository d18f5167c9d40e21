"""Celery tasks of the analysis app: thin wrappers that take ids and call a service.

Services import these tasks at module top (as `*_task`); a task imports its service
inside the function (HackSoft's convention), so there is no import cycle.
"""

from celery import shared_task


@shared_task(acks_late=True)
def job_execute_task(job_id: int) -> None:
    """Run background job `job_id` (idempotent: the service claims a queued job once;
    the project's soft and hard time limits apply)."""
    from analysis.services.jobs import job_execute

    job_execute(job_id=job_id)


@shared_task(acks_late=True)
def job_files_expire_task() -> int:
    """Delete job result files past `JOB_FILE_EXPIRY_DAYS` (idempotent; beat runs
    it hourly)."""
    from analysis.services.jobs import job_files_expire

    return len(job_files_expire())
