"""Judge results and pairwise preferences land in the import history, however they came
in (command line, upload page, API), refusals included; dry runs and the demo do not."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.models import ImportJob
from judging.models import JudgeRun
from tests.judging.data import make_dataset

pytestmark = pytest.mark.django_db

GOOD_CSV = "id,model,skill,score\n1,alpha,Readability,4\n2,beta,Readability,N/A\n"
BAD_CSV = "id,model,skill,score\n1,alpha,Readability,4\n9,alpha,Readability,3\n"
VOTES = (
    json.dumps(
        {"prompt": "Name a prime.", "response_1": "Seven.", "response_2": "Nine.",
         "label": 1, "model_1": "alpha", "model_2": "beta"}
    )
    + "\n"
)  # fmt: skip


@pytest.fixture
def dataset(admin_user):
    return make_dataset(name="hist-set", instructions=2, models=("alpha", "beta"))


def command(*args):
    call_command(*args, stdout=StringIO(), stderr=StringIO())


def test_a_judge_run_from_the_command_line_is_in_the_history(
    dataset, tmp_path, client, admin_user
):
    path = tmp_path / "scores.csv"
    path.write_text(GOOD_CSV)
    command("import_judge_run", str(path), "--dataset", "hist-set", "--name", "ext")
    run = JudgeRun.objects.get(name="ext")
    job = ImportJob.objects.get()
    assert (job.format, job.source, job.status) == ("judge_run", "command", "succeeded")
    assert job.dataset == dataset and job.created_by == admin_user  # the acting user
    assert job.files == [{"name": str(path), "path": str(path), "size": len(GOOD_CSV)}]
    assert job.summary["run_id"] == run.pk and job.summary["scores"] == 2
    assert job.total_rows == 2 and job.summary["models"] == ["alpha", "beta"]
    client.force_login(admin_user)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert f"/runs/{run.pk}/" in page and "ext" in page
    listing = client.get("/imports/").content.decode()
    assert "Judge results (an imported run)" in listing and "command line" in listing


def test_a_refused_judge_file_leaves_an_invalid_record_naming_the_line(
    dataset, tmp_path, client, admin_user
):
    path = tmp_path / "scores.csv"
    path.write_text(BAD_CSV)
    with pytest.raises(CommandError):
        command("import_judge_run", str(path), "--dataset", "hist-set")
    assert not JudgeRun.objects.exists()
    job = ImportJob.objects.get()
    assert (job.format, job.status) == ("judge_run", "invalid")
    assert [p["line"] for p in job.errors] == [3] and job.errors[0]["field"] == "id"
    client.force_login(admin_user)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert "line 3" in page and "run the command again" in page


def test_an_uploaded_judge_run_is_recorded_with_its_uploader(
    dataset, client, researcher
):
    client.force_login(researcher)
    response = client.post(
        "/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "csv",
            "name": "uploaded",
            "files": SimpleUploadedFile("s.csv", GOOD_CSV.encode(), "text/csv"),
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    job = ImportJob.objects.get()
    assert (job.source, job.created_by, job.status) == (
        "upload",
        researcher,
        "succeeded",
    )
    assert job.files == [{"name": "s.csv", "path": "", "size": len(GOOD_CSV)}]


def test_an_api_judge_run_refusal_is_recorded(dataset, api_client_for, researcher):
    response = api_client_for(researcher).post(
        "/api/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "csv",
            "files": [SimpleUploadedFile("bad.csv", BAD_CSV.encode(), "text/csv")],
        },
        format="multipart",
    )
    assert response.status_code == 400
    job = ImportJob.objects.get()
    assert (job.status, job.created_by, job.errors[0]["line"]) == (
        "invalid",
        researcher,
        3,
    )


def test_preferences_from_the_command_line_are_recorded_but_not_a_dry_run(
    tmp_path, client, admin_user
):
    path = tmp_path / "votes.jsonl"
    path.write_text(VOTES)
    command("import_preferences", str(path), "--dataset", "prefs", "--dry-run")
    assert not ImportJob.objects.exists()
    command("import_preferences", str(path), "--dataset", "prefs")
    job = ImportJob.objects.get()
    assert (job.format, job.source, job.status) == (
        "preferences",
        "command",
        "succeeded",
    )
    assert job.summary["created_pairs"] == 1 and job.dataset.name == "prefs"
    client.force_login(admin_user)
    page = client.get(f"/imports/{job.pk}/").content.decode()
    assert "pair" in page and "human preference" in page


def test_a_refused_preference_upload_is_recorded(api_client_for, researcher):
    from tests.factories import DatasetFactory

    DatasetFactory(name="api-prefs", created_by=researcher)
    response = api_client_for(researcher).post(
        "/api/datasets/api-prefs/preferences/",
        {"file": SimpleUploadedFile("v.jsonl", b'{"prompt": "x"}\n')},
        format="multipart",
    )
    assert response.status_code == 400
    job = ImportJob.objects.get()
    assert (job.format, job.status, job.created_by) == (
        "preferences",
        "invalid",
        researcher,
    )
    assert job.errors and job.errors[0]["line"] == 1


def test_the_demo_loader_adds_no_import_record():
    command("load_demo")
    command("load_demo")
    assert not ImportJob.objects.filter(format="preferences").exists()
