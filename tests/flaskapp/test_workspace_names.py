"""Names unique per workspace, and the judge cache and model families per workspace
(issue 35's gap): two labs may use one name, a duplicate within one workspace is a
clear error naming `name`, another workspace's object is neither found by name nor
said to exist, a paid answer is never served across workspaces, and the
self-preference probes read the dataset's workspace's model families."""

from __future__ import annotations

import json
from io import StringIO

import httpx
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import IntegrityError, transaction

from annotation.models import EvaluatedModel, Rubric
from annotation.selectors.preferences import evaluated_model_families
from annotation.services.imports import rubric_named
from annotation.services.preference_imports import preferences_import
from annotation.services.rubrics import rubric_get_default, rubric_import
from flaskapp.errors import DomainError
from flaskapp.models import Membership, Workspace, default_workspace
from judging.models import JudgeCache, JudgeCall, JudgeConfig, JudgeRun, PromptTemplate
from judging.services.configs import judge_config_create, judge_config_update
from judging.services.prompts import prompt_template_create
from judging.services.runs import judge_run_create, judge_run_start
from judging.services.verdicts import imported_verdicts
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    grant_endpoint_rights,
)

SUPPORT_RUBRIC = b"""\
name: support
description: Support answers.
groups:
  - {key: quality, name: Quality}
criteria:
  - key: helpful
    name: Helpful
    group: quality
    kind: ordinal
    scale: {min: 1, max: 5}
    anchors: {1: "Useless.", 5: "Solves it."}
"""


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""  # in-process limiter
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def labs(db):
    """Two workspaces, A (the default one) and B, and a researcher of both."""
    a = default_workspace()
    b = Workspace.objects.create(name="Lab B", slug="lab-b")
    user = UserFactory(username="both-labs", role="researcher")
    Membership.objects.create(workspace=b, user=user, role="researcher")
    return a, b, user


def baseline(user, workspace, name="judge-x"):
    return judge_config_create(
        user=user, workspace=workspace, name=name, backend="baseline_rouge"
    )


def test_two_workspaces_each_have_a_judge_config_judge_x(labs):
    a, b, user = labs
    in_a, in_b = baseline(user, a), baseline(user, b)
    assert (in_a.name, in_b.name) == ("judge-x", "judge-x")
    assert {in_a.workspace_id, in_b.workspace_id} == {a.pk, b.pk}
    with pytest.raises(DomainError) as caught:
        baseline(user, b)
    assert [(p.field, p.message) for p in caught.value.problems] == [
        ("name", "a judge config named 'judge-x' exists")
    ]
    assert JudgeConfig.objects.filter(name="judge-x").count() == 2
    # Renaming into a name taken in its own workspace is refused; B's is no obstacle.
    other = baseline(user, a, name="judge-y")
    with pytest.raises(DomainError) as renamed:
        judge_config_update(user=user, config=other, name="judge-x")
    assert [p.field for p in renamed.value.problems] == ["name"]
    other.refresh_from_db()
    assert other.name == "judge-y"


def test_the_database_keeps_a_name_once_per_workspace(labs):
    a, b, user = labs
    baseline(user, a)
    with pytest.raises(IntegrityError), transaction.atomic():
        JudgeConfig.objects.create(
            workspace=a, name="judge-x", backend="baseline_rouge"
        )
    JudgeConfig.objects.create(workspace=b, name="judge-x", backend="baseline_rouge")
    EvaluatedModel.objects.create(workspace=a, name="m", family="f")
    with pytest.raises(IntegrityError), transaction.atomic():
        EvaluatedModel.objects.create(workspace=a, name="m", family="g")
    EvaluatedModel.objects.create(workspace=b, name="m", family="g")
    # Built-ins (workspace NULL) stay once among themselves.
    builtin = rubric_get_default()
    with pytest.raises(IntegrityError), transaction.atomic():
        Rubric.objects.create(
            workspace=None, name=builtin.name, version=builtin.version
        )


def test_the_api_names_a_duplicate_and_allows_it_in_another_workspace(
    labs, api_client_for
):
    a, b, user = labs
    client = api_client_for(user)
    body = {"name": "judge-x", "backend": "baseline_rouge"}
    first = client.post(f"/api/judges/?workspace={a.pk}", body, format="json")
    assert first.status_code == 201, first.json()
    again = client.post(f"/api/judges/?workspace={a.pk}", body, format="json")
    assert again.status_code == 400
    assert [p["field"] for p in again.json()["problems"]] == ["name"]
    elsewhere = client.post(f"/api/judges/?workspace={b.pk}", body, format="json")
    assert elsewhere.status_code == 201, elsewhere.json()
    assert JudgeConfig.objects.get(pk=elsewhere.json()["id"]).workspace == b


def test_rubric_support_v1_in_each_workspace_and_versions_count_apart(labs):
    a, b, _ = labs
    a1 = rubric_import(data=SUPPORT_RUBRIC, file="s.yaml", workspace=a)
    b1 = rubric_import(data=SUPPORT_RUBRIC, file="s.yaml", workspace=b)
    a2 = rubric_import(data=SUPPORT_RUBRIC, file="s.yaml", workspace=a)
    assert [(r.workspace, r.name, r.version) for r in (a1, b1, a2)] == [
        (a, "support", 1),
        (b, "support", 1),
        (a, "support", 2),
    ]
    # A name is resolved in the workspace: its latest version there, never another's.
    assert rubric_named("support", b) == b1
    assert rubric_named("support", a) == a2
    assert rubric_named("support v1", a) == a1
    assert rubric_named(str(b1.pk), b) == b1
    c = Workspace.objects.create(name="Lab C", slug="lab-c")
    with pytest.raises(DomainError) as caught:
        rubric_named("support", c)
    assert "no rubric named 'support' in workspace 'lab-c'" in caught.value.message
    assert caught.value.problems[0].field == "rubric"
    with pytest.raises(DomainError):
        rubric_named(str(b1.pk), c)  # another workspace's id is not found either
    # The built-in is seen by every workspace; an own rubric of its name counts on.
    builtin = rubric_get_default()
    assert rubric_named(builtin.name, c) == builtin
    own = rubric_import(data=SUPPORT_RUBRIC, file="s.yaml", name=builtin.name)
    assert (own.workspace, own.version) == (a, builtin.version + 1)


def test_prompt_templates_of_one_name_in_two_workspaces(labs):
    a, b, user = labs
    texts = {"kind": "classification", "system_text": "", "user_text": "{instruction}"}
    in_a = prompt_template_create(user=user, name="p", workspace=a, **texts)
    in_b = prompt_template_create(user=user, name="p", workspace=b, **texts)
    again = prompt_template_create(user=user, name="p", workspace=b, **texts)
    assert [(t.workspace, t.version) for t in (in_a, in_b, again)] == [
        (a, 1),
        (b, 1),
        (b, 2),
    ]
    assert PromptTemplate.objects.filter(name="p").count() == 3


def run_judge(*args) -> str:
    out = StringIO()
    call_command("judge", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_the_judge_command_finds_a_config_only_in_its_workspace(labs, eager_tasks):
    a, b, user = labs
    baseline(user, a)
    dataset = DatasetFactory(name="shared-name", workspace=b)
    ResponseFactory(instruction=InstructionFactory(dataset=dataset))
    with pytest.raises(CommandError) as caught:
        run_judge(
            "--dataset", "shared-name", "--workspace", "lab-b", "--config", "judge-x"
        )
    assert str(caught.value) == (
        "--config: no judge config named 'judge-x' in workspace 'lab-b' "
        "(--workspace SLUG names another)"
    )
    with pytest.raises(CommandError) as no_dataset:
        run_judge("--dataset", "shared-name", "--config", "judge-x")
    assert "no dataset named 'shared-name' in workspace 'default'" in str(
        no_dataset.value
    )
    assert not JudgeRun.objects.exists()
    # B's own judge-x is the one used there.
    in_b = baseline(user, b)
    run_judge("--dataset", "shared-name", "--workspace", "lab-b", "--config", "judge-x")
    assert JudgeRun.objects.get().config == in_b


def test_import_dataset_rubric_is_looked_up_in_the_workspace(labs, tmp_path):
    a, b, _ = labs
    rubric_import(data=SUPPORT_RUBRIC, file="s.yaml", workspace=b)
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"instruction": "Q?", "response": "A.", "model": "m"}))
    with pytest.raises(CommandError) as caught:
        call_command(
            "import_dataset",
            str(path),
            "--dataset",
            "d",
            "--rubric",
            "support",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert "no rubric 'support' in workspace 'default'" in str(caught.value)
    assert not a.datasets.filter(name="d").exists()
    call_command(
        "import_dataset",
        str(path),
        "--dataset",
        "d",
        "--rubric",
        "support",
        "--workspace",
        "lab-b",
        stdout=StringIO(),
        stderr=StringIO(),
    )
    dataset = b.datasets.get(name="d")
    assert (dataset.rubric.workspace, dataset.rubric.name) == (b, "support")


def test_imported_verdicts_use_the_judge_of_the_imports_workspace(labs):
    a, b, user = labs
    in_a = baseline(user, a, name="j")
    row = {
        "prompt": "Question?",
        "response_1": "Short.",
        "response_2": "Longer answer.",
        "label": "2",
        "verdict": "B",
        "verdict_swapped": "A",
    }
    report = preferences_import(
        dataset_name="prefs",
        file="p.jsonl",
        data=json.dumps(row).encode(),
        fmt="jsonl",
        judge="j",
        verdict_writer=imported_verdicts,
        workspace=b,
    )
    run = JudgeRun.objects.get(pk=report.run_id)
    assert run.workspace == b and run.config.workspace == b
    assert run.config != in_a and run.config.name == "j"
    assert not JudgeRun.objects.filter(config=in_a).exists()


def test_model_families_are_read_from_the_datasets_workspace(labs):
    a, b, _ = labs
    EvaluatedModel.objects.create(workspace=a, name="m-1", family="acme")
    EvaluatedModel.objects.create(workspace=b, name="m-1", family="other")
    EvaluatedModel.objects.create(workspace=b, name="m-2", family="")
    assert evaluated_model_families(a.pk, {"m-1", "m-2"}) == {"m-1": "acme"}
    assert evaluated_model_families(b.pk, {"m-1", "m-2"}) == {"m-1": "other"}


# --- the judge cache, per workspace, against the real fake server ---------------


def same_dataset(workspace):
    """Two instructions with one response each, the same texts in every workspace (so
    the prompts, and the cache keys, are the same)."""
    dataset = DatasetFactory(name="same", workspace=workspace)
    for i in range(2):
        instruction = InstructionFactory(
            dataset=dataset, external_id=str(i), text=f"Same question {i}?"
        )
        ResponseFactory(instruction=instruction, model_name="m", text=f"Answer {i}.")
    return dataset


def requests_made(base_url: str) -> int:
    stats = httpx.get(base_url.rstrip("/").removesuffix("/v1") + "/stats").json()
    return stats["requests"]


@pytest.mark.django_db(transaction=True)
def test_a_cached_answer_is_never_served_to_another_workspace(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    a = default_workspace()
    b = Workspace.objects.create(name="Lab B", slug="lab-b")
    user = grant_endpoint_rights(UserFactory(username="both", role="researcher"))
    Membership.objects.create(workspace=b, user=user, role="researcher")

    def run_in(workspace):
        config = JudgeConfig.objects.filter(workspace=workspace).first()
        if config is None:
            config = judge_config_create(
                user=user,
                workspace=workspace,
                name="judge-x",
                base_url=base,
                model="fake-judge",
                timeout_seconds=5,
            )
        dataset = workspace.datasets.filter(name="same").first() or same_dataset(
            workspace
        )
        run = judge_run_create(config=config, dataset=dataset, user=user)
        judge_run_start(run=run, user=user)
        run.refresh_from_db()
        assert run.status == JudgeRun.Status.COMPLETED
        return run

    first = run_in(a)
    paid = requests_made(base)
    assert paid == 2
    # Same prompts in B: B pays its own two calls and sees them as its own.
    in_b = run_in(b)
    assert requests_made(base) == 2 * paid
    assert set(in_b.calls.values_list("cached", flat=True)) == {False}
    assert sorted(in_b.calls.values_list("prompt_hash", flat=True)) == sorted(
        first.calls.values_list("prompt_hash", flat=True)
    )
    # Twice in one workspace: one call each, the second run served from its cache.
    again = run_in(a)
    again_b = run_in(b)
    assert requests_made(base) == 2 * paid
    for run in (again, again_b):
        assert set(run.calls.values_list("cached", flat=True)) == {True}
    assert JudgeCache.objects.filter(workspace=a).count() == 2
    assert JudgeCache.objects.filter(workspace=b).count() == 2
    assert JudgeCall.objects.filter(cached=False).count() == 4


# --- the migrations keep what existed -----------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_migrations_give_old_cache_entries_and_models_to_their_workspaces():
    """At the migrations' step 1 (workspace nullable), old rows have none; steps 2-3
    give a cache entry to every workspace whose calls carry its key (else the
    default workspace) and an evaluated model to the default workspace."""
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before = [
        ("judging", "0014_judgecache_workspace_nullable"),
        ("annotation", "0026_evaluatedmodel_workspace_nullable"),
    ]
    # The runs and calls are made with today's models, before going back: at the
    # older schema only raw SQL is safe (later migrations add columns the ORM writes).
    a = default_workspace()
    b = Workspace.objects.create(name="Lab B", slug="lab-b")
    user = UserFactory(username="both-labs", role="researcher")
    Membership.objects.create(workspace=b, user=user, role="researcher")
    for workspace in (a, b):
        dataset = DatasetFactory(workspace=workspace)
        ResponseFactory(instruction=InstructionFactory(dataset=dataset))
        run = judge_run_create(
            config=baseline(user, workspace), dataset=dataset, user=user
        )
        JudgeCall.objects.filter(run=run).update(prompt_hash="seen-by-both")
    MigrationExecutor(connection).migrate(before)
    try:
        with connection.cursor() as cursor:
            for key in ("seen-by-both", "seen-by-none"):
                cursor.execute(
                    "INSERT INTO judging_judgecache (key, raw_output, input_tokens, "
                    "output_tokens, created_at) VALUES (%s, %s, 1, 1, CURRENT_TIMESTAMP)",
                    [key, f"answer {key}"],
                )
            cursor.execute(
                "INSERT INTO annotation_evaluatedmodel (name, family, created_at) "
                "VALUES ('old-model', 'acme', CURRENT_TIMESTAMP)"
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
    kept = sorted(
        JudgeCache.objects.values_list("key", "workspace__slug", "raw_output")
    )
    assert kept == [
        ("seen-by-both", "default", "answer seen-by-both"),
        ("seen-by-both", "lab-b", "answer seen-by-both"),
        ("seen-by-none", "default", "answer seen-by-none"),
    ]
    old = EvaluatedModel.objects.get(name="old-model")
    assert (old.workspace, old.family) == (a, "acme")


def test_the_admin_adds_a_model_per_workspace_and_names_a_duplicate(labs, client_for):
    from django.urls import reverse

    a, b, _ = labs
    staff = UserFactory(username="staff-admin", role="admin", is_staff=True)
    staff.is_superuser = True
    staff.save()
    client = client_for(staff)
    add = reverse("admin:annotation_evaluatedmodel_add")
    for workspace in (a, b):
        response = client.post(
            add, {"workspace": workspace.pk, "name": "alpha", "family": workspace.slug}
        )
        assert response.status_code == 302
    duplicate = client.post(add, {"workspace": b.pk, "name": "alpha", "family": "x"})
    assert duplicate.status_code == 200  # the form again, with the error
    assert "already exists" in duplicate.content.decode()
    assert evaluated_model_families(b.pk, {"alpha"}) == {"alpha": "lab-b"}
    assert evaluated_model_families(a.pk, {"alpha"}) == {"alpha": "default"}
    # On change, the workspace is fixed (only name and family are posted).
    model = EvaluatedModel.objects.get(workspace=b, name="alpha")
    change = reverse("admin:annotation_evaluatedmodel_change", args=[model.pk])
    assert client.post(change, {"name": "alpha", "family": "acme"}).status_code == 302
    model.refresh_from_db()
    assert (model.workspace, model.family) == (b, "acme")


def test_default_run_names_are_distinct_within_a_workspace_only(labs):
    a, b, user = labs
    runs = []
    for workspace in (a, b, a):
        config = JudgeConfig.objects.filter(workspace=workspace).first() or baseline(
            user, workspace
        )
        dataset = workspace.datasets.filter(name="same").first() or DatasetFactory(
            name="same", workspace=workspace
        )
        ResponseFactory(instruction=InstructionFactory(dataset=dataset))
        runs.append(judge_run_create(config=config, dataset=dataset, user=user))
    first_a, in_b, second_a = (r.name for r in runs)
    # Names end with the minute: compare within one minute (a run made across a
    # minute's turn has another name anyway).
    if not (first_a[-5:] == in_b[-5:] == second_a[-8:-3]):
        pytest.skip("the minute turned between the runs")
    assert in_b == first_a  # another workspace's run is not in the way
    assert second_a == f"{first_a} #2"
