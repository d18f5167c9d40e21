"""Workspace isolation (issue 35): two workspaces, a user in each. Lists show only
the user's own workspace's objects; another workspace's object is a 404 on every
page, action, export and API operation (never a 403 that confirms it exists); a role
too low inside the workspace is a 403 naming the role; the migration put today's
users and rows into the default workspace."""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.models import Dataset, Rubric
from annotation.services.campaign_spec import CampaignSpec
from annotation.services.campaigns import campaign_create
from annotation.services.imports import dataset_import_files
from flaskapp.errors import DomainError
from flaskapp.models import Membership, Workspace
from flaskapp.workspaces import SESSION_KEY, default_workspace
from judging.models import JudgeRun
from tests.factories import (
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    campaign_from_fields,
)

FLASK_ROW = (
    b'{"idx": 1, "instruction": "Say hi.", "answer": "Hi.", "domain": ["math"], '
    b'"difficulty": 2, "task": "t", "skills": ["comprehension", "factuality", '
    b'"readability"]}\n'
)


def _dataset(workspace, name):
    dataset = Dataset.objects.create(
        workspace=workspace, name=name, rubric=Rubric.objects.get(is_builtin=True)
    )
    for i in range(2):
        instruction = InstructionFactory(dataset=dataset, external_id=str(i + 1))
        for model in ("m-a", "m-b"):
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


@pytest.fixture
def ws_a(db):
    return default_workspace()


@pytest.fixture
def ws_b(db):
    return Workspace.objects.create(name="Lab B", slug="lab-b")


@pytest.fixture
def researcher_a(ws_a):
    return UserFactory(username="res-a", role="researcher")


@pytest.fixture
def researcher_b(ws_b):
    user = UserFactory(username="res-b")
    user.groups.add(Group.objects.get(name="researcher"))
    Membership.objects.create(workspace=ws_b, user=user, role=Membership.RESEARCHER)
    return user


@pytest.fixture
def rater_b(ws_b):
    user = UserFactory(username="rater-b")
    user.groups.add(Group.objects.get(name="rater"))
    Membership.objects.create(workspace=ws_b, user=user, role=Membership.RATER)
    return user


@pytest.fixture
def data_a(ws_a):
    return _dataset(ws_a, "set-a")


@pytest.fixture
def data_b(ws_b):
    return _dataset(ws_b, "set-b")


@pytest.fixture
def campaign_b(data_b, researcher_b):
    return campaign_from_fields(
        created_by=researcher_b, name="camp-b", dataset=data_b, overlap=1
    )


@pytest.fixture
def run_b(data_b, researcher_b):
    return JudgeRun.objects.create(
        workspace=data_b.workspace,
        dataset=data_b,
        name="run-b",
        created_by=researcher_b,
    )


# --- Lists show only the user's workspaces -------------------------------------------


def test_dataset_list_page_shows_only_the_current_workspace(
    client_for, researcher_a, researcher_b, data_a, data_b
):
    page_a = client_for(researcher_a).get(reverse("annotation:dataset-list"))
    page_b = client_for(researcher_b).get(reverse("annotation:dataset-list"))
    assert page_a.status_code == page_b.status_code == 200
    assert "set-a" in page_a.text and "set-b" not in page_a.text
    assert "set-b" in page_b.text and "set-a" not in page_b.text


def test_api_lists_show_only_the_members_workspaces(
    api_client_for, researcher_b, data_a, data_b, campaign_b, run_b
):
    client = api_client_for(researcher_b)
    datasets = client.get("/api/datasets/").json()["results"]
    assert [d["name"] for d in datasets] == ["set-b"]
    campaigns = client.get("/api/campaigns/").json()["results"]
    assert [c["name"] for c in campaigns] == ["camp-b"]
    runs = client.get("/api/runs/").json()["results"]
    assert [r["id"] for r in runs] == [run_b.pk]


def test_api_list_workspace_filter(
    api_client_for, ws_a, ws_b, researcher_b, data_a, data_b
):
    client = api_client_for(researcher_b)
    own = client.get("/api/datasets/", {"workspace": ws_b.pk})
    assert [d["name"] for d in own.json()["results"]] == ["set-b"]
    # Not a member of A: the filter names a workspace that does not exist for them.
    assert client.get("/api/datasets/", {"workspace": ws_a.pk}).status_code == 404
    assert client.get("/api/datasets/", {"workspace": "x"}).status_code == 404


def test_member_of_two_workspaces_switches_between_them(
    client_for, ws_a, ws_b, researcher_a, data_a, data_b
):
    Membership.objects.create(
        workspace=ws_b, user=researcher_a, role=Membership.RESEARCHER
    )
    client = client_for(researcher_a)
    page = client.get(reverse("annotation:dataset-list"))
    # The header names the current workspace and offers the other with the role.
    assert "Lab B (researcher)" in page.text and "Default (researcher)" in page.text
    assert "set-a" in page.text and "set-b" not in page.text
    response = client.post(
        reverse("workspace-switch"), {"workspace": ws_b.pk, "next": "/datasets/"}
    )
    assert response.status_code == 302 and response["Location"] == "/datasets/"
    assert client.session[SESSION_KEY] == ws_b.pk
    page = client.get(reverse("annotation:dataset-list"))
    assert "set-b" in page.text and "set-a" not in page.text
    # ?workspace= switches too.
    page = client.get(reverse("annotation:dataset-list"), {"workspace": ws_a.pk})
    assert "set-a" in page.text and "set-b" not in page.text


def test_switching_to_a_workspace_of_others_is_404(client_for, ws_b, researcher_a):
    client = client_for(researcher_a)
    response = client.post(reverse("workspace-switch"), {"workspace": ws_b.pk})
    assert response.status_code == 404
    assert SESSION_KEY not in client.session
    assert client.post(reverse("workspace-switch"), {"workspace": "x"}).status_code == (
        404
    )
    assert client.get(reverse("workspace-switch")).status_code == 405


# --- Another workspace's object is a 404 ---------------------------------------------


def test_other_workspaces_objects_are_404_on_pages(
    client_for, researcher_a, data_b, campaign_b, run_b
):
    client = client_for(researcher_a)
    urls = [
        reverse("annotation:dataset-detail", args=[data_b.pk]),
        reverse("annotation:campaign-detail", args=[campaign_b.pk]),
        reverse("judging:run-detail", args=[run_b.pk]),
        reverse("analysis:agreement", args=[data_b.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == 404, url
        assert client.get(url, HTTP_HX_REQUEST="true").status_code == 404, url


def test_other_workspaces_objects_are_404_in_the_api(
    api_client_for, researcher_a, data_b, campaign_b, run_b
):
    client = api_client_for(researcher_a)
    for url in [
        f"/api/datasets/{data_b.pk}/",
        f"/api/datasets/{data_b.pk}/instructions/",
        f"/api/datasets/{data_b.pk}/export/",
        f"/api/campaigns/{campaign_b.pk}/",
        f"/api/runs/{run_b.pk}/",
    ]:
        assert client.get(url).status_code == 404, url


def test_actions_on_other_workspaces_objects_are_404_and_change_nothing(
    client_for, api_client_for, researcher_a, campaign_b
):
    response = api_client_for(researcher_a).post(
        f"/api/campaigns/{campaign_b.pk}/status/", {"status": "paused"}, format="json"
    )
    assert response.status_code == 404
    campaign_b.refresh_from_db()
    assert campaign_b.status == "active"


def test_own_workspace_objects_are_served(
    client_for, api_client_for, researcher_b, data_b, campaign_b, run_b
):
    assert (
        client_for(researcher_b)
        .get(reverse("annotation:dataset-detail", args=[data_b.pk]))
        .status_code
        == 200
    )
    assert api_client_for(researcher_b).get(f"/api/runs/{run_b.pk}/").status_code == 200


# --- A role too low inside the workspace is a 403 -------------------------------------


def test_rater_of_the_workspace_is_refused_with_403(
    client_for, api_client_for, rater_b, data_b, campaign_b
):
    page = client_for(rater_b).get(
        reverse("annotation:dataset-detail", args=[data_b.pk])
    )
    assert page.status_code == 403
    api = api_client_for(rater_b).get(f"/api/datasets/{data_b.pk}/")
    assert api.status_code == 403
    assert "researcher" in api.json()["detail"]


# --- Creation lands in the right workspace --------------------------------------------


def test_campaign_is_made_in_its_datasets_workspace(campaign_b, ws_b):
    assert campaign_b.workspace == ws_b


def test_a_campaigns_raters_must_be_members_of_its_workspace(
    researcher_b, data_b, ws_b
):
    outsider = UserFactory(username="outsider", role="rater")  # rater in A only
    spec = CampaignSpec(name="c", dataset=data_b, raters=[outsider])
    with pytest.raises(DomainError) as exc:
        campaign_create(spec=spec, created_by=researcher_b)
    assert "not members of this workspace: outsider" in str(exc.value.problems)


def test_creating_a_campaign_on_another_workspaces_dataset_is_404(researcher_a, data_b):
    from django.http import Http404

    with pytest.raises(Http404):
        campaign_create(
            spec=CampaignSpec(name="c", dataset=data_b), created_by=researcher_a
        )


def test_rater_pages_list_only_campaigns_of_the_raters_workspaces(
    client_for, rater_b, campaign_b, ws_b
):
    campaign_b.raters.add(rater_b)
    assert "camp-b" in client_for(rater_b).get(reverse("annotation:rate-home")).text
    Membership.objects.filter(user=rater_b, workspace=ws_b).delete()
    # Left the workspace: the campaign is gone from the rater's pages.
    assert "camp-b" not in client_for(rater_b).get(reverse("home")).text


def test_the_same_dataset_name_lives_in_two_workspaces(ws_a, ws_b, researcher_b):
    for workspace in (ws_a, ws_b):
        dataset_import_files(
            dataset_name="shared-name",
            fmt="flask",
            files=[("e.jsonl", FLASK_ROW)],
            workspace=workspace,
        )
    assert sorted(
        Dataset.objects.filter(name="shared-name").values_list(
            "workspace__slug", flat=True
        )
    ) == ["default", "lab-b"]


def test_researcher_imports_into_their_workspace_only(researcher_b, ws_a, ws_b):
    from django.http import Http404

    report = dataset_import_files(
        dataset_name="mine",
        fmt="flask",
        files=[("e.jsonl", FLASK_ROW)],
        user=researcher_b,
        workspace=ws_b,
    )
    assert report.created_instructions == 1
    assert Dataset.objects.get(name="mine").workspace == ws_b
    with pytest.raises(Http404):
        dataset_import_files(
            dataset_name="theirs",
            fmt="flask",
            files=[("e.jsonl", FLASK_ROW)],
            user=researcher_b,
            workspace=ws_a,
        )
    assert not Dataset.objects.filter(name="theirs").exists()


# --- Commands -------------------------------------------------------------------------


def test_export_command_resolves_the_dataset_within_the_workspace(
    data_b, tmp_path, capsys
):
    with pytest.raises(CommandError, match="no dataset"):
        call_command("export", "--dataset", "set-b", "--out", str(tmp_path / "x.csv"))
    call_command(
        "export",
        "--dataset",
        "set-b",
        "--workspace",
        "lab-b",
        "--out",
        str(tmp_path / "x.csv"),
    )
    assert (tmp_path / "x.csv").exists()
    with pytest.raises(CommandError, match="no workspace 'nope'"):
        call_command("export", "--dataset", "set-b", "--workspace", "nope")


# --- The migration into the default workspace -----------------------------------------


def test_default_workspace_migration_keeps_todays_users_and_roles(db):
    """flaskapp 0002: the global groups become roles in the default workspace (the
    highest of several)."""
    migration = importlib.import_module("flaskapp.migrations.0002_default_workspace")
    admin = UserFactory(username="m-admin")
    admin.groups.add(Group.objects.get(name="admin"))
    both = UserFactory(username="m-both")
    both.groups.add(*Group.objects.filter(name__in=["rater", "researcher"]))
    rater = UserFactory(username="m-rater")
    rater.groups.add(Group.objects.get(name="rater"))
    nobody = UserFactory(username="m-nobody")
    migration.forwards(django_apps, None)
    roles = dict(
        Membership.objects.filter(workspace=default_workspace()).values_list(
            "user__username", "role"
        )
    )
    assert roles["m-admin"] == "owner"
    assert roles["m-both"] == "researcher"
    assert roles["m-rater"] == "rater"
    assert nobody.username not in roles


def test_fill_migration_puts_rows_in_the_default_workspace_but_not_builtins(db):
    migration = importlib.import_module("annotation.migrations.0023_workspace_fill")
    builtin = Rubric.objects.get(is_builtin=True)
    assert builtin.workspace_id is None
    mine = Rubric.objects.create(name="legacy", workspace=None)
    migration.forwards(django_apps, None)
    mine.refresh_from_db()
    builtin.refresh_from_db()
    assert mine.workspace == default_workspace()
    assert builtin.workspace_id is None


def test_an_instance_admin_starts_in_a_workspace_they_belong_to(db, client_for):
    """An admin may switch to every workspace, but starts where they are a member
    (make run's admin in the demo workspace), not in the first by name."""
    admin = UserFactory(username="ws-admin", role="admin")
    Membership.objects.filter(user=admin).delete()
    Workspace.objects.create(name="Aardvark lab", slug="aardvark")
    zeta = Workspace.objects.create(name="Zeta lab", slug="zeta")
    Membership.objects.create(workspace=zeta, user=admin, role="owner")
    page = client_for(admin).get("/")
    assert page.status_code == 200
    assert page.context["current_workspace"] == zeta
