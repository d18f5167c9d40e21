"""Background jobs (issue 34): `analysis.services.jobs` starts and runs them, the job
page and `GET /api/jobs/{id}/` show them, the report and large rater-model fits go
through them.

The worker's side is `job_execute`, the function the Celery task calls; the last
test runs a real Celery worker (PostgreSQL and Redis, like the judge tests)."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.conf import settings
from django.test import override_settings

from analysis.models import Job
from analysis.services.jobs import job_execute, job_start
from annotation.models import Campaign
from flaskapp.errors import DomainError, TooManyRequests
from tests.analysis.agreement_data import make_agreement_setup
from tests.factories import UserFactory
from tests.judge_fixtures import wait_for

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta")


def _setup(researcher, name="jobs-set"):
    human = {
        (i, m, "readability"): [1 + (i + k) % 5, 1 + i % 4]
        for i in range(8)
        for k, m in enumerate(MODELS)
    }
    judge = {(i, m, "readability"): 1 + (2 * i + k) % 5 for i in range(8)
             for k, m in enumerate(MODELS)}  # fmt: skip
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=8, models=MODELS,
        n_raters=2, name=name,
    )  # fmt: skip


@pytest.fixture
def setup(researcher):
    return researcher, _setup(researcher)


def test_a_second_start_with_the_same_parameters_is_the_same_job(setup):
    researcher, s = setup
    first = job_start(kind="report", owner=researcher, dataset=s.dataset,
                      params={"n_boot": 10, "seed": 1})  # fmt: skip
    again = job_start(kind="report", owner=researcher, dataset=s.dataset,
                      params={"n_boot": 10, "seed": 1})  # fmt: skip
    other = job_start(kind="report", owner=researcher, dataset=s.dataset,
                      params={"n_boot": 10, "seed": 2})  # fmt: skip
    assert first.pk == again.pk != other.pk
    assert Job.objects.count() == 2


@override_settings(JOBS_ACTIVE_PER_USER=2)
def test_a_user_with_too_many_active_jobs_is_refused_for_now(setup):
    researcher, s = setup
    for seed in (1, 2):
        job_start(kind="report", owner=researcher, dataset=s.dataset,
                  params={"n_boot": 10, "seed": seed})  # fmt: skip
    with pytest.raises(TooManyRequests, match="2 jobs queued or running"):
        job_start(kind="report", owner=researcher, dataset=s.dataset,
                  params={"n_boot": 10, "seed": 3})  # fmt: skip
    # Another user is not affected; a finished job frees a place.
    other = UserFactory(username="jobs-other", role="researcher")
    job_start(kind="report", owner=other, dataset=s.dataset,
              params={"n_boot": 10, "seed": 3})  # fmt: skip
    job_execute(job_id=Job.objects.filter(owner=researcher).first().pk)
    job_start(kind="report", owner=researcher, dataset=s.dataset,
              params={"n_boot": 10, "seed": 3})  # fmt: skip


def test_bad_parameters_are_refused_naming_them(setup):
    researcher, s = setup
    with pytest.raises(DomainError) as caught:
        job_start(kind="report", owner=researcher, dataset=s.dataset,
                  params={"n_boot": 10_001, "seed": -1})  # fmt: skip
    assert {p.field for p in caught.value.problems} == {"n_boot", "seed"}
    with pytest.raises(DomainError, match="'x' is not a job"):
        job_start(kind="x", owner=researcher, dataset=s.dataset, params={})
    assert not Job.objects.exists()


def test_a_report_job_records_progress_and_its_zip_once(setup):
    researcher, s = setup
    job = job_start(kind="report", owner=researcher, dataset=s.dataset,
                    params={"n_boot": 20, "seed": 0})  # fmt: skip
    job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "done" and job.percent == 100
    assert job.progress_done == job.progress_total == 6  # agreement, 4 sections, README
    assert job.result_name == "report-jobs-set-seed0.zip" and job.result["files"] > 3
    assert job.started_at <= job.finished_at
    finished = job.finished_at
    job_execute(job_id=job.pk)  # a second delivery changes nothing
    job.refresh_from_db()
    assert job.finished_at == finished


def test_a_failed_job_keeps_its_reason(setup):
    researcher, s = setup
    job = job_start(kind="rater_models", owner=researcher, dataset=s.dataset,
                    params={"campaign_id": s.campaign.pk, "method": "mace"})  # fmt: skip
    Campaign.objects.filter(pk=s.campaign.pk).update(
        dataset=_setup(researcher, "x").dataset
    )
    job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.reason == "the campaign no longer exists"
    page = _client(researcher).get(f"/jobs/{job.pk}/").content.decode()
    assert "The job failed:</strong> the campaign no longer exists" in page
    body = _api(researcher).get(f"/api/jobs/{job.pk}/").json()
    assert (body["status"], body["reason"]) == (
        "failed",
        "the campaign no longer exists",
    )


def _client(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def _api(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


def test_the_job_page_polls_until_the_job_ends(setup):
    researcher, s = setup
    job = job_start(kind="report", owner=researcher, dataset=s.dataset,
                    params={"n_boot": 10, "seed": 0})  # fmt: skip
    client = _client(researcher)
    page = client.get(f"/jobs/{job.pk}/")
    html = page.content.decode()
    assert page.status_code == 200 and "<progress" in html
    assert f'hx-get="/jobs/{job.pk}/" hx-trigger="every 2s"' in html
    fragment = client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert (
        fragment.content.decode()
        .lstrip()
        .startswith('<section class="card" id="job-progress"')
    )
    assert client.get(f"/jobs/{job.pk}/download/").status_code == 404  # not yet
    job_execute(job_id=job.pk)
    fragment = client.get(f"/jobs/{job.pk}/", headers={"HX-Request": "true"})
    assert fragment.status_code == 286  # htmx stops polling
    assert "every 2s" not in fragment.content.decode()
    download = client.get(f"/jobs/{job.pk}/download/")
    data = b"".join(download.streaming_content)
    assert zipfile.ZipFile(io.BytesIO(data)).namelist()[0].startswith("report-jobs-set")


def test_who_may_see_a_job(setup, rater, no_role_user):
    researcher, s = setup
    job = job_start(kind="report", owner=researcher, dataset=s.dataset,
                    params={"n_boot": 10, "seed": 0})  # fmt: skip
    colleague = UserFactory(username="jobs-colleague", role="researcher")
    for user in (researcher, colleague):
        assert _client(user).get(f"/jobs/{job.pk}/").status_code == 200
        assert _api(user).get(f"/api/jobs/{job.pk}/").status_code == 200
    for user in (rater, no_role_user):
        assert _client(user).get(f"/jobs/{job.pk}/").status_code == 403
        assert _client(user).get(f"/jobs/{job.pk}/download/").status_code == 403
        assert _api(user).get(f"/api/jobs/{job.pk}/").status_code == 403
    from django.test import Client
    from rest_framework.test import APIClient

    assert Client().get(f"/jobs/{job.pk}/").status_code == 302
    assert APIClient().get(f"/api/jobs/{job.pk}/").status_code in (401, 403)
    assert _client(researcher).get(f"/jobs/{job.pk + 999}/").status_code == 404


def test_the_report_api_answers_202_with_the_job(setup, rater):
    researcher, s = setup
    api = _api(researcher)
    url = f"/api/datasets/{s.dataset.pk}/report/"
    resp = api.post(url, {"n_boot": 30, "seed": 4}, format="json")
    assert resp.status_code == 202
    body = resp.json()
    assert (body["kind"], body["status"], body["params"]) == (
        "report", "queued", {"n_boot": 30, "seed": 4})  # fmt: skip
    assert body["status_url"] == f"/api/jobs/{body['id']}/"
    job_execute(job_id=body["id"])
    done = api.get(body["status_url"]).json()
    assert done["status"] == "done" and done["download_url"] == (
        f"/jobs/{body['id']}/download/"
    )
    bad = api.post(url, {"n_boot": 10**6}, format="json")
    assert bad.status_code == 400 and bad.json()["problems"][0]["field"] == "n_boot"
    assert _api(rater).post(url, {}, format="json").status_code == 403
    assert Job.objects.count() == 1


@override_settings(RATER_MODELS_INLINE_SCORES=3)
def test_a_large_campaign_s_rater_models_are_fitted_by_a_job(setup):
    researcher, s = setup
    api = _api(researcher)
    url = f"/api/campaigns/{s.campaign.pk}/rater-models/"
    resp = api.get(url, {"model": "mace"})
    assert resp.status_code == 202
    job_id = resp.json()["job"]["id"]
    # The page's section shows the job's progress and polls with its id.
    client = _client(researcher)
    fragment = client.get(f"/reliability/{s.campaign.pk}/", {"model": "mace"},
                          headers={"HX-Request": "true"}).content.decode()  # fmt: skip
    assert f"?model=mace&amp;job={job_id}" in fragment and "<progress" in fragment
    assert Job.objects.count() == 1  # the same job, not a second one
    # Its polls are not heavy requests: a poll every 2 s is never throttled.
    with override_settings(REST_FRAMEWORK={**settings.REST_FRAMEWORK,
                           "DEFAULT_THROTTLE_RATES": {"user": "100/min",
                                                      "heavy": "1/min"}}):  # fmt: skip
        for _ in range(3):
            poll = client.get(f"/reliability/{s.campaign.pk}/",
                              {"model": "mace", "job": job_id},
                              headers={"HX-Request": "true"})  # fmt: skip
            assert poll.status_code == 200 and "<progress" in poll.content.decode()
    job_execute(job_id=job_id)
    result = api.get(f"/api/jobs/{job_id}/").json()["result"]
    assert result["model"] == "mace" and result["criteria"]
    assert api.get(url, {"model": "mace"}).json() == result  # now from the cache
    fragment = client.get(f"/reliability/{s.campaign.pk}/",
                          {"model": "mace", "job": job_id},
                          headers={"HX-Request": "true"}).content.decode()  # fmt: skip
    assert 'id="rater-models-overview"' in fragment and "<progress" not in fragment


def test_a_small_campaign_s_rater_models_are_fitted_inline(setup):
    researcher, s = setup
    resp = _api(researcher).get(f"/api/campaigns/{s.campaign.pk}/rater-models/")
    assert resp.status_code == 200 and resp.json()["model"] == "dawid_skene"
    assert not Job.objects.exists()


@pytest.mark.postgres
def test_a_real_worker_makes_the_report(celery_worker_process, researcher):
    s = _setup(researcher, "worker-jobs")
    worker = celery_worker_process()
    api = _api(researcher)
    body = api.post(f"/api/datasets/{s.dataset.pk}/report/", {"n_boot": 20},
                    format="json").json()  # fmt: skip
    done = wait_for(
        lambda: api.get(body["status_url"]).json()["status"] in ("done", "failed"),
        timeout=120, message=worker.tail,
    )  # fmt: skip
    assert done
    job = api.get(body["status_url"]).json()
    assert job["status"] == "done", job["reason"]
    assert job["progress"] == {"done": 6, "total": 6}
    download = _client(researcher).get(job["download_url"])
    assert zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))).namelist()


@override_settings(RATER_MODELS_INLINE_SCORES=3, JOBS_ACTIVE_PER_USER=1)
def test_too_many_jobs_on_the_reliability_page_is_a_429(setup):
    researcher, s = setup
    job_start(kind="report", owner=researcher, dataset=s.dataset,
              params={"n_boot": 10, "seed": 0})  # fmt: skip
    client = _client(researcher)
    page = client.get(f"/reliability/{s.campaign.pk}/", {"model": "mace"})
    assert page.status_code == 429 and int(page["Retry-After"]) > 0
    assert "1 jobs queued or running" in page.content.decode()
    fragment = client.get(f"/reliability/{s.campaign.pk}/", {"model": "mace"},
                          headers={"HX-Request": "true"})  # fmt: skip
    assert fragment.status_code == 200
    assert "1 jobs queued or running" in fragment.content.decode()
    assert Job.objects.count() == 1
