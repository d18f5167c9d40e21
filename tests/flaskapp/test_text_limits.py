"""Every free text has a limit (`flaskapp.limits`), and every door refuses a longer
one with its field (and line) named, changing nothing (issue 34): a form, a JSON
body, an importer row, a service called by a command. Numbers a command line reads
go through `flaskapp.params`: 5,000 digits are a clear error, not a traceback."""

from __future__ import annotations

import json

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import models
from django.urls import reverse

from annotation.models import Campaign, Dataset, GoldItem, Rubric
from annotation.services.campaigns import campaign_create
from annotation.services.gold import gold_set
from annotation.services.imports import dataset_import_files
from flaskapp import limits
from flaskapp.errors import DomainError
from judging.models import Experiment, JudgeCall, JudgeRun
from tests.annotation.test_api_rating import error_fields, make_dataset
from tests.factories import ResponseFactory
from tests.judging.test_execution import eager_tasks, make_config, run_to_end

__all__ = ["eager_tasks"]  # a fixture, used by name

OUR_APPS = ("annotation", "judging", "analysis", "flaskapp", "demo")


def test_every_text_field_of_our_models_has_a_limit():
    """A new `TextField` without ``max_length`` fails here: pick its limit in
    `flaskapp.limits` (and check it in the service that writes it)."""
    text_fields = [
        (model._meta.label, field.name, field.max_length)
        for model in apps.get_models()
        if model._meta.app_label in OUR_APPS
        for field in model._meta.get_fields()
        if isinstance(field, models.TextField | models.CharField)
    ]
    assert len(text_fields) > 50
    unlimited = [f"{label}.{name}" for label, name, limit in text_fields if not limit]
    assert unlimited == []
    named = {v for k, v in vars(limits).items() if k.isupper() and isinstance(v, int)}
    texts = [
        (model._meta.label, field.name, field.max_length)
        for model in apps.get_models()
        if model._meta.app_label in OUR_APPS
        for field in model._meta.get_fields()
        if isinstance(field, models.TextField)
    ]
    # A text field's limit is one of the table's, not a number typed on the model.
    assert [t for t in texts if t[2] not in named] == []


def test_too_long_and_model_text_problems_name_the_field():
    assert limits.too_long("abc", 3) is None
    assert limits.too_long("abcd", 3) == "is 4 characters long; the limit is 3"
    [problem] = limits.model_text_problems(
        Campaign,
        {"guidelines": "x" * (limits.GUIDELINES + 1)},
        names={"guidelines": "notes"},
        line=7,
    )
    assert (problem.field, problem.line) == ("notes", 7)
    assert f"the limit is {limits.GUIDELINES:,}" in problem.message
    assert limits.clip("abcdef", 4) == "abc…" and limits.clip("abc", 4) == "abc"


@pytest.mark.django_db
def test_campaign_form_refuses_oversize_guidelines(client_for, researcher):
    dataset = make_dataset(n_instructions=1)
    response = client_for(researcher).post(
        reverse("annotation:campaign-new"),
        {
            "name": "Long guidelines",
            "dataset": dataset.pk,
            "skill_mode": "instruction",
            "overlap": 1,
            "overlap_percent": 100,
            "lock_ttl_minutes": 30,
            "guidelines": "g" * (limits.GUIDELINES + 1),
        },
    )
    assert response.status_code == 400  # the form again, with the error
    assert response.context["form"].errors["guidelines"]
    assert not Campaign.objects.exists()


@pytest.mark.django_db
def test_campaign_api_refuses_oversize_guidelines_naming_the_field(
    api_client_for, researcher
):
    dataset = make_dataset(n_instructions=1)
    response = api_client_for(researcher).post(
        "/api/campaigns/",
        {
            "dataset": dataset.pk,
            "name": "Long",
            "guidelines": "g" * (limits.GUIDELINES + 1),
        },
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "guidelines" in error_fields(response)
    assert not Campaign.objects.exists()


@pytest.mark.django_db
def test_campaign_service_refuses_oversize_guidelines(researcher):
    """The service is the rule's home: a command or the demo reach it without a form."""
    from annotation.services.campaign_spec import CampaignSpec, DisplayPolicy

    dataset = make_dataset(n_instructions=1)
    spec = CampaignSpec(
        name="Long",
        dataset=dataset,
        display=DisplayPolicy(guidelines="g" * (limits.GUIDELINES + 1)),
    )
    with pytest.raises(DomainError) as exc:
        campaign_create(spec=spec, created_by=researcher)
    assert [p.field for p in exc.value.problems] == ["guidelines"]
    assert not Campaign.objects.exists()
    ok = CampaignSpec(
        name="Fits",
        dataset=dataset,
        display=DisplayPolicy(guidelines="g" * limits.GUIDELINES),
    )
    assert campaign_create(spec=ok, created_by=researcher).guidelines


@pytest.mark.django_db
def test_dataset_import_refuses_an_oversize_response_naming_line_and_field():
    rows = [
        {"instruction": "Say hi.", "model": "m-a", "response": "hi"},
        {
            "instruction": "Say more.",
            "model": "m-a",
            "response": "x" * (limits.RESPONSE_TEXT + 1),
        },
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    with pytest.raises(DomainError) as exc:
        dataset_import_files(
            dataset_name="too long", fmt="jsonl", files=[("rows.jsonl", data)]
        )
    [problem] = exc.value.problems
    assert (problem.line, problem.field) == (2, "response")
    assert f"the limit is {limits.RESPONSE_TEXT:,}" in problem.message
    assert not Dataset.objects.filter(name="too long").exists()


@pytest.mark.django_db
def test_dataset_import_refuses_an_oversize_description():
    data = json.dumps({"instruction": "Say hi.", "model": "m", "response": "hi"})
    with pytest.raises(DomainError) as exc:
        dataset_import_files(
            dataset_name="described",
            fmt="jsonl",
            files=[("rows.jsonl", data.encode())],
            options={"description": "d" * (limits.DESCRIPTION + 1)},
        )
    assert [p.field for p in exc.value.problems] == ["description"]
    assert not Dataset.objects.filter(name="described").exists()


@pytest.mark.django_db
def test_gold_explanation_over_the_limit_is_refused(researcher):
    response = ResponseFactory()
    dataset = response.instruction.dataset
    skill = dataset.rubric.skills.first()
    with pytest.raises(DomainError) as exc:
        gold_set(
            dataset=dataset,
            response_id=response.pk,
            scores={skill.key: 3},
            user=researcher,
            explanation="e" * (limits.GOLD_EXPLANATION + 1),
        )
    assert "explanation" in {p.field for p in exc.value.problems}
    assert not GoldItem.objects.exists()


@pytest.mark.django_db
def test_gold_api_refuses_an_oversize_explanation(api_client_for, researcher):
    response = ResponseFactory()
    dataset = response.instruction.dataset
    skill = dataset.rubric.skills.first()
    answer = api_client_for(researcher).post(
        f"/api/datasets/{dataset.pk}/gold/",
        {
            "response_id": response.pk,
            "scores": {skill.key: 3},
            "explanation": "e" * (limits.GOLD_EXPLANATION + 1),
        },
        format="json",
    )
    assert answer.status_code == 400, answer.content
    assert "explanation" in error_fields(answer)
    assert not GoldItem.objects.exists()


@pytest.mark.django_db
def test_experiment_description_over_the_limit_is_refused(researcher):
    from judging.services.experiments import experiment_create

    dataset = make_dataset(n_instructions=1)
    with pytest.raises(DomainError) as exc:
        experiment_create(
            user=researcher,
            dataset=dataset,
            name="long",
            description="d" * (limits.DESCRIPTION + 1),
        )
    assert [p.field for p in exc.value.problems] == ["description"]
    assert not Experiment.objects.exists()


@pytest.mark.django_db
def test_experiment_command_refuses_a_5000_digit_id_naming_the_argument():
    with pytest.raises(CommandError) as exc:
        call_command("experiment", "show", "9" * 5000)
    message = str(exc.value)
    assert "`experiment`" in message and "5,000 digits" in message
    assert len(message) < 300
    with pytest.raises(CommandError, match="`experiment`.*not a whole number"):
        call_command("experiment", "show", "²")


@pytest.mark.django_db
def test_experiment_runs_given_as_5000_digits_are_refused_naming_the_field(
    researcher,
):
    from judging.services.experiments import experiment_create

    dataset = make_dataset(n_instructions=1)
    for runs in (["9" * 5000], ["²"]):
        with pytest.raises(DomainError) as exc:
            experiment_create(user=researcher, dataset=dataset, name="x", run_ids=runs)
        assert [p.field for p in exc.value.problems] == ["run_ids"]
    assert not Experiment.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("rubric", ["9" * 5000, "²", "FLASK v" + "9" * 5000])
def test_import_dataset_rubric_argument_of_5000_digits_is_a_clear_error(
    tmp_path, rubric
):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps({"instruction": "Hi", "model": "m", "response": "hi"}))
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_dataset", str(path), "--dataset", "digits", "--rubric", rubric
        )
    assert "rubric" in str(exc.value)
    assert not Dataset.objects.filter(name="digits").exists()


@pytest.mark.django_db
def test_rubric_named_still_finds_ids_and_versions():
    from annotation.services.imports import rubric_named

    rubric = Rubric.objects.order_by("pk").first()
    assert rubric_named(str(rubric.pk)) == rubric
    assert rubric_named(f"{rubric.name} v{rubric.version}") == rubric
    assert rubric_named(f"{rubric.name}@{rubric.version}") == rubric


@pytest.mark.django_db(transaction=True)
def test_a_judge_answer_over_the_limit_fails_its_call_with_the_reason(
    eager_tasks, fake_server
):
    dataset = make_dataset(n_instructions=1, models=("m-a",))
    base = fake_server(latency_ms=1, pad_chars=limits.JUDGE_OUTPUT)
    config, user = make_config(base)
    run = run_to_end(config, user, dataset)
    call = JudgeCall.objects.get(run=run)
    assert call.status == JudgeCall.Status.FAILED
    assert call.error_kind == "too_long"
    assert f"the limit is {limits.JUDGE_OUTPUT:,}" in call.error
    assert call.raw_output == ""
    assert run.status in (JudgeRun.Status.COMPLETED, JudgeRun.Status.FAILED)

    short = fake_server(latency_ms=1, pad_chars=100)
    config, user = make_config(short)
    run = run_to_end(config, user, dataset)
    assert JudgeCall.objects.get(run=run).status == JudgeCall.Status.SUCCEEDED
