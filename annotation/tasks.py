"""Celery tasks of the annotation app: thin wrappers that take ids and call a service."""

from celery import shared_task

from annotation import services


@shared_task(acks_late=True)
def import_job_execute_task(job_id: int) -> None:
    """Run import job `job_id` (idempotent: the service starts only a queued job)."""
    services.import_job_execute(job_id=job_id)


@shared_task(acks_late=True)
def assignments_expire_task() -> int:
    """Return expired rating locks to the pool in every campaign (idempotent)."""
    return services.assignments_expire()
