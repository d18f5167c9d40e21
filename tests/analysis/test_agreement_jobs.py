"""Large cold agreement tables as background jobs (issue 34): above
``AGREEMENT_INLINE_SCORES`` a table not in the cache is computed by a job of kind
``agreement`` (`analysis.services.agreement`); the page polls it, the API answers 202,
the downloads 202 with Retry-After; small selections stay inline.

The threshold is lowered with `override_settings`; the worker's side is
`job_execute`, the function the Celery task calls."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from django.test import Client, override_settings
from rest_framework.test import APIClient

from analysis.models import Job
from analysis.services.jobs import job_execute
from judging.models import JudgeRun
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta")
LARGE = override_settings(AGREEMENT_INLINE_SCORES=10)


@pytest.fixture
def setup(researcher):
    human = {
        (i, m, "readability"): [1 + (i + k) % 5, 1 + i % 4]
        for i in range(8)
        for k, m in enumerate(MODELS)
    }
    judge = {(i, m, "readability"): 1 + (2 * i + k) % 5 for i in range(8)
             for k, m in enumerate(MODELS)}  # fmt: skip
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=8, models=MODELS,
        n_raters=2, name="bigagree-set",
    )  # fmt: skip
    return researcher, s


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _query(s) -> dict:
    return {"campaign": s.campaign.pk, "run": s.runs[0].pk, "n_boot": 20}


@LARGE
def test_the_api_answers_202_with_the_job_then_200_from_the_cache(setup):
    researcher, s = setup
    api = _api(researcher)
    url = f"/api/datasets/{s.dataset.pk}/agreement/"
    first = api.get(url, _query(s))
    assert first.status_code == 202
    body = first.json()
    assert (body["kind"], body["status"]) == ("agreement", "queued")
    assert body["status_url"] == f"/api/jobs/{body['id']}/" == first["Location"]
    # Asked again while it is queued: the same job (dedupe), no second one.
    again = api.get(url, _query(s))
    assert again.status_code == 202 and again.json()["id"] == body["id"]
    assert Job.objects.count() == 1
    job_execute(job_id=body["id"])
    done = api.get(body["status_url"]).json()
    assert done["status"] == "done" and done["result"]["rows"] >= 1
    later = api.get(url, _query(s))
    assert later.status_code == 200
    assert later.json()["runs"][0]["id"] == s.runs[0].pk
    assert later.json()["n_boot"] == 20
    assert Job.objects.count() == 1
    # The job's page links to the dashboard of the same table (now cached).
    page = _client(researcher).get(done["page_url"]).content.decode()
    link = (
        f'href="/agreement/{s.dataset.pk}/?campaign={s.campaign.pk}&amp;'
        f'run={s.runs[0].pk}&amp;human_reference=raters&amp;n_boot=20"'
    )
    assert link in page


def test_a_small_selection_stays_inline(setup):
    researcher, s = setup
    resp = _api(researcher).get(f"/api/datasets/{s.dataset.pk}/agreement/", _query(s))
    assert resp.status_code == 200
    page = _client(researcher).get(f"/agreement/{s.dataset.pk}/", _query(s))
    assert page.status_code == 200 and "agreement-job" not in page.content.decode()
    assert not Job.objects.exists()


@LARGE
def test_the_page_shows_progress_then_the_table(setup):
    researcher, s = setup
    client = _client(researcher)
    url = f"/agreement/{s.dataset.pk}/"
    page = client.get(url, _query(s))
    html = page.content.decode()
    assert page.status_code == 200
    job = Job.objects.get(kind="agreement")
    assert 'id="agreement-job"' in html and "<progress" in html
    assert f"job={job.pk}" in html and 'hx-trigger="every 2s"' in html
    assert 'id="headline-heading"' not in html  # no table yet
    # The htmx fragment of the same choice: the same job, still polling.
    hx = {"HX-Request": "true", "HX-Target": "agreement-results"}
    fragment = client.get(url, _query(s), headers=hx).content.decode()
    assert f"job={job.pk}" in fragment and Job.objects.count() == 1
    poll = client.get(url, {**_query(s), "job": job.pk}, headers=hx)
    assert poll.status_code == 200 and "<progress" in poll.content.decode()
    job_execute(job_id=job.pk)
    done = client.get(url, {**_query(s), "job": job.pk}, headers=hx).content.decode()
    assert 'id="headline-heading"' in done and "agreement-job" not in done
    assert client.get(url, _query(s)).status_code == 200
    assert Job.objects.count() == 1


@LARGE
def test_a_poll_is_not_a_heavy_request(setup):
    researcher, s = setup
    client = _client(researcher)
    url = f"/agreement/{s.dataset.pk}/"
    client.get(url, _query(s))
    job = Job.objects.get(kind="agreement")
    rates = {"user": "100/min", "heavy": "1/min"}
    hx = {"HX-Request": "true", "HX-Target": "agreement-results"}
    # Not pytest-django's `settings` fixture: its teardown would restore the
    # settings it saw, this module's LARGE override included, for later tests.
    with override_settings(
        REST_FRAMEWORK={**django_settings.REST_FRAMEWORK,
                        "DEFAULT_THROTTLE_RATES": rates}
    ):  # fmt: skip
        for _ in range(3):
            poll = client.get(url, {**_query(s), "job": job.pk}, headers=hx)
            assert poll.status_code == 200 and "<progress" in poll.content.decode()


@LARGE
def test_downloads_of_a_large_uncached_table_answer_202_never_compute(setup):
    researcher, s = setup
    client = _client(researcher)
    base = f"/agreement/{s.dataset.pk}"
    for path in ("table.csv", "models.csv", "charts/heatmap.svg"):
        resp = client.get(f"{base}/{path}", _query(s))
        assert resp.status_code == 202, path
        assert resp["Retry-After"] == "5"
        job = Job.objects.get(kind="agreement")
        assert resp["Location"] == f"/jobs/{job.pk}/"
        assert f"/jobs/{job.pk}/" in resp.content.decode()
    assert Job.objects.count() == 1
    job_execute(job_id=Job.objects.get().pk)
    csv = client.get(f"{base}/table.csv", _query(s))
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")


@LARGE
def test_a_rater_is_refused(setup, rater):
    _, s = setup
    assert (
        _client(rater).get(f"/agreement/{s.dataset.pk}/", _query(s)).status_code == 403
    )
    resp = _api(rater).get(f"/api/datasets/{s.dataset.pk}/agreement/", _query(s))
    assert resp.status_code == 403
    assert not Job.objects.exists()


@LARGE
def test_the_job_s_failure_keeps_its_reason(setup):
    researcher, s = setup
    client = _client(researcher)
    url = f"/agreement/{s.dataset.pk}/"
    client.get(url, _query(s))
    job = Job.objects.get(kind="agreement")
    JudgeRun.objects.filter(pk=s.runs[0].pk).delete()  # gone before the worker ran
    job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and "run" in job.reason
    body = _api(researcher).get(f"/api/jobs/{job.pk}/").json()
    assert body["reason"] == job.reason


@LARGE
def test_the_page_shows_a_failed_job_s_reason_and_stops_polling(setup):
    researcher, s = setup
    client = _client(researcher)
    url = f"/agreement/{s.dataset.pk}/"
    client.get(url, _query(s))
    job = Job.objects.get(kind="agreement")
    # What the worker records when the task's time limit stops it.
    reason = "it took longer than 1500 s; ask for less (fewer resamples, fewer runs)"
    Job.objects.filter(pk=job.pk).update(status=Job.Status.FAILED, reason=reason)
    hx = {"HX-Request": "true", "HX-Target": "agreement-results"}
    poll = client.get(url, {**_query(s), "job": job.pk}, headers=hx)
    assert poll.status_code == 200
    html = poll.content.decode()
    assert f"The computation failed: {reason}" in html
    assert "<progress" not in html and "every 2s" not in html
    assert Job.objects.count() == 1  # a failure is shown, not retried by the poll


@LARGE
@override_settings(JOBS_ACTIVE_PER_USER=1)
def test_too_many_jobs_is_a_429_on_the_page_and_the_api(setup):
    researcher, s = setup
    client = _client(researcher)
    url = f"/agreement/{s.dataset.pk}/"
    client.get(url, _query(s))
    other = {**_query(s), "seed": 3, "n_boot": 30}
    page = client.get(url, other)
    assert page.status_code == 429 and int(page["Retry-After"]) > 0
    api = _api(researcher).get(f"/api/datasets/{s.dataset.pk}/agreement/", other)
    assert api.status_code == 429 and int(api["Retry-After"]) > 0
    hx = {"HX-Request": "true", "HX-Target": "agreement-results"}
    fragment = client.get(url, other, headers=hx)
    assert fragment.status_code == 200 and "jobs queued or running" in (
        fragment.content.decode()
    )
    assert Job.objects.count() == 1
