"""Background jobs' result files expire JOB_FILE_EXPIRY_DAYS after the job finished
(issue 35's follow-up): the file goes, the row stays as the record and its page says
so; younger and live jobs are untouched; the beat task and `manage.py expire_files`
do it and say what they removed."""

from __future__ import annotations

import io
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from analysis.models import Job
from analysis.services.jobs import job_execute, job_files_expire, job_start
from analysis.tasks import job_files_expire_task
from tests.analysis.test_jobs import _setup

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    settings.JOB_FILE_EXPIRY_DAYS = 7


def _report(researcher, dataset, seed: int, days_ago: float) -> Job:
    """A real report job run to the end, finished `days_ago` days ago."""
    job = job_start(kind="report", owner=researcher, dataset=dataset,
                    params={"n_boot": 10, "seed": seed})  # fmt: skip
    job_execute(job_id=job.pk)
    Job.objects.filter(pk=job.pk).update(
        finished_at=timezone.now() - timedelta(days=days_ago)
    )
    job.refresh_from_db()
    assert job.status == Job.Status.DONE and job.result_file
    return job


def _file(job: Job) -> Path:
    return Path(settings.MEDIA_ROOT) / job.result_file


def test_an_old_job_file_goes_young_and_live_ones_stay(researcher, caplog):
    s = _setup(researcher)
    old = _report(researcher, s.dataset, seed=1, days_ago=8)
    young = _report(researcher, s.dataset, seed=2, days_ago=6)
    live = _report(researcher, s.dataset, seed=3, days_ago=30)
    Job.objects.filter(pk=live.pk).update(status=Job.Status.RUNNING)
    old_file, size = _file(old), _file(old).stat().st_size

    with caplog.at_level(logging.INFO, logger="analysis.services.jobs"):
        removed = job_files_expire()

    assert removed == [(old.pk, old.result_file, size)]
    assert not old_file.exists() and not old_file.parent.exists()
    kept = Job.objects.get(pk=old.pk)
    assert kept.result_file == "" and kept.result_name == old.result_name
    assert kept.status == Job.Status.DONE and kept.result is not None
    assert _file(young).is_file() and _file(live).is_file()
    assert f"job {old.pk}: {old.result_file}" in caplog.text
    assert job_files_expire() == []  # idempotent

    client = Client()
    client.force_login(researcher)
    page = client.get(f"/jobs/{old.pk}/").content.decode()
    assert f"{old.result_name} was deleted 7 days after the job finished" in page
    assert client.get(f"/jobs/{old.pk}/download/").status_code == 404
    assert client.get(f"/jobs/{young.pk}/download/").status_code == 200


def test_command_and_beat_task_expire_job_files(researcher):
    s = _setup(researcher)
    first = _report(researcher, s.dataset, seed=1, days_ago=10)
    second = _report(researcher, s.dataset, seed=2, days_ago=10)

    out = io.StringIO()
    call_command("expire_files", "--dry-run", stdout=out)
    assert "job result files would remove: 2" in out.getvalue()
    assert _file(first).is_file()

    out = io.StringIO()
    Job.objects.filter(pk=second.pk).update(finished_at=timezone.now())
    call_command("expire_files", stdout=out)
    assert f"job {first.pk}: {first.result_file}" in out.getvalue()
    assert not _file(first).exists() and _file(second).is_file()

    entry = settings.CELERY_BEAT_SCHEDULE["expire-job-files"]
    assert entry["task"] == job_files_expire_task.name
    Job.objects.filter(pk=second.pk).update(
        finished_at=timezone.now() - timedelta(days=9)
    )
    assert job_files_expire_task.apply().get() == 1
    assert not _file(second).exists()
