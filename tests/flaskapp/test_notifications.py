"""Notifications of finished work (`flaskapp.notifications`, issue 37): the owners'
settings (bad input refused by field, the secret encrypted and never shown), e-mail
through Django's mail, and the webhook against a real local HTTP receiver: signed
with HMAC-SHA256 (checked here as a receiver would), retried on a 500 until it is
taken, not retried on a 4xx, every attempt recorded and shown in the owners' log."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail

from annotation.services.campaigns import campaign_set_status
from flaskapp import vault
from flaskapp.errors import DomainError
from flaskapp.models import (
    AuditEvent,
    NotificationDelivery,
    NotificationSettings,
    default_workspace,
)
from flaskapp.notifications import notification_settings_update, webhook_url_problems
from tests.factories import UserFactory, campaign_from_fields, dataset_with_responses
from tests.flaskapp.people_lab import make_lab

pytestmark = pytest.mark.django_db

SECRET = "receiver-shares-this-secret"


class Receiver:
    """A webhook receiver on 127.0.0.1: answers the scripted statuses in turn (the
    last one for ever after) and keeps every request's headers and body."""

    def __init__(self, statuses):
        self.statuses = list(statuses)
        self.requests: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                n = len(receiver.requests) - 1
                status = receiver.statuses[min(n, len(receiver.statuses) - 1)]
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = []

    def make(*statuses):
        made.append(Receiver(statuses or (200,)))
        return made[-1]

    yield make
    for r in made:
        r.close()


@pytest.fixture
def eager(settings):
    """Tasks run in the test's process (their countdowns not waited for), and the
    local receiver is allowed, as a setting the tests turn on."""
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = True
    settings.NOTIFY_WEBHOOK_MAX_ATTEMPTS = 3
    yield
    app.conf.task_always_eager = before


def close_a_campaign(django_capture_on_commit_callbacks, **settings_fields):
    """Set the default workspace's notifications, then close a campaign of it (the
    event), running what is enqueued after commit."""
    researcher = UserFactory(username="res", role="researcher")
    ws = default_workspace()
    notification_settings_update(actor=researcher, workspace=ws, **settings_fields)
    campaign = campaign_from_fields(
        name="Support answers",
        dataset=dataset_with_responses(2),
        created_by=researcher,
    )
    with django_capture_on_commit_callbacks(execute=True):
        campaign_set_status(campaign=campaign, status="closed", user=researcher)
    return campaign


def verified(headers: dict, body: bytes) -> bool:
    """What a receiver does: recompute the HMAC of "<timestamp>.<body>"."""
    stamp = headers["X-Flask-Timestamp"]
    expected = hmac.new(
        SECRET.encode(), stamp.encode() + b"." + body, hashlib.sha256
    ).hexdigest()
    return hmac.compare_digest(headers["X-Flask-Signature"], "sha256=" + expected)


def test_a_closed_campaign_is_posted_signed_to_the_webhook(
    eager, receiver, django_capture_on_commit_callbacks
):
    hook = receiver(200)
    campaign = close_a_campaign(
        django_capture_on_commit_callbacks,
        email_to="",
        webhook_url=hook.url,
        webhook_secret=SECRET,
    )
    assert len(hook.requests) == 1
    headers, body = hook.requests[0]
    assert verified(headers, body)
    assert not verified({**headers, "X-Flask-Timestamp": "1"}, body)
    assert SECRET not in json.dumps(headers) and SECRET.encode() not in body
    payload = json.loads(body)
    assert payload["event"] == "campaign.closed"
    assert headers["X-Flask-Event"] == "campaign.closed"
    assert payload["object"]["id"] == campaign.pk
    assert payload["object"]["name"] == "Support answers"
    assert payload["object"]["url"] == f"/campaigns/{campaign.pk}/"
    assert payload["workspace"]["slug"] == "default"
    assert payload["counts"] == {"submitted": 0, "raters": 0}
    assert payload["timestamp"] and payload["event_id"]
    (row,) = NotificationDelivery.objects.all()
    assert (row.channel, row.attempt, row.status, row.status_code) == (
        "webhook",
        1,
        "sent",
        200,
    )


def test_a_500_is_retried_until_the_receiver_takes_it(
    eager, receiver, django_capture_on_commit_callbacks
):
    hook = receiver(500, 503, 200)
    close_a_campaign(
        django_capture_on_commit_callbacks,
        email_to="",
        webhook_url=hook.url,
        webhook_secret=SECRET,
    )
    assert len(hook.requests) == 3
    ids = {json.loads(body)["event_id"] for _, body in hook.requests}
    assert len(ids) == 1  # the same event each time
    assert all(verified(h, b) for h, b in hook.requests)
    rows = list(NotificationDelivery.objects.order_by("attempt"))
    assert [(r.attempt, r.status, r.status_code, r.final) for r in rows] == [
        (1, "failed", 500, False),
        (2, "failed", 503, False),
        (3, "sent", 200, True),
    ]


def test_retries_stop_at_the_limit_and_a_4xx_is_not_retried(
    eager, receiver, django_capture_on_commit_callbacks
):
    down = receiver(500)
    close_a_campaign(
        django_capture_on_commit_callbacks,
        email_to="",
        webhook_url=down.url,
        webhook_secret=SECRET,
    )
    assert len(down.requests) == 3  # NOTIFY_WEBHOOK_MAX_ATTEMPTS
    last = NotificationDelivery.objects.order_by("-attempt").first()
    assert (last.attempt, last.status, last.final) == (3, "failed", True)

    NotificationDelivery.objects.all().delete()
    refusing = receiver(410)
    close_a_campaign(
        django_capture_on_commit_callbacks,
        email_to="",
        webhook_url=refusing.url,
        webhook_secret="",  # keeps the stored secret
    )
    assert len(refusing.requests) == 1
    (row,) = NotificationDelivery.objects.all()
    assert (row.status, row.status_code, row.final) == ("failed", 410, True)
    assert "not retried" in row.error


def test_a_dead_receiver_is_recorded_with_its_error(
    eager, receiver, django_capture_on_commit_callbacks
):
    hook = receiver(200)
    url = hook.url
    hook.close()
    close_a_campaign(
        django_capture_on_commit_callbacks,
        email_to="",
        webhook_url=url,
        webhook_secret=SECRET,
    )
    rows = list(NotificationDelivery.objects.order_by("attempt"))
    assert [r.attempt for r in rows] == [1, 2, 3]
    assert all(r.status == "failed" and r.status_code is None for r in rows)
    assert "ConnectError" in rows[0].error


def test_e_mail_goes_to_every_listed_address(eager, django_capture_on_commit_callbacks):
    close_a_campaign(
        django_capture_on_commit_callbacks,
        email_to="ana@lab.example.org\n\nbo@lab.example.org",
        webhook_url="",
    )
    (message,) = mail.outbox
    assert message.to == ["ana@lab.example.org", "bo@lab.example.org"]
    assert message.subject == "[FLASK Eval] Campaign closed: Support answers"
    assert "submitted: 0" in message.body
    (row,) = NotificationDelivery.objects.all()
    assert (row.channel, row.status) == ("email", "sent")


def test_nothing_is_sent_without_settings(eager, django_capture_on_commit_callbacks):
    researcher = UserFactory(username="res", role="researcher")
    campaign = campaign_from_fields(
        name="Quiet", dataset=dataset_with_responses(1), created_by=researcher
    )
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        campaign_set_status(campaign=campaign, status="closed", user=researcher)
    assert callbacks == [] and mail.outbox == []
    assert not NotificationDelivery.objects.exists()


def test_bad_settings_are_refused_by_field_and_nothing_changes(settings):
    owner = UserFactory(username="own", role="researcher")
    ws = default_workspace()
    with pytest.raises(DomainError) as caught:
        notification_settings_update(
            actor=owner,
            workspace=ws,
            email_to="ana@lab.example.org\nnot-an-address",
            webhook_url="ftp://hooks.example.org/x",
            webhook_secret="short",
        )
    shown = [str(p) for p in caught.value.problems]
    assert any("email_to" in p and "line 2" in p for p in shown)
    assert any("webhook_url" in p and "http(s)" in p for p in shown)
    assert any("webhook_secret" in p and "16 to 200" in p for p in shown)
    assert not NotificationSettings.objects.exists()
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = True  # no name lookup (offline tests)
    with pytest.raises(DomainError) as caught:
        notification_settings_update(
            actor=owner, workspace=ws, email_to="", webhook_url="https://example.org/"
        )
    assert caught.value.problems[0].field == "webhook_secret"


def test_private_and_loopback_addresses_are_refused_unless_allowed(settings):
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = False
    for url in (
        "http://127.0.0.1:8000/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/hook",
    ):
        (problem,) = webhook_url_problems(url)
        assert "private, loopback or reserved" in problem.message, url
    assert webhook_url_problems("http://user:pw@203.0.113.9/")[0].message.startswith(
        "may not hold"
    )
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = True
    assert webhook_url_problems("http://127.0.0.1:8000/hook") == []


def test_a_webhook_that_became_private_is_refused_at_send_time(
    eager, receiver, django_capture_on_commit_callbacks, settings
):
    hook = receiver(200)
    researcher = UserFactory(username="res", role="researcher")
    notification_settings_update(
        actor=researcher,
        workspace=default_workspace(),
        email_to="",
        webhook_url=hook.url,
        webhook_secret=SECRET,
    )
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = False
    campaign = campaign_from_fields(
        name="c", dataset=dataset_with_responses(1), created_by=researcher
    )
    with django_capture_on_commit_callbacks(execute=True):
        campaign_set_status(campaign=campaign, status="closed", user=researcher)
    assert hook.requests == []
    (row,) = NotificationDelivery.objects.all()
    assert row.status == "failed" and row.error.startswith("refused:")


def test_the_secret_is_stored_encrypted_and_audited_without_it(settings):
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = True
    owner = UserFactory(username="own", role="researcher")
    row = notification_settings_update(
        actor=owner,
        workspace=default_workspace(),
        email_to="",
        webhook_url="http://127.0.0.1:9/hook",
        webhook_secret=SECRET,
    )
    assert SECRET not in row.webhook_secret
    assert vault.decrypt(row.webhook_secret) == SECRET
    event = AuditEvent.objects.get(action="notifications.changed")
    assert event.after["webhook_secret_set"] is True
    assert SECRET not in json.dumps([event.before, event.after])


# --- the owners' page ---------------------------------------------------------------


def test_the_owner_sets_notifications_and_reads_the_delivery_log(client_for, settings):
    settings.NOTIFY_WEBHOOK_ALLOW_PRIVATE = True
    lab = make_lab()
    url = f"/workspaces/{lab.a.pk}/notifications/"
    client = client_for(lab.owner)
    page = client.get(url).content.decode()
    assert "Nothing sent yet" in page
    settings_page = client.get(f"/workspaces/{lab.a.pk}/settings/").content.decode()
    assert url in settings_page

    bad = client.post(
        url, {"email_to": "nope", "webhook_url": "", "webhook_secret": ""}
    )
    assert bad.status_code == 400
    assert "E-mail addresses: line 1" in bad.content.decode()
    assert not NotificationSettings.objects.exists()

    saved = client.post(
        url,
        {
            "email_to": "lab@a.example.org",
            "webhook_url": "http://127.0.0.1:9/hook",
            "webhook_secret": SECRET,
        },
    )
    assert saved.status_code == 302
    row = NotificationSettings.objects.get(workspace=lab.a)
    assert row.email_to == "lab@a.example.org"
    NotificationDelivery.objects.create(
        workspace=lab.a,
        event_id="e1",
        event="judge_run.finished",
        channel="webhook",
        target=row.webhook_url,
        payload={"object": {"name": "Nightly judge"}},
        attempt=1,
        status="failed",
        final=False,
        status_code=502,
        error="HTTP 502",
    )
    page = client.get(url).content.decode()
    assert "A secret is set" in page and SECRET not in page
    assert "Nightly judge" in page and "HTTP 502" in page and "(tried again)" in page


@pytest.mark.parametrize("who,status", [("researcher", 403), ("owner_b", 404)])
def test_only_owners_see_the_notifications_page(client_for, who, status):
    lab = make_lab()
    url = f"/workspaces/{lab.a.pk}/notifications/"
    assert client_for(getattr(lab, who)).get(url).status_code == status
    assert client_for(getattr(lab, who)).post(url, {}).status_code == status


@pytest.mark.django_db(transaction=True)
def test_a_finished_judge_run_is_announced_once(eager, receiver, fake_server):
    from django.test import override_settings

    from judging.models import JudgeRun
    from tests.judging.rubric_data import YES_NO, dataset_on
    from tests.judging.test_any_rubric_runs import make_config, run_to_end

    settings_ = {"JUDGE_DRIVERS_PER_RUN": 1, "REDIS_URL": ""}
    hook = receiver(200)
    config, user = make_config(fake_server(latency_ms=1), output_mode="json_schema")
    notification_settings_update(
        actor=user,
        workspace=default_workspace(),
        email_to="lab@example.org",
        webhook_url=hook.url,
        webhook_secret=SECRET,
    )
    with override_settings(**settings_):
        run = run_to_end(
            config, user, dataset_on(YES_NO, instructions=2), name="Nightly"
        )
    assert run.status == JudgeRun.Status.COMPLETED
    assert len(hook.requests) == 1
    headers, body = hook.requests[0]
    assert verified(headers, body)
    payload = json.loads(body)
    assert payload["event"] == "judge_run.finished"
    assert payload["object"]["name"] == "Nightly"
    assert payload["object"]["status"] == "completed"
    calls = run.calls.count()  # one per response: 2 instructions x 2 models
    assert payload["counts"] == {
        "calls": calls,
        "calls_succeeded": calls,
        "calls_failed": 0,
        "scores": run.scores.count(),
    }
    assert calls == 4
    (message,) = mail.outbox
    assert message.subject == "[FLASK Eval] Judge run finished: Nightly"
