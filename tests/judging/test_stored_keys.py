"""Judge API keys stored per workspace (issue 35): encrypted at rest, write-only on
every page and API answer, rotated by a command, managed by the workspace's owners and
researchers only, every change in the audit log."""

from __future__ import annotations

import logging

import pytest
from cryptography.fernet import Fernet
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from flaskapp import vault
from flaskapp.errors import DomainError
from flaskapp.models import AuditEvent
from judging.models import StoredKey
from judging.services.configs import judge_config_create
from judging.services.keys import (
    stored_key_create,
    stored_key_delete,
    stored_key_replace,
)
from tests.judging.keys_data import SECRET

HX = {"HTTP_HX_REQUEST": "true"}


def make_key(lab, name="openai", hosts=("api.openai.com",), value=SECRET):
    return stored_key_create(
        user=lab.owner,
        workspace=lab.workspace,
        name=name,
        value=value,
        allowed_hosts=list(hosts),
    )


@pytest.fixture
def secret_free_logs(caplog):
    """Every log record of the test, checked for the secret at the end."""
    caplog.set_level(logging.DEBUG)
    yield
    assert SECRET not in caplog.text


# --- encryption at rest and rotation ------------------------------------------------------


def test_a_stored_key_is_kept_only_as_ciphertext_that_decrypts_to_it(lab):
    key = make_key(lab)
    row = StoredKey.objects.get(pk=key.pk)
    assert SECRET not in row.ciphertext and row.ciphertext
    assert vault.decrypt(row.ciphertext) == SECRET
    assert SECRET not in repr(row) and SECRET not in str(row)


def test_without_an_encryption_key_in_production_keys_are_refused(lab, settings):
    settings.KEY_ENCRYPTION_KEYS = []
    settings.KEY_ENCRYPTION_DEV_FILE = ""
    with pytest.raises(DomainError) as caught:
        make_key(lab)
    assert "FLASK_KEY_ENCRYPTION_KEYS" in str(caught.value)
    assert SECRET not in str(caught.value)
    assert not StoredKey.objects.exists() and not AuditEvent.objects.exists()


def test_a_malformed_encryption_key_is_named_without_its_value(lab, settings):
    settings.KEY_ENCRYPTION_KEYS = ["not-a-fernet-key"]
    with pytest.raises(DomainError) as caught:
        make_key(lab)
    assert "entry 1" in str(caught.value) and "not-a-fernet-key" not in str(
        caught.value
    )


def test_rotation_reencrypts_every_key_with_the_newest(lab, settings):
    old, new = Fernet.generate_key().decode(), Fernet.generate_key().decode()
    settings.KEY_ENCRYPTION_KEYS = [old]
    first = make_key(lab, name="first")
    second = make_key(lab, name="second", value=SECRET + "2")
    settings.KEY_ENCRYPTION_KEYS = [new, old]
    # Before the command both still read (the old key decrypts), with the new first.
    assert vault.decrypt(StoredKey.objects.get(pk=first.pk).ciphertext) == SECRET
    out = _command("rotate_stored_keys")
    assert "2 stored key(s) re-encrypted" in out and SECRET not in out
    assert "0 stored key(s) re-encrypted" in _command("rotate_stored_keys")
    settings.KEY_ENCRYPTION_KEYS = [new]  # the old key dropped: still readable
    assert vault.decrypt(StoredKey.objects.get(pk=first.pk).ciphertext) == SECRET
    assert vault.decrypt(StoredKey.objects.get(pk=second.pk).ciphertext) == (
        SECRET + "2"
    )
    settings.KEY_ENCRYPTION_KEYS = [old]  # and the old key alone no longer reads them
    with pytest.raises(vault.VaultUnavailable) as caught:
        vault.decrypt(StoredKey.objects.get(pk=first.pk).ciphertext)
    assert SECRET not in str(caught.value)


def test_rotation_without_a_key_that_reads_them_fails_naming_no_secret(lab, settings):
    settings.KEY_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    make_key(lab)
    settings.KEY_ENCRYPTION_KEYS = [Fernet.generate_key().decode()]
    with pytest.raises(CommandError) as caught:
        _command("rotate_stored_keys")
    assert "cannot be decrypted" in str(caught.value)


def _command(name: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command(name, stdout=out)
    return out.getvalue()


# --- the services: rules and audit --------------------------------------------------------


def test_create_replace_delete_are_audited_without_the_value(lab):
    key = make_key(lab)
    stored_key_replace(
        user=lab.researcher,
        key=key,
        value=SECRET + "-new",
        allowed_hosts="api.openai.com, *.azure.com",
    )
    stored_key_delete(user=lab.owner, key=key)
    events = list(AuditEvent.objects.order_by("id"))
    assert [e.action for e in events] == ["key.created", "key.replaced", "key.deleted"]
    assert events[1].before == {"name": "openai", "allowed_hosts": ["api.openai.com"]}
    assert events[1].after["allowed_hosts"] == ["api.openai.com", "*.azure.com"]
    assert events[1].actor_name == "lab-researcher"
    assert all(e.workspace_id == lab.workspace.pk for e in events)
    for event in events:
        assert SECRET not in str(event.before) + str(event.after) + event.target_label


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": " "}, "name"),
        ({"value": ""}, "value"),
        ({"value": "two words"}, "value"),
        ({"allowed_hosts": []}, "allowed_hosts"),
        ({"allowed_hosts": ["https://api.openai.com/v1"]}, "allowed_hosts"),
        ({"allowed_hosts": ["api.openai.com:443"]}, "allowed_hosts"),
    ],
)
def test_bad_input_names_the_field_and_stores_nothing(lab, fields, field):
    args = {"name": "k", "value": SECRET, "allowed_hosts": ["api.openai.com"]}
    with pytest.raises(DomainError) as caught:
        stored_key_create(user=lab.owner, workspace=lab.workspace, **{**args, **fields})
    assert [p.field for p in caught.value.problems] == [field]
    assert SECRET not in str(caught.value)
    assert not StoredKey.objects.exists()


def test_a_name_is_unique_within_its_workspace_only(lab):
    make_key(lab)
    with pytest.raises(DomainError) as caught:
        make_key(lab)
    assert caught.value.problems[0].field == "name"
    stored_key_create(
        user=lab.outsider,
        workspace=lab.other,
        name="openai",
        value=SECRET,
        allowed_hosts=["api.openai.com"],
    )


def test_a_key_named_by_a_judge_cannot_be_deleted(lab):
    key = make_key(lab, hosts=["api.openai.com"])
    judge_config_create(
        user=lab.owner,
        name="gpt",
        base_url="https://api.openai.com/v1",
        model="gpt-x",
        stored_key=key,
    )
    with pytest.raises(DomainError) as caught:
        stored_key_delete(user=lab.owner, key=key)
    assert "'gpt'" in caught.value.problems[0].message
    assert StoredKey.objects.filter(pk=key.pk).exists()


def test_a_judge_may_not_name_a_key_for_a_host_it_does_not_allow(lab):
    key = make_key(lab, hosts=["api.openai.com"])
    with pytest.raises(DomainError) as caught:
        judge_config_create(
            user=lab.owner,
            name="elsewhere",
            base_url="https://evil.example.net/v1",
            model="m",
            stored_key=key,
        )
    problem = caught.value.problems[0]
    assert problem.field == "stored_key" and "'evil.example.net'" in problem.message


def test_a_judge_may_not_name_another_workspaces_key(lab):
    key = stored_key_create(
        user=lab.outsider,
        workspace=lab.other,
        name="theirs",
        value=SECRET,
        allowed_hosts=["api.openai.com"],
    )
    with pytest.raises(DomainError) as caught:
        judge_config_create(
            user=lab.owner,
            name="borrowed",
            base_url="https://api.openai.com/v1",
            model="m",
            stored_key=key,
        )
    # Said as "no such key": a non-member learns nothing about the other workspace.
    assert caught.value.problems[0].message == f"no stored key with id {key.pk}"


def test_a_judge_names_a_key_variable_or_a_stored_key_not_both(lab):
    key = make_key(lab)
    with pytest.raises(DomainError) as caught:
        judge_config_create(
            user=lab.admin,
            name="both",
            base_url="https://api.openai.com/v1",
            model="m",
            api_key_env="OPENAI_API_KEY",
            stored_key=key,
        )
    assert [p.field for p in caught.value.problems] == ["stored_key"]


# --- the API ------------------------------------------------------------------------------


def test_api_create_list_replace_delete_never_answer_the_value(
    lab, api_client_for, secret_free_logs
):
    api = api_client_for(lab.owner)
    made = api.post(
        "/api/keys/",
        {
            "workspace": lab.workspace.pk,
            "name": "openai",
            "value": SECRET,
            "allowed_hosts": ["api.openai.com"],
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    key_id = made.json()["id"]
    assert made.json()["allowed_hosts"] == ["api.openai.com"]
    bodies = [made]
    listed = api.get(f"/api/keys/?workspace={lab.workspace.pk}")
    assert [k["name"] for k in listed.json()["results"]] == ["openai"]
    bodies += [listed, api.get(f"/api/keys/{key_id}/")]
    replaced = api.put(
        f"/api/keys/{key_id}/", {"value": SECRET + "-new"}, format="json"
    )
    assert replaced.status_code == 200 and replaced.json()["rotated_at"]
    bodies.append(replaced)
    assert api.delete(f"/api/keys/{key_id}/").status_code == 204
    assert not StoredKey.objects.exists()
    ciphertexts = [e.after for e in AuditEvent.objects.all()]
    for response in bodies:
        text = response.content.decode()
        assert SECRET not in text and "ciphertext" not in text and "gAAAA" not in text
    assert SECRET not in str(ciphertexts)


@pytest.mark.parametrize(
    ("who", "status"),
    [("rater", 403), ("reviewer", 403), ("outsider", 404), ("anonymous", 401)],
)
def test_api_refuses_who_may_not_manage_the_workspaces_keys(
    lab, api_client_for, who, status
):
    key = make_key(lab)
    user = None if who == "anonymous" else getattr(lab, who)
    api = api_client_for(user)
    body = {
        "workspace": lab.workspace.pk,
        "name": "mine",
        "value": SECRET,
        "allowed_hosts": ["api.openai.com"],
    }
    answers = [
        api.get(f"/api/keys/?workspace={lab.workspace.pk}"),
        api.post("/api/keys/", body, format="json"),
        api.get(f"/api/keys/{key.pk}/"),
        api.put(f"/api/keys/{key.pk}/", {"value": "x" * 20}, format="json"),
        api.delete(f"/api/keys/{key.pk}/"),
    ]
    assert [a.status_code for a in answers] == [status] * 5
    assert list(StoredKey.objects.values_list("name", flat=True)) == ["openai"]
    assert vault.decrypt(StoredKey.objects.get().ciphertext) == SECRET
    if status == 403:
        assert "researcher" in answers[0].json()["detail"]


def test_api_admin_and_researcher_may_manage_keys(lab, api_client_for):
    for user in (lab.researcher, lab.admin):
        answer = api_client_for(user).post(
            "/api/keys/",
            {
                "workspace": lab.workspace.pk,
                "name": user.username,
                "value": SECRET,
                "allowed_hosts": ["api.openai.com"],
            },
            format="json",
        )
        assert answer.status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"value": ""}, "value"),
        ({"allowed_hosts": "api.openai.com"}, "allowed_hosts"),
        ({"allowed_hosts": ["http://x/"]}, "allowed_hosts"),
        ({"workspace": "x"}, "workspace"),
        ({"name": ""}, "name"),
    ],
)
def test_api_bad_input_is_a_400_naming_the_field(lab, api_client_for, body, field):
    good = {
        "workspace": lab.workspace.pk,
        "name": "k",
        "value": SECRET,
        "allowed_hosts": ["api.openai.com"],
    }
    answer = api_client_for(lab.owner).post(
        "/api/keys/", {**good, **body}, format="json"
    )
    assert answer.status_code == 400
    assert field in [p["field"] for p in answer.json()["problems"]]
    assert SECRET not in answer.content.decode()
    assert not StoredKey.objects.exists()


def test_api_admin_storing_into_a_missing_workspace_is_a_404(lab, api_client_for):
    answer = api_client_for(lab.admin).post(
        "/api/keys/",
        {
            "workspace": 999999,
            "name": "k",
            "value": SECRET,
            "allowed_hosts": ["api.openai.com"],
        },
        format="json",
    )
    assert answer.status_code == 404 and not StoredKey.objects.exists()


def test_api_list_needs_a_workspace_parameter(lab, api_client_for):
    answer = api_client_for(lab.owner).get("/api/keys/")
    assert answer.status_code == 400
    assert answer.json()["problems"][0]["field"] == "workspace"
    assert api_client_for(lab.owner).get("/api/keys/?workspace=999999").status_code == (
        404
    )


def test_api_judge_config_names_a_stored_key_by_id(lab, api_client_for):
    key = make_key(lab, hosts=["api.openai.com"])
    api = api_client_for(lab.researcher)
    made = api.post(
        "/api/judges/",
        {
            "name": "with-key",
            "base_url": "https://api.openai.com/v1",
            "model": "gpt-x",
            "stored_key_id": key.pk,
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["stored_key"] == {"id": key.pk, "name": "openai"}
    assert SECRET not in made.content.decode()
    missing = api.post(
        "/api/judges/",
        {
            "name": "no-key",
            "base_url": "https://api.openai.com/v1",
            "model": "gpt-x",
            "stored_key_id": 999999,
        },
        format="json",
    )
    assert missing.status_code == 400
    assert missing.json()["problems"][0]["field"] == "stored_key"


# --- the pages ----------------------------------------------------------------------------


def test_keys_page_lists_keys_and_stores_one_without_ever_showing_it(
    lab, client_for, secret_free_logs
):
    make_key(lab, name="existing")
    client = client_for(lab.owner)
    url = reverse("judging:key-list", args=[lab.workspace.pk])
    page = client.get(url)
    assert page.status_code == 200
    assert "existing" in page.content.decode() and SECRET not in page.content.decode()
    posted = client.post(
        url,
        {"name": "new-one", "value": SECRET + "X", "allowed_hosts": "api.openai.com"},
    )
    assert posted.status_code == 302
    after = client.get(url).content.decode()
    assert "new-one" in after and "Its value is not shown again" in after
    assert SECRET not in after
    assert StoredKey.objects.filter(name="new-one").exists()


def test_keys_page_htmx_answers_the_section(lab, client_for):
    client = client_for(lab.researcher)
    url = reverse("judging:key-list", args=[lab.workspace.pk])
    posted = client.post(
        url, {"name": "hx", "value": SECRET, "allowed_hosts": "api.openai.com"}, **HX
    )
    body = posted.content.decode()
    assert posted.status_code == 200
    assert body.lstrip().startswith('<div id="key-section"') and "hx" in body
    assert SECRET not in body


def test_keys_page_refuses_bad_input_without_echoing_the_value(lab, client_for):
    client = client_for(lab.owner)
    url = reverse("judging:key-list", args=[lab.workspace.pk])
    posted = client.post(url, {"name": "bad", "value": SECRET, "allowed_hosts": ""})
    body = posted.content.decode()
    assert posted.status_code == 400
    assert "name at least one host" in body and SECRET not in body
    assert not StoredKey.objects.exists()


@pytest.mark.parametrize(("who", "status"), [("rater", 403), ("outsider", 404)])
def test_keys_pages_refuse_other_roles(lab, client_for, who, status):
    key = make_key(lab)
    client = client_for(getattr(lab, who))
    list_url = reverse("judging:key-list", args=[lab.workspace.pk])
    answers = [
        client.get(list_url),
        client.post(list_url, {"name": "n", "value": "x" * 20, "allowed_hosts": "a.b"}),
        client.post(reverse("judging:key-replace", args=[key.pk]), {"value": "y" * 9}),
        client.post(reverse("judging:key-delete", args=[key.pk])),
    ]
    assert [a.status_code for a in answers] == [status] * 4
    assert StoredKey.objects.count() == 1
    assert vault.decrypt(StoredKey.objects.get().ciphertext) == SECRET


def test_anonymous_visitors_are_sent_to_the_login(lab, client):
    url = reverse("judging:key-list", args=[lab.workspace.pk])
    assert client.get(url)["Location"].startswith("/login/")


def test_keys_page_replaces_and_deletes(lab, client_for):
    key = make_key(lab)
    client = client_for(lab.owner)
    replaced = client.post(
        reverse("judging:key-replace", args=[key.pk]),
        {"value": SECRET + "-2", "allowed_hosts": ""},
        **HX,
    )
    assert replaced.status_code == 200 and SECRET not in replaced.content.decode()
    key.refresh_from_db()
    assert vault.decrypt(key.ciphertext) == SECRET + "-2"
    assert key.allowed_hosts == ["api.openai.com"] and key.rotated_at
    bad = client.post(reverse("judging:key-replace", args=[key.pk]), {"value": ""})
    assert bad.status_code == 400
    deleted = client.post(reverse("judging:key-delete", args=[key.pk]))
    assert deleted.status_code == 302 and not StoredKey.objects.exists()


def test_keys_home_leads_to_the_one_workspace(lab, client_for):
    answer = client_for(lab.owner).get(reverse("judging:key-home"))
    assert answer["Location"] == reverse("judging:key-list", args=[lab.workspace.pk])
    assert (
        "not a researcher"
        in client_for(lab.rater).get(reverse("judging:key-home")).content.decode()
    )


def test_judge_pages_name_the_stored_key_never_its_value(lab, client_for):
    key = make_key(lab, hosts=["api.openai.com"])
    config = judge_config_create(
        user=lab.researcher,
        name="with-stored-key",
        base_url="https://api.openai.com/v1",
        model="gpt-x",
        stored_key=key,
    )
    client = client_for(lab.researcher)
    for url in (
        reverse("judging:judge-list"),
        reverse("judging:judge-detail", args=[config.pk]),
        reverse("judging:judge-edit", args=[config.pk]),
    ):
        body = client.get(url).content.decode()
        assert "openai" in body and SECRET not in body, url
    assert (
        "stored key “openai”"
        in client.get(
            reverse("judging:judge-detail", args=[config.pk])
        ).content.decode()
    )


def test_judge_form_saves_a_stored_key_for_a_researcher_without_endpoint_rights(
    lab, client_for
):
    key = make_key(lab, hosts=["api.openai.com"])
    client = client_for(lab.researcher)
    form = client.get(reverse("judging:judge-new")).content.decode()
    assert 'name="stored_key"' in form and 'name="base_url"' in form
    posted = client.post(
        reverse("judging:judge-new"),
        {
            "name": "form-judge",
            "backend": "openai",
            "base_url": "https://api.openai.com/v1",
            "model": "gpt-x",
            "stored_key": key.pk,
            "temperature": 0,
            "max_tokens": 100,
            "samples": 1,
            "output_mode": "json_schema",
            "price_input_per_m": 0,
            "price_output_per_m": 0,
            "max_concurrency": 2,
            "timeout_seconds": 30,
            "max_parse_retries": 1,
        },
    )
    assert posted.status_code == 302, posted.content.decode()[:2000]
    from judging.models import JudgeConfig

    assert JudgeConfig.objects.get(name="form-judge").stored_key == key
    refused = client.post(
        reverse("judging:judge-new"),
        {
            "name": "elsewhere",
            "backend": "openai",
            "base_url": "https://other.example.org/v1",
            "model": "gpt-x",
            "stored_key": key.pk,
            "temperature": 0,
            "max_tokens": 100,
            "samples": 1,
            "output_mode": "json_schema",
            "price_input_per_m": 0,
            "price_output_per_m": 0,
            "max_concurrency": 2,
            "timeout_seconds": 30,
            "max_parse_retries": 1,
        },
    )
    assert refused.status_code == 400
    assert "may not be sent to the host" in refused.content.decode()


def test_key_lists_read_a_constant_number_of_queries(
    lab, client_for, api_client_for, django_assert_max_num_queries
):
    for n in range(12):
        make_key(lab, name=f"key-{n}")
    client = client_for(lab.owner)
    url = reverse("judging:key-list", args=[lab.workspace.pk])
    client.get(url)
    with django_assert_max_num_queries(10):
        assert client.get(url).status_code == 200
    with django_assert_max_num_queries(6):
        answer = api_client_for(lab.owner).get(
            f"/api/keys/?workspace={lab.workspace.pk}"
        )
        assert answer.json()["count"] == 12


def test_a_judge_uses_only_its_own_workspace_keys(lab):
    """A person who is a researcher in two workspaces cannot name one workspace's
    key in the other's judge config (the key would leave the workspace that owns
    it); the form's choices are the config's workspace's keys only."""
    from flaskapp.models import Membership
    from judging.forms import JudgeConfigForm

    key = make_key(lab)
    Membership.objects.create(
        workspace=lab.other, user=lab.researcher, role="researcher"
    )
    with pytest.raises(DomainError) as refused:
        judge_config_create(
            user=lab.researcher,
            workspace=lab.other,
            name="other-lab-judge",
            base_url="https://api.openai.com/v1",
            model="gpt-x",
            stored_key=key,
        )
    assert refused.value.problems[0].field == "stored_key"
    assert "another workspace" in refused.value.problems[0].message
    choices = JudgeConfigForm(user=lab.researcher, workspace_id=lab.other.pk)
    assert list(choices.fields["stored_key"].queryset) == []
    mine = JudgeConfigForm(user=lab.researcher, workspace_id=lab.workspace.pk)
    assert list(mine.fields["stored_key"].queryset) == [key]
    config = judge_config_create(
        user=lab.researcher,
        workspace=lab.workspace,
        name="own-lab-judge",
        base_url="https://api.openai.com/v1",
        model="gpt-x",
        stored_key=key,
    )
    assert config.stored_key_id == key.pk
