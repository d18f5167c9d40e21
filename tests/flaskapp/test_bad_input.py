"""No request makes a 500: the seven causes an attacker found, and the outage.

Each bad input gets a 400 that names its field or parameter (pages: the form again
with the error, or the 400 page; API: `detail` + `problems[].field`) and changes
nothing. A database that is down answers 503 with ``Retry-After``. Each test here
failed on the code before the fix (a 500, or an exception out of the view).
"""

from __future__ import annotations

import json
import socket

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotation.models import (
    Assignment,
    Campaign,
    Dataset,
    HumanPreference,
    HumanScore,
    ImportJob,
    Rubric,
)
from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.rating import assignment_next
from flaskapp.errors import DomainError
from flaskapp.params import BadParameter, int_param, parse_int
from judging.models import JudgeConfig, JudgeRun
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
    api_token,
)

pytestmark = pytest.mark.django_db

DEEP = "[" * 5000 + "]" * 5000  # past Python's recursion limit when parsed
RUBRIC = [
    {
        "Skill": "Factuality",
        "Criteria": "Is it accurate?",
        "Scoring": {str(i): f"anchor {i}" for i in range(1, 6)},
    }
]


def fields(response) -> set[str]:
    body = response.json()
    return {p["field"] for p in body["problems"]}


def upload(name: str, data: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def token_client(user) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Token {api_token(user)}")


def make_dataset(n=2, models=("model-a",)) -> Dataset:
    dataset = DatasetFactory()
    for i in range(n):
        instruction = InstructionFactory(dataset=dataset, external_id=f"q{i}")
        for model in models:
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


@pytest.fixture
def campaign(researcher, rater):
    return campaign_create(
        spec=CampaignSpec(name="c", dataset=make_dataset(), raters=[rater]),
        created_by=researcher,
    )


# --- 1. Deeply nested JSON ----------------------------------------------------------


def test_deeply_nested_json_body_is_a_400_naming_the_field(researcher):
    body = '{"name": "x", "models": ' + DEEP + "}"
    response = token_client(researcher).post(
        "/api/campaigns/", body, content_type="application/json"
    )
    assert response.status_code == 400
    assert fields(response) == {"models"}
    assert "nested" in response.json()["detail"]
    assert not Campaign.objects.exists()


def test_unterminated_json_body_says_where_without_a_doubled_word(researcher):
    response = token_client(researcher).post(
        "/api/campaigns/", '{"name": "x', content_type="application/json"
    )
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem["field"] == "body"
    assert problem["message"] == (
        "is not valid JSON (Unterminated string starting at line 1 column 10)"
    )


def test_deeply_nested_json_body_without_a_key_names_the_body(researcher):
    response = token_client(researcher).post(
        "/api/judges/", DEEP, content_type="application/json"
    )
    assert response.status_code == 400
    assert fields(response) == {"body"}


def test_rubric_import_of_deeply_nested_json_is_refused_with_its_line(admin_user):
    before = Rubric.objects.count()
    response = token_client(admin_user).post(
        "/api/rubrics/import/",
        {"name": "deep", "file": upload("rubric.json", ("[\n" + DEEP + "]").encode())},
    )
    assert response.status_code == 400
    problem = response.json()["problems"][0]
    assert problem["line"] == 2 and "nested" in problem["message"]
    assert Rubric.objects.count() == before


def test_dataset_import_of_a_deeply_nested_line_reports_the_line(admin_user):
    data = b'{"id": "1", "instruction": "Q"}\n{"id": "2", "instruction": ' + (
        DEEP.encode() + b"}\n"
    )
    response = token_client(admin_user).post(
        "/api/datasets/deep-set/imports/",
        {"format": "jsonl", "files": upload("rows.jsonl", data)},
    )
    assert response.status_code == 400
    (problem,) = response.json()["errors"]
    assert (problem["line"], problem["field"]) == (2, "instruction")
    assert not Dataset.objects.filter(name="deep-set").exists()


def test_preference_import_of_a_deeply_nested_line_reports_the_line(admin_user):
    data = b'{"prompt": "Q", "response_1": "a", "response_2": ' + DEEP.encode() + b"}"
    response = token_client(admin_user).post(
        "/api/datasets/deep-prefs/preferences/", {"file": upload("v.jsonl", data)}
    )
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert (problem["line"], problem["field"]) == (1, "response_2")
    assert not HumanPreference.objects.exists()


def test_judge_result_import_of_a_deeply_nested_line_reports_the_line(researcher):
    dataset = make_dataset()
    data = b'{"question_id": "q0", "review": "r", "score": ' + DEEP.encode() + b"}"
    response = token_client(researcher).post(
        "/api/runs/import/",
        {
            "dataset": dataset.pk,
            "format": "flask_review",
            "files": upload("model-a_review.jsonl", data),
        },
    )
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert (problem["line"], problem["field"]) == (1, "score")
    assert not JudgeRun.objects.exists()


# --- 2. Unicode digits ("²".isdigit() is True, int("²") fails) ----------------------


def test_int_param_accepts_ascii_digits_only_and_names_the_parameter():
    assert int_param({"n": " 12 "}, "n") == 12
    assert int_param({}, "n", 7) == 7
    for raw in ("²", "١٢", "1e3", "0x10", "1.5", "9" * 40):
        with pytest.raises(BadParameter) as caught:
            parse_int(raw, "n")
        assert caught.value.problems[0].field == "n"
    with pytest.raises(BadParameter, match="from 1 to 5"):
        parse_int("6", "n", min_value=1, max_value=5)


def test_superscript_digit_in_a_query_parameter_is_a_400_page(
    client_for, rater, campaign
):
    assignment_next(campaign=campaign, rater=rater)
    response = client_for(rater).get(
        reverse("annotation:rate-next", args=[campaign.pk]), {"saved": "²"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "<code>saved</code>" in html and "not a whole number" in html


def test_superscript_digit_in_the_prompt_page_parameter_is_a_400(
    client_for, researcher
):
    response = client_for(researcher).get(reverse("judging:prompt-list"), {"from": "³"})
    assert response.status_code == 400
    assert "<code>from</code>" in response.content.decode()


def test_superscript_digit_as_a_score_re_renders_the_form(client_for, rater, campaign):
    assignment = assignment_next(campaign=campaign, rater=rater).assignment
    data = {f"score-{s.key}": "4" for s in assignment_skills(assignment=assignment)}
    data["score-factuality"] = "²"
    response = client_for(rater).post(
        reverse("annotation:assignment-submit", args=[assignment.pk]), data
    )
    assert response.status_code == 400
    assert 'id="row-factuality"' in response.content.decode()
    assert not HumanScore.objects.exists()


def test_superscript_digit_as_a_rater_id_is_a_400(client_for, researcher, campaign):
    response = client_for(researcher).post(
        reverse("annotation:campaign-raters", args=[campaign.pk]), {"raters": ["²"]}
    )
    assert response.status_code == 400
    assert "<code>raters</code>" in response.content.decode()
    assert campaign.raters.count() == 1


def test_superscript_digit_as_n_boot_on_the_probes_page(client_for, researcher):
    dataset = make_dataset()
    response = client_for(researcher).get(
        reverse("analysis:metaeval-probes", args=[dataset.pk]),
        {"campaign": "1", "run": "1", "n_boot": "²"},
    )
    assert response.status_code == 400
    assert "n_boot: &#x27;²&#x27; is not a whole number" in response.content.decode()


# --- 3. Upper bounds (PostgreSQL "integer out of range") ----------------------------


@pytest.mark.parametrize("name", ["lock_ttl_minutes", "rater_quota"])
def test_campaign_numbers_past_their_bounds_are_a_400_naming_them(researcher, name):
    dataset = make_dataset()
    response = token_client(researcher).post(
        "/api/campaigns/",
        {"name": "big", "dataset": dataset.pk, name: 10**10},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert name in fields(response)
    assert not Campaign.objects.exists()


def test_campaign_form_with_a_huge_lock_time_shows_the_field_error(
    client_for, researcher
):
    dataset = make_dataset()
    response = client_for(researcher).post(
        reverse("annotation:campaign-new"),
        {
            "name": "big",
            "dataset": dataset.pk,
            "skill_mode": "instruction",
            "overlap": "1",
            "overlap_percent": "100",
            "lock_ttl_minutes": str(10**12),
        },
    )
    assert response.status_code == 400
    assert "less than or equal to 10080" in response.content.decode()
    assert not Campaign.objects.exists()


def test_service_refuses_a_huge_lock_time_from_any_caller(researcher):
    with pytest.raises(DomainError) as caught:
        campaign_create(
            spec=CampaignSpec(
                name="big",
                dataset=make_dataset(),
                serving=ServingPolicy(lock_ttl_minutes=10**12),
            ),
            created_by=researcher,
        )
    assert [p.field for p in caught.value.problems] == ["lock_ttl_minutes"]


@pytest.mark.parametrize("name", ["requests_per_minute", "tokens_per_minute"])
def test_judge_config_numbers_past_their_bounds_are_a_400(researcher, name):
    response = token_client(researcher).post(
        "/api/judges/",
        {"name": "j", "base_url": "http://127.0.0.1:9/v1", "model": "m", name: 10**10},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert name in fields(response)
    assert not JudgeConfig.objects.exists()


def test_run_limit_past_its_bound_is_a_400(researcher):
    dataset = make_dataset()
    config = JudgeConfig.objects.create(name="len", backend="baseline_length")
    response = token_client(researcher).post(
        "/api/runs/",
        {"config": config.pk, "dataset": dataset.pk, "limit": 10**10},
        content_type="application/json",
    )
    assert response.status_code == 400
    assert "limit" in fields(response)
    assert not JudgeRun.objects.exists()


def test_offset_past_bigint_is_a_400(researcher):
    response = token_client(researcher).get("/api/datasets/", {"offset": 10**20})
    assert response.status_code == 400
    assert fields(response) == {"offset"}


# --- 4. NUL bytes in form text ------------------------------------------------------


def test_nul_in_a_rationale_re_renders_the_form_naming_it(client_for, rater, campaign):
    assignment = assignment_next(campaign=campaign, rater=rater).assignment
    data = {f"score-{s.key}": "4" for s in assignment_skills(assignment=assignment)}
    data["rationale-factuality"] = "fine\x00"
    response = client_for(rater).post(
        reverse("annotation:assignment-submit", args=[assignment.pk]), data
    )
    html = response.content.decode()
    assert response.status_code == 400
    assert "Factuality rationale: contains a NUL character" in html
    assert not HumanScore.objects.exists()


def test_nul_in_a_skip_reason_re_renders_the_form(client_for, rater, campaign):
    assignment = assignment_next(campaign=campaign, rater=rater).assignment
    response = client_for(rater).post(
        reverse("annotation:assignment-skip", args=[assignment.pk]),
        {"reason": "bad\x00text"},
    )
    assert response.status_code == 400
    assert "skip reason contains a NUL character" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SERVED


def test_nul_in_a_pairwise_rationale_and_skip_reason(client_for, researcher, rater):
    from annotation.services.campaigns import campaign_create
    from annotation.services.pairwise import pairwise_next

    dataset = make_dataset(models=("model-a", "model-b"))
    pairwise = campaign_create(
        spec=CampaignSpec(
            name="p", dataset=dataset, raters=[rater], pairs=PairPolicy()
        ),
        created_by=researcher,
    )
    assignment = pairwise_next(campaign=pairwise, rater=rater).assignment
    client = client_for(rater)
    submitted = client.post(
        reverse("annotation:pairwise-submit", args=[assignment.pk]),
        {"label": "A", "rationale": "x\x00"},
    )
    skipped = client.post(
        reverse("annotation:pairwise-skip", args=[assignment.pk]), {"reason": "\x00"}
    )
    assert submitted.status_code == 400 and skipped.status_code == 400
    assert "NUL character" in submitted.content.decode()
    assert "NUL character" in skipped.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == Assignment.Status.SERVED


def test_nul_in_a_query_parameter_is_a_400_naming_it(client_for, researcher):
    response = client_for(researcher).get(reverse("judging:run-list"), {"status": "\0"})
    assert response.status_code == 400
    assert "<code>status</code>" in response.content.decode()


def test_nul_in_a_path_is_a_400_naming_it(researcher):
    response = token_client(researcher).post(
        "/api/datasets/a%00b/preferences/", {"file": upload("v.jsonl", b"{}")}
    )
    assert response.status_code == 400
    assert fields(response) == {"path"}


def test_deeply_nested_sections_on_the_metaeval_api_is_a_400(researcher):
    dataset = make_dataset()
    response = token_client(researcher).get(
        f"/api/datasets/{dataset.pk}/metaeval/", {"sections": '{"a": ' + DEEP + "}"}
    )
    assert response.status_code == 400
    assert fields(response) == {"sections"}


def test_a_value_the_database_refuses_is_a_400_not_a_500(rf, researcher):
    from django.db import DataError

    from flaskapp.middleware import BadInputMiddleware

    request = rf.get("/api/anything/")
    request.user = researcher
    response = BadInputMiddleware(lambda r: None).process_exception(
        request, DataError("integer out of range")
    )
    assert response.status_code == 400
    assert "out of range" in json.loads(response.content)["detail"]


# --- 5. Lone surrogates in import files ---------------------------------------------


def test_lone_surrogate_in_a_dataset_import_reports_line_and_field(admin_user):
    data = b'{"id": "1", "instruction": "Q"}\n{"id": "2", "instruction": "\\ud800"}\n'
    response = token_client(admin_user).post(
        "/api/datasets/surrogates/imports/",
        {"format": "jsonl", "files": upload("rows.jsonl", data)},
    )
    assert response.status_code == 400
    (problem,) = response.json()["errors"]
    assert (problem["line"], problem["field"]) == (2, "instruction")
    assert "surrogate" in problem["message"]
    assert ImportJob.objects.get().status == ImportJob.Status.INVALID
    assert not Dataset.objects.filter(name="surrogates").exists()


def test_lone_surrogate_in_a_preference_import_reports_line_and_field(admin_user):
    data = b'{"prompt": "Q", "response_1": "a", "response_2": "b\\udc00", "label": "1"}'
    response = token_client(admin_user).post(
        "/api/datasets/sur-prefs/preferences/", {"file": upload("v.jsonl", data)}
    )
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert (problem["line"], problem["field"]) == (1, "response_2")


def test_lone_surrogate_in_a_rubric_file_reports_line_and_field(admin_user):
    text = json.dumps(RUBRIC, indent=2).replace("Is it accurate?", "\\ud83d")
    response = token_client(admin_user).post(
        "/api/rubrics/import/",
        {"name": "sur", "file": upload("rubric.json", text.encode())},
    )
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert problem["field"] == "Criteria" and problem["line"] == 4


# --- 6. A dataset name too long for the database ------------------------------------


def test_dataset_name_over_200_characters_in_the_import_url_is_a_400(admin_user):
    name = "n" * 300
    response = token_client(admin_user).post(
        f"/api/datasets/{name}/imports/",
        {"format": "jsonl", "files": upload("rows.jsonl", b'{"instruction": "Q"}')},
    )
    assert response.status_code == 400
    assert fields(response) == {"dataset"}
    assert not ImportJob.objects.exists()


# --- 7. Seeds numpy refuses ---------------------------------------------------------


def test_agreement_api_refuses_a_seed_numpy_cannot_take(researcher):
    from tests.analysis.agreement_data import make_agreement_setup

    human = {(i, "alpha", "factuality"): [1 + i % 5, 2] for i in range(4)}
    judge = {(i, "alpha", "factuality"): 1 + i % 4 for i in range(4)}
    setup = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=4, n_raters=2
    )
    response = token_client(researcher).get(
        f"/api/datasets/{setup.dataset.pk}/agreement/",
        {
            "campaign": setup.campaign.pk,
            "run": setup.runs[0].pk,
            "seed": -1,
            "n_boot": 10,
        },
    )
    assert response.status_code == 400
    assert fields(response) == {"seed"}


def test_agreement_selector_refuses_a_negative_seed_for_every_caller(researcher):
    from analysis.selectors.agreement import AgreementError, agreement_compute

    with pytest.raises(AgreementError, match="^seed: "):
        agreement_compute(dataset=make_dataset(), seed=-1)


# --- 8. The database is down --------------------------------------------------------


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The outage is a server that stops answering (the connection goes to a closed port);
# an SQLite file has no server to lose.
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_database_outage_is_a_503_with_retry_after(researcher):
    api = token_client(researcher)
    page = Client()
    page.force_login(researcher)
    db = connection.settings_dict
    saved = (db["HOST"], db["PORT"])
    connection.close()
    db["HOST"], db["PORT"] = "127.0.0.1", str(_closed_port())
    try:
        api_response = api.get("/api/datasets/")
        page_response = page.get(reverse("annotation:dataset-list"))
    finally:
        connection.close()
        db["HOST"], db["PORT"] = saved
    assert api_response.status_code == 503
    assert api_response["Content-Type"] == "application/json"
    assert int(api_response["Retry-After"]) > 0
    assert "database is unavailable" in api_response.json()["detail"]
    assert page_response.status_code == 503
    assert int(page_response["Retry-After"]) > 0
    assert "unavailable" in page_response.content.decode()
    assert Dataset.objects.count() == 0  # the connection works again


# --- 9. A workspace's researchers create datasets, whichever import -----------


PREFS = b'{"prompt": "Q?", "response_1": "yes", "response_2": "no", "label": "1"}\n'


def test_researcher_creates_a_dataset_through_the_preference_import(researcher):
    """Issue 35: a workspace's researchers create datasets (self-service), here in
    the default workspace (no ``?workspace=``)."""
    response = token_client(researcher).post(
        "/api/datasets/brand-new/preferences/", {"file": upload("v.jsonl", PREFS)}
    )
    assert response.status_code == 201, response.json()
    dataset = Dataset.objects.get(name="brand-new")
    assert dataset.workspace.slug == "default"


def test_researcher_imports_preferences_into_an_existing_dataset(researcher):
    dataset = DatasetFactory(name="existing")
    response = token_client(researcher).post(
        "/api/datasets/existing/preferences/", {"file": upload("v.jsonl", PREFS)}
    )
    assert response.status_code == 201, response.json()
    assert HumanPreference.objects.filter(pair__dataset=dataset).count() == 1


def test_admin_creates_a_dataset_through_the_preference_import(admin_user):
    response = token_client(admin_user).post(
        "/api/datasets/by-admin/preferences/", {"file": upload("v.jsonl", PREFS)}
    )
    assert response.status_code == 201
    assert Dataset.objects.get(name="by-admin").created_by == admin_user


def test_dataset_and_preference_imports_share_one_creation_rule():
    from django.core.exceptions import PermissionDenied

    reviewer = UserFactory(username="prefs-reviewer", role="reviewer")

    from annotation.services.imports import dataset_import_files
    from annotation.services.preference_imports import preferences_import

    with pytest.raises(PermissionDenied) as by_rows:
        dataset_import_files(
            dataset_name="rows",
            fmt="jsonl",
            files=[("r.jsonl", b'{"instruction": "Q"}')],
            user=reviewer,
        )
    with pytest.raises(PermissionDenied) as by_prefs:
        preferences_import(
            dataset_name="prefs",
            file="v.jsonl",
            data=PREFS,
            fmt="jsonl",
            user=reviewer,
        )
    rule = "creating a dataset needs the researcher role in this workspace"
    assert rule in str(by_rows.value) and rule in str(by_prefs.value)


# --- 10. Integers past Python's int-str limit (4,300 digits: a ValueError) -----------

LONG = "1" * 4301  # one digit past the limit


def test_a_long_integer_in_a_json_body_is_a_400_naming_the_field(researcher):
    body = '{"name": "x", "lock_ttl_minutes": ' + LONG + "}"
    response = token_client(researcher).post(
        "/api/campaigns/", body, content_type="application/json"
    )
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem["field"] == "lock_ttl_minutes"
    assert problem["message"] == "holds a whole number of more than 4,300 digits"
    assert not Campaign.objects.exists()


def test_a_long_integer_in_import_lines_and_cells_names_line_and_field(admin_user):
    rows = b'{"id": "1", "instruction": "Q"}\n{"id": "2", "difficulty": ' + (
        LONG.encode() + b', "instruction": "Q"}\n'
    )
    csv_rows = b"id,instruction,difficulty\n1,Q,2\n2,Q," + LONG.encode() + b"\n"
    rubric = json.dumps(
        {"criteria": "c", "scores": {LONG: "a", "1": "b", "2": "c"}}
    ).encode()
    per_instance = b'{"id": "1", "instruction": "Q", "score_rubric": ' + rubric + b"}"
    client = token_client(admin_user)
    for name, data, where in (
        ("rows.jsonl", rows, (2, "difficulty")),
        ("rows.csv", csv_rows, (3, "difficulty")),
        ("rubric.jsonl", per_instance, (1, "score_rubric")),
    ):
        fmt = name.rsplit(".", 1)[1]
        response = client.post(
            "/api/datasets/long-ints/imports/",
            {"format": fmt, "files": upload(name, data)},
        )
        assert response.status_code == 400, (name, response.content)
        (problem,) = response.json()["errors"]
        assert (problem["line"], problem["field"]) == where, name
    assert not Dataset.objects.filter(name="long-ints").exists()


@pytest.mark.parametrize(
    "name, data, line",
    [
        ("r.yaml", f"name: x\ncriteria:\n  - key: {LONG}\n", 3),
        (
            "r.yaml",
            "name: x\ncriteria:\n  - {key: a, name: A, scale: {min: 1, max: 5},\n"
            f'     anchors: {{1: lo, 5: hi,\n ? "{LONG}"\n : mid}}}}\n',
            5,
        ),
        ("r.json", '{"name": "x",\n "criteria": [' + LONG + "]}", 2),
        ("skills.json", '[{"Skill": "Factuality",\n "Criteria": ' + LONG + "}]", 2),
    ],
)
def test_a_long_integer_in_a_rubric_file_is_refused_with_its_line(
    admin_user, name, data, line
):
    before = Rubric.objects.count()
    response = token_client(admin_user).post(
        "/api/rubrics/import/", {"name": "long", "file": upload(name, data.encode())}
    )
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert problem["line"] == line
    assert "more than 4,300 digits" in problem["message"]
    assert Rubric.objects.count() == before


def test_a_long_response_id_in_a_gold_file_or_adjudication_names_the_field(
    researcher, campaign
):
    from annotation.services.adjudication import adjudication_set

    dataset = campaign.dataset
    response = token_client(researcher).post(
        f"/api/datasets/{dataset.pk}/gold/import/",
        {"file": upload("gold.csv", f"response_id,factuality\n{LONG},4\n".encode())},
    )
    assert response.status_code == 400
    assert [(p["line"], p["field"]) for p in response.json()["problems"]] == [
        (2, "response_id")
    ]
    with pytest.raises(DomainError) as refused:
        adjudication_set(
            campaign=campaign,
            user=researcher,
            response_id=LONG,
            criterion="factuality",
            score=3,
            note="n",
        )
    assert {p.field for p in refused.value.problems} == {"response_id"}


# --- 11. Nesting refused before parsing ---------------------------------------------


def test_a_deep_json_array_import_is_refused_at_once_naming_the_row(admin_user):
    import time

    deep = b"[" * 100_000 + b"]" * 100_000  # ijson took seconds per 1,000 levels
    data = b'[{"id": "1", "instruction": "Q"},\n {"id": "2", "instruction": ' + (
        deep + b"}]"
    )
    started = time.perf_counter()
    response = token_client(admin_user).post(
        "/api/datasets/deep-array/imports/",
        {"format": "jsonl", "files": upload("rows.json", data)},
    )
    assert time.perf_counter() - started < 5
    assert response.status_code == 400
    (problem,) = response.json()["errors"]
    assert problem["line"] == 2 and "nested more than 64 levels" in problem["message"]
    assert not Dataset.objects.filter(name="deep-array").exists()


@pytest.mark.parametrize(
    "text, line",
    [
        ("name: x\ncriteria: " + "[" * 115_000 + "]" * 115_000, 2),  # was a 500
        ("name: x\ncriteria:\n" + "".join(" " * i + "-\n" for i in range(1, 400)), 66),
        ("name: x\ncriteria: [" + ", ".join(["1"] * 70_000) + "]", 2),  # was 5-8 s
    ],
)
def test_a_deep_or_huge_yaml_rubric_is_refused_fast_with_its_line(
    admin_user, text, line
):
    import time

    before = Rubric.objects.count()
    started = time.perf_counter()
    response = token_client(admin_user).post(
        "/api/rubrics/import/",
        {"name": "deep", "file": upload("r.yaml", text.encode())},
    )
    assert time.perf_counter() - started < 1
    assert response.status_code == 400
    (problem,) = response.json()["problems"]
    assert (problem["line"], problem["message"]) == (
        line,
        "is too large or nested too deep",
    )
    assert Rubric.objects.count() == before
