"""Choices of the current workspace only (issue 35): a researcher of two workspaces
working in A is offered A's datasets, judges, prompts, keys, campaigns and raters on
every form, never B's; a posted id of B is refused like an id that names nothing,
next to the field, and nothing is created. The API refuses another workspace's id in
a request body the same way (400 naming the field, the answer of a missing id), so
the answer does not tell that it exists."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.models import Campaign, Dataset, Rubric
from flaskapp.models import Membership, Workspace
from flaskapp.workspaces import default_workspace
from judging.models import Experiment, JudgeConfig, JudgeRun, PromptTemplate, StoredKey
from tests.factories import (
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    campaign_from_fields,
)

MISSING = 987654


def _dataset(workspace, name):
    dataset = Dataset.objects.create(
        workspace=workspace, name=name, rubric=Rubric.objects.get(is_builtin=True)
    )
    for i in range(2):
        instruction = InstructionFactory(dataset=dataset, external_id=str(i + 1))
        for model in ("m-a", "m-b"):
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


def _member(user, workspace, role, group):
    user.groups.add(Group.objects.get(name=group))
    Membership.objects.update_or_create(
        workspace=workspace, user=user, defaults={"role": role}
    )
    return user


@pytest.fixture
def world(db):
    """Workspaces A and B, each with a dataset, a judge, a prompt template, a key, a
    campaign and a rater; `both` is a researcher of A and B, `only_a` of A only."""
    ws_a = default_workspace()
    ws_b = Workspace.objects.create(name="Lab B", slug="lab-b")
    both = UserFactory(username="both-res", role="researcher")
    _member(both, ws_b, Membership.RESEARCHER, "researcher")
    only_a = UserFactory(username="only-a-res", role="researcher")
    rater_a = _member(UserFactory(username="rater-in-a"), ws_a, "rater", "rater")
    rater_b = _member(UserFactory(username="rater-in-b"), ws_b, "rater", "rater")
    w = {"ws_a": ws_a, "ws_b": ws_b, "both": both, "only_a": only_a}
    w["rater_a"], w["rater_b"] = rater_a, rater_b
    for tag, ws in (("a", ws_a), ("b", ws_b)):
        w[f"data_{tag}"] = _dataset(ws, f"set-{tag}")
        w[f"judge_{tag}"] = JudgeConfig.objects.create(
            workspace=ws, name=f"judge-{tag}", base_url="", model=""
        )
        w[f"prompt_{tag}"] = PromptTemplate.objects.create(
            workspace=ws, name=f"prompt-{tag}", version=1, user_text="x"
        )
        w[f"key_{tag}"] = StoredKey.objects.create(
            workspace=ws, name=f"key-{tag}", ciphertext="never-decrypted"
        )
        w[f"campaign_{tag}"] = campaign_from_fields(
            created_by=both, name=f"camp-{tag}", dataset=w[f"data_{tag}"], overlap=1
        )
        w[f"run_{tag}"] = JudgeRun.objects.create(
            workspace=ws, dataset=w[f"data_{tag}"], name=f"run-{tag}", created_by=both
        )
    return w


def _in_a(client, world):
    """`client` working in workspace A (the session remembers it)."""
    assert client.get("/", {"workspace": world["ws_a"].pk}).status_code in (200, 302)
    return client


def _choices(response, field):
    return {str(v) for v, _ in response.context["form"].fields[field].choices if v}


# --- Pages: what is offered, what is accepted ------------------------------------------


@pytest.mark.parametrize(
    "url_name", ["annotation:campaign-new", "annotation:pairwise-campaign-new"]
)
def test_new_campaign_forms_offer_only_the_current_workspaces_datasets_and_raters(
    client_for, world, url_name
):
    client = _in_a(client_for(world["both"]), world)
    page = client.get(reverse(url_name))
    assert page.status_code == 200
    assert _choices(page, "dataset") == {str(world["data_a"].pk)}
    raters = _choices(page, "raters")
    assert str(world["rater_a"].pk) in raters
    assert str(world["rater_b"].pk) not in raters
    assert "set-b" not in page.text and "rater-in-b" not in page.text
    # In B, the same person is offered B's.
    page_b = client.get(reverse(url_name), {"workspace": world["ws_b"].pk})
    assert _choices(page_b, "dataset") == {str(world["data_b"].pk)}


@pytest.mark.parametrize(
    "url_name", ["annotation:campaign-new", "annotation:pairwise-campaign-new"]
)
@pytest.mark.parametrize("which", ["data_b", "missing"])
def test_new_campaign_forms_refuse_another_workspaces_dataset_like_a_missing_one(
    client_for, world, url_name, which
):
    client = _in_a(client_for(world["both"]), world)
    dataset_id = world["data_b"].pk if which == "data_b" else MISSING
    before = Campaign.objects.count()
    page = client.post(
        reverse(url_name),
        {"name": "leak", "dataset": dataset_id, "overlap": 1, "overlap_percent": 100}
        | {
            "lock_ttl_minutes": 30,
            "skill_mode": "instruction",
            "pair_mode": "all_pairs",
        },
    )
    assert page.status_code == 400
    errors = page.context["form"].errors
    assert "dataset" in errors and "valid choice" in errors["dataset"][0]
    assert Campaign.objects.count() == before
    # Nothing of B's shows on the refusal either (models, skills of set-b).
    assert "set-b" not in page.text


def test_new_run_offers_and_accepts_only_the_current_workspaces_judges_and_datasets(
    client_for, world
):
    client = _in_a(client_for(world["both"]), world)
    page = client.get(reverse("judging:run-new"))
    assert _choices(page, "dataset") == {str(world["data_a"].pk)}
    assert _choices(page, "config") == {str(world["judge_a"].pk)}
    before = JudgeRun.objects.count()
    refused = client.post(
        reverse("judging:run-new"),
        {
            "config": world["judge_b"].pk,
            "dataset": world["data_b"].pk,
            "kind": "pointwise",
        },
    )
    assert refused.status_code == 400
    errors = refused.context["form"].errors
    assert "valid choice" in errors["config"][0]
    assert "valid choice" in errors["dataset"][0]
    assert JudgeRun.objects.count() == before


def test_run_import_and_panel_offer_only_the_current_workspaces_datasets(
    client_for, world
):
    client = _in_a(client_for(world["both"]), world)
    page = client.get(reverse("judging:run-import"))
    assert _choices(page, "dataset") == {str(world["data_a"].pk)}
    before = JudgeRun.objects.count()
    upload = SimpleUploadedFile("scores.csv", b"id,model,skill,score\n1,m-a,x,3\n")
    refused_import = client.post(
        reverse("judging:run-import"),
        {"dataset": world["data_b"].pk, "format": "csv", "files": [upload]},
    )
    assert refused_import.status_code == 400
    assert "valid choice" in refused_import.context["form"].errors["dataset"][0]
    assert JudgeRun.objects.count() == before
    panel = client.get(reverse("judging:run-panel-new"))
    assert [d.pk for d in panel.context["datasets"]] == [world["data_a"].pk]
    refused = client.post(
        reverse("judging:run-panel-new"),
        {"dataset": world["data_b"].pk, "run_ids": [world["run_b"].pk]},
    )
    assert refused.status_code == 400
    assert [p.field for p in refused.context["problems"]] == ["dataset"]


def test_judge_form_offers_only_its_workspaces_prompts_and_keys(client_for, world):
    client = _in_a(client_for(world["both"]), world)
    page = client.get(reverse("judging:judge-new"))
    prompts = _choices(page, "prompt")
    assert str(world["prompt_a"].pk) in prompts
    assert str(world["prompt_b"].pk) not in prompts
    assert _choices(page, "stored_key") == {str(world["key_a"].pk)}
    before = JudgeConfig.objects.count()
    refused = client.post(
        reverse("judging:judge-new"),
        {
            "name": "leaky",
            "backend": "openai",
            "prompt": world["prompt_b"].pk,
            "stored_key": world["key_b"].pk,
            "temperature": 0,
            "max_tokens": 100,
            "samples": 1,
            "output_mode": "json_schema",
            "price_input_per_m": 0,
            "price_output_per_m": 0,
            "max_concurrency": 1,
            "timeout_seconds": 10,
            "max_parse_retries": 0,
        },
    )
    assert refused.status_code == 400
    errors = refused.context["form"].errors
    assert "valid choice" in errors["prompt"][0]
    assert "valid choice" in errors["stored_key"][0]
    assert JudgeConfig.objects.count() == before


def test_rater_page_offers_and_accepts_only_the_current_workspaces_campaigns(
    client_for, world
):
    client = _in_a(client_for(world["both"]), world)
    page = client.get(reverse("annotation:rater-list"))
    offered = {c.pk for c in page.context["campaigns"]}
    assert world["campaign_a"].pk in offered
    assert world["campaign_b"].pk not in offered
    refused = client.post(
        reverse("annotation:rater-campaign-add", args=[world["rater_a"].pk]),
        {"campaign": world["campaign_b"].pk},
    )
    assert refused.status_code == 400
    assert [p.field for p in refused.context["rater_problems"]] == ["campaign"]
    assert not world["campaign_b"].raters.filter(pk=world["rater_a"].pk).exists()


# --- API: another workspace's id in a body is a missing id -----------------------------


@pytest.mark.parametrize("path", ["/api/campaigns/", "/api/pairwise/campaigns/"])
def test_campaign_create_api_refuses_another_workspaces_dataset_like_a_missing_one(
    api_client_for, world, path
):
    client = api_client_for(world["only_a"])
    before = Campaign.objects.count()
    answers = [
        client.post(path, {"name": "x", "dataset": pk}, format="json")
        for pk in (world["data_b"].pk, MISSING)
    ]
    assert [a.status_code for a in answers] == [400, 400]
    bodies = [a.json() for a in answers]
    assert all("dataset" in b for b in bodies), bodies
    # The same words but the id: nothing tells that B's dataset exists.
    assert bodies[0]["dataset"][0].replace(str(world["data_b"].pk), "N") == bodies[1][
        "dataset"
    ][0].replace(str(MISSING), "N")
    assert Campaign.objects.count() == before
    # Its own workspace's dataset is accepted.
    ok = client.post(
        path, {"name": "mine", "dataset": world["data_a"].pk}, format="json"
    )
    assert ok.status_code == 201, ok.content


@pytest.mark.parametrize(
    ("field", "tag"), [("prompt_id", "prompt"), ("stored_key_id", "key")]
)
def test_judge_config_api_refuses_another_workspaces_prompt_or_key_like_a_missing_one(
    api_client_for, world, field, tag
):
    client = api_client_for(world["both"])
    before = JudgeConfig.objects.count()
    url = f"/api/judges/?workspace={world['ws_a'].pk}"
    other = world[f"{tag}_b"].pk
    answers = [
        client.post(url, {"name": f"j-{pk}", field: pk}, format="json")
        for pk in (other, MISSING)
    ]
    assert [a.status_code for a in answers] == [400, 400]
    messages = [a.json()["problems"][0]["message"] for a in answers]
    assert messages[0].replace(str(other), "N") == messages[1].replace(
        str(MISSING), "N"
    )
    assert JudgeConfig.objects.count() == before


def test_experiment_api_refuses_another_workspaces_dataset_and_runs(
    api_client_for, world
):
    client = api_client_for(world["only_a"])
    refused = client.post(
        "/api/experiments/",
        {"name": "e", "dataset": world["data_b"].pk},
        format="json",
    )
    missing = client.post(
        "/api/experiments/", {"name": "e", "dataset": MISSING}, format="json"
    )
    assert refused.status_code == missing.status_code == 400
    assert refused.json() == missing.json()
    both = api_client_for(world["both"])
    runs = both.post(
        "/api/experiments/",
        {"name": "e", "dataset": world["data_a"].pk, "run_ids": [world["run_b"].pk]},
        format="json",
    )
    assert runs.status_code == 400
    problems = runs.json()["problems"]
    assert problems == [
        {**problems[0], "field": "run_ids", "message": f"no run {world['run_b'].pk}"}
    ]
    assert not Experiment.objects.exists()


def test_criterion_note_api_refuses_another_workspaces_dataset_like_a_missing_one(
    api_client_for, world
):
    client = api_client_for(world["only_a"])
    url = f"/api/prompts/{world['prompt_a'].pk}/criterion-notes/"
    answers = [
        client.post(
            url, {"skill_key": "factuality", "text": "n", "dataset": pk}, format="json"
        )
        for pk in (world["data_b"].pk, MISSING)
    ]
    assert [a.status_code for a in answers] == [400, 400]
    problems = [a.json()["problems"][0] for a in answers]
    assert [p["field"] for p in problems] == ["dataset", "dataset"]
    assert problems[0]["message"].replace(str(world["data_b"].pk), "N") == problems[1][
        "message"
    ].replace(str(MISSING), "N")
