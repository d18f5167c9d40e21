"""The annotation REST API: who may call what, what comes back, and what is refused."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.models import Dataset, ImportJob, Instruction, Response, Rubric
from annotation.services.import_jobs import import_job_execute
from annotation.services.imports import dataset_import_files
from annotation.services.rubrics import rubric_get_default
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    api_token,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _uploads_in_tmp(settings, tmp_path):
    """Import jobs store their uploads under MEDIA_ROOT; keep them out of var/."""
    settings.MEDIA_ROOT = tmp_path / "media"


# --- Helpers -----------------------------------------------------------------------------


def eval_row(idx: int, **overrides) -> dict:
    """One line of a FLASK evaluation set (current schema)."""
    row = {
        "idx": idx,
        "instruction": f"Question number {idx}: why is the sky blue?",
        "answer": f"Reference answer {idx}.",
        "task": "unit_test",
        "skill": ["Factuality", "Comprehension", "Readability"],
        "domain": ["Natural Science"],
        "difficulty": "formal_education_knowledge",
    }
    row.update(overrides)
    return row


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def import_url(name: str) -> str:
    return f"/api/datasets/{name}/imports/"


def post_import(client: APIClient, dataset_name: str, **fields):
    return client.post(import_url(dataset_name), fields, format="multipart")


RUBRIC_FILE = [
    {
        "Skill": "Factuality",
        "Criteria": "Did the model extract pertinent and accurate background knowledge?",
        "Scoring": {str(i): f"Factuality anchor {i}." for i in range(1, 6)},
    },
    {
        "Skill": "Readability",
        "Criteria": "Is the response structured to promote readability and coherence?",
        "Scoring": {str(i): f"Readability anchor {i}." for i in range(1, 6)},
    },
]


def small_dataset(name: str = "small-set", n: int = 3) -> Dataset:
    """A dataset built by the import service: n instructions, two models' responses."""
    dataset_import_files(
        dataset_name=name,
        fmt="flask",
        files=[("eval.jsonl", jsonl([eval_row(i) for i in range(1, n + 1)]))],
    )
    for model in ("gpt4", "alpaca_13b"):
        dataset_import_files(
            dataset_name=name,
            fmt="flask_outputs",
            files=[
                (
                    f"{model}.jsonl",
                    jsonl(
                        [
                            {"question_id": i, "text": f"{model} says {i}"}
                            for i in range(1, n + 1)
                        ]
                    ),
                )
            ],
        )
    return Dataset.objects.get(name=name)


# --- Roles and authentication ------------------------------------------------------------

RESEARCHER_ENDPOINTS = [
    ("get", "/api/rubrics/"),
    ("get", "/api/rubrics/1/"),
    ("get", "/api/datasets/"),
    ("get", "/api/datasets/1/"),
    ("get", "/api/datasets/1/instructions/"),
    ("get", "/api/datasets/1/responses/"),
    ("get", "/api/instructions/1/"),
]
ADMIN_ENDPOINTS = [
    ("post", "/api/rubrics/import/"),
    ("post", "/api/datasets/some-set/imports/"),
    ("get", "/api/imports/"),
    ("get", "/api/imports/1/"),
    ("post", "/api/imports/1/confirm/"),
]


@pytest.mark.parametrize(("method", "url"), RESEARCHER_ENDPOINTS + ADMIN_ENDPOINTS)
def test_anonymous_request_is_asked_to_authenticate(api_client_for, method, url):
    response = getattr(api_client_for(None), method)(url)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Token")


@pytest.mark.parametrize(("method", "url"), RESEARCHER_ENDPOINTS + ADMIN_ENDPOINTS)
def test_rater_is_refused_everywhere(api_client_for, rater, method, url):
    response = getattr(api_client_for(rater), method)(url)
    assert response.status_code == 403


@pytest.mark.parametrize(("method", "url"), RESEARCHER_ENDPOINTS)
def test_user_without_role_is_refused(api_client_for, no_role_user, method, url):
    assert getattr(api_client_for(no_role_user), method)(url).status_code == 403


@pytest.mark.parametrize(("method", "url"), ADMIN_ENDPOINTS)
def test_researcher_is_not_refused_on_the_import_endpoints(
    api_client_for, researcher, method, url
):
    """Issue 35: researchers import datasets and rubrics themselves (what was an
    admin's endpoint answers them with a 400 or 404 here, not a 403)."""
    response = getattr(api_client_for(researcher), method)(url)
    assert response.status_code in (200, 400, 404)


@pytest.mark.parametrize(("method", "url"), ADMIN_ENDPOINTS)
def test_user_without_role_is_refused_on_import_endpoints(
    api_client_for, no_role_user, method, url
):
    assert getattr(api_client_for(no_role_user), method)(url).status_code == 403


def test_researcher_may_list_imports_of_their_workspace(api_client_for, researcher):
    """Issue 35: imports are self-service for a workspace's researchers (they were
    an admin's job)."""
    response = api_client_for(researcher).get("/api/imports/")
    assert response.status_code == 200


def test_token_authenticates(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {api_token(researcher)}")
    response = client.get("/api/rubrics/")
    assert response.status_code == 200
    assert response.json()["count"] >= 1


def test_wrong_token_is_refused():
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get("/api/rubrics/").status_code == 401


def test_session_login_authenticates(client_for, researcher):
    assert client_for(researcher).get("/api/datasets/").status_code == 200


# --- Rubrics -----------------------------------------------------------------------------


def test_rubric_list_shows_builtin_rubric_with_its_skill_count(
    api_client_for, researcher
):
    response = api_client_for(researcher).get("/api/rubrics/")
    assert response.status_code == 200
    builtin = next(r for r in response.json()["results"] if r["is_builtin"])
    assert builtin["name"] == "FLASK"
    assert builtin["skill_count"] == 12


def test_rubric_detail_lists_skills_with_five_anchors(api_client_for, researcher):
    rubric = rubric_get_default()
    response = api_client_for(researcher).get(f"/api/rubrics/{rubric.pk}/")
    assert response.status_code == 200
    skills = response.json()["skills"]
    assert [s["key"] for s in skills][:3] == [
        "logical_robustness",
        "logical_correctness",
        "logical_efficiency",
    ]
    metacognition = next(s for s in skills if s["key"] == "metacognition")
    assert metacognition["ability"] == "problem_handling"
    assert metacognition["criteria"]
    assert [a["score"] for a in metacognition["anchors"]] == [1, 2, 3, 4, 5]
    assert all(a["description"] for a in metacognition["anchors"])


def test_rubric_detail_of_unknown_id_is_404(api_client_for, researcher):
    assert api_client_for(researcher).get("/api/rubrics/999999/").status_code == 404


def test_rubric_import_creates_a_new_version_each_time(api_client_for, admin_user):
    client = api_client_for(admin_user)
    data = json.dumps(RUBRIC_FILE).encode()
    first = client.post(
        "/api/rubrics/import/",
        {"name": "FLASK official", "file": upload("skillset_description.json", data)},
        format="multipart",
    )
    second = client.post(
        "/api/rubrics/import/",
        {"name": "FLASK official", "file": upload("skillset_description.json", data)},
        format="multipart",
    )
    assert first.status_code == 201, first.json()
    assert (first.json()["version"], second.json()["version"]) == (1, 2)
    factuality = first.json()["skills"][0]
    assert factuality["key"] == "factuality"
    assert factuality["ability"] == "background_knowledge"
    assert factuality["anchors"][4] == {
        "score": 5,
        "description": "Factuality anchor 5.",
    }


def test_rubric_import_refuses_invalid_json_and_creates_nothing(
    api_client_for, admin_user
):
    before = Rubric.objects.count()
    response = api_client_for(admin_user).post(
        "/api/rubrics/import/",
        {
            "name": "broken",
            "file": upload("skills.json", b'[{"Skill": "Factuality",\n oops'),
        },
        format="multipart",
    )
    assert response.status_code == 400
    assert "invalid JSON" in response.json()["problems"][0]["message"]
    assert Rubric.objects.count() == before


def test_rubric_import_without_file_is_400(api_client_for, admin_user):
    response = api_client_for(admin_user).post(
        "/api/rubrics/import/", {"name": "no file"}, format="multipart"
    )
    assert response.status_code == 400
    assert "file" in response.json()


def test_real_skillset_description_imports(api_client_for, admin_user, flask_data):
    path = (
        flask_data
        / "metadata_annotation"
        / "skillset"
        / "src"
        / "skillset_description.json"
    )
    if not path.exists():
        pytest.skip("skillset_description.json is not in the FLASK release copy")
    response = api_client_for(admin_user).post(
        "/api/rubrics/import/",
        {"name": "FLASK official", "file": upload(path.name, path.read_bytes())},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    assert len(response.json()["skills"]) == 12


# --- Datasets ----------------------------------------------------------------------------


def test_dataset_list_counts_instructions_and_responses(api_client_for, researcher):
    small_dataset("counted", n=3)
    DatasetFactory(name="empty-set")
    response = api_client_for(researcher).get("/api/datasets/")
    assert response.status_code == 200
    by_name = {d["name"]: d for d in response.json()["results"]}
    assert (
        by_name["counted"]["instruction_count"],
        by_name["counted"]["response_count"],
    ) == (
        3,
        6,
    )
    assert by_name["empty-set"]["instruction_count"] == 0
    assert by_name["counted"]["rubric"]["name"] == "FLASK"


def test_dataset_detail_has_stats(api_client_for, researcher):
    dataset = small_dataset("with-stats", n=2)
    response = api_client_for(researcher).get(f"/api/datasets/{dataset.pk}/")
    assert response.status_code == 200
    stats = response.json()["stats"]
    assert (stats["instructions"], stats["responses"]) == (2, 4)
    assert stats["models"] == [
        {"model": "alpaca_13b", "count": 2},
        {"model": "gpt4", "count": 2},
    ]
    assert stats["domains"] == [
        {"key": "natural_science", "label": "Natural Science", "count": 2}
    ]
    assert stats["difficulties"][0]["level"] == 3
    assert {s["key"] for s in stats["skills"]} == {
        "factuality",
        "comprehension",
        "readability",
    }


def test_dataset_detail_of_unknown_id_is_404(api_client_for, researcher):
    assert api_client_for(researcher).get("/api/datasets/999999/").status_code == 404


# --- Instructions ------------------------------------------------------------------------


def test_instruction_list_returns_instruction_fields(api_client_for, researcher):
    dataset = small_dataset("browse", n=2)
    response = api_client_for(researcher).get(
        f"/api/datasets/{dataset.pk}/instructions/"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    first = body["results"][0]
    assert first["external_id"] == "1"
    assert first["text"].startswith("Question number 1")
    assert first["reference_answer"] == "Reference answer 1."
    assert first["source_task"] == "unit_test"
    assert first["domains"] == ["natural_science"]
    assert first["difficulty"] == 3
    assert first["skills"] == [
        "factuality",
        "comprehension",
        "readability",
    ]  # file order
    assert first["is_hard"] is False
    assert first["checklist"] is None
    assert first["response_count"] == 2


@pytest.fixture
def filter_dataset():
    dataset = DatasetFactory(name="filters")
    InstructionFactory(
        dataset=dataset,
        external_id="math",
        domain_1="math",
        difficulty=1,
        skill_keys=["logical_correctness"],
        source_task="gsm8k",
        text="Add the two numbers carefully.",
    )
    InstructionFactory(
        dataset=dataset,
        external_id="code",
        domain_1="coding",
        domain_2="math",
        difficulty=None,
        skill_keys=["readability"],
        source_task="humaneval",
        is_hard=True,
        text="Write a function that reverses a linked list.",
    )
    InstructionFactory(
        dataset=dataset,
        external_id="history",
        domain_1="history",
        difficulty=5,
        skill_keys=["factuality", "readability"],
        source_task="mmlu",
        text="Describe the causes of the French Revolution.",
    )
    return dataset


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({}, ["math", "code", "history"]),
        ({"domain": "math"}, ["math", "code"]),
        ({"difficulty": "5"}, ["history"]),
        ({"difficulty": "unknown"}, ["code"]),
        ({"skill": "readability"}, ["code", "history"]),
        ({"task": "gsm8k"}, ["math"]),
        ({"hard": "true"}, ["code"]),
        ({"hard": "false"}, ["math", "history"]),
        ({"q": "revolution"}, ["history"]),
        ({"domain": "", "q": ""}, ["math", "code", "history"]),
    ],
)
def test_instruction_list_filters(
    api_client_for, researcher, filter_dataset, query, expected
):
    response = api_client_for(researcher).get(
        f"/api/datasets/{filter_dataset.pk}/instructions/", query
    )
    assert response.status_code == 200, response.json()
    assert [i["external_id"] for i in response.json()["results"]] == expected


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"difficulty": "9"}, "difficulty"),
        ({"domain": "astrology"}, "domain"),
        ({"hard": "maybe"}, "hard"),
    ],
)
def test_instruction_list_rejects_bad_filters(
    api_client_for, researcher, filter_dataset, query, field
):
    response = api_client_for(researcher).get(
        f"/api/datasets/{filter_dataset.pk}/instructions/", query
    )
    assert response.status_code == 400
    assert field in response.json()


def test_instruction_list_difficulty_error_says_what_is_allowed(
    api_client_for, researcher, filter_dataset
):
    response = api_client_for(researcher).get(
        f"/api/datasets/{filter_dataset.pk}/instructions/", {"difficulty": "9"}
    )
    assert response.json()["difficulty"] == [
        "'9' is not a difficulty level of this dataset; allowed: 1, 2, 3, 4, 5, unknown"
    ]


def test_instruction_list_of_unknown_dataset_is_404(api_client_for, researcher):
    response = api_client_for(researcher).get("/api/datasets/999999/instructions/")
    assert response.status_code == 404


def test_instruction_list_paginates_with_limit_and_offset(
    api_client_for, researcher, filter_dataset
):
    url = f"/api/datasets/{filter_dataset.pk}/instructions/"
    client = api_client_for(researcher)
    page = client.get(url, {"limit": 2}).json()
    assert page["count"] == 3
    assert [i["external_id"] for i in page["results"]] == ["math", "code"]
    assert page["next"]
    rest = client.get(page["next"]).json()
    assert [i["external_id"] for i in rest["results"]] == ["history"]


def test_instruction_list_default_page_is_50(api_client_for, researcher):
    dataset = DatasetFactory()
    InstructionFactory.create_batch(55, dataset=dataset)
    page = (
        api_client_for(researcher)
        .get(f"/api/datasets/{dataset.pk}/instructions/")
        .json()
    )
    assert (page["count"], len(page["results"])) == (55, 50)


@pytest.mark.parametrize("n", [5, 40])
def test_instruction_list_query_count_does_not_grow(
    api_client_for, researcher, django_assert_max_num_queries, n
):
    dataset = DatasetFactory()
    for instruction in InstructionFactory.create_batch(n, dataset=dataset):
        ResponseFactory(instruction=instruction, model_name="a")
        ResponseFactory(instruction=instruction, model_name="b")
    client = api_client_for(researcher)
    # groups (admin check), memberships (role check), dataset, count, page, skill
    # links.
    with django_assert_max_num_queries(6):
        response = client.get(f"/api/datasets/{dataset.pk}/instructions/")
    assert len(response.json()["results"]) == n


def test_instruction_detail_includes_every_response(api_client_for, researcher):
    dataset = small_dataset("detail", n=1)
    instruction = Instruction.objects.get(dataset=dataset, external_id="1")
    response = api_client_for(researcher).get(f"/api/instructions/{instruction.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body["dataset"] == {"id": dataset.pk, "name": "detail"}
    assert body["skills"] == ["factuality", "comprehension", "readability"]
    assert [(r["model_name"], r["text"]) for r in body["responses"]] == [
        ("alpaca_13b", "alpaca_13b says 1"),
        ("gpt4", "gpt4 says 1"),
    ]
    assert body["response_count"] == 2


def test_instruction_detail_of_unknown_id_is_404(api_client_for, researcher):
    assert (
        api_client_for(researcher).get("/api/instructions/999999/").status_code == 404
    )


# --- Responses ---------------------------------------------------------------------------


def test_response_list_filters_by_model(api_client_for, researcher):
    dataset = small_dataset("responses", n=3)
    client = api_client_for(researcher)
    everything = client.get(f"/api/datasets/{dataset.pk}/responses/").json()
    assert everything["count"] == 6
    gpt4 = client.get(
        f"/api/datasets/{dataset.pk}/responses/", {"model": "gpt4"}
    ).json()
    assert gpt4["count"] == 3
    assert [
        (r["instruction_external_id"], r["model_name"]) for r in gpt4["results"]
    ] == [
        ("1", "gpt4"),
        ("2", "gpt4"),
        ("3", "gpt4"),
    ]
    assert gpt4["results"][0]["text"] == "gpt4 says 1"


def test_response_list_of_unknown_dataset_is_404(api_client_for, researcher):
    assert (
        api_client_for(researcher).get("/api/datasets/999999/responses/").status_code
        == 404
    )


# --- Imports -----------------------------------------------------------------------------


def test_import_eval_set_then_outputs_then_reimport(api_client_for, admin_user):
    client = api_client_for(admin_user)
    name = "flask-eval.v2"  # '-' and '.' in the URL
    eval_set = jsonl(
        [eval_row(1), eval_row(2, difficulty=5), eval_row(3, domain=["Coding"])]
    )

    created = post_import(
        client, name, format="flask", files=[upload("eval.jsonl", eval_set)]
    )
    assert created.status_code == 201, created.json()
    job = created.json()
    assert job["status"] == "succeeded"
    assert job["dataset_name"] == name
    assert job["summary"]["created_instructions"] == 3
    assert job["total_rows"] == job["processed_rows"] == 3
    assert job["errors"] == []
    assert job["preview"][0]["id"] == "1"
    dataset = Dataset.objects.get(name=name)
    assert job["dataset_id"] == dataset.pk
    assert job["url"].endswith(f"/api/imports/{job['id']}/")
    assert client.get(job["url"]).json()["status"] == "succeeded"

    outputs = post_import(
        client,
        name,
        format="flask_outputs",
        files=[
            upload(
                "gpt4.jsonl",
                jsonl([{"question_id": i, "text": f"a{i}"} for i in (1, 2, 3)]),
            )
        ],
    )
    assert outputs.status_code == 201, outputs.json()
    assert outputs.json()["summary"]["created_responses"] == 3
    assert outputs.json()["summary"]["models"] == ["gpt4"]

    again = post_import(
        client, name, format="flask", files=[upload("eval.jsonl", eval_set)]
    )
    assert again.status_code == 201
    summary = again.json()["summary"]
    assert (summary["created_instructions"], summary["created_responses"]) == (0, 0)
    assert summary["unchanged"] == 3
    assert Instruction.objects.filter(dataset=dataset).count() == 3
    assert Response.objects.filter(instruction__dataset=dataset).count() == 3

    listed = client.get(
        f"/api/datasets/{dataset.pk}/instructions/", {"domain": "coding"}
    )
    assert [i["external_id"] for i in listed.json()["results"]] == ["3"]


def test_import_with_invalid_json_on_line_2_imports_nothing(api_client_for, admin_user):
    data = jsonl([eval_row(1)]) + b'{"idx": 2, "instruction": \n' + jsonl([eval_row(3)])
    response = post_import(
        api_client_for(admin_user),
        "broken",
        format="flask",
        file=upload("eval.jsonl", data),
    )
    assert response.status_code == 400
    body = response.json()
    assert body["status"] == "invalid"
    assert body["errors"][0]["line"] == 2
    assert body["errors"][0]["file"] == "eval.jsonl"
    assert "line 2" in body["errors"][0]["text"]
    assert not Dataset.objects.filter(name="broken").exists()
    assert Instruction.objects.count() == 0
    assert ImportJob.objects.get(pk=body["id"]).status == ImportJob.Status.INVALID


def test_import_error_names_the_field(api_client_for, admin_user):
    data = jsonl([eval_row(1), eval_row(2, difficulty=9)])
    response = post_import(
        api_client_for(admin_user),
        "bad-field",
        format="flask",
        files=[upload("e.jsonl", data)],
    )
    assert response.status_code == 400
    error = response.json()["errors"][0]
    assert (error["line"], error["field"]) == (2, "difficulty")
    assert "out of range" in error["message"]
    assert Instruction.objects.count() == 0


def test_import_with_unknown_format_is_400(api_client_for, admin_user):
    response = post_import(
        api_client_for(admin_user), "x", format="xml", files=[upload("a.xml", b"<a/>")]
    )
    assert response.status_code == 400
    assert "format" in response.json()
    assert ImportJob.objects.count() == 0


def test_import_without_file_is_400(api_client_for, admin_user):
    response = post_import(api_client_for(admin_user), "x", format="flask")
    assert response.status_code == 400
    assert "files" in response.json()
    assert ImportJob.objects.count() == 0


def test_import_outputs_into_missing_dataset_is_refused(api_client_for, admin_user):
    response = post_import(
        api_client_for(admin_user),
        "nowhere",
        format="flask_outputs",
        files=[upload("gpt4.jsonl", jsonl([{"question_id": 1, "text": "hi"}]))],
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "dataset"


def test_import_with_unknown_rubric_is_refused(api_client_for, admin_user):
    response = post_import(
        api_client_for(admin_user),
        "no-rubric",
        format="flask",
        rubric_id=999999,
        files=[upload("e.jsonl", jsonl([eval_row(1)]))],
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "rubric"
    assert not Dataset.objects.filter(name="no-rubric").exists()


def test_import_of_several_files_and_generic_csv_with_mapping(
    api_client_for, admin_user
):
    client = api_client_for(admin_user)
    two_files = post_import(
        client,
        "several",
        format="flask",
        hard="true",
        description="Two halves",
        files=[
            upload("a.jsonl", jsonl([eval_row(1)])),
            upload("b.jsonl", jsonl([eval_row(2)])),
        ],
    )
    assert two_files.status_code == 201, two_files.json()
    dataset = Dataset.objects.get(name="several")
    assert dataset.description == "Two halves"
    assert Instruction.objects.filter(dataset=dataset, is_hard=True).count() == 2
    assert [f["name"] for f in two_files.json()["files"]] == ["a.jsonl", "b.jsonl"]

    csv_data = b"prompt,gold,answer,llm\nWhat is 2+2?,4,Four.,tiny-model\n"
    generic = post_import(
        client,
        "generic.csv-set",
        format="csv",
        map=["instruction=prompt", "reference=gold", "response=answer", "model=llm"],
        files=[upload("rows.csv", csv_data)],
    )
    assert generic.status_code == 201, generic.json()
    response = Response.objects.get(instruction__dataset__name="generic.csv-set")
    assert (response.model_name, response.text) == ("tiny-model", "Four.")
    assert response.instruction.reference_answer == "4"


def test_import_with_bad_mapping_names_map(api_client_for, admin_user):
    response = post_import(
        api_client_for(admin_user),
        "bad-map",
        format="csv",
        map=["colour=prompt"],
        files=[upload("rows.csv", b"prompt\nhello\n")],
    )
    assert response.status_code == 400
    assert response.json()["errors"][0]["field"] == "map"


def test_import_dry_run_then_confirm(api_client_for, admin_user):
    client = api_client_for(admin_user)
    dry = post_import(
        client,
        "later",
        format="flask",
        confirm="false",
        files=[upload("e.jsonl", jsonl([eval_row(1), eval_row(2)]))],
    )
    assert dry.status_code == 201
    assert dry.json()["status"] == "validated"
    assert dry.json()["summary"]["created_instructions"] == 2
    assert dry.json()["summary"]["dry_run"] is True
    assert not Dataset.objects.filter(name="later").exists()

    confirmed = client.post(f"/api/imports/{dry.json()['id']}/confirm/")
    assert confirmed.status_code == 200
    assert confirmed.json()["status"] == "succeeded"
    assert Instruction.objects.filter(dataset__name="later").count() == 2

    # Confirming again is a no-op, not a second import.
    again = client.post(f"/api/imports/{dry.json()['id']}/confirm/")
    assert again.status_code == 200
    assert Instruction.objects.filter(dataset__name="later").count() == 2


def test_confirm_of_invalid_import_is_400(api_client_for, admin_user):
    client = api_client_for(admin_user)
    invalid = post_import(
        client,
        "bad",
        format="flask",
        confirm="false",
        files=[upload("e.jsonl", b"{nope\n")],
    )
    assert invalid.status_code == 400
    response = client.post(f"/api/imports/{invalid.json()['id']}/confirm/")
    assert response.status_code == 400
    assert "problems" in response.json()["detail"]


def test_confirm_of_unknown_import_is_404(api_client_for, admin_user):
    assert (
        api_client_for(admin_user).post("/api/imports/999999/confirm/").status_code
        == 404
    )


def test_large_import_is_queued_and_its_status_can_be_polled(
    api_client_for, admin_user, settings, django_capture_on_commit_callbacks
):
    settings.IMPORT_INLINE_MAX_ROWS = 1
    client = api_client_for(admin_user)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = post_import(
            client,
            "queued",
            format="flask",
            files=[upload("e.jsonl", jsonl([eval_row(1), eval_row(2)]))],
        )
    assert response.status_code == 201
    job = response.json()
    assert job["status"] == "queued"
    assert len(callbacks) == 1  # the worker task, enqueued after commit
    assert not Dataset.objects.filter(name="queued").exists()

    import_job_execute(job_id=job["id"])  # what the worker does
    polled = client.get(job["url"]).json()
    assert polled["status"] == "succeeded"
    assert polled["progress_percent"] == 100
    assert Instruction.objects.filter(dataset__name="queued").count() == 2


def test_import_list_and_detail(api_client_for, admin_user):
    client = api_client_for(admin_user)
    ok = post_import(
        client, "one", format="flask", files=[upload("e.jsonl", jsonl([eval_row(1)]))]
    )
    bad = post_import(
        client, "two", format="flask", files=[upload("e.jsonl", b"[1, 2]\n")]
    )
    listed = client.get("/api/imports/")
    assert listed.status_code == 200
    assert [j["id"] for j in listed.json()["results"]] == [
        bad.json()["id"],
        ok.json()["id"],
    ]
    detail = client.get(f"/api/imports/{bad.json()['id']}/").json()
    assert detail["status"] == "invalid"
    assert "expected a JSON object, got int" in detail["errors"][0]["message"]
    assert detail["created_by"] == admin_user.username


def test_import_detail_of_unknown_id_is_404(api_client_for, admin_user):
    assert api_client_for(admin_user).get("/api/imports/999999/").status_code == 404


def test_import_of_the_real_flask_evaluation_set(
    api_client_for, admin_user, settings, flask_data
):
    settings.IMPORT_INLINE_MAX_ROWS = 100000
    path = flask_data / "evaluation_set" / "flask_evaluation.jsonl"
    response = post_import(
        api_client_for(admin_user),
        "flask",
        format="flask",
        confirm="true",
        files=[upload(path.name, path.read_bytes())],
    )
    assert response.status_code == 201, response.json()["errors"][:3]
    assert response.json()["status"] == "succeeded"
    assert Instruction.objects.filter(dataset__name="flask").count() == 1740


# --- OpenAPI -----------------------------------------------------------------------------


def test_schema_generates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"
    call_command("spectacular", "--fail-on-warn", "--file", str(out))
    assert "/api/datasets/{dataset_name}/imports/" in out.read_text()


def test_schema_endpoint_documents_the_import(api_client_for, researcher):
    response = api_client_for(researcher).get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    operation = schema["paths"]["/api/datasets/{dataset_name}/imports/"]["post"]
    body = operation["requestBody"]["content"]["multipart/form-data"]["schema"]["$ref"]
    fields = schema["components"]["schemas"][body.rsplit("/", 1)[1]]["properties"]
    assert {"format", "files", "file", "map", "model", "confirm"} <= set(fields)
    assert "limit" in {
        p["name"]
        for p in schema["paths"]["/api/datasets/{dataset_id}/instructions/"]["get"][
            "parameters"
        ]
    }


def test_docs_page_renders_for_logged_in_user(client_for, researcher):
    response = client_for(researcher).get("/api/docs/")
    assert response.status_code == 200
    assert b"swagger" in response.content.lower()


def test_schema_and_docs_are_for_signed_in_users_only(client, api_client_for, rater):
    # Anonymous users see the login page and nothing else (README, Security).
    assert client.get("/api/schema/").status_code in (401, 403)
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/login/")
    assert client.get("/api/docs/?script").status_code == 302
    assert api_client_for(rater).get("/api/schema/").status_code == 200
