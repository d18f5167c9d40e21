"""Notifications of finished work (issue 37): a workspace is told by e-mail and/or a
webhook when a judge run finishes or a campaign is closed.

=================  ===============================================================
what               the rule
=================  ===============================================================
who sets it        the workspace's owners, on its notifications page
                   (`notification_settings_update`); every change is audited,
                   without the secret
e-mail             Django's mail (``EMAIL_BACKEND``), one message per event to the
                   listed addresses; one `NotificationDelivery` row records it
webhook            ``POST`` of the event's JSON to an http(s) URL; never to a
                   private, loopback, link-local or reserved address unless
                   ``NOTIFY_WEBHOOK_ALLOW_PRIVATE`` (checked when saved AND before
                   every attempt, since a name can resolve elsewhere later);
                   redirects are not followed
signature          ``X-Flask-Signature: sha256=<hex>``, the HMAC-SHA256 under the
                   workspace's secret of ``<timestamp>.<body>``, with the Unix
                   time in ``X-Flask-Timestamp`` (`signature`): a receiver
                   recomputes it and refuses old timestamps. The secret is
                   stored encrypted (`flaskapp.vault`) and never sent
retries            a timeout, a connection error, a 429 or a 5xx is retried after
                   ``NOTIFY_WEBHOOK_BACKOFF_SECONDS * 4**(attempt-1)`` (jittered)
                   up to ``NOTIFY_WEBHOOK_MAX_ATTEMPTS`` attempts; any other 4xx
                   is final. Every attempt is one row, status code or error and all
payload            ``{"event", "event_id", "timestamp", "workspace": {id, slug,
                   name}, "object": {type, id, name, url}, "counts": {...}}``
=================  ===============================================================

The apps call `notify` from the service that ends the work (`judging` when a run
finishes, `annotation` when a campaign closes); the kernel imports no app.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import random
import socket
import time
import uuid
from urllib.parse import urlsplit

import httpx
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.utils import timezone

from flaskapp import vault
from flaskapp.errors import DomainError, Problem
from flaskapp.models import NotificationDelivery, NotificationSettings, Workspace

# The events a workspace is told of, with the words of an e-mail's subject.
EVENTS = {
    "judge_run.finished": "Judge run finished",
    "campaign.closed": "Campaign closed",
}
SECRET_MIN = 16
SECRET_MAX = 200
EMAILS_MAX = 20
SIGNATURE_HEADER = "X-Flask-Signature"
TIMESTAMP_HEADER = "X-Flask-Timestamp"
EVENT_HEADER = "X-Flask-Event"
URL_PROBLEM = "must be an http(s) URL, e.g. https://hooks.example.org/flask"
PRIVATE_PROBLEM = (
    "points at a private, loopback or reserved address ({address}); webhooks go to "
    "servers outside this one's network (the operator may allow local receivers with "
    "FLASK_WEBHOOK_ALLOW_PRIVATE=1)"
)


# --- settings ----------------------------------------------------------------------


def _emails_parse(text: str) -> tuple[list[str], list[Problem]]:
    """Addresses one per line (commas too); a problem per bad one, naming its line."""
    emails, problems = [], []
    for n, line in enumerate(text.replace(",", "\n").splitlines(), start=1):
        address = line.strip()
        if not address:
            continue
        try:
            validate_email(address)
        except ValidationError:
            problems.append(
                Problem(
                    f"line {n}: {address[:80]!r} is not an e-mail address",
                    field="email_to",
                )
            )
            continue
        if address not in emails:
            emails.append(address)
    if len(emails) > EMAILS_MAX:
        problems.append(Problem(f"at most {EMAILS_MAX} addresses", field="email_to"))
    return emails, problems


def _refused_address(host: str) -> str:
    """The first address `host` resolves to that a webhook may not reach ("": none).
    A host that does not resolve is refused too (its message says so)."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError):
        return f"{host} does not resolve"
    for info in infos:
        address = ipaddress.ip_address(info[4][0].split("%")[0])
        if (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_reserved
            or address.is_multicast
            or address.is_unspecified
        ):
            return str(address)
    return ""


def webhook_url_problems(url: str, *, field: str = "webhook_url") -> list[Problem]:
    """Why a webhook may not be sent to `url` (empty list: it may). http(s) only, a
    host, no user name or password in it, and (unless NOTIFY_WEBHOOK_ALLOW_PRIVATE)
    no address of the server's own networks. Resolves the host (a DNS query)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return [Problem(URL_PROBLEM, field=field)]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return [Problem(URL_PROBLEM, field=field)]
    if parts.username or parts.password:
        return [Problem("may not hold a user name or password", field=field)]
    if port == 0:
        return [Problem(URL_PROBLEM, field=field)]
    if settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE:
        return []
    refused = _refused_address(parts.hostname)
    if refused.endswith("does not resolve"):
        return [Problem(f"its host {refused}", field=field)]
    if refused:
        return [Problem(PRIVATE_PROBLEM.format(address=refused), field=field)]
    return []


def notification_settings_get(*, workspace: Workspace) -> NotificationSettings:
    """The workspace's notification settings (an unsaved empty row when it has none)."""
    return NotificationSettings.objects.filter(
        workspace=workspace
    ).first() or NotificationSettings(workspace=workspace)


def notification_settings_update(
    *,
    actor,
    workspace: Workspace,
    email_to: str,
    webhook_url: str,
    webhook_secret: str = "",
) -> NotificationSettings:
    """Set where `workspace` is notified. The caller has checked that `actor` owns
    it. `webhook_secret` "" keeps the stored one; a webhook needs a secret (given now
    or stored). Every problem names its field; with any, nothing changes
    (`DomainError`). Writes the row and a ``notifications.changed`` audit row (which
    says whether a secret is set, never the secret)."""
    from flaskapp.workspaces import audit_record

    current = notification_settings_get(workspace=workspace)
    emails, problems = _emails_parse(email_to or "")
    url = (webhook_url or "").strip()
    secret = (webhook_secret or "").strip()
    if url:
        problems += webhook_url_problems(url)
        if not secret and not current.webhook_secret:
            problems.append(
                Problem(
                    "is needed to sign what is sent to the webhook",
                    field="webhook_secret",
                )
            )
    if secret and not SECRET_MIN <= len(secret) <= SECRET_MAX:
        problems.append(
            Problem(
                f"must be {SECRET_MIN} to {SECRET_MAX} characters",
                field="webhook_secret",
            )
        )
    ciphertext = current.webhook_secret
    if secret and not problems:
        try:
            ciphertext = vault.encrypt(secret)
        except vault.VaultUnavailable as exc:
            problems.append(Problem(str(exc), field="webhook_secret"))
    if problems:
        raise DomainError("Notification settings not saved", problems)

    def shown(row: NotificationSettings) -> dict:
        return {
            "email_to": row.email_to.split("\n") if row.email_to else [],
            "webhook_url": row.webhook_url,
            "webhook_secret_set": bool(row.webhook_secret),
        }

    before = shown(current) if current.pk else None
    with transaction.atomic():
        current.email_to = "\n".join(emails)
        current.webhook_url = url
        current.webhook_secret = ciphertext if url else ""
        current.updated_by = actor
        current.save()
        audit_record(
            action="notifications.changed",
            actor=actor,
            workspace=workspace,
            target=workspace,
            before=before,
            after=shown(current),
        )
    return current


# --- events ------------------------------------------------------------------------


def notify(
    *, workspace_id: int, event: str, obj: dict, counts: dict | None = None
) -> None:
    """Tell the workspace that `event` happened to `obj` (``{"type", "id", "name",
    "url"}``), with `counts` (small integers). Call inside or outside a transaction:
    the sending is enqueued after commit (nothing is sent for a rolled-back change).
    Does nothing when the workspace has neither addresses nor a webhook."""
    if event not in EVENTS:
        raise ValueError(f"unknown notification event {event!r}")
    row = NotificationSettings.objects.filter(workspace_id=workspace_id).first()
    if row is None or not (row.email_to or row.webhook_url):
        return
    ws = row.workspace
    payload = {
        "event": event,
        "event_id": str(uuid.uuid4()),
        "timestamp": timezone.now().isoformat(),
        "workspace": {"id": ws.pk, "slug": ws.slug, "name": ws.name},
        "object": obj,
        "counts": counts or {},
    }
    from flaskapp.tasks import notification_email_task, notification_webhook_task

    def enqueue() -> None:
        if row.email_to:
            notification_email_task.delay(workspace_id, payload)
        if row.webhook_url:
            notification_webhook_task.delay(workspace_id, payload, 1)

    transaction.on_commit(enqueue)


def _record(**fields) -> NotificationDelivery:
    """One attempt's row; an attempt recorded already (a task delivered twice) is
    returned as it was."""
    try:
        with transaction.atomic():
            return NotificationDelivery.objects.create(**fields)
    except IntegrityError:
        return NotificationDelivery.objects.get(
            event_id=fields["event_id"],
            channel=fields["channel"],
            attempt=fields["attempt"],
        )


def _email_text(payload: dict) -> tuple[str, str]:
    obj = payload["object"]
    subject = f"[FLASK Eval] {EVENTS[payload['event']]}: {obj.get('name', '')}"
    lines = [
        f"{EVENTS[payload['event']]} in workspace {payload['workspace']['name']}:",
        f"{obj.get('type', '')} {obj.get('name', '')} (id {obj.get('id')})",
        *(f"{k.replace('_', ' ')}: {v}" for k, v in payload["counts"].items()),
        f"Page: {obj['url']}" if obj.get("url") else "",
        f"At {payload['timestamp']}",
    ]
    return subject[:200], "\n".join(line for line in lines if line)


def notification_email_send(
    *, workspace_id: int, payload: dict
) -> NotificationDelivery:
    """E-mail the event to the workspace's addresses (as they are now) and record it.
    Idempotent per event: a second call returns the first record without sending."""
    done = NotificationDelivery.objects.filter(
        event_id=payload["event_id"], channel=NotificationDelivery.Channel.EMAIL
    ).first()
    if done is not None:
        return done
    row = NotificationSettings.objects.filter(workspace_id=workspace_id).first()
    to = row.email_to.split("\n") if row and row.email_to else []
    subject, body = _email_text(payload)
    fields = {
        "workspace_id": workspace_id,
        "event_id": payload["event_id"],
        "event": payload["event"],
        "channel": NotificationDelivery.Channel.EMAIL,
        "target": ", ".join(to)[:2000],
        "payload": payload,
        "attempt": 1,
    }
    if not to:
        return _record(**fields, status="failed", error="no address is set any more")
    try:
        send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, to)
    except Exception as exc:  # noqa: BLE001 (any mail failure is recorded, not raised)
        return _record(
            **fields, status="failed", error=f"{type(exc).__name__}: {exc}"[:500]
        )
    return _record(**fields, status="sent")


def signature(secret: str, timestamp: str, body: bytes) -> str:
    """The value of the signature header: ``sha256=`` and the hex HMAC-SHA256 under
    `secret` of ``<timestamp>.<body>``."""
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _retry_delay(attempt: int) -> float:
    base = settings.NOTIFY_WEBHOOK_BACKOFF_SECONDS * 4 ** (attempt - 1)
    return base * random.uniform(0.8, 1.2)


def webhook_attempt(*, workspace_id: int, payload: dict, attempt: int) -> float | None:
    """Attempt `attempt` (from 1) to POST the event to the workspace's webhook, and
    record it. Returns the seconds to wait before the next attempt, or None when
    there is none (sent, a final refusal, or the last attempt). Idempotent per
    attempt: one already recorded is not sent again."""
    done = NotificationDelivery.objects.filter(
        event_id=payload["event_id"],
        channel=NotificationDelivery.Channel.WEBHOOK,
        attempt=attempt,
    ).first()
    if done is not None:
        return None if done.final else _retry_delay(attempt)
    row = NotificationSettings.objects.filter(workspace_id=workspace_id).first()
    url = row.webhook_url if row else ""
    fields = {
        "workspace_id": workspace_id,
        "event_id": payload["event_id"],
        "event": payload["event"],
        "channel": NotificationDelivery.Channel.WEBHOOK,
        "target": url or "-",
        "payload": payload,
        "attempt": attempt,
    }
    if not url:
        _record(**fields, status="failed", error="no webhook is set any more")
        return None
    refused = webhook_url_problems(url)
    if refused:
        _record(**fields, status="failed", error=f"refused: {refused[0].message}"[:500])
        return None
    try:
        secret = vault.decrypt(row.webhook_secret)
    except vault.VaultUnavailable as exc:
        _record(**fields, status="failed", error=str(exc)[:500])
        return None
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    stamp = str(int(time.time()))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "flask-eval-webhook/1",
        EVENT_HEADER: payload["event"],
        TIMESTAMP_HEADER: stamp,
        SIGNATURE_HEADER: signature(secret, stamp, body),
    }
    last = attempt >= settings.NOTIFY_WEBHOOK_MAX_ATTEMPTS
    try:
        reply = httpx.post(
            url,
            content=body,
            headers=headers,
            timeout=settings.NOTIFY_WEBHOOK_TIMEOUT_SECONDS,
            follow_redirects=False,
        )
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
        _record(**fields, status="failed", error=error, final=last)
        return None if last else _retry_delay(attempt)
    code = reply.status_code
    if 200 <= code < 300:
        _record(**fields, status="sent", status_code=code)
        return None
    transient = code == 429 or code >= 500
    final = last or not transient
    error = f"HTTP {code}" + ("" if transient else " (not retried)")
    _record(**fields, status="failed", status_code=code, error=error, final=final)
    return None if final else _retry_delay(attempt)


def delivery_list(*, workspace: Workspace, limit: int = 50):
    """The workspace's latest delivery attempts, newest first (the owners' log)."""
    return NotificationDelivery.objects.filter(workspace=workspace)[:limit]
