"""A judge config's own page: settings without secrets, versions made by edits, the
connection test against a real local chat-completions server, its runs; and the
distinct default names runs get."""

from __future__ import annotations

import pytest
from django.urls import reverse

from flaskapp.errors import DomainError
from judging.models import JudgeConfig, JudgeConfigVersion, JudgeRun
from judging.services.configs import judge_config_update
from judging.services.connection import TEST_MAX_TOKENS
from judging.services.runs import judge_run_create
from tests.judging import FakeJudge
from tests.judging.data import KEY_ENV, SECRET, make_config, make_dataset, make_run
from tests.judging.test_views import HX, page_text

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _key_in_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def config(researcher):
    return make_config(researcher)


def _edit_post(config, **overrides):
    data = {
        "name": config.name,
        "backend": config.backend,
        "base_url": config.base_url,
        "model": config.model,
        "api_key_env": config.api_key_env,
        "temperature": str(config.temperature),
        "max_tokens": str(config.max_tokens),
        "samples": str(config.samples),
        "output_mode": config.output_mode,
        "price_input_per_m": str(config.price_input_per_m),
        "price_output_per_m": str(config.price_output_per_m),
        "max_concurrency": str(config.max_concurrency),
        "timeout_seconds": str(config.timeout_seconds),
        "max_parse_retries": str(config.max_parse_retries),
        "include_reference": "on",
    }
    if config.prompt_id:
        data["prompt"] = str(config.prompt_id)
    data.update(overrides)
    return data


# --- the page ---------------------------------------------------------------------------


def test_detail_shows_settings_and_runs_but_never_the_key(
    client_for, researcher, config
):
    dataset = make_dataset()
    run = make_run(dataset=dataset, config=config, name="first try")
    other = make_config(researcher, name="other-judge")
    make_run(dataset=dataset, config=other, name="not this judge")
    response = client_for(researcher).get(
        reverse("judging:judge-detail", args=[config.pk])
    )
    assert response.status_code == 200
    body = response.content.decode()
    text = page_text(response)
    assert SECRET not in body
    assert KEY_ENV in text and "set on the server" in text
    assert "judge-model" in text and "http://127.0.0.1:9/v1" in text
    assert "first try" in text and "not this judge" not in text
    assert reverse("judging:run-detail", args=[run.pk]) in body
    assert "version 1" in text
    assert (
        'hx-post="{}"'.format(reverse("judging:judge-test", args=[config.pk])) in body
    )


def test_detail_runs_list_is_a_constant_number_of_queries(
    client_for, researcher, config, django_assert_max_num_queries
):
    dataset = make_dataset()
    for i in range(12):
        make_run(dataset=dataset, config=config, name=f"run {i}")
    client = client_for(researcher)
    with django_assert_max_num_queries(14):
        response = client.get(reverse("judging:judge-detail", args=[config.pk]))
    assert page_text(response).count("run 1") >= 1


def test_detail_refuses_raters_and_anonymous_and_404s_unknown(
    client_for, rater, no_role_user, researcher, admin_user, config
):
    url = reverse("judging:judge-detail", args=[config.pk])
    assert client_for(rater).get(url).status_code == 403
    assert client_for(no_role_user).get(url).status_code == 403
    anonymous = client_for(None).get(url)
    assert anonymous.status_code == 302
    assert anonymous["Location"].startswith(reverse("login"))
    assert client_for(admin_user).get(url).status_code == 200
    missing = reverse("judging:judge-detail", args=[config.pk + 999])
    assert client_for(researcher).get(missing).status_code == 404


def test_judge_list_links_to_the_detail_page(client_for, researcher, config):
    body = client_for(researcher).get(reverse("judging:judge-list")).content.decode()
    assert reverse("judging:judge-detail", args=[config.pk]) in body


# --- versions ---------------------------------------------------------------------------


def test_an_edit_makes_a_new_version_and_runs_keep_theirs(
    client_for, researcher, config
):
    dataset = make_dataset()
    before = judge_run_create(config=config, dataset=dataset, user=researcher)
    client = client_for(researcher)
    edited = client.post(
        reverse("judging:judge-edit", args=[config.pk]),
        _edit_post(config, temperature="0.7"),
    )
    assert edited.status_code == 302, edited.context["form"].errors
    assert edited["Location"] == reverse("judging:judge-detail", args=[config.pk])
    config.refresh_from_db()
    assert config.version == 2 and config.temperature == 0.7
    versions = list(config.versions.order_by("version"))
    assert [v.version for v in versions] == [1, 2]
    assert versions[0].snapshot["temperature"] == 0.0
    assert versions[1].snapshot["temperature"] == 0.7
    assert SECRET not in str(versions[1].snapshot)
    after = judge_run_create(config=config, dataset=dataset, user=researcher)
    assert before.settings_snapshot["config_version"] == 1
    assert after.settings_snapshot["config_version"] == 2
    text = page_text(client.get(edited["Location"]))
    assert "version 2" in text and "temperature : 0.0 → 0.7" in text
    assert "v1" in text and "v2" in text


def test_saving_unchanged_settings_makes_no_new_version(client_for, researcher, config):
    judge_config_update(user=researcher, config=config, name=config.name)
    # The form's unchanged values (prices typed "2.5", stored 2.5000) are no change.
    response = client_for(researcher).post(
        reverse("judging:judge-edit", args=[config.pk]),
        _edit_post(config, price_input_per_m="2.5"),
    )
    assert response.status_code == 302, response.context["form"].errors
    config.refresh_from_db()
    assert config.version == 1
    assert JudgeConfigVersion.objects.filter(config=config).count() == 1


def test_a_refused_edit_changes_nothing_and_names_the_field(
    client_for, researcher, config
):
    response = client_for(researcher).post(
        reverse("judging:judge-edit", args=[config.pk]),
        _edit_post(config, temperature="9"),
    )
    assert response.status_code == 400
    assert "temperature" in response.context["form"].errors
    config.refresh_from_db()
    assert config.version == 1 and config.versions.count() == 1
    with pytest.raises(DomainError) as caught:
        judge_config_update(user=researcher, config=config, samples=0)
    assert caught.value.problems[0].field == "samples"
    assert JudgeConfig.objects.get(pk=config.pk).version == 1


# --- the connection test ----------------------------------------------------------------


def test_connection_test_calls_the_endpoint_once_and_shows_the_answer(
    client_for, researcher, fake_server
):
    base = fake_server(latency_ms=1, require_api_key=SECRET)
    config = make_config(researcher, base_url=base, model="fake-judge")
    url = reverse("judging:judge-test", args=[config.pk])
    response = client_for(researcher).post(url, **HX)
    assert response.status_code == 200
    body = response.content.decode()
    assert body.lstrip().startswith('<div id="connection-result"')
    assert "Connected" in body and "fake-judge answered" in body
    assert SECRET not in body
    judge = FakeJudge(base)
    assert judge.stats()["requests"] == 1
    sent = judge.last_request()
    assert sent["model"] == "fake-judge" and sent["max_tokens"] == TEST_MAX_TOKENS


def test_connection_test_shows_the_error_without_the_key(
    client_for, researcher, fake_server
):
    base = fake_server(
        latency_ms=1, require_api_key="another-key", echo_key_in_errors=True
    )
    config = make_config(researcher, base_url=base)
    response = client_for(researcher).post(
        reverse("judging:judge-test", args=[config.pk]), **HX
    )
    assert response.status_code == 200
    text = page_text(response)
    assert "The test failed (no_chat_api): the endpoint did not answer" in text
    assert "HTTP 401" not in text and SECRET not in response.content.decode()
    # Without htmx the whole page comes back, with the result in it.
    page = client_for(researcher).post(reverse("judging:judge-test", args=[config.pk]))
    assert page.status_code == 200
    assert "<html" in page.content.decode() and "The test failed" in page_text(page)


def test_connection_test_reports_an_unreachable_endpoint(
    client_for, researcher, config
):
    # Port 9 (discard) on the loopback: nothing listens, the connection is refused.
    response = client_for(researcher).post(
        reverse("judging:judge-test", args=[config.pk]), **HX
    )
    assert response.status_code == 200
    assert (
        "The test failed (no_chat_api): the endpoint did not answer like a chat API"
        in page_text(response)
    )


def _connection_result(client, config) -> str:
    response = client.post(reverse("judging:judge-test", args=[config.pk]), **HX)
    return page_text(response)


def test_connection_test_tells_nothing_of_what_listens_on_a_port(
    client_for, researcher, fake_server
):
    client = client_for(researcher)
    garbage, missing = fake_server(latency_ms=1), fake_server(latency_ms=1)
    FakeJudge(garbage).script("garbage")  # HTTP, but not a chat API
    FakeJudge(missing).script(404)
    shown = set()
    for n, base in enumerate(
        (
            "http://127.0.0.1:9/v1",  # nothing listens: connection refused
            fake_server(latency_ms=1, require_api_key="another-key"),  # HTTP 401
            garbage,
            missing,
        )
    ):
        config = make_config(researcher, base_url=base, name=f"probe-{n}")
        text = _connection_result(client, config)
        assert "The test failed" in text, base
        shown.add(text.split("The test failed", 1)[1].split(".")[0])
    assert shown == {" (no_chat_api): the endpoint did not answer like a chat API"}


def test_connection_test_sends_nothing_without_the_key(
    client_for, researcher, fake_server, monkeypatch
):
    base = fake_server(latency_ms=1)
    config = make_config(researcher, base_url=base)
    monkeypatch.delenv(KEY_ENV)
    response = client_for(researcher).post(
        reverse("judging:judge-test", args=[config.pk]), **HX
    )
    assert f"{KEY_ENV} is not set on the server" in page_text(response)
    assert FakeJudge(base).stats()["requests"] == 0


def test_connection_test_of_a_baseline_says_there_is_nothing_to_test(
    client_for, researcher
):
    config = make_config(
        researcher, name="rouge", backend="baseline_rouge", base_url="", model=""
    )
    response = client_for(researcher).post(
        reverse("judging:judge-test", args=[config.pk]), **HX
    )
    assert response.status_code == 200
    assert "calls no endpoint" in page_text(response)


def test_connection_test_refuses_raters_anonymous_and_get(
    client_for, rater, researcher, config
):
    url = reverse("judging:judge-test", args=[config.pk])
    assert client_for(rater).post(url, **HX).status_code == 403
    anonymous = client_for(None).post(url)
    assert anonymous.status_code == 302
    assert client_for(researcher).get(url).status_code == 405


# --- default run names ------------------------------------------------------------------


def test_runs_without_a_name_get_distinct_names(researcher, config):
    dataset = make_dataset()
    first = judge_run_create(config=config, dataset=dataset, user=researcher)
    second = judge_run_create(config=config, dataset=dataset, user=researcher)
    named = judge_run_create(
        config=config, dataset=dataset, user=researcher, name="mine"
    )
    assert first.name.startswith(f"{config.name} · {dataset.name} · ")
    assert second.name != first.name and second.name.startswith(first.name)
    assert named.name == "mine"
    assert JudgeRun.objects.filter(name=first.name).count() == 1


def test_annotation_runs_name_their_kind(researcher, config):
    dataset = make_dataset()
    run = judge_run_create(
        config=config, dataset=dataset, user=researcher, kind="metadata"
    )
    assert run.name.startswith(f"{config.name} · {dataset.name} · metadata · ")


def test_an_api_change_makes_a_new_version_too(api_client_for, researcher, config):
    client = api_client_for(researcher)
    assert client.get(f"/api/judges/{config.pk}/").json()["version"] == 1
    changed = client.patch(f"/api/judges/{config.pk}/", {"samples": 3}, format="json")
    assert changed.status_code == 200, changed.json()
    assert changed.json()["version"] == 2
    assert config.versions.get(version=2).snapshot["samples"] == 3
    refused = client.patch(f"/api/judges/{config.pk}/", {"samples": 0}, format="json")
    assert refused.status_code == 400
    assert "samples" in str(refused.json()["problems"])
    assert JudgeConfig.objects.get(pk=config.pk).version == 2


def test_detail_of_a_config_without_recorded_versions(client_for, researcher):
    # Configs made before versions were recorded (or straight in the database) have
    # none; their page shows the settings instead of failing.
    legacy = JudgeConfig.objects.create(
        name="legacy judge", base_url="http://127.0.0.1:9/v1", model="old-model"
    )
    page = client_for(researcher).get(reverse("judging:judge-detail", args=[legacy.pk]))
    assert page.status_code == 200
    assert "old-model" in page.content.decode()
