"""Imports run from the command line appear in the import history, like uploads:
succeeded ones with their report, refused ones with every problem, dry runs not at all."""

from __future__ import annotations

import pytest
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import ImportJob
from tests.annotation.test_commands import EVAL, run, write_jsonl

pytestmark = pytest.mark.django_db


def test_import_flask_is_recorded_with_source_command_line(
    tmp_path, client_for, admin_user
):
    eval_set = write_jsonl(tmp_path / "eval.jsonl", *EVAL)
    outputs = write_jsonl(
        tmp_path / "model-x.jsonl",
        {"question_id": 1, "text": "Four."},
        {"question_id": 2, "text": "Blue."},
    )
    out, _ = run(
        "import_flask", str(eval_set), "--outputs", str(outputs), "--dataset", "cli"
    )
    job = ImportJob.objects.get()
    assert f"import {job.pk} in the import history" in out
    assert job.source == ImportJob.Source.COMMAND
    assert job.status == ImportJob.Status.SUCCEEDED
    assert job.format == ImportJob.Format.FLASK
    assert job.dataset.name == "cli" and job.created_by is None
    assert job.total_rows == job.summary["rows"] > 0
    assert [f["name"] for f in job.files] == [str(eval_set), str(outputs)]
    client = client_for(admin_user)
    listing = client.get(reverse("annotation:import-list")).content.decode()
    assert reverse("annotation:import-detail", args=[job.pk]) in listing
    assert "command line" in listing
    detail = client.get(reverse("annotation:import-detail", args=[job.pk]))
    assert detail.status_code == 200
    assert "run from the command line" in detail.content.decode()


def test_a_refused_command_import_is_recorded_with_its_problems(
    tmp_path, client_for, admin_user
):
    bad = write_jsonl(tmp_path / "rows.jsonl", {"instruction": ""})
    with pytest.raises(CommandError):
        run("import_dataset", str(bad), "--dataset", "refused-set")
    job = ImportJob.objects.get()
    assert job.source == ImportJob.Source.COMMAND
    assert job.status == ImportJob.Status.INVALID
    assert job.dataset is None and job.dataset_name == "refused-set"
    assert job.errors and any(e["field"] for e in job.errors)
    page = client_for(admin_user).get(
        reverse("annotation:import-detail", args=[job.pk])
    )
    assert page.status_code == 200
    assert "run the command again" in page.content.decode()


def test_import_dataset_success_is_recorded_and_dry_runs_are_not(tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        {"id": "a", "instruction": "Say hi.", "model": "m", "response": "Hi."},
    )
    run("import_dataset", str(rows), "--dataset", "generic", "--dry-run")
    assert not ImportJob.objects.exists()
    run("import_dataset", str(rows), "--dataset", "generic")
    job = ImportJob.objects.get()
    assert job.status == ImportJob.Status.SUCCEEDED and job.format == "jsonl"
    assert job.files[0]["size"] == rows.stat().st_size


def test_uploads_keep_source_upload(admin_user):
    from annotation.services.import_jobs import import_job_create

    job = import_job_create(
        dataset_name="up",
        fmt="jsonl",
        uploads=[("a.jsonl", b'{"id": "1", "instruction": "Hi"}\n')],
        user=admin_user,
    )
    assert job.source == ImportJob.Source.UPLOAD


def test_the_history_is_for_researchers_of_the_workspace(client_for, researcher, rater):
    """Issue 35: imports are self-service, their history a researcher's page."""
    url = reverse("annotation:import-list")
    assert client_for(researcher).get(url).status_code == 200
    assert client_for(rater).get(url).status_code == 403
    assert client_for(None).get(url).status_code == 302
