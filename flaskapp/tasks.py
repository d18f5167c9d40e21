"""Celery tasks of the kernel: the sending of notifications (`flaskapp.notifications`).

Each takes the workspace's id and the event's payload (plain JSON) and calls one
service; each is idempotent per event and attempt (the service records every attempt
under a unique (event, channel, attempt) and sends an attempt once).
"""

from celery import shared_task


@shared_task(acks_late=True)
def notification_email_task(workspace_id: int, payload: dict) -> None:
    """E-mail one event to the workspace's addresses (once per event)."""
    from flaskapp.notifications import notification_email_send

    notification_email_send(workspace_id=workspace_id, payload=payload)


@shared_task(acks_late=True)
def notification_webhook_task(workspace_id: int, payload: dict, attempt: int) -> None:
    """POST one event to the workspace's webhook (attempt `attempt`, from 1); a
    transient failure enqueues the next attempt after the service's backoff. The
    retry lives here only (the service makes one attempt per call)."""
    from flaskapp.notifications import webhook_attempt

    delay = webhook_attempt(workspace_id=workspace_id, payload=payload, attempt=attempt)
    if delay is not None:
        notification_webhook_task.apply_async(
            (workspace_id, payload, attempt + 1), countdown=delay
        )
