"""Pages, API and command of judge runs on rubrics other than FLASK's, on runs made
for real against the fake judge: a yes/no run is labelled Classification and shows
label names (never codes); critique runs are created from the form, the API and the
command, and their critiques are shown."""

from __future__ import annotations

import html
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from judging.models import JudgeCritique, JudgeRun, JudgeScore
from tests.judging.rubric_data import HELPSTEER, YES_NO, dataset_on
from tests.judging.test_any_rubric_runs import (  # noqa: F401 (fixture)
    eager_tasks,
    make_config,
    run_to_end,
)

pytestmark = pytest.mark.django_db(transaction=True)


def text_of(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


@pytest.fixture
def judged(fake_server, request):
    """A finished yes/no run and a finished 0-4 run of the same judge."""
    request.getfixturevalue("eager_tasks")
    base = fake_server(latency_ms=1)
    config, user = make_config(base, output_mode="json_schema")
    labels = run_to_end(config, user, dataset_on(YES_NO, instructions=3), name="yn")
    points = run_to_end(config, user, dataset_on(HELPSTEER, instructions=1), name="hs")
    return config, user, labels, points


def test_a_yes_no_run_is_labelled_classification_with_label_names(judged, client_for):
    _, user, labels, points = judged
    client = client_for(user)
    listing = client.get(reverse("judging:run-list")).content.decode()
    rows = listing.split("<tr")
    yn = next(r for r in rows if "<strong>yn</strong>" in r)
    hs = next(r for r in rows if "<strong>hs</strong>" in r)
    assert ">classification</span>" in yn and ">classification</span>" not in hs

    page = text_of(client.get(reverse("judging:run-detail", args=[labels.pk])))
    assert page.count("Classification") >= 1 and "Labels given" in page
    yes = JudgeScore.objects.filter(run=labels, score=0).count()
    no = JudgeScore.objects.filter(run=labels, score=1).count()
    assert yes + no == 6
    assert f"Yes No {yes} {no}" in page  # no N/A column: the rubric refuses N/A

    results = text_of(client.get(reverse("judging:run-results", args=[labels.pk])))
    chips = re.findall(r"Consistent with the request (\S+)", results)
    assert len(chips) == 6 and set(chips) <= {"Yes", "No"}

    other = text_of(client.get(reverse("judging:run-detail", args=[points.pk])))
    assert "Classification" not in other and "Labels given" not in other
    numbers = text_of(client.get(reverse("judging:run-results", args=[points.pk])))
    assert set(re.findall(r"Helpfulness (\S+)", numbers)) <= {"0", "1", "2", "3", "4"}


def test_the_api_gives_each_score_its_label(judged, api_client_for):
    _, user, labels, points = judged
    body = api_client_for(user).get(f"/api/runs/{labels.pk}/scores/").json()
    rows = body["results"] if isinstance(body, dict) else body
    assert len(rows) == 6
    for row in rows:
        assert row["label"] == {0: "yes", 1: "no"}[row["score"]]
    client = api_client_for(user)
    assert client.get(f"/api/runs/{labels.pk}/").json()["is_classification"] is True
    assert client.get(f"/api/runs/{points.pk}/").json()["is_classification"] is False
    listed = {
        r["id"]: r["is_classification"]
        for r in client.get("/api/runs/").json()["results"]
    }
    assert listed == {labels.pk: True, points.pk: False}


@pytest.mark.usefixtures("eager_tasks")
def test_a_critique_run_from_the_form_is_shown_on_its_pages(
    fake_server,
    client_for,
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = dataset_on(HELPSTEER, instructions=2)
    client = client_for(user)
    estimate = client.get(
        reverse("judging:run-new"),
        {"config": config.pk, "dataset": dataset.pk, "kind": "critique"},
        HTTP_HX_REQUEST="true",
    )
    assert estimate.status_code == 200 and "4 calls" in text_of(estimate)
    response = client.post(
        reverse("judging:run-new"),
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "kind": "critique",
            "models": ["m-a"],
            "start": "on",
        },
    )
    assert response.status_code == 302, text_of(response)
    run = JudgeRun.objects.get(kind=JudgeRun.Kind.CRITIQUE)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.COMPLETED and run.total_calls == 2
    assert run.models_included == ["m-a"]
    critiques = list(JudgeCritique.objects.filter(run=run))
    assert len(critiques) == 2
    page = text_of(client.get(reverse("judging:run-detail", args=[run.pk])))
    assert "Critiques" in page and "Open-ended critiques" in page
    assert critiques[0].text[:60] in page
    results = text_of(client.get(reverse("judging:run-results", args=[run.pk])))
    assert all(c.text[:60] in results for c in critiques)


@pytest.mark.usefixtures("eager_tasks")
def test_a_critique_run_from_the_api_and_the_command(
    fake_server,
    api_client_for,
    admin_user,
):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = dataset_on(HELPSTEER, instructions=2)
    created = api_client_for(user).post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "kind": "critique"},
        format="json",
    )
    assert created.status_code == 201, created.content
    run = JudgeRun.objects.get(pk=created.json()["id"])
    assert run.kind == JudgeRun.Kind.CRITIQUE and run.total_calls == 4
    assert run.estimate["output_tokens"] > 0

    out = StringIO()
    call_command(
        "judge",
        "--dataset",
        dataset.name,
        "--config",
        config.name,
        "--kind",
        "critique",
        "--limit",
        "1",
        stdout=out,
        stderr=StringIO(),
    )
    made = JudgeRun.objects.exclude(pk=run.pk).get()
    assert made.kind == JudgeRun.Kind.CRITIQUE and made.total_calls == 2
