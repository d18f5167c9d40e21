"""A stored key on the wire (issue 35), against a real local chat-completions server:
it reaches the endpoint as the Authorization header, only for the hosts its owner
allowed, decrypted by `judging.llm` at call time; its use is audited once per run."""

from __future__ import annotations

import asyncio
import logging

import pytest
from django.urls import reverse

from flaskapp.models import AuditEvent
from judging import llm
from judging.models import JudgeCall, JudgeRun, StoredKey
from judging.services.configs import judge_config_create
from judging.services.connection import judge_config_test_connection
from judging.services.execution import judge_run_drive
from judging.services.keys import stored_key_create, stored_key_grant
from judging.services.runs import judge_run_create, judge_run_start
from tests.judging import FakeJudge
from tests.judging.keys_data import SECRET
from tests.judging.test_execution import make_dataset

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def eager_tasks(settings):
    """Runs driven inline, with the in-process limiter (as test_execution's)."""
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""
    yield
    app.conf.task_always_eager = before


def key_and_judge(lab, base_url, hosts=("127.0.0.1",)):
    key = stored_key_create(
        user=lab.owner,
        workspace=lab.workspace,
        name="lab-key",
        value=SECRET,
        allowed_hosts=list(hosts),
    )
    # A researcher without endpoint rights: a stored key is the workspace's own.
    config = judge_config_create(
        user=lab.researcher,
        name="stored-key-judge",
        base_url=base_url,
        model="fake-judge",
        stored_key=key,
        max_concurrency=4,
        timeout_seconds=5,
    )
    return key, config


def lab_dataset(lab, **kwargs):
    """A dataset of the lab's workspace (`make_dataset` makes one in the default)."""
    dataset = make_dataset(**kwargs)
    dataset.workspace = lab.workspace
    dataset.save(update_fields=["workspace"])
    return dataset


def uses(key) -> list[AuditEvent]:
    return list(
        AuditEvent.objects.filter(action="key.used", target_id=str(key.pk)).order_by(
            "id"
        )
    )


def test_a_run_sends_the_stored_key_and_records_one_use(
    lab, eager_tasks, fake_server, caplog, client_for
):
    caplog.set_level(logging.DEBUG)
    base = fake_server(latency_ms=2, require_api_key=SECRET)
    key, config = key_and_judge(lab, base)
    dataset = lab_dataset(lab, n_instructions=3)
    run = judge_run_create(config=config, dataset=dataset, user=lab.researcher)
    assert run.settings_snapshot["stored_key_id"] == key.pk
    assert SECRET not in str(run.settings_snapshot)
    judge_run_start(run=run, user=lab.researcher)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED
    statuses = set(JudgeCall.objects.filter(run=run).values_list("status", flat=True))
    assert statuses == {"succeeded"}  # the server answers 401 to any other header
    stats = FakeJudge(base).stats()
    assert stats["requests"] == 6 and "401" not in stats.get("by_status", {})
    [use] = uses(key)  # six calls, one audit row
    assert use.after == {"name": "lab-key", "host": "127.0.0.1", "run": run.pk}
    assert use.workspace_id == lab.workspace.pk
    assert use.actor_name == "lab-researcher"
    assert StoredKey.objects.get(pk=key.pk).last_used_at is not None
    page = client_for(lab.researcher).get(reverse("judging:run-detail", args=[run.pk]))
    assert "stored key “lab-key”" in page.content.decode()
    assert SECRET not in page.content.decode()
    assert SECRET not in caplog.text


def test_a_use_is_audited_once_per_run_however_many_drivers(lab, fake_server):
    base = fake_server(latency_ms=1)
    key, _ = key_and_judge(lab, base)
    for _ in range(3):
        stored_key_grant(key_id=key.pk, base_url=base, run_id=4242)
    stored_key_grant(key_id=key.pk, base_url=base, run_id=4243)
    assert [u.after["run"] for u in uses(key)] == [4242, 4243]


def test_a_key_is_not_sent_to_a_host_outside_its_allowed_hosts(
    lab, eager_tasks, fake_server
):
    base = fake_server(latency_ms=1, require_api_key=SECRET)
    key, config = key_and_judge(lab, base)
    run = judge_run_create(
        config=config, dataset=lab_dataset(lab, n_instructions=2), user=lab.researcher
    )
    # The owner narrows the key's hosts after the run was made: the worker refuses.
    StoredKey.objects.filter(pk=key.pk).update(allowed_hosts=["api.openai.com"])
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.RUNNING)
    judge_run_drive(run_id=run.pk)
    calls = list(JudgeCall.objects.filter(run=run))
    assert calls and {c.status for c in calls} == {"failed"}
    assert {c.error_kind for c in calls} == {"refused"}
    assert "may not be sent to the host '127.0.0.1'" in calls[0].error
    assert "api.openai.com" in calls[0].error and SECRET not in calls[0].error
    assert FakeJudge(base).stats()["requests"] == 0
    assert uses(key) == []  # nothing was sent: no use


def test_a_run_is_not_started_with_a_key_its_host_refuses(
    lab, eager_tasks, fake_server
):
    base = fake_server(latency_ms=1)
    key, config = key_and_judge(lab, base)
    StoredKey.objects.filter(pk=key.pk).update(allowed_hosts=["api.openai.com"])
    from flaskapp.errors import DomainError

    with pytest.raises(DomainError) as caught:
        judge_run_create(
            config=config,
            dataset=lab_dataset(lab, n_instructions=1),
            user=lab.researcher,
        )
    assert "'127.0.0.1'" in str(caught.value)


def test_the_client_decrypts_only_for_an_allowed_host(fake_server):
    base = fake_server(latency_ms=1, require_api_key=SECRET)
    revealed = []

    def reveal():
        revealed.append(True)
        return SECRET

    async def ask(hosts):
        grant = llm.KeyGrant(name="k", hosts=hosts, reveal=reveal)
        async with llm.JudgeClient(
            base_url=base, api_key=None, timeout=5, max_retries=0, key_grant=grant
        ) as client:
            return await client.complete(
                llm.ChatRequest(
                    messages=[{"role": "user", "content": "hi"}],
                    model="fake-judge",
                    temperature=0,
                    max_tokens=8,
                )
            )

    with pytest.raises(llm.PermanentJudgeError) as caught:
        asyncio.run(ask(("api.openai.com", "*.example.com")))
    assert caught.value.kind == "refused" and not revealed
    assert "'127.0.0.1'" in caught.value.message
    assert FakeJudge(base).stats()["requests"] == 0
    assert asyncio.run(ask(("127.0.0.1",))).text and revealed == [True]
    assert FakeJudge(base).stats()["requests"] == 1
    assert SECRET not in repr(llm.KeyGrant(name="k", hosts=(), reveal=reveal))


def test_an_unreadable_key_refuses_the_call_naming_no_secret(
    lab, fake_server, settings
):
    base = fake_server(latency_ms=1)
    key, config = key_and_judge(lab, base)
    from cryptography.fernet import Fernet

    settings.KEY_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    check = judge_config_test_connection(user=lab.researcher, config=config)
    assert not check.ok and check.kind == "refused"
    assert "cannot be decrypted" in check.message and SECRET not in check.message
    assert FakeJudge(base).stats()["requests"] == 0


def test_the_connection_test_sends_the_stored_key(lab, client_for, fake_server):
    base = fake_server(latency_ms=1, require_api_key=SECRET)
    key, config = key_and_judge(lab, base)
    answer = client_for(lab.researcher).post(
        reverse("judging:judge-test", args=[config.pk]), HTTP_HX_REQUEST="true"
    )
    body = answer.content.decode()
    assert answer.status_code == 200 and "fake-judge answered" in body
    assert SECRET not in body
    [use] = uses(key)
    assert use.after["run"] is None and use.actor_name == "lab-researcher"
    detail = client_for(lab.researcher).get(
        reverse("judging:judge-detail", args=[config.pk])
    )
    assert SECRET not in detail.content.decode()
