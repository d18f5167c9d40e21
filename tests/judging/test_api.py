"""The judging REST API: judges, runs, their calls and scores, imports.

Researchers and admins only: raters get 403 and anonymous requests 401. No response
ever holds an API key, only the env var's name and whether it is set.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from judging.models import JudgeCall, JudgeConfig, JudgeRun
from judging.services.runs import judge_run_create
from tests.factories import grant_endpoint_rights
from tests.judging.data import (
    KEY_ENV,
    SECRET,
    add_calls,
    make_config,
    make_dataset,
    make_run,
)

pytestmark = pytest.mark.django_db

S, F, R, P = "succeeded", "failed", "running", "pending"


@pytest.fixture(autouse=True)
def _key_in_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


@pytest.fixture
def dataset(db):
    return make_dataset(instructions=3, models=("alpha", "beta"))


@pytest.fixture
def config(researcher):
    return make_config(researcher)


@pytest.fixture
def run(dataset, config):
    run = make_run(dataset=dataset, config=config, name="api run")
    add_calls(run, [S, S, F, R, P, P])
    return run


def _endpoints(run_id: int, config_id: int) -> list[tuple[str, str]]:
    return [
        ("get", "/api/judges/"),
        ("post", "/api/judges/"),
        ("get", f"/api/judges/{config_id}/"),
        ("patch", f"/api/judges/{config_id}/"),
        ("get", "/api/runs/"),
        ("post", "/api/runs/"),
        ("get", f"/api/runs/{run_id}/"),
        ("post", f"/api/runs/{run_id}/start/"),
        ("post", f"/api/runs/{run_id}/cancel/"),
        ("post", f"/api/runs/{run_id}/retry-failed/"),
        ("get", f"/api/runs/{run_id}/calls/"),
        ("get", f"/api/runs/{run_id}/scores/"),
        ("get", f"/api/runs/{run_id}/critiques/"),
        ("post", "/api/runs/import/"),
    ]


def test_every_endpoint_refuses_raters_403_and_anonymous_401(
    api_client_for, rater, run, config
):
    for method, url in _endpoints(run.pk, config.pk):
        refused = getattr(api_client_for(rater), method)(url, {}, format="json")
        assert refused.status_code == 403, (method, url)
        # Raters never see judge scores or outputs, not even in an error body.
        assert "Feedback for call" not in refused.content.decode()
        anonymous = getattr(api_client_for(None), method)(url, {}, format="json")
        assert anonymous.status_code == 401, (method, url)
    run.refresh_from_db()
    assert run.status == JudgeRun.Status.RUNNING
    assert JudgeConfig.objects.count() == 1


# --- Judges -------------------------------------------------------------------------------


def test_list_and_detail_judges_show_env_name_and_boolean_never_the_key(
    api_client_for, researcher, config
):
    make_config(researcher, name="no-key", api_key_env="JUDGE_KEY_FLASK_UNSET")
    client = api_client_for(researcher)
    listed = client.get("/api/judges/")
    assert listed.status_code == 200
    by_name = {c["name"]: c for c in listed.json()["results"]}
    assert by_name["gpt-judge"]["api_key_env"] == KEY_ENV
    assert by_name["gpt-judge"]["api_key_set"] is True
    assert by_name["no-key"]["api_key_set"] is False
    detail = client.get(f"/api/judges/{config.pk}/")
    assert detail.json()["price_input_per_m"] == "2.5000"
    for response in (listed, detail):
        assert SECRET not in response.content.decode()


def test_create_judge(api_client_for, researcher):
    grant_endpoint_rights(researcher)  # a new endpoint
    response = api_client_for(researcher).post(
        "/api/judges/",
        {
            "name": "api judge",
            "base_url": "https://api.example.com/v1",
            "model": "gpt-4o-mini",
            "api_key_env": KEY_ENV,
            "samples": 2,
            "temperature": 0.7,
            "output_mode": "text",
            "requests_per_minute": 60,
            "price_output_per_m": "0.6",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["samples"] == 2 and data["api_key_set"] is True
    assert data["prompt"]["name"].startswith("builtin")
    config = JudgeConfig.objects.get(name="api judge")
    assert config.requests_per_minute == 60
    assert config.price_output_per_m == Decimal("0.6")


def test_create_judge_refuses_a_key_as_env_name_and_bad_values(
    api_client_for, researcher
):
    grant_endpoint_rights(researcher)  # refused for the values, not for the rights
    client = api_client_for(researcher)
    response = client.post(
        "/api/judges/",
        {
            "name": "leaky",
            "base_url": "https://x/v1",
            "model": "m",
            "api_key_env": SECRET,
        },
        format="json",
    )
    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == ["api_key_env"]
    assert SECRET not in response.content.decode()
    bad = client.post(
        "/api/judges/", {"name": "bad", "base_url": "x", "model": ""}, format="json"
    )
    assert bad.status_code == 400
    assert {p["field"] for p in bad.json()["problems"]} == {"base_url", "model"}
    # Numbers outside their bounds (flaskapp.bounds) are named by the serializer.
    bounds = client.post(
        "/api/judges/",
        {"name": "bad", "base_url": "x", "samples": 0, "temperature": 3},
        format="json",
    )
    assert bounds.status_code == 400
    assert {p["field"] for p in bounds.json()["problems"]} == {"samples", "temperature"}
    typed = client.post("/api/judges/", {"name": "t", "samples": "many"}, format="json")
    assert typed.status_code == 400 and "samples" in typed.json()
    assert not JudgeConfig.objects.exclude(name="gpt-judge").exists()


def test_unknown_judge_is_404(api_client_for, researcher):
    assert api_client_for(researcher).get("/api/judges/999/").status_code == 404


# --- Runs ---------------------------------------------------------------------------------


def test_list_runs_with_counts_tokens_and_cost(
    api_client_for, researcher, run, dataset
):
    make_run(
        dataset=dataset, config=None, status="completed", kind="imported", snapshot={}
    )
    response = api_client_for(researcher).get("/api/runs/")
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    row = next(r for r in body["results"] if r["name"] == "api run")
    assert row["counts"] == {
        "total": 6,
        "pending": 2,
        "running": 1,
        "succeeded": 2,
        "failed": 1,
        "cancelled": 0,
        "cached": 0,
    }
    assert row["tokens"] == {"input": 300, "output": 60, "total": 360}
    assert Decimal(row["cost"]) == Decimal("0.0015")
    assert row["config"]["name"] == "gpt-judge"
    filtered = api_client_for(researcher).get("/api/runs/", {"status": "completed"})
    assert [r["kind"] for r in filtered.json()["results"]] == ["imported"]
    bad = api_client_for(researcher).get("/api/runs/", {"status": "sideways"})
    assert bad.status_code == 400 and "status" in bad.json()


def test_run_detail_has_counts_tokens_cost_estimate_and_timing(
    api_client_for, researcher, run
):
    response = api_client_for(researcher).get(f"/api/runs/{run.pk}/")
    assert response.status_code == 200
    data = response.json()
    assert data["status"] == "running"
    assert data["counts"]["succeeded"] == 2 and data["counts"]["failed"] == 1
    assert data["tokens"]["total"] == 360
    assert data["timing"]["calls_per_second"] == round(3 / 30, 2)
    assert data["timing"]["eta_seconds"] == 30  # 3 open calls at 0.1/s
    assert data["timing"]["started_at"] is not None
    assert data["is_dev_server"] is False and data["is_baseline"] is False
    assert "estimate" in data
    assert SECRET not in response.content.decode()


def test_create_run_and_start_it(api_client_for, researcher, config, dataset):
    response = api_client_for(researcher).post(
        "/api/runs/",
        {
            "config": config.pk,
            "dataset": dataset.pk,
            "models": ["alpha"],
            "limit": 2,
            "start": True,
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["status"] == "running"
    assert data["counts"]["total"] == 2 == data["estimate"]["calls"]
    assert data["models"] == ["alpha"]
    run = JudgeRun.objects.get(pk=data["id"])
    assert run.instruction_limit == 2


def test_create_metadata_run(api_client_for, researcher, config, dataset):
    response = api_client_for(researcher).post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "kind": "metadata"},
        format="json",
    )
    assert response.status_code == 201
    assert response.json()["kind"] == "metadata"
    assert response.json()["counts"]["pending"] == 3


def test_create_run_bad_input_names_the_field(
    api_client_for, researcher, config, dataset
):
    client = api_client_for(researcher)
    unknown_model = client.post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "models": ["gamma"]},
        format="json",
    )
    assert unknown_model.status_code == 400
    assert unknown_model.json()["problems"][0]["field"] == "models"
    assert "gamma" in unknown_model.json()["detail"]
    no_config = client.post(
        "/api/runs/", {"config": 999, "dataset": dataset.pk}, format="json"
    )
    assert no_config.status_code == 400
    assert no_config.json()["problems"][0]["field"] == "config"
    bad_limit = client.post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "limit": 0},
        format="json",
    )
    assert bad_limit.json()["problems"][0]["field"] == "limit"
    missing = client.post("/api/runs/", {}, format="json")
    assert missing.status_code == 400 and {"config", "dataset"} <= set(missing.json())
    assert not JudgeRun.objects.exists()


def test_start_cancel_and_retry_failed(api_client_for, researcher, config, dataset):
    client = api_client_for(researcher)
    run = judge_run_create(config=config, dataset=dataset, user=researcher)
    started = client.post(f"/api/runs/{run.pk}/start/")
    assert started.status_code == 200 and started.json()["status"] == "running"
    cancelled = client.post(f"/api/runs/{run.pk}/cancel/")
    assert cancelled.json()["status"] == "cancelled"
    JudgeCall.objects.filter(run=run, pk__in=run.calls.values("pk")[:2]).update(
        status="failed", error="boom"
    )
    retried = client.post(f"/api/runs/{run.pk}/retry-failed/")
    assert retried.status_code == 200
    assert retried.json()["retried"] == 2
    assert retried.json()["run"]["status"] == "running"
    assert retried.json()["run"]["counts"]["failed"] == 0


def test_start_an_imported_run_is_refused(api_client_for, researcher, dataset):
    imported = make_run(
        dataset=dataset, kind="imported", status="completed", snapshot={}
    )
    JudgeCall.objects.create(
        run=imported,
        response=dataset.instructions.first().responses.first(),
        status="pending",
    )
    response = api_client_for(researcher).post(f"/api/runs/{imported.pk}/start/")
    assert response.status_code == 400
    assert "imported" in response.json()["detail"]


def test_calls_paginated_filtered_with_scores_and_raw_output(
    api_client_for, researcher, run
):
    client = api_client_for(researcher)
    response = client.get(f"/api/runs/{run.pk}/calls/", {"limit": 2})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 6 and len(body["results"]) == 2 and body["next"]
    first = body["results"][0]
    assert first["raw_output"] == "Feedback for call 0. Scores: 4"
    assert first["model"] == "alpha" and first["instruction_external_id"] == "1"
    assert [s["score"] for s in first["scores"]] == [4, None]
    failed = client.get(f"/api/runs/{run.pk}/calls/", {"status": "failed"}).json()
    assert failed["count"] == 1
    assert failed["results"][0]["error"].startswith("HTTP 500")
    bad = client.get(f"/api/runs/{run.pk}/calls/", {"status": "nope"})
    assert bad.status_code == 400


@pytest.mark.parametrize("n_calls", [5, 50])
def test_calls_endpoint_queries_do_not_grow_with_calls(
    api_client_for, researcher, config, django_assert_max_num_queries, n_calls
):
    many = make_dataset(name="many", instructions=10, models=("a", "b", "c", "d", "e"))
    run = make_run(dataset=many, config=config)
    add_calls(run, [S, F, S, R, P] * (n_calls // 5))
    client = api_client_for(researcher)
    # Roles, run, count, page of calls, their scores with skills.
    with django_assert_max_num_queries(5):
        response = client.get(f"/api/runs/{run.pk}/calls/")
    assert response.status_code == 200
    assert len(response.json()["results"]) == n_calls


def test_scores_paginated(api_client_for, researcher, run):
    response = api_client_for(researcher).get(
        f"/api/runs/{run.pk}/scores/", {"limit": 3}
    )
    body = response.json()
    assert response.status_code == 200
    assert body["count"] == 4  # 2 succeeded calls x 2 skills
    row = body["results"][0]
    assert set(row) >= {
        "response_id",
        "model",
        "skill",
        "sample_index",
        "score",
        "rationale",
    }
    assert {r["score"] for r in body["results"]} <= {4, None}


def test_unknown_run_is_404(api_client_for, researcher):
    client = api_client_for(researcher)
    assert client.get("/api/runs/999/").status_code == 404
    assert client.get("/api/runs/999/calls/").status_code == 404
    assert client.post("/api/runs/999/start/").status_code == 404


# --- Import -------------------------------------------------------------------------------


def _upload(name: str, rows) -> SimpleUploadedFile:
    return SimpleUploadedFile(
        name, "\n".join(json.dumps(r) for r in rows).encode(), "application/json"
    )


def test_import_flask_review_files(api_client_for, researcher, dataset):
    response = api_client_for(researcher).post(
        "/api/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "flask_review",
            "files": [
                _upload(
                    "alpha_review.jsonl",
                    [{"question_id": 1, "review": "r", "score": {"Comprehension": 5}}],
                ),
                _upload(
                    "beta_review.jsonl",
                    [
                        {
                            "question_id": 1,
                            "review": "r",
                            "score": {"Comprehension": "N/A"},
                        }
                    ],
                ),
            ],
            "name": "from notebook",
        },
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["kind"] == "imported" and data["status"] == "completed"
    assert data["models"] == ["alpha", "beta"]
    assert data["counts"]["succeeded"] == 2


def test_import_generic_csv_with_mapping(api_client_for, researcher, dataset):
    csv_file = SimpleUploadedFile(
        "s.csv", b"qid,model,skill,rating\n1,alpha,Readability,3\n", "text/csv"
    )
    response = api_client_for(researcher).post(
        "/api/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "csv",
            "files": [csv_file],
            "mapping": ["id=qid", "score=rating"],
        },
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    run = JudgeRun.objects.get(pk=response.json()["id"])
    assert run.scores.get().score == 3


def test_import_bad_rows_are_400_with_line_and_field(
    api_client_for, researcher, dataset
):
    response = api_client_for(researcher).post(
        "/api/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "flask_review",
            "files": [
                _upload(
                    "alpha.jsonl",
                    [
                        {"question_id": 1, "review": "", "score": {"Comprehension": 4}},
                        {"question_id": 2, "review": "", "score": {"Comprehension": 7}},
                        {
                            "question_id": 55,
                            "review": "",
                            "score": {"Comprehension": 4},
                        },
                    ],
                )
            ],
        },
        format="multipart",
    )
    assert response.status_code == 400
    problems = {(p["line"], p["field"]) for p in response.json()["problems"]}
    assert problems == {(2, "score"), (3, "question_id")}
    assert not JudgeRun.objects.exists()


def _warned_csv() -> SimpleUploadedFile:
    return SimpleUploadedFile(
        "s.csv",
        b"id,model,skill,score\n1,alpha,Readability,3\n1,alpha,Readability,3\n",
        "text/csv",
    )


def test_import_warnings_are_listed_on_the_run(api_client_for, researcher, dataset):
    response = api_client_for(researcher).post(
        "/api/runs/import/",
        {"dataset": dataset.pk, "format": "csv", "files": [_warned_csv()]},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["warning_count"] == 1
    [warning] = data["warnings"]
    assert (warning["file"], warning["line"], warning["field"]) == ("s.csv", 3, "skill")
    assert warning["message"] == "duplicate of line 2 (same score): kept once"
    assert JudgeRun.objects.get().scores.count() == 1
    detail = api_client_for(researcher).get(f"/api/runs/{data['id']}/").json()
    assert detail["warning_count"] == 1


def test_import_strict_refuses_warnings_with_400(api_client_for, researcher, dataset):
    response = api_client_for(researcher).post(
        "/api/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "csv",
            "files": [_warned_csv()],
            "strict": "true",
        },
        format="multipart",
    )
    assert response.status_code == 400, response.json()
    assert "with strict, warnings are errors" in response.json()["detail"]
    assert [(p["line"], p["field"]) for p in response.json()["problems"]] == [
        (3, "skill")
    ]
    assert not JudgeRun.objects.exists()


def test_import_input_errors(api_client_for, researcher, dataset):
    client = api_client_for(researcher)
    no_files = client.post(
        "/api/runs/import/",
        {"dataset": dataset.pk, "format": "csv"},
        format="multipart",
    )
    assert no_files.status_code == 400 and "files" in no_files.json()
    bad_dataset = client.post(
        "/api/runs/import/",
        {"dataset": 999, "format": "csv", "files": [SimpleUploadedFile("a.csv", b"x")]},
        format="multipart",
    )
    assert bad_dataset.status_code == 400
    assert bad_dataset.json()["problems"][0]["field"] == "dataset"
