"""Human scores imported with a dataset file, on any rubric: one command (or upload
or API call) reads prompt, response, model and per-criterion scores, validates each
value with the criterion's `Scale`, and stores them as a closed imported campaign
the agreement dashboard can select."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis.selectors.agreement.inputs import _human_rows
from analysis.selectors.agreement.sources import agreement_defaults
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    HumanScore,
    ImportJob,
    Instruction,
    Response,
)
from annotation.scales import scale_of
from annotation.services.imports import dataset_import_files
from annotation.services.rubrics import rubric_import
from flaskapp.errors import DomainError

pytestmark = pytest.mark.django_db

HELPSTEER_YAML = b"""\
name: HelpSteer five
groups:
  - {key: quality, name: Quality}
  - {key: style, name: Style}
criteria:
  - {key: helpfulness, name: Helpfulness, group: quality, scale: {min: 0, max: 4},
     anchors: {0: "Not helpful.", 4: "Very helpful."}, allow_na: false}
  - {key: correctness, name: Correctness, group: quality, scale: {min: 0, max: 4},
     anchors: {0: "Wrong.", 4: "Right."}}
  - {key: coherence, name: Coherence, group: style, scale: {min: 0, max: 4},
     anchors: {0: "Incoherent.", 4: "Clear."}}
  - {key: complexity, name: Complexity, group: style, scale: {min: 0, max: 4},
     anchors: {0: "Basic.", 4: "Expert."}}
  - {key: verbosity, name: Verbosity, group: style, scale: {min: 0, max: 4},
     anchors: {0: "Terse.", 4: "Verbose."}}
"""

TEN_YAML = b"""\
name: MT-Bench single
groups: [{key: overall, name: Overall}]
criteria:
  - {key: overall, name: Overall quality, group: overall, scale: {min: 1, max: 10},
     anchors: {1: "Useless.", 10: "Perfect."}, allow_na: false}
"""

YESNO_YAML = b"""\
name: Summary consistency
groups: [{key: faithful, name: Faithfulness}]
criteria:
  - key: consistent
    name: Consistent with the source
    group: faithful
    kind: categorical
    allow_na: false
    labels:
      - {key: "yes", name: "Consistent"}
      - {key: "no", name: "Inconsistent"}
"""

HELPSTEER_CSV = """\
prompt,response,model,helpfulness,correctness,coherence,complexity,verbosity
"What is 2+2?",Four.,m-a,4,4,4,0,1
"What is 2+2?","It is 5, I think.",m-b,0,0,3,1,2
"Name a colour.",Blue.,m-a,3,N/A,4,0,0
"""


def page_text(response) -> str:
    """The page's visible text, whitespace collapsed."""
    text = re.sub(r"<[^>]+>", " ", response.content.decode())
    return " ".join(text.split())


def rubric(data: bytes):
    return rubric_import(data=data, file="rubric.yaml")


def counts() -> dict[str, int]:
    return {
        "datasets": Dataset.objects.count(),
        "instructions": Instruction.objects.count(),
        "responses": Response.objects.count(),
        "campaigns": Campaign.objects.count(),
        "assignments": Assignment.objects.count(),
        "scores": HumanScore.objects.count(),
        "users": get_user_model().objects.count(),
    }


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return path


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def parquet(rows: list[dict]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), sink)
    return sink.getvalue()


def stored(campaign: Campaign) -> set[tuple]:
    """(instruction text, model, rater account, criterion, stored value, rationale)."""
    return set(
        HumanScore.objects.filter(assignment__campaign=campaign).values_list(
            "assignment__response__instruction__text",
            "assignment__response__model_name",
            "assignment__rater__username",
            "skill__key",
            "score",
            "rationale",
        )
    )


def refused(**kwargs) -> list[str]:
    with pytest.raises(DomainError) as caught:
        dataset_import_files(**kwargs)
    return [str(p) for p in caught.value.problems]


# --- HelpSteer-style 0-4, five attributes, one command --------------------------------


def test_one_command_imports_a_helpsteer_csv_with_five_scores_per_row(tmp_path):
    helpsteer = rubric(HELPSTEER_YAML)
    path = write(tmp_path, "helpsteer.csv", HELPSTEER_CSV)
    out = io.StringIO()

    call_command(
        "import_dataset",
        str(path),
        dataset="hs",
        rubric="HelpSteer five",
        map=["instruction=prompt"],
        stdout=out,
    )

    dataset = Dataset.objects.get(name="hs")
    assert dataset.rubric == helpsteer
    campaign = Campaign.objects.get(dataset=dataset)
    assert (campaign.kind, campaign.status) == ("pointwise", "closed")
    assert campaign.closed_at is not None
    assert campaign.name == f"Imported scores: {path}"
    rater = f"import:{dataset.pk}:imported"
    assert stored(campaign) == {
        ("What is 2+2?", "m-a", rater, "helpfulness", 4, ""),
        ("What is 2+2?", "m-a", rater, "correctness", 4, ""),
        ("What is 2+2?", "m-a", rater, "coherence", 4, ""),
        ("What is 2+2?", "m-a", rater, "complexity", 0, ""),
        ("What is 2+2?", "m-a", rater, "verbosity", 1, ""),
        ("What is 2+2?", "m-b", rater, "helpfulness", 0, ""),
        ("What is 2+2?", "m-b", rater, "correctness", 0, ""),
        ("What is 2+2?", "m-b", rater, "coherence", 3, ""),
        ("What is 2+2?", "m-b", rater, "complexity", 1, ""),
        ("What is 2+2?", "m-b", rater, "verbosity", 2, ""),
        ("Name a colour.", "m-a", rater, "helpfulness", 3, ""),
        ("Name a colour.", "m-a", rater, "correctness", None, ""),
        ("Name a colour.", "m-a", rater, "coherence", 4, ""),
        ("Name a colour.", "m-a", rater, "complexity", 0, ""),
        ("Name a colour.", "m-a", rater, "verbosity", 0, ""),
    }
    # The score columns are scores, not instruction metadata.
    assert list(Instruction.objects.values_list("metadata", flat=True)) == [{}, {}]
    assert sorted(campaign.chosen_skills.values_list("key", flat=True)) == sorted(
        ["helpfulness", "correctness", "coherence", "complexity", "verbosity"]
    )
    items = CampaignItem.objects.filter(campaign=campaign)
    assert items.count() == 3
    assert {(i.target, i.submitted, i.open_slots) for i in items} == {(1, 1, 0)}
    assert set(
        Assignment.objects.filter(campaign=campaign).values_list("status", flat=True)
    ) == {"submitted"}
    account = get_user_model().objects.get(username=rater)
    assert not account.is_active and not account.has_usable_password()
    helpsteer.refresh_from_db()
    assert helpsteer.frozen_at is not None
    text = out.getvalue()
    assert "human scores:  15 stored, 0 already imported; raters: imported" in text
    assert f"campaign:      {campaign.pk} (Imported scores:" in text
    job = ImportJob.objects.get()
    assert job.source == "command" and job.status == "succeeded"
    assert (job.summary["human_scores"], job.summary["campaign_id"]) == (
        15,
        campaign.pk,
    )


def test_the_imported_scores_are_a_human_source_of_the_agreement_dashboard(tmp_path):
    rubric(HELPSTEER_YAML)
    path = write(tmp_path, "helpsteer.csv", HELPSTEER_CSV)
    call_command(
        "import_dataset",
        str(path),
        dataset="hs",
        rubric="HelpSteer five",
        map=["instruction=prompt"],
        stdout=io.StringIO(),
    )
    dataset = Dataset.objects.get(name="hs")
    campaign = Campaign.objects.get(dataset=dataset)

    defaults = agreement_defaults(dataset=dataset)
    rows = _human_rows([campaign.pk])

    assert defaults.campaign_ids == [campaign.pk]
    pairs = {(int(r[0]), int(r[1])) for r in rows}
    assert pairs == set(
        HumanScore.objects.filter(assignment__campaign=campaign).values_list(
            "assignment__response_id", "skill_id"
        )
    )
    assert len(pairs) == 15


def test_importing_the_same_scores_again_adds_nothing(tmp_path):
    rubric(HELPSTEER_YAML)
    path = write(tmp_path, "helpsteer.csv", HELPSTEER_CSV)
    args = dict(dataset="hs", rubric="HelpSteer five", map=["instruction=prompt"])
    call_command("import_dataset", str(path), stdout=io.StringIO(), **args)
    before = counts()
    out = io.StringIO()

    call_command("import_dataset", str(path), stdout=out, **args)

    assert counts() == before
    assert "human scores:  0 stored, 15 already imported" in out.getvalue()


def test_an_unknown_rubric_name_is_refused_listing_the_rubrics(tmp_path):
    path = write(tmp_path, "helpsteer.csv", HELPSTEER_CSV)
    before = counts()

    with pytest.raises(CommandError) as caught:
        call_command(
            "import_dataset",
            str(path),
            dataset="hs",
            rubric="Nope",
            stderr=io.StringIO(),
        )

    assert (
        "field `rubric`: no rubric 'Nope' in workspace 'default'; the rubrics are: 'FLASK'"
        in str(caught.value)
    )
    assert counts() == before


# --- 1-10, one criterion; JSONL and Parquet ---------------------------------------------


TEN_ROWS = [
    {
        "id": "q1",
        "question": "Plan a trip.",
        "model": "m-a",
        "response": "Go.",
        "rating": 7,
        "judge_note": "fine",
    },
    {
        "id": "q1",
        "question": "Plan a trip.",
        "model": "m-b",
        "response": "Stay.",
        "rating": "10",
        "judge_note": "great",
    },
    {
        "id": "q2",
        "question": "Sum 1..3.",
        "model": "m-a",
        "response": "6",
        "rating": 1.0,
        "judge_note": "",
    },
]


@pytest.mark.parametrize(
    ("name", "encode"),
    [
        ("ten.jsonl", lambda rows: jsonl(*rows)),
        # Parquet columns have one type: the ratings as numbers.
        (
            "ten.parquet",
            lambda rows: parquet([{**r, "rating": float(r["rating"])} for r in rows]),
        ),
    ],
)
def test_a_one_to_ten_single_criterion_file_maps_its_score_column(name, encode):
    ten = rubric(TEN_YAML)

    report = dataset_import_files(
        dataset_name="mt",
        fmt="jsonl",
        files=[(name, encode(TEN_ROWS))],
        options={
            "rubric_id": ten.pk,
            "mapping": [
                "instruction=question",
                "score.overall=rating",
                "rationale.overall=judge_note",
            ],
        },
    )

    assert (report.human_scores, report.raters) == (3, ["imported"])
    campaign = Campaign.objects.get(pk=report.campaign_id)
    rater = f"import:{campaign.dataset_id}:imported"
    assert stored(campaign) == {
        ("Plan a trip.", "m-a", rater, "overall", 7, "fine"),
        ("Plan a trip.", "m-b", rater, "overall", 10, "great"),
        ("Sum 1..3.", "m-a", rater, "overall", 1, ""),
    }
    assert Instruction.objects.get(external_id="q1").metadata == {}


def test_a_jsonl_scores_object_names_criteria_by_key_or_name():
    ten = rubric(TEN_YAML)
    rows = [
        {
            "instruction": "Hi?",
            "model": "m",
            "response": "Hello.",
            "scores": {"Overall quality": 9},
        },
    ]

    report = dataset_import_files(
        dataset_name="mt",
        fmt="jsonl",
        files=[("s.jsonl", jsonl(*rows))],
        options={"rubric_id": ten.pk},
    )

    assert report.human_scores == 1
    assert HumanScore.objects.get().score == 9


# --- yes/no, two raters ------------------------------------------------------------------


YESNO_CSV = """\
id,instruction,model,response,annotator,consistent,rationale
s1,Summarise: the cat sat.,m-a,A cat sat.,ann,yes,It matches.
s1,Summarise: the cat sat.,m-a,A cat sat.,bob,Consistent,
s2,Summarise: rain fell.,m-a,It snowed.,ann,no,Snow is not rain.
s2,Summarise: rain fell.,m-a,It snowed.,bob,NO,
"""


def test_a_yes_no_file_with_two_raters_stores_label_codes_per_rater():
    yesno = rubric(YESNO_YAML)

    report = dataset_import_files(
        dataset_name="summ",
        fmt="csv",
        files=[("labels.csv", YESNO_CSV.encode())],
        options={"rubric_id": yesno.pk, "mapping": ["rater=annotator"]},
    )

    assert (report.human_scores, report.raters) == (4, ["ann", "bob"])
    assert report.created_responses == 2  # the repeated response is one response
    campaign = Campaign.objects.get(pk=report.campaign_id)
    pk = campaign.dataset_id
    ann, bob = f"import:{pk}:ann", f"import:{pk}:bob"
    cat, rain = "Summarise: the cat sat.", "Summarise: rain fell."
    assert stored(campaign) == {
        (cat, "m-a", ann, "consistent", 0, "It matches."),
        (cat, "m-a", bob, "consistent", 0, ""),
        (rain, "m-a", ann, "consistent", 1, "Snow is not rain."),
        (rain, "m-a", bob, "consistent", 1, ""),
    }
    scale = scale_of(yesno.skills.get())
    assert [scale.label_of(s.score) for s in HumanScore.objects.order_by("pk")] == [
        "yes",
        "yes",
        "no",
        "no",
    ]
    assert campaign.overlap == 2
    assert set(campaign.raters.values_list("username", flat=True)) == {ann, bob}
    assert {i.target for i in CampaignItem.objects.filter(campaign=campaign)} == {2}
    assert len(_human_rows([campaign.pk])) == 2  # (response, criterion) items


def test_a_later_file_scores_existing_responses_by_id_and_model():
    yesno = rubric(YESNO_YAML)
    dataset_import_files(
        dataset_name="summ",
        fmt="csv",
        files=[("labels.csv", YESNO_CSV.encode())],
        options={"rubric_id": yesno.pk, "mapping": ["rater=annotator"]},
    )
    before = counts()
    later = b"id,model,rater,consistent\ns1,m-a,cy,no\ns2,m-a,cy,yes\n"

    report = dataset_import_files(
        dataset_name="summ", fmt="csv", files=[("later.csv", later)]
    )

    assert (report.created_instructions, report.created_responses) == (0, 0)
    assert report.human_scores == 2
    assert counts()["campaigns"] == before["campaigns"] + 1
    assert counts()["users"] == before["users"] + 1


# --- Bad input: the line and field named, nothing written --------------------------------


BAD_CASES = {
    "outside the scale": (
        HELPSTEER_YAML,
        "prompt,response,model,helpfulness\nQ?,A.,m,5\n",
        "d.csv, line 2, field `helpfulness`: criterion 'helpfulness': score 5 is "
        "outside the scale; use a whole number 0-4",
    ),
    "not a whole number": (
        TEN_YAML,
        "prompt,response,model,overall\nQ?,A.,m,7.5\n",
        "d.csv, line 2, field `overall`: criterion 'overall': score 7.5 is not a "
        "whole number 1-10",
    ),
    "a label not in the set": (
        YESNO_YAML,
        "prompt,response,model,consistent\nQ?,A.,m,maybe\n",
        "d.csv, line 2, field `consistent`: criterion 'consistent': 'maybe' is not a "
        "label here; use 'yes' or 'no'",
    ),
    "N/A where not allowed": (
        HELPSTEER_YAML,
        "prompt,response,model,helpfulness\nQ?,A.,m,N/A\n",
        "d.csv, line 2, field `helpfulness`: criterion 'helpfulness': N/A is not "
        "allowed here; write a whole number 0-4",
    ),
    "a score column for an unknown criterion": (
        HELPSTEER_YAML,
        "prompt,response,model,score.harmlessness\nQ?,A.,m,3\n",
        "d.csv, line 2, field `score.harmlessness`: unknown criterion 'harmlessness'; "
        "the rubric's criteria are helpfulness, correctness, coherence, complexity, "
        "verbosity",
    ),
    "scores without a model": (
        HELPSTEER_YAML,
        "prompt,response,helpfulness\nQ?,A.,3\n",
        "d.csv, line 2, field `model`: is missing; a row with scores must name the "
        "model of the response",
    ),
    "a criterion scored twice by one rater": (
        TEN_YAML,
        "prompt,response,model,overall\nQ?,A.,m,3\nQ?,A.,m,4\n",
        "d.csv, line 3, field `overall`: rater 'imported' already scored criterion "
        "'overall' of model 'm''s response to instruction 'sha1-",
    ),
    "a score for an unknown instruction": (
        TEN_YAML,
        "id,model,overall\nnope,m,3\n",
        "d.csv, line 2, field `id`: instruction 'nope' is not in the dataset (a row "
        "without instruction text refers to an instruction already imported, by its "
        "id)",
    ),
    "a per-instance rubric for an unknown instruction": (
        TEN_YAML,
        'id,model,overall,score_rubric\nnope,m,3,"{""criteria"": ""Is it kind?"", '
        '""scores"": {""1"": ""a"", ""2"": ""b"", ""3"": ""c"", ""4"": ""d"", '
        '""5"": ""e""}}"\n',
        "d.csv, line 2, field `score_rubric`: instruction 'nope' is not in the dataset",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CASES), ids=list(BAD_CASES))
def test_bad_scores_name_the_line_and_field_and_write_nothing(case):
    data, csv_text, expected = BAD_CASES[case]
    chosen = rubric(data)
    before = counts()

    problems = refused(
        dataset_name="bad",
        fmt="csv",
        files=[("d.csv", csv_text.encode())],
        options={"rubric_id": chosen.pk, "mapping": ["instruction=prompt"]}
        if "prompt" in csv_text
        else {"rubric_id": chosen.pk},
    )

    assert len(problems) == 1, problems
    assert problems[0].startswith(expected), problems
    assert counts() == before


def test_a_mapped_score_column_for_an_unknown_criterion_names_the_map():
    ten = rubric(TEN_YAML)

    problems = refused(
        dataset_name="bad",
        fmt="csv",
        files=[("d.csv", b"instruction,response,model,r\nQ?,A.,m,3\n")],
        options={"rubric_id": ten.pk, "mapping": ["score.quality=r"]},
    )

    assert problems == [
        "d.csv, field `map`: --map score.quality=r: unknown criterion 'quality'; the "
        "rubric's criteria are overall"
    ]


def test_a_mapped_score_column_missing_from_the_header_is_named():
    ten = rubric(TEN_YAML)

    problems = refused(
        dataset_name="bad",
        fmt="csv",
        files=[("d.csv", b"instruction,response,model\nQ?,A.,m\n")],
        options={"rubric_id": ten.pk, "mapping": ["score.overall=rating"]},
    )

    assert problems == [
        "d.csv, line 1: the CSV header has no column `rating` (for field "
        "`score.overall`); its columns are: instruction, response, model"
    ]


def test_a_score_for_a_response_the_dataset_does_not_have_is_refused():
    ten = rubric(TEN_YAML)
    dataset_import_files(
        dataset_name="mt",
        fmt="jsonl",
        files=[("a.jsonl", jsonl({"id": "q1", "instruction": "Hi?"}))],
        options={"rubric_id": ten.pk},
    )
    before = counts()

    problems = refused(
        dataset_name="mt",
        fmt="csv",
        files=[("s.csv", b"id,model,overall\nq1,ghost,4\n")],
    )

    assert problems == [
        "s.csv, line 2, field `model`: model 'ghost' has no response to instruction "
        "'q1' in the dataset; give the response text (a `response` column) to import "
        "it with its scores"
    ]
    assert counts() == before


def test_a_per_instance_rubric_cannot_be_added_to_an_imported_instruction():
    ten = rubric(TEN_YAML)
    dataset_import_files(
        dataset_name="mt",
        fmt="jsonl",
        files=[
            (
                "a.jsonl",
                jsonl(
                    {
                        "id": "q1",
                        "instruction": "Hi?",
                        "model": "m",
                        "response": "Hello.",
                    }
                ),
            )
        ],
        options={"rubric_id": ten.pk},
    )
    own = {"criteria": "Kind?", "scores": {str(i): f"s{i}" for i in range(1, 6)}}

    problems = refused(
        dataset_name="mt",
        fmt="jsonl",
        files=[
            (
                "s.jsonl",
                jsonl({"id": "q1", "model": "m", "overall": 3, "score_rubric": own}),
            )
        ],
    )

    assert problems == [
        "s.jsonl, line 1, field `score_rubric`: cannot be given for instruction 'q1', "
        "which is already in the dataset; imported instructions are immutable (import "
        "into a new dataset instead)"
    ]


def test_a_bad_file_through_the_command_is_recorded_and_writes_nothing(tmp_path):
    rubric(HELPSTEER_YAML)
    path = write(tmp_path, "bad.csv", "prompt,response,model,helpfulness\nQ?,A.,m,9\n")
    before = counts()
    err = io.StringIO()

    with pytest.raises(CommandError) as caught:
        call_command(
            "import_dataset",
            str(path),
            dataset="hs",
            rubric="HelpSteer five",
            map=["instruction=prompt"],
            stderr=err,
        )

    assert "line 2, field `helpfulness`" in str(caught.value)
    assert counts() == before
    job = ImportJob.objects.get()
    assert job.status == "invalid"
    assert job.errors[0]["field"] == "helpfulness" and job.errors[0]["line"] == 2


# --- The upload form and the API ---------------------------------------------------------


def test_the_api_imports_scores_into_a_new_dataset_on_any_rubric(
    api_client_for, admin_user
):
    yesno = rubric(YESNO_YAML)
    client = api_client_for(admin_user)

    answer = client.post(
        "/api/datasets/summ/imports/",
        {
            "format": "csv",
            "rubric_id": yesno.pk,
            "map": ["rater=annotator"],
            "files": [SimpleUploadedFile("labels.csv", YESNO_CSV.encode())],
        },
        format="multipart",
    )

    assert answer.status_code == 201, answer.json()
    body = answer.json()
    assert body["status"] == "succeeded"
    assert body["summary"]["human_scores"] == 4
    assert body["summary"]["raters"] == ["ann", "bob"]
    campaign = Campaign.objects.get(pk=body["summary"]["campaign_id"])
    assert campaign.dataset.rubric == yesno
    assert HumanScore.objects.filter(assignment__campaign=campaign).count() == 4


def test_the_api_refuses_a_bad_label_naming_line_and_field(api_client_for, admin_user):
    yesno = rubric(YESNO_YAML)
    before = counts()

    answer = api_client_for(admin_user).post(
        "/api/datasets/summ/imports/",
        {
            "format": "csv",
            "rubric_id": yesno.pk,
            "files": [
                SimpleUploadedFile(
                    "l.csv", b"instruction,model,response,consistent\nQ,m,A,perhaps\n"
                )
            ],
        },
        format="multipart",
    )

    assert answer.status_code in (201, 400), answer.content
    errors = answer.json().get("errors") or answer.json().get("problems")
    assert [(e["line"], e["field"]) for e in errors] == [(2, "consistent")]
    assert counts() == before


def test_the_upload_form_lists_every_rubric_and_previews_then_imports_scores(
    client_for, admin_user
):
    from django.urls import reverse

    helpsteer = rubric(HELPSTEER_YAML)
    client = client_for(admin_user)

    form = client.get(reverse("annotation:import-new"))
    assert "HelpSteer five" in form.content.decode()

    response = client.post(
        reverse("annotation:import-new"),
        {
            "dataset_name": "hs",
            "format": "csv",
            "files": SimpleUploadedFile("hs.csv", HELPSTEER_CSV.encode()),
            "mapping": "instruction=prompt",
            "rubric": str(helpsteer.pk),
        },
    )
    job = ImportJob.objects.get()
    assert response.status_code == 302
    assert job.status == "validated", job.errors
    assert job.summary["human_scores"] == 15
    assert job.preview[0]["scores"] == {
        "helpfulness": "4",
        "correctness": "4",
        "coherence": "4",
        "complexity": "0",
        "verbosity": "1",
    }
    page = client.get(reverse("annotation:import-detail", args=[job.pk]))
    assert "15 human scores to create by 1 rater: imported" in page_text(page)

    client.post(reverse("annotation:import-confirm", args=[job.pk]))
    job.refresh_from_db()
    assert job.status == "succeeded", job.errors
    assert HumanScore.objects.count() == 15
    page = client.get(reverse("annotation:import-detail", args=[job.pk]))
    assert "15 human scores created by 1 rater: imported" in page_text(page)
    campaign_url = reverse(
        "annotation:campaign-detail", args=[job.summary["campaign_id"]]
    )
    assert f'href="{campaign_url}"' in page.content.decode()
    campaign_page = client.get(campaign_url)
    assert campaign_page.status_code == 200
    # The account holding the imported scores is marked as such, not as a rater
    # who was taken out of the campaign.
    html = campaign_page.content.decode()
    cell = re.search(rf"<td>import:{job.dataset_id}:imported(.*?)</td>", html, re.S)
    assert cell is not None, html
    assert ">imported</span>" in cell.group(1)
    # Imported scores were not timed in this app: no median time is shown for them.
    row = re.search(rf"<tr>\s*<td>import:{job.dataset_id}:imported.*?</tr>", html, re.S)
    assert row is not None and "0 s" not in row.group(0)
    assert ">removed</span>" not in html


def test_the_instruction_api_shows_the_per_instance_rubric_and_checklist(
    api_client_for, researcher
):
    ten = rubric(TEN_YAML)
    own = {"criteria": "Is it kind?", "score1_description": "Rude."}
    own |= {f"score{i}_description": f"Level {i}." for i in range(2, 6)}
    dataset_import_files(
        dataset_name="own",
        fmt="jsonl",
        files=[
            (
                "own.jsonl",
                jsonl(
                    {
                        "id": "k1",
                        "instruction": "Reply to a complaint.",
                        "score_rubric": own,
                        "checklist": ["Does it apologise?"],
                    },
                    {"id": "k2", "instruction": "Say hi."},
                ),
            )
        ],
        options={"rubric_id": ten.pk},
    )
    dataset = Dataset.objects.get(name="own")

    body = api_client_for(researcher).get(f"/api/datasets/{dataset.pk}/instructions/")

    assert body.status_code == 200
    first, second = body.json()["results"]
    assert first["instance_rubric"] == {
        "criteria": "Is it kind?",
        "scores": {"1": "Rude.", **{str(i): f"Level {i}." for i in range(2, 6)}},
    }
    assert first["checklist"] == [{"skill": None, "question": "Does it apologise?"}]
    assert (second["instance_rubric"], second["checklist"]) == ({}, None)


def test_a_column_that_looks_like_a_criterion_but_is_not_read_is_warned_about():
    helpsteer = rubric(HELPSTEER_YAML)
    data = (
        "prompt,response,model,Helpfulness,correct,coherence,notes\n"
        '"What is 2+2?",Four.,m-a,4,4,3,fine\n'
    )

    report = dataset_import_files(
        dataset_name="near misses",
        fmt="csv",
        files=[("scores.csv", data.encode())],
        options={"rubric_id": helpsteer.pk, "mapping": ["instruction=prompt"]},
    )

    # `coherence` is a key and is read; `Helpfulness` (the criterion's name) and
    # `correct` (close to a key) are kept as metadata, and each gets a warning that
    # names the column, the criterion and the mapping that would read it.
    campaign = Campaign.objects.get(pk=report.campaign_id)
    assert {s[3] for s in stored(campaign)} == {"coherence"}
    warned = {w.field: w.message for w in report.warnings}
    assert set(warned) == {"Helpfulness", "correct"}
    assert "criterion 'helpfulness'" in warned["Helpfulness"]
    assert "score.helpfulness=Helpfulness" in warned["Helpfulness"]
    assert "score.correctness=correct" in warned["correct"]
    assert all(w.file == "scores.csv" for w in report.warnings)
    metadata = Instruction.objects.get(dataset_id=campaign.dataset_id).metadata
    assert {"Helpfulness", "correct", "notes"} <= set(metadata)
