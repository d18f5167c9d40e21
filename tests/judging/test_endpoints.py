"""Judge endpoints (`judging.endpoints`): only declared key variables are ever read or
reported, only admins (or researchers granted the right) introduce an endpoint, and
`JUDGE_ALLOWED_HOSTS` bounds where calls go; each rule at save time and at call time.

The attack these tests stand for: a researcher names `DJANGO_SECRET_KEY` (or
`DATABASE_URL`) as the key variable of a judge whose base URL is their own server, and
starts a run; the worker would send the value as ``Authorization: Bearer ...``."""

from __future__ import annotations

import pytest
from django.urls import reverse

from flaskapp.errors import DomainError
from judging import endpoints
from judging.models import JudgeCall, JudgeConfig, JudgeRun
from judging.selectors.runs import api_key_is_set
from judging.services.configs import judge_config_create, judge_config_update
from judging.services.execution import judge_run_drive
from judging.services.runs import judge_run_create
from tests.factories import UserFactory, grant_endpoint_rights
from tests.judging.data import KEY_ENV, SECRET, make_dataset
from tests.judging.test_execution import stats

SERVER_SECRETS = ("DJANGO_SECRET_KEY", "DATABASE_URL", "REDIS_URL", "HOME", "PATH")


def _fields(**overrides):
    values = {
        "name": "attacker-judge",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_env": KEY_ENV,
    }
    values.update(overrides)
    return values


# --- declared key variables -----------------------------------------------------------


def test_only_declared_names_are_key_variables(settings):
    settings.JUDGE_KEY_ENV_ALLOWED = "JUDGE_KEY_*,OPENAI_API_KEY"
    assert endpoints.key_env_declared("JUDGE_KEY_OPENROUTER")
    assert endpoints.key_env_declared("OPENAI_API_KEY")
    for name in (*SERVER_SECRETS, "judge_key_lower", "", None, "JUDGE_KEY_A B"):
        assert not endpoints.key_env_declared(name), name
    settings.JUDGE_KEY_ENV_ALLOWED = "MY_LAB_KEY"
    assert endpoints.key_env_declared("MY_LAB_KEY")
    assert not endpoints.key_env_declared("JUDGE_KEY_OPENROUTER")


@pytest.mark.django_db
@pytest.mark.parametrize("name", SERVER_SECRETS)
def test_an_undeclared_variable_is_refused_naming_the_field_even_for_an_admin(
    admin_user, name
):
    with pytest.raises(DomainError) as caught:
        judge_config_create(user=admin_user, **_fields(api_key_env=name))
    fields = {p.field: p.message for p in caught.value.problems}
    assert "declared key variable" in fields["api_key_env"]
    assert "JUDGE_KEY_ENV_ALLOWED" in fields["api_key_env"]
    assert not JudgeConfig.objects.exists()


def test_whether_a_variable_is_set_is_told_for_declared_names_only(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)
    assert api_key_is_set(KEY_ENV) is True
    monkeypatch.delenv(KEY_ENV)
    assert api_key_is_set(KEY_ENV) is False
    for name in SERVER_SECRETS:  # set or not, the answer does not say
        assert api_key_is_set(name) is None


@pytest.mark.django_db
def test_the_api_reports_api_key_set_only_for_declared_names(
    api_client_for, researcher, monkeypatch
):
    monkeypatch.setenv(KEY_ENV, SECRET)
    # A config stored before the rule existed, naming a server variable.
    legacy = JudgeConfig.objects.create(
        name="legacy", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="HOME"
    )
    declared = JudgeConfig.objects.create(
        name="declared",
        base_url="http://127.0.0.1:9/v1",
        model="m",
        api_key_env=KEY_ENV,
    )
    client = api_client_for(researcher)
    got = {
        c["name"]: c["api_key_set"]
        for c in client.get(reverse("judging_api:judge-list")).json()["results"]
    }
    assert got == {"legacy": None, "declared": True}
    assert SECRET not in str(client.get(reverse("judging_api:judge-list")).content)
    assert legacy.pk and declared.pk


# --- endpoint rights ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_researcher_cannot_introduce_an_endpoint(researcher):
    with pytest.raises(DomainError) as caught:
        judge_config_create(user=researcher, **_fields())
    assert [p.field for p in caught.value.problems] == ["base_url"]
    assert "judging.manage_endpoints" in caught.value.problems[0].message
    assert not JudgeConfig.objects.exists()


@pytest.mark.django_db
def test_a_researcher_reuses_an_endpoint_an_admin_configured(admin_user, researcher):
    judge_config_create(user=admin_user, **_fields(name="admin-judge"))
    config = judge_config_create(
        user=researcher, **_fields(name="my-judge", temperature=0.7, samples=3)
    )
    assert config.endpoint_approved_by == admin_user  # approved by who configured it
    # Same URL, another key variable: a new endpoint, refused naming the key field.
    with pytest.raises(DomainError) as caught:
        judge_config_create(
            user=researcher, **_fields(name="x", api_key_env="JUDGE_KEY_OTHER")
        )
    assert [p.field for p in caught.value.problems] == ["api_key_env"]


@pytest.mark.django_db
def test_the_right_can_be_granted_and_an_endpoint_of_a_demoted_person_is_not_offered(
    researcher,
):
    grant_endpoint_rights(researcher)
    judge_config_create(user=researcher, **_fields(name="granted"))
    other = UserFactory(username="second-researcher", role="researcher")
    # The same pair is now a configured endpoint for everyone...
    judge_config_create(user=other, **_fields(name="reused"))
    # ...until whoever approved it loses the right.
    researcher.user_permissions.clear()
    researcher = type(researcher).objects.get(pk=researcher.pk)
    with pytest.raises(DomainError):
        judge_config_create(user=other, **_fields(name="again"))


@pytest.mark.django_db
def test_changing_the_endpoint_needs_the_right_and_parameters_do_not(
    admin_user, researcher
):
    config = judge_config_create(user=admin_user, **_fields())
    judge_config_update(user=researcher, config=config, temperature=1.0)
    config.refresh_from_db()
    assert config.temperature == 1.0
    with pytest.raises(DomainError) as caught:
        judge_config_update(
            user=researcher, config=config, base_url="https://evil.example.net/v1"
        )
    assert [p.field for p in caught.value.problems] == ["base_url"]
    config.refresh_from_db()
    assert config.base_url == "http://127.0.0.1:9/v1"


@pytest.mark.django_db
def test_api_create_and_change_refuse_a_new_endpoint_and_other_roles(
    api_client_for, admin_user, researcher, rater
):
    url = reverse("judging_api:judge-list")
    body = _fields()
    assert api_client_for(None).post(url, body, format="json").status_code in (401, 403)
    assert api_client_for(rater).post(url, body, format="json").status_code == 403
    refused = api_client_for(researcher).post(url, body, format="json")
    assert refused.status_code == 400
    assert [p["field"] for p in refused.json()["problems"]] == ["base_url"]
    created = api_client_for(admin_user).post(url, body, format="json")
    assert created.status_code == 201, created.json()
    detail = reverse("judging_api:judge-detail", args=[created.json()["id"]])
    patch = {"base_url": "https://evil.example.net/v1"}
    assert api_client_for(None).patch(detail, patch, format="json").status_code in (
        401,
        403,
    )
    assert api_client_for(rater).patch(detail, patch, format="json").status_code == 403
    assert (
        api_client_for(researcher).patch(detail, patch, format="json").status_code
        == 400
    )
    ok = api_client_for(researcher).patch(detail, {"samples": 2}, format="json")
    assert ok.status_code == 200 and ok.json()["samples"] == 2
    secret = api_client_for(admin_user).patch(
        detail, {"api_key_env": "DJANGO_SECRET_KEY"}, format="json"
    )
    assert secret.status_code == 400
    assert [p["field"] for p in secret.json()["problems"]] == ["api_key_env"]
    assert JudgeConfig.objects.get().api_key_env == KEY_ENV


@pytest.mark.django_db
def test_pages_refuse_a_new_endpoint_and_other_roles(
    client_for, admin_user, researcher, rater
):
    new = reverse("judging:judge-new")
    form = {
        **_fields(),
        "backend": "openai",
        "temperature": "0",
        "samples": "1",
        "max_tokens": "512",
        "output_mode": "json_schema",
        "price_input_per_m": "0",
        "price_output_per_m": "0",
        "max_concurrency": "4",
        "timeout_seconds": "60",
        "max_parse_retries": "1",
    }
    assert client_for(rater).get(new).status_code == 403
    anonymous = client_for(None).get(new)
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    page = client_for(researcher).post(new, form)
    assert page.status_code == 400  # the form again, with the error
    assert "judging.manage_endpoints" in page.context["form"].errors["endpoint"][0]
    assert not JudgeConfig.objects.exists()
    # With the right, the same form creates it.
    grant_endpoint_rights(researcher)
    created = client_for(researcher).post(new, form)
    assert created.status_code == 302, created.context["form"].errors
    assert JudgeConfig.objects.get().endpoint_approved_by == researcher
    JudgeConfig.objects.all().delete()
    config = judge_config_create(user=admin_user, **_fields())
    edit = reverse("judging:judge-edit", args=[config.pk])
    assert client_for(rater).get(edit).status_code == 403
    assert client_for(researcher).get(edit).status_code == 200


# --- allowed hosts ----------------------------------------------------------------------


@pytest.mark.django_db
def test_allowed_hosts_bound_where_configs_may_point(settings, admin_user):
    settings.JUDGE_ALLOWED_HOSTS = "api.openai.com,*.example.org"
    judge_config_create(
        user=admin_user, **_fields(name="ok", base_url="https://llm.example.org/v1")
    )
    for url in (
        "http://127.0.0.1:9/v1",
        "http://169.254.169.254/latest",
        "https://api.openai.com@evil.net/v1",
    ):
        with pytest.raises(DomainError) as caught:
            judge_config_create(user=admin_user, **_fields(name="no", base_url=url))
        assert [p.field for p in caught.value.problems] == ["base_url"], url


# --- at call time: nothing is sent --------------------------------------------------------


def _running_run(admin_user, base_url, **snapshot_changes):
    """A run that was made and started under the rules of its day, its frozen settings
    then holding `snapshot_changes` (a run from before the rules, or before the
    operator narrowed them), left for a driver to pick up (as recovery would)."""
    from django.utils import timezone

    config = judge_config_create(
        user=admin_user, **_fields(base_url=base_url, api_key_env="")
    )
    run = judge_run_create(
        config=config, dataset=make_dataset(instructions=1), user=admin_user
    )
    snapshot = {**run.settings_snapshot, **snapshot_changes}
    JudgeRun.objects.filter(pk=run.pk).update(
        status=JudgeRun.Status.RUNNING,
        started_at=timezone.now(),
        settings_snapshot=snapshot,
    )
    return run


@pytest.mark.django_db(transaction=True)
def test_a_stored_undeclared_key_variable_is_never_sent(
    fake_server, admin_user, monkeypatch, settings
):
    settings.REDIS_URL = ""
    monkeypatch.setenv("DJANGO_SECRET_KEY", SECRET)
    base = fake_server(latency_ms=1)
    run = _running_run(admin_user, base, api_key_env="DJANGO_SECRET_KEY")
    judge_run_drive(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.FAILED
    calls = list(JudgeCall.objects.filter(run=run))
    assert calls and {c.error_kind for c in calls} == {"refused"}
    assert all("nothing was sent" in c.error for c in calls)
    assert all(SECRET not in c.error for c in calls)
    assert stats(base)["requests"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_host_refused_after_the_run_started_gets_no_request(
    fake_server, admin_user, settings
):
    settings.REDIS_URL = ""
    base = fake_server(latency_ms=1)
    run = _running_run(admin_user, base)
    settings.JUDGE_ALLOWED_HOSTS = "api.openai.com"  # the operator narrows it later
    judge_run_drive(run_id=run.pk)
    calls = list(JudgeCall.objects.filter(run=run))
    assert calls and {c.error_kind for c in calls} == {"refused"}
    assert all("JUDGE_ALLOWED_HOSTS" in c.error for c in calls)
    assert stats(base)["requests"] == 0


# --- ports ------------------------------------------------------------------------------


def test_allowed_hosts_take_ports_and_service_ports_need_their_own_entry(
    settings, admin_user
):
    settings.JUDGE_BLOCKED_PORTS = "5432,6379"
    cases = {
        # JUDGE_ALLOWED_HOSTS: {url: allowed}
        "": {
            "http://127.0.0.1:11434/v1": True,
            "http://127.0.0.1:6379/v1": False,
            "https://api.openai.com:5432/v1": False,
        },
        "localhost": {
            "http://localhost:11434/v1": True,
            "http://localhost/v1": True,
            "http://localhost:5432/v1": False,
            "http://localhost:6379/v1": False,
        },
        "localhost:8000,localhost:6379,[::1]:9000": {
            "http://localhost:8000/v1": True,
            "http://localhost:6379/v1": True,
            "http://localhost:11434/v1": False,
            "http://localhost/v1": False,
            "http://localhost:5432/v1": False,
            "http://[::1]:9000/v1": True,
            "http://[::1]:9001/v1": False,
        },
    }
    for hosts, urls in cases.items():
        settings.JUDGE_ALLOWED_HOSTS = hosts
        for url, allowed in urls.items():
            assert endpoints.host_allowed(url) is allowed, (hosts, url)
            problems = endpoints.endpoint_problems(url, KEY_ENV)
            assert ("base_url" not in problems) is allowed, (hosts, url)
    settings.JUDGE_ALLOWED_HOSTS = "localhost"
    with pytest.raises(DomainError) as caught:
        judge_config_create(
            user=admin_user, **_fields(base_url="http://localhost:6379/v1")
        )
    [problem] = caught.value.problems
    assert problem.field == "base_url" and "localhost:6379" in problem.message


def test_the_apps_own_port_is_a_service_port(settings, monkeypatch):
    settings.JUDGE_ALLOWED_HOSTS = ""
    monkeypatch.setenv("PORT", "8123")
    assert not endpoints.host_allowed("http://127.0.0.1:8123/v1")
    assert endpoints.host_allowed("http://127.0.0.1:8124/v1")


@pytest.mark.django_db(transaction=True)
def test_a_service_port_gets_no_request_at_call_time(fake_server, admin_user, settings):
    settings.REDIS_URL = ""
    base = fake_server(latency_ms=1)
    run = _running_run(admin_user, base)
    settings.JUDGE_BLOCKED_PORTS = str(endpoints.url_port(base))  # e.g. Redis's
    judge_run_drive(run_id=run.pk)
    calls = list(JudgeCall.objects.filter(run=run))
    assert calls and {c.error_kind for c in calls} == {"refused"}
    assert all("JUDGE_BLOCKED_PORTS" in c.error for c in calls)
    assert stats(base)["requests"] == 0


@pytest.mark.django_db(transaction=True)
def test_a_run_keeps_no_reply_that_echoes_the_key(
    fake_server, admin_user, monkeypatch, settings
):
    from django.utils import timezone

    from judging.fake_server import ECHO_FORMS
    from judging.redaction import holds_secret

    settings.REDIS_URL = ""
    monkeypatch.setenv(KEY_ENV, SECRET)
    dataset = make_dataset(instructions=1)
    for form in sorted(ECHO_FORMS):
        base = fake_server(latency_ms=1, echo_authorization=form)
        config = judge_config_create(
            user=admin_user, **_fields(name=f"echo-{form}", base_url=base)
        )
        run = judge_run_create(config=config, dataset=dataset, user=admin_user)
        JudgeRun.objects.filter(pk=run.pk).update(
            status=JudgeRun.Status.RUNNING, started_at=timezone.now()
        )
        judge_run_drive(run_id=run.pk)
        calls = list(JudgeCall.objects.filter(run=run))
        assert calls and {c.error_kind for c in calls} == {"echoed_credentials"}, form
        for call in calls:
            assert call.raw_output == "" and call.parsed is None
            assert "the endpoint echoed the credentials" in call.error
            stored = [call.error, call.raw_output, str(call.parsed)]
            assert not any(holds_secret(text, SECRET) for text in stored), form
