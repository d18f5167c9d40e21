"""Per-instance score rubrics and checklists (Prometheus / BiGGen-Bench): imported with
the dataset, refused with their line and field, shown where people score."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.models import Instruction, Response
from annotation.services.imports import dataset_import_files
from flaskapp.errors import DomainError
from tests.annotation.test_views_rating import make_campaign, make_dataset

pytestmark = pytest.mark.django_db

PROMETHEUS = {
    "criteria": "Does the answer explain the proof step by step?",
    "score1_description": "No steps at all.",
    "score2_description": "One step, wrong.",
    "score3_description": "Some steps, gaps.",
    "score4_description": "All steps, one slip.",
    "score5_description": "Every step, correct and clear.",
}
STORED = {
    "criteria": PROMETHEUS["criteria"],
    "scores": {str(i): PROMETHEUS[f"score{i}_description"] for i in range(1, 6)},
}
CHECKLIST = ["Does it state the theorem?", "Does it end with QED?"]
ROW = {
    "id": "p1",
    "instruction": "Prove that sqrt(2) is irrational.",
    "response": "Suppose it were rational...",
    "model": "m1",
    "score_rubric": PROMETHEUS,
    "checklist": CHECKLIST,
}


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def imported(data: bytes, fmt="jsonl", name="set", **options):
    dataset_import_files(
        dataset_name=name, fmt=fmt, files=[(f"rows.{fmt}", data)], options=options
    )
    return Instruction.objects.get(dataset__name=name, external_id="p1")


def as_questions(items):
    return [{"skill": None, "question": q} for q in items]


def test_jsonl_prometheus_rubric_and_checklist_are_stored_exactly():
    instruction = imported(jsonl(ROW))
    assert instruction.instance_rubric == STORED
    assert instruction.checklist == as_questions(CHECKLIST)
    assert "score_rubric" not in instruction.metadata


def test_the_scores_object_form_is_read_the_same():
    row = {**ROW, "score_rubric": STORED}
    assert imported(jsonl(row)).instance_rubric == STORED


def test_csv_holds_them_as_json_text():
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(ROW))
    writer.writeheader()
    writer.writerow(
        {
            **ROW,
            "score_rubric": json.dumps(PROMETHEUS),
            "checklist": json.dumps(CHECKLIST),
        }
    )
    instruction = imported(buffer.getvalue().encode(), fmt="csv")
    assert instruction.instance_rubric == STORED
    assert instruction.checklist == as_questions(CHECKLIST)


def test_map_names_other_columns(tmp_path):
    row = {k: v for k, v in ROW.items() if k not in ("score_rubric", "checklist")}
    row |= {"rubric": PROMETHEUS, "questions": CHECKLIST}
    path = tmp_path / "rows.jsonl"
    path.write_bytes(jsonl(row))
    call_command(
        "import_dataset",
        str(path),
        "--dataset",
        "mapped",
        "--map",
        "score_rubric=rubric",
        "--map",
        "checklist=questions",
        stdout=io.StringIO(),
    )
    instruction = Instruction.objects.get(dataset__name="mapped")
    assert instruction.instance_rubric == STORED
    assert instruction.checklist == as_questions(CHECKLIST)
    assert instruction.metadata == {}


def test_an_instruction_without_them_stores_empty_values():
    row = {k: v for k, v in ROW.items() if k not in ("score_rubric", "checklist")}
    instruction = imported(jsonl(row))
    assert instruction.instance_rubric == {} and instruction.checklist is None


def test_an_unknown_rubric_key_is_a_warning_not_a_refusal():
    row = {**ROW, "score_rubric": {**PROMETHEUS, "orig_criteria": "x"}}
    report = dataset_import_files(
        dataset_name="w", fmt="jsonl", files=[("rows.jsonl", jsonl(row))]
    )
    assert any(w.field == "score_rubric" for w in report.warnings)
    assert Instruction.objects.get(dataset__name="w").instance_rubric == STORED


def _without(key):
    return {k: v for k, v in PROMETHEUS.items() if k != key}


BAD = [
    ("score_rubric", _without("criteria"), "no `criteria`"),
    ("score_rubric", {**PROMETHEUS, "criteria": "  "}, "no `criteria`"),
    ("score_rubric", _without("score3_description"), "no description for score 3"),
    (
        "score_rubric",
        {**PROMETHEUS, "score7_description": "x"},
        "no description for score 6 (it describes scores 1-7",
    ),
    ("score_rubric", {"criteria": "c", "scores": {"1": "a"}}, "a scale needs 2"),
    ("score_rubric", {"criteria": "c", "scores": {"1": "a", "2": ""}}, "score 2"),
    ("score_rubric", {"criteria": "c", "scores": {"1": "a", "x": "b"}}, "'x'"),
    ("score_rubric", {"criteria": "c", "scores": {"1": "a", "01": "b"}}, "1 twice"),
    (
        "score_rubric",
        {"criteria": "c", "scores": {str(i): "t" for i in range(12)}},
        "12 scores; the limit is 11",
    ),
    ("score_rubric", "not json {", "does not parse"),
    ("score_rubric", ["criteria"], "must be an object"),
    ("score_rubric", {**PROMETHEUS, "criteria": "x" * 5001}, "the limit is 5,000"),
    ("checklist", {"q": "a"}, "must be a list"),
    ("checklist", ["fine", ""], "each checklist entry"),
    ("checklist", ["fine", 3], "each checklist entry"),
    ("checklist", [f"q{i}?" for i in range(21)], "at most 20"),
    ("checklist", ["x" * 5001], "the limit is 5,000"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD)
def test_bad_input_is_refused_with_line_and_field_and_nothing_written(
    field, value, message
):
    good = {**ROW, "id": "p0", "instruction": "A fine one."}
    with pytest.raises(DomainError) as caught:
        dataset_import_files(
            dataset_name="bad",
            fmt="jsonl",
            files=[("rows.jsonl", jsonl(good, {**ROW, field: value}))],
        )
    problems = [p for p in caught.value.problems if p.field == field]
    assert problems, caught.value.problems
    assert problems[0].line == 2
    assert message in problems[0].message
    assert Instruction.objects.count() == 0 and Response.objects.count() == 0


TEN = {
    "criteria": "Overall quality.",
    **{f"score{i}_description": f"Level {i}." for i in range(1, 11)},
}


def test_a_1_10_rubric_is_stored_in_numeric_order_and_shown_so(client_for, researcher):
    row = {**ROW, "score_rubric": TEN}
    instruction = imported(jsonl(row))
    assert list(instruction.instance_rubric["scores"]) == [str(i) for i in range(1, 11)]
    url = reverse("analysis:instruction-detail", args=[instruction.pk])
    html = client_for(researcher).get(url).content.decode()
    positions = [html.index(f"Level {i}.") for i in range(1, 11)]
    assert positions == sorted(positions)  # 2 before 10, not "10" before "2"


def test_a_signed_rubric_keeps_its_order_after_the_database_reorders_keys():
    rubric = {"criteria": "Tone.", "scores": {"2": "c", "-2": "a", "0": "b"}}
    row = {
        **ROW,
        "score_rubric": {**rubric, "scores": {**rubric["scores"], "1": "x", "-1": "y"}},
    }
    instruction = imported(jsonl(row))
    instruction.refresh_from_db()  # PostgreSQL's jsonb sorts keys by length
    from annotation.scales import instance_rubric_points

    keys = [k for k, _ in instance_rubric_points(instruction.instance_rubric)]
    assert keys == ["-2", "-1", "0", "1", "2"]


def test_reimport_with_another_rubric_is_a_conflict_like_changed_text():
    imported(jsonl(ROW))
    assert imported(jsonl(ROW)).instance_rubric == STORED  # unchanged: a no-op
    changed = {**ROW, "score_rubric": {**PROMETHEUS, "criteria": "Other criteria."}}
    with pytest.raises(DomainError) as caught:
        imported(jsonl(changed))
    assert "different text or metadata" in str(caught.value.problems[0])
    assert Instruction.objects.get().instance_rubric == STORED


def test_an_existing_instruction_without_a_rubric_still_reimports_unchanged():
    row = {k: v for k, v in ROW.items() if k != "score_rubric"}
    imported(jsonl(row))
    report = dataset_import_files(
        dataset_name="set", fmt="jsonl", files=[("rows.jsonl", jsonl(row))]
    )
    # The instruction and its response, as before per-instance rubrics existed.
    assert report.unchanged == 2 and report.created_instructions == 0


def test_rating_page_shows_the_instructions_own_rubric(client_for, researcher, rater):
    dataset = make_dataset(
        n_instructions=1, instance_rubric=STORED, checklist=as_questions(CHECKLIST)
    )
    campaign = make_campaign(researcher, [rater], dataset=dataset)
    html = (
        client_for(rater)
        .get(reverse("annotation:rate-next", args=[campaign.pk]))
        .content.decode()
    )
    assert "This instruction's rubric" in html
    assert STORED["criteria"] in html
    for text in [*STORED["scores"].values(), *CHECKLIST]:
        assert text in html


def test_rating_page_without_one_shows_no_such_heading(client_for, researcher, rater):
    campaign = make_campaign(researcher, [rater], dataset=make_dataset(1))
    html = (
        client_for(rater)
        .get(reverse("annotation:rate-next", args=[campaign.pk]))
        .content.decode()
    )
    assert "instance-rubric" not in html and "This instruction's rubric" not in html


def test_instruction_page_shows_it_and_not_for_one_without(client_for, researcher):
    dataset = make_dataset(n_instructions=1, instance_rubric=STORED)
    plain = make_dataset(n_instructions=1)
    client = client_for(researcher)
    with_rubric = dataset.instructions.get()
    url = reverse("analysis:instruction-detail", args=[with_rubric.pk])
    html = client.get(url).content.decode()
    assert "This instruction's rubric" in html
    for text in [STORED["criteria"], *STORED["scores"].values()]:
        assert text in html
    url = reverse("analysis:instruction-detail", args=[plain.instructions.get().pk])
    assert "This instruction's rubric" not in client.get(url).content.decode()
