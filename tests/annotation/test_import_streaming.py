"""The FLASK import with output files streamed into the database one row at a time.

`dataset_import_flask` writes the instructions (by COPY with keys taken from the
sequence, on PostgreSQL), then reads the output files one at a time and sends each
response as it is read; a problem anywhere rolls everything back. These tests check
what lands in the database against the files, and that a late problem leaves nothing.
"""

from __future__ import annotations

import json

import pytest

from annotation.models import Dataset, Instruction, Response
from annotation.services.flask import dataset_import_flask
from flaskapp.errors import DomainError

pytestmark = pytest.mark.django_db

EVAL = [
    {
        "idx": 7,
        "instruction": "Explain recursion to a child.",
        "answer": "A thing defined by itself.",
        "task": "explain",
        "skill": ["Comprehension", "Readability"],
        "domain": ["Coding", "Culture"],
        "difficulty": "formal education knowledge",
        "checklist": [{"skill": "Comprehension", "question": "Is it simple?"}],
        "source": "ours",
    },
    {
        "idx": 3,
        "instruction": 'Add 2 and 2, with a tab\tand a backslash \\ and "quotes".',
        "answer": "",
        "task": "",
        "skill": ["Logical Correctness"],
        "domain": ["Math"],
        "difficulty": 1,
    },
]


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def write(path, *rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(jsonl(*rows))
    return path


def counts():
    return (
        Dataset.objects.count(),
        Instruction.objects.count(),
        Response.objects.count(),
    )


def problems_of(exc: pytest.ExceptionInfo) -> list[str]:
    return [str(p) for p in exc.value.problems]


def test_streamed_rows_hold_exactly_what_the_files_say(tmp_path):
    a = write(
        tmp_path / "out" / "model-a.jsonl",
        {"question_id": 7, "text": "It calls itself.", "tokens": 4},
        {"question_id": 3, "text": "4"},
    )
    b = write(tmp_path / "out" / "model-b.jsonl", {"question_id": 3, "text": ""})

    report = dataset_import_flask(
        dataset_name="streamed",
        eval_files=[("eval.jsonl", jsonl(*EVAL))],
        output_files=[(str(a), a), (str(b), b)],
        options={"hard": True},
    )

    assert (report.created_instructions, report.created_responses) == (2, 3)
    assert report.models == ["model-a", "model-b"]
    assert [str(w) for w in report.warnings] == [
        f"{b}, line 1, field `text`: is empty: imported as an empty response"
    ]
    rows = {i.external_id: i for i in Instruction.objects.order_by("position")}
    assert [(i.external_id, i.position) for i in rows.values()] == [("7", 0), ("3", 1)]
    seven = rows["7"]
    assert seven.text == EVAL[0]["instruction"]
    assert seven.reference_answer == EVAL[0]["answer"]
    assert (seven.domain_1, seven.domain_2) == ("coding", "culture")
    assert seven.difficulty == 3
    assert seven.is_hard is True
    assert seven.checklist == [{"skill": "comprehension", "question": "Is it simple?"}]
    assert seven.metadata == {"source": "ours"}
    assert list(
        seven.skill_links.order_by("rank").values_list("skill__key", flat=True)
    ) == ["comprehension", "readability"]
    assert rows["3"].text == EVAL[1]["instruction"]
    assert rows["3"].checklist is None and rows["3"].metadata == {}
    responses = {
        (r.instruction.external_id, r.model_name): r
        for r in Response.objects.select_related("instruction")
    }
    assert {k: r.text for k, r in responses.items()} == {
        ("7", "model-a"): "It calls itself.",
        ("3", "model-a"): "4",
        ("3", "model-b"): "",
    }
    assert responses[("7", "model-a")].metadata == {"tokens": 4}
    assert all(r.created_at is not None for r in responses.values())
    # Keys came from the table's sequence: a row made later does not collide.
    later = Instruction.objects.create(
        dataset=seven.dataset, external_id="99", text="t", position=2
    )
    assert later.pk > max(i.pk for i in rows.values())


def test_a_problem_in_a_later_output_file_rolls_back_the_rows_already_sent(tmp_path):
    good = write(tmp_path / "a_good.jsonl", {"question_id": 7, "text": "ok"})
    bad = write(
        tmp_path / "b_bad.jsonl",
        {"question_id": 3, "text": "x"},
        {"question_id": 3, "text": "again"},
        {"question_id": 12, "text": "no such instruction"},
    )
    before = counts()

    with pytest.raises(DomainError) as exc:
        dataset_import_flask(
            dataset_name="rolled-back",
            eval_files=[("eval.jsonl", jsonl(*EVAL))],
            output_files=[(str(good), good), (str(bad), bad)],
        )

    assert problems_of(exc) == [
        f"{bad}, line 2: duplicate response for question id '3' (first seen on line 1)",
        f"{bad}: 1 responses name instruction ids that are not in the dataset (first "
        "on line 3): 12",
    ]
    assert counts() == before


def test_two_output_files_naming_one_model_are_refused(tmp_path):
    one = write(tmp_path / "out" / "gpt4.jsonl", {"question_id": 7, "text": "a"})
    two = write(
        tmp_path / "review" / "gpt4_review.jsonl", {"question_id": 7, "text": "b"}
    )

    with pytest.raises(DomainError) as exc:
        dataset_import_flask(
            dataset_name="twice",
            eval_files=[("eval.jsonl", jsonl(*EVAL))],
            output_files=[(str(one), one), (str(two), two)],
        )

    assert problems_of(exc) == [
        f"{two}, line 1: model 'gpt4' already has a response to instruction '7' on "
        f"line 1 of {one} (two files for one model? name it with --model)"
    ]
    assert counts() == (0, 0, 0)


def test_reimport_counts_the_same_rows_unchanged_and_refuses_a_changed_text(tmp_path):
    out = write(tmp_path / "m.jsonl", {"question_id": 7, "text": "first"})
    args = {"dataset_name": "again", "eval_files": [("eval.jsonl", jsonl(*EVAL))]}
    dataset_import_flask(**args, output_files=[(str(out), out)])
    more = write(tmp_path / "n.jsonl", {"question_id": 3, "text": "new model"})

    again = dataset_import_flask(
        **args, output_files=[(str(out), out), (str(more), more)]
    )

    assert (again.created_instructions, again.created_responses) == (0, 1)
    assert again.unchanged == 3  # two instructions and one response
    write(tmp_path / "m.jsonl", {"question_id": 7, "text": "edited"})
    before = counts()
    with pytest.raises(DomainError) as exc:
        dataset_import_flask(**args, output_files=[(str(out), out)])
    assert problems_of(exc) == [
        f"{out}, line 1: the response of model 'm' to instruction '7' already exists "
        "with different text; imported responses are immutable"
    ]
    assert counts() == before


def test_outputs_are_checked_even_when_the_eval_set_has_problems(tmp_path):
    out = write(
        tmp_path / "m.jsonl", {"question_id": 7}, {"question_id": 3, "text": "x"}
    )

    with pytest.raises(DomainError) as exc:
        dataset_import_flask(
            dataset_name="both",
            eval_files=[("eval.jsonl", jsonl({**EVAL[0], "skill": ["Nope"]}, EVAL[1]))],
            output_files=[(str(out), out)],
        )

    problems = problems_of(exc)
    assert problems[0].startswith("eval.jsonl, line 1, field `skill`: unknown skill")
    # The file's own problem is reported; the response to the refused instruction 7
    # is not called unknown (that would only be noise).
    assert problems[1:] == [f"{out}, line 1, field `text`: is missing"]
    assert counts() == (0, 0, 0)


def test_strict_refuses_a_warning_found_while_streaming(tmp_path):
    out = write(tmp_path / "m.jsonl", {"question_id": 7, "text": "  "})

    with pytest.raises(DomainError, match="with strict, warnings are errors") as exc:
        dataset_import_flask(
            dataset_name="strict",
            eval_files=[("eval.jsonl", jsonl(*EVAL))],
            output_files=[(str(out), out)],
            options={"strict": True},
        )

    assert problems_of(exc) == [
        f"{out}, line 1, field `text`: is empty: imported as an empty response"
    ]
    assert counts() == (0, 0, 0)


def test_dry_run_checks_the_streamed_files_and_writes_nothing(tmp_path):
    out = write(tmp_path / "m.jsonl", {"question_id": 7, "text": "a"})

    report = dataset_import_flask(
        dataset_name="dry",
        eval_files=[("eval.jsonl", jsonl(*EVAL))],
        output_files=[(str(out), out)],
        dry_run=True,
    )

    assert (report.created_instructions, report.created_responses) == (2, 1)
    assert report.dry_run is True
    assert counts() == (0, 0, 0)
