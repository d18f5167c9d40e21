"""Importing judge results made elsewhere: FLASK review files and generic JSONL/CSV.

Every row is validated first; a bad file writes nothing and each problem names its
line and field. Imported runs hold the same JudgeScore rows as runs made here.
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied

from annotation.errors import DomainError
from judging.models import JudgeCall, JudgeRun, JudgeScore
from judging.services.imports import judge_run_import
from tests.judging.data import make_dataset

pytestmark = pytest.mark.django_db


def jsonl(rows) -> bytes:
    return "\n".join(json.dumps(r) for r in rows).encode()


def review_row(qid, score, **extra):
    row = {
        "question_id": qid,
        "text": f"Question {qid}: explain something in detail.",
        "answer": "A reference answer.",
        "metrics": ["Comprehension", "Factuality", "Readability"],
        "review": f"Feedback on {qid}. Comprehension: good. Factuality: ok.",
        "score": score,
    }
    row.update(extra)
    return row


@pytest.fixture
def dataset(db):
    return make_dataset(instructions=3, models=("alpha", "beta"))


def scores_of(run) -> dict:
    return {
        (
            s.response.instruction.external_id,
            s.response.model_name,
            s.skill.key,
        ): s.score
        for s in JudgeScore.objects.filter(run=run).select_related(
            "response__instruction", "skill"
        )
    }


def test_flask_review_file_imports_scores_by_skill_name_with_na_and_strings(
    dataset, researcher
):
    data = jsonl(
        [
            review_row(
                1, {"Comprehension": 4, "Factuality": "5", "Readability": "N/A"}
            ),
            review_row(2, {"comprehension": "3.0", "Logical Correctness": 2}),
            review_row(3, [5, "4", "n/a"]),
        ]
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        name="GPT-4 reviews",
        fmt="flask_review",
        files=[("reviews/alpha_review.jsonl", data)],
    )
    assert run.kind == JudgeRun.Kind.IMPORTED
    assert run.status == JudgeRun.Status.COMPLETED
    assert run.config is None
    assert run.models_included == ["alpha"]  # from the file name, `_review` dropped
    assert run.total_calls == 3 == run.calls.count()
    assert set(run.calls.values_list("status", flat=True)) == {"succeeded"}
    scores = scores_of(run)
    assert scores[("1", "alpha", "comprehension")] == 4
    assert scores[("1", "alpha", "factuality")] == 5
    assert scores[("1", "alpha", "readability")] is None  # N/A
    assert scores[("2", "alpha", "comprehension")] == 3
    assert scores[("2", "alpha", "logical_correctness")] == 2
    # A list of scores is aligned with the record's skills (`metrics` here).
    assert scores[("3", "alpha", "comprehension")] == 5
    assert scores[("3", "alpha", "factuality")] == 4
    assert scores[("3", "alpha", "readability")] is None
    call = run.calls.get(response__instruction__external_id="1")
    assert call.raw_output == "Feedback on 1. Comprehension: good. Factuality: ok."


def test_flask_review_uses_given_model_and_current_schema_idx(dataset, researcher):
    data = jsonl(
        [
            {"idx": 1, "skill": ["Readability"], "review": "ok", "score": [4]},
            {"idx": 2, "review": "good", "score": {"Readability": 5}},
        ]
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="flask_review",
        files=[("whatever.jsonl", data)],
        model="beta",
    )
    assert run.models_included == ["beta"]
    assert scores_of(run) == {
        ("1", "beta", "readability"): 4,
        ("2", "beta", "readability"): 5,
    }
    assert run.name  # a name is made up when none is given


def test_flask_review_list_without_skill_names_uses_the_instructions_skills(
    dataset, researcher
):
    data = jsonl([{"question_id": 1, "review": "r", "score": [2, 3, 4]}])
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="flask_review",
        files=[("alpha.jsonl", data)],
    )
    assert scores_of(run) == {
        ("1", "alpha", "comprehension"): 2,
        ("1", "alpha", "factuality"): 3,
        ("1", "alpha", "readability"): 4,
    }


def test_several_review_files_make_one_run_with_every_model(dataset, researcher):
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="flask_review",
        files=[
            ("alpha_review.jsonl", jsonl([review_row(1, [4, 4, 4])])),
            ("beta_review.jsonl", jsonl([review_row(1, [2, 2, 2])])),
        ],
    )
    assert run.models_included == ["alpha", "beta"]
    assert JudgeScore.objects.filter(run=run).count() == 6


def test_generic_csv_with_rationale_and_samples(dataset, researcher):
    csv_text = (
        "id,model,skill,score,rationale,sample\n"
        "1,alpha,Comprehension,4,Understood the task,0\n"
        "1,alpha,Factuality,N/A,,0\n"
        "1,alpha,Comprehension,5,Second sample,1\n"
        "2,beta,readability,3,,\n"
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="csv",
        files=[("scores.csv", csv_text.encode())],
    )
    assert run.models_included == ["alpha", "beta"]
    # One call per (response, sample).
    assert run.calls.count() == 3 == run.total_calls
    rows = {
        (s.response.model_name, s.skill.key, s.sample_index): (s.score, s.rationale)
        for s in JudgeScore.objects.filter(run=run).select_related("response", "skill")
    }
    assert rows[("alpha", "comprehension", 0)] == (4, "Understood the task")
    assert rows[("alpha", "factuality", 0)] == (None, "")
    assert rows[("alpha", "comprehension", 1)] == (5, "Second sample")
    assert rows[("beta", "readability", 0)] == (3, "")
    call = run.calls.get(response__model_name="alpha", sample_index=0)
    assert "Comprehension = 4: Understood the task" in call.raw_output
    assert call.scores.count() == 2


def test_generic_jsonl_with_a_field_mapping_and_default_model(dataset, researcher):
    data = jsonl(
        [
            {"qid": "1", "ability": "Readability", "rating": 2, "review": "Too long."},
            {"qid": "2", "ability": "Readability", "rating": "4"},
        ]
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="jsonl",
        files=[("mine.jsonl", data)],
        model="alpha",
        mapping=["id=qid", "skill=ability", "score=rating"],
    )
    assert scores_of(run) == {
        ("1", "alpha", "readability"): 2,
        ("2", "alpha", "readability"): 4,
    }
    assert (
        run.calls.get(response__instruction__external_id="1").raw_output == "Too long."
    )


def test_bad_rows_are_reported_by_line_and_field_and_nothing_is_written(
    dataset, researcher
):
    data = jsonl(
        [
            review_row(1, {"Comprehension": 4}),
            review_row(2, {"Factuality": 7}),  # line 2: score out of range
            review_row(99, {"Comprehension": 3}),  # line 3: unknown instruction id
            review_row(3, {"Telepathy": 3}),  # line 4: unknown skill
        ]
    )
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="flask_review",
            files=[("alpha_review.jsonl", data)],
        )
    problems = {(p.line, p.field): p.message for p in caught.value.problems}
    assert "7" in problems[(2, "score")] and "1-5" in problems[(2, "score")]
    assert "unknown instruction id '99'" in problems[(3, "question_id")]
    assert "unknown skill 'Telepathy'" in problems[(4, "score")]
    assert "line 3" in str(caught.value)
    assert JudgeRun.objects.count() == 0
    assert JudgeCall.objects.count() == 0
    assert JudgeScore.objects.count() == 0


def test_generic_csv_bad_rows_name_line_and_column(dataset, researcher):
    csv_text = (
        "id,model,skill,score\n"
        "1,alpha,Comprehension,4\n"
        "42,alpha,Comprehension,4\n"  # line 3: unknown id
        "1,alpha,Comprehension,5\n"  # line 4: duplicate (response, skill, sample)
        "2,gamma,Comprehension,3\n"  # line 5: no response of model gamma
        "2,alpha,Wisdom,3\n"  # line 6: unknown skill
        "3,alpha,Readability,\n"  # line 7: empty score
        "3,alpha,Factuality,seven\n"  # line 8: not a number
    )
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="csv",
            files=[("s.csv", csv_text.encode())],
        )
    found = {(p.line, p.field) for p in caught.value.problems}
    assert found == {
        (3, "id"),
        (4, "skill"),
        (5, "model"),
        (6, "skill"),
        (7, "score"),
        (8, "score"),
    }
    duplicate = next(p for p in caught.value.problems if p.line == 4)
    assert "duplicate" in duplicate.message and "line 2" in duplicate.message
    assert JudgeRun.objects.count() == 0


def test_csv_without_required_columns_is_refused(dataset, researcher):
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="csv",
            files=[("s.csv", b"question,model,rating\n1,alpha,4\n")],
        )
    assert "no column `id`" in str(caught.value)
    assert caught.value.problems[0].line == 1


def test_duplicate_review_line_for_the_same_response_is_refused(dataset, researcher):
    data = jsonl([review_row(1, [4, 4, 4]), review_row(1, [3, 3, 3])])
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="flask_review",
            files=[("alpha.jsonl", data)],
        )
    assert caught.value.problems[0].line == 2
    assert "duplicate" in caught.value.problems[0].message


def test_score_list_of_the_wrong_length_is_refused(dataset, researcher):
    data = jsonl([review_row(1, [4, 4])])
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="flask_review",
            files=[("alpha.jsonl", data)],
        )
    problem = caught.value.problems[0]
    assert (problem.line, problem.field) == (1, "score")
    assert "2 scores but the record lists 3 skills" in problem.message


def test_one_model_name_for_several_review_files_is_refused(dataset, researcher):
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="flask_review",
            files=[("a.jsonl", b"{}"), ("b.jsonl", b"{}")],
            model="alpha",
        )
    assert caught.value.problems[0].field == "model"


def test_unknown_mapping_field_is_refused(dataset, researcher):
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="csv",
            files=[("s.csv", b"id\n")],
            mapping=["colour=hue"],
        )
    assert caught.value.problems[0].field == "mapping"
    assert caught.value.problems[0].message == (
        "--map colour=hue: unknown field 'colour'; fields are id, model, skill, "
        "score, rationale, sample, review"
    )


def test_raters_cannot_import(dataset, rater):
    with pytest.raises(PermissionDenied):
        judge_run_import(
            dataset=dataset,
            user=rater,
            fmt="flask_review",
            files=[("alpha.jsonl", jsonl([review_row(1, [4, 4, 4])]))],
        )
    assert JudgeRun.objects.count() == 0


def test_none_and_other_na_words_import_as_na(dataset, researcher):
    words = {
        "comprehension": "none",
        "factuality": "N.A",
        "readability": "Not applicable",
    }
    data = "id,model,skill,score\n" + "".join(
        f"1,alpha,{skill},{word}\n" for skill, word in words.items()
    )
    run = judge_run_import(
        dataset=dataset, user=researcher, fmt="csv", files=[("s.csv", data.encode())]
    )
    assert scores_of(run) == {("1", "alpha", skill): None for skill in words}


def test_problems_of_every_csv_file_are_listed_not_only_the_first_file(
    dataset, researcher
):
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="csv",
            files=[
                ("a.csv", b"id,model,skill,score\n1,alpha,Comprehension,9\n"),
                ("b.csv", b"id,model,skill,score\n1,alpha,Wisdom,3\n"),
            ],
        )
    assert [(p.file, p.line, p.field) for p in caught.value.problems] == [
        ("a.csv", 2, "score"),
        ("b.csv", 2, "skill"),
    ]
