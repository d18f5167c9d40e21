"""A workspace's notifications page (its owners): where finished judge runs and
closed campaigns are announced (e-mail addresses, a webhook URL and its signing
secret, write-only), and the log of every delivery attempt (`flaskapp.notifications`).

    GET  /workspaces/<id>/notifications/   the settings and the log
    POST /workspaces/<id>/notifications/   save them (400 with the page and each
                                           problem by field; nothing changed)
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.debug import sensitive_post_parameters
from django.views.decorators.http import require_http_methods

from flaskapp import notifications
from flaskapp.errors import DomainError
from flaskapp.people import selectors

TEMPLATE = "flaskapp/workspace_notifications.html"
FIELD_LABELS = {
    "email_to": "E-mail addresses",
    "webhook_url": "Webhook URL",
    "webhook_secret": "Signing secret",
}


@sensitive_post_parameters("webhook_secret")
@login_required
@require_http_methods(["GET", "POST"])
def workspace_notifications(request: HttpRequest, workspace_id: int) -> HttpResponse:
    """Show or save the workspace's notification settings, with the delivery log."""
    ws = selectors.workspace_get_for_owner(user=request.user, workspace_id=workspace_id)
    row = notifications.notification_settings_get(workspace=ws)
    typed = {"email_to": row.email_to, "webhook_url": row.webhook_url}
    problems = []
    if request.method == "POST":
        typed = {k: request.POST.get(k, "") for k in ("email_to", "webhook_url")}
        try:
            notifications.notification_settings_update(
                actor=request.user,
                workspace=ws,
                webhook_secret=request.POST.get("webhook_secret", ""),
                **typed,
            )
        except DomainError as exc:
            problems = [
                f"{FIELD_LABELS.get(p.field or '', p.field)}: {p.message}"
                for p in exc.problems
            ]
        else:
            messages.success(request, "Notification settings saved.")
            return redirect("people:workspace-notifications", ws.pk)
    context = {
        "workspace": ws,
        "typed": typed,
        "secret_set": bool(row.webhook_secret),
        "problems": problems,
        "events": notifications.EVENTS,
        "deliveries": notifications.delivery_list(workspace=ws),
        "signature_header": notifications.SIGNATURE_HEADER,
        "timestamp_header": notifications.TIMESTAMP_HEADER,
        "max_attempts": notifications.settings.NOTIFY_WEBHOOK_MAX_ATTEMPTS,
    }
    return render(request, TEMPLATE, context, status=400 if problems else 200)
