"""Expiry of staged uploads and of import previews never confirmed (issue 35's
follow-up): after UPLOAD_STAGED_EXPIRY_HOURS the staged folder, the preview's files
and a validated preview's row go, a refused import keeps its row (its record)
without its files, confirmed imports and young ones are untouched; the beat task,
the service and `manage.py expire_files` do it and say what they removed."""

from __future__ import annotations

import io
import json
import logging
import os
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from annotation.models import ImportJob, Instruction
from annotation.services.import_jobs import import_job_confirm, import_job_create
from annotation.services.upload_expiry import uploads_expire
from annotation.services.uploads import upload_stage, upload_staged
from annotation.tasks import uploads_expire_task
from flaskapp.errors import DomainError

pytestmark = pytest.mark.django_db

ROW = {
    "idx": 1,
    "instruction": "Why is the sky blue?",
    "answer": "Rayleigh scattering.",
    "task": "qa",
    "skill": ["Factuality", "Comprehension", "Readability"],
    "domain": ["Natural Science"],
    "difficulty": "simple lifestyle knowledge",
}
GOOD = (json.dumps(ROW) + "\n").encode()
BAD = b'{"idx": 1, "instruction": ""}\n'


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.UPLOAD_STAGED_EXPIRY_HOURS = 24


def _stage(user, data=GOOD) -> str:
    return upload_stage(user=user, name="eval.jsonl", size=len(data), read=lambda: data)


def _age_staged(user, token: str, hours: float) -> None:
    folder = Path(settings.MEDIA_ROOT) / "uploads" / str(user.pk) / token
    then = time.time() - hours * 3600
    for path in [*folder.iterdir(), folder]:
        os.utime(path, (then, then))


def _job(user, name: str, data=GOOD, hours: float = 0) -> ImportJob:
    job = import_job_create(
        dataset_name=name, fmt="flask", uploads=[("eval.jsonl", data)], user=user
    )
    ImportJob.objects.filter(pk=job.pk).update(
        created_at=timezone.now() - timedelta(hours=hours)
    )
    job.refresh_from_db()
    return job


def _paths(job: ImportJob) -> list[Path]:
    return [Path(f["path"]) for f in job.files]


def test_expired_staged_uploads_and_previews_go_young_and_confirmed_stay(
    researcher, caplog
):
    old_token, young_token = _stage(researcher), _stage(researcher)
    _age_staged(researcher, old_token, hours=25)
    _age_staged(researcher, young_token, hours=23)
    preview = _job(researcher, "never-confirmed", hours=25)
    refused = _job(researcher, "refused", data=BAD, hours=25)
    young = _job(researcher, "young", hours=1)
    confirmed = _job(researcher, "confirmed")
    import_job_confirm(job=confirmed)
    ImportJob.objects.filter(pk=confirmed.pk).update(
        created_at=timezone.now() - timedelta(days=30)
    )
    assert refused.status == ImportJob.Status.INVALID
    assert all(p.is_file() for p in _paths(preview) + _paths(refused))

    with caplog.at_level(logging.INFO, logger="annotation.services.upload_expiry"):
        report = uploads_expire()

    assert report.staged_folders == [f"{researcher.pk}/{old_token}"]
    with pytest.raises(DomainError):
        upload_staged(user=researcher, token=old_token)
    assert upload_staged(user=researcher, token=young_token)[0] == "eval.jsonl"
    assert report.deleted_jobs == [preview.pk]
    assert not ImportJob.objects.filter(pk=preview.pk).exists()
    assert not any(p.exists() for p in _paths(preview))
    # The refusal stays on record, with its problems, without its files.
    assert report.emptied_jobs == [refused.pk]
    kept = ImportJob.objects.get(pk=refused.pk)
    assert kept.errors and kept.files[0]["name"] == "eval.jsonl"
    assert kept.files[0]["path"] == "" and kept.files[0]["expired"]
    assert not any(p.exists() for p in _paths(refused))
    # Young and confirmed imports keep their rows and files.
    for job in (young, confirmed):
        assert all(p.is_file() for p in _paths(ImportJob.objects.get(pk=job.pk)))
    assert Instruction.objects.filter(dataset__name="confirmed").count() == 1
    assert report.files == 3  # the staged file and the two previews' copies
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert f"jobs {preview.pk}" in logged and old_token in logged

    again = uploads_expire()  # idempotent
    assert (again.staged_folders, again.deleted_jobs, again.emptied_jobs) == (
        [],
        [],
        [],
    )


def test_a_preview_confirmed_since_it_was_listed_is_left_alone(researcher):
    job = _job(researcher, "late-confirm", hours=25)
    import_job_confirm(job=job)

    report = uploads_expire()

    assert report.deleted_jobs == []
    assert all(p.is_file() for p in _paths(job))


def test_command_dry_run_removes_nothing_then_the_command_removes(researcher):
    token = _stage(researcher)
    _age_staged(researcher, token, hours=48)
    preview = _job(researcher, "cmd-preview", hours=48)

    out = io.StringIO()
    call_command("expire_files", "--dry-run", stdout=out)
    assert "would remove" in out.getvalue()
    assert f"unconfirmed import previews deleted: 1 (jobs {preview.pk})" in (
        out.getvalue()
    )
    assert ImportJob.objects.filter(pk=preview.pk).exists()
    assert upload_staged(user=researcher, token=token)

    out = io.StringIO()
    call_command("expire_files", stdout=out)
    assert f"staged uploads removed: 1 ({researcher.pk}/{token})" in out.getvalue()
    assert not ImportJob.objects.filter(pk=preview.pk).exists()


def test_the_beat_runs_the_task_hourly_and_the_task_expires(researcher):
    entry = settings.CELERY_BEAT_SCHEDULE["expire-staged-uploads"]
    assert entry["task"] == uploads_expire_task.name
    assert entry["schedule"] <= 3600
    token = _stage(researcher)
    _age_staged(researcher, token, hours=30)

    assert uploads_expire_task.apply().get() == 1

    with pytest.raises(DomainError):
        upload_staged(user=researcher, token=token)
