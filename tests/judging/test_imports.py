"""Importing judge results made elsewhere: FLASK review files and generic JSONL/CSV.

Every row is validated first; a bad file writes nothing and each problem names its
line and field. Imported runs hold the same JudgeScore rows as runs made here.
"""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import PermissionDenied

from flaskapp.errors import DomainError
from judging.models import JudgeCall, JudgeRun, JudgeScore
from judging.services.run_imports import judge_run_import
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
        "score, rationale, sample, review, critique"
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


# --- Warnings and strict ------------------------------------------------------------------


def warning_texts(run) -> list[str]:
    return [w["text"] for w in run.settings_snapshot["warnings"]]


def test_a_clean_file_has_no_warnings(dataset, researcher):
    csv_text = "id,model,skill,score\n1,alpha,Comprehension,4\n1,alpha,Factuality,5\n"
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="csv",
        files=[("s.csv", csv_text.encode())],
        strict=True,
    )
    assert run.settings_snapshot["warning_count"] == 0
    assert run.settings_snapshot["warnings"] == []
    assert "warning" not in run.source_note


def test_same_value_duplicate_score_is_imported_once_with_a_warning(
    dataset, researcher
):
    csv_text = (
        "id,model,skill,score\n"
        "1,alpha,Comprehension,4\n"
        "1,alpha,Factuality,N/A\n"
        "1,alpha,Comprehension,4.0\n"  # line 4: same score as line 2
        "1,alpha,factuality,n/a\n"  # line 5: same N/A as line 3
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="csv",
        files=[
            ("s.csv", csv_text.encode()),
            ("t.csv", b"id,model,skill,score\n1,alpha,Comprehension,4\n"),
        ],
    )
    assert scores_of(run) == {
        ("1", "alpha", "comprehension"): 4,
        ("1", "alpha", "factuality"): None,
    }
    assert JudgeScore.objects.filter(run=run).count() == 2
    assert run.settings_snapshot["warning_count"] == 3
    assert warning_texts(run) == [
        "s.csv, line 4, field `skill`: duplicate of line 2 (same score): kept once",
        "s.csv, line 5, field `skill`: duplicate of line 3 (same score): kept once",
        "t.csv, line 2, field `skill`: duplicate of line 2 of s.csv (same score): "
        "kept once",
    ]
    assert run.source_note.endswith("(5 rows, 3 warnings)")


def test_conflicting_duplicate_score_is_an_error_and_nothing_is_written(
    dataset, researcher
):
    csv_text = (
        "id,model,skill,score\n"
        "1,alpha,Comprehension,4\n"
        "2,alpha,Comprehension,3\n"
        "1,alpha,Comprehension,N/A\n"  # line 4: conflicts with line 2
    )
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="csv",
            files=[("s.csv", csv_text.encode())],
        )
    [problem] = caught.value.problems
    assert (problem.file, problem.line, problem.field) == ("s.csv", 4, "skill")
    assert problem.message == (
        "conflicting duplicate score for the same response, skill and sample: "
        "N/A here, 4 on line 2"
    )
    assert not JudgeRun.objects.exists() and not JudgeScore.objects.exists()


def test_repeated_flask_review_line_with_the_same_scores_is_kept_once(
    dataset, researcher
):
    data = jsonl(
        [
            review_row(1, [4, 4, "N/A"]),
            review_row(2, [3, 3, 3]),
            review_row(1, [4, "4", "n/a"]),
        ]
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="flask_review",
        files=[("alpha.jsonl", data)],
    )
    assert run.calls.count() == 2 and JudgeScore.objects.filter(run=run).count() == 6
    assert warning_texts(run) == [
        "alpha.jsonl, line 3, field `question_id`: duplicate of line 1 (same "
        "scores): kept once"
    ]


def test_score_for_a_skill_the_instruction_is_not_assigned_is_a_warning(
    dataset, researcher
):
    # make_dataset assigns comprehension, factuality and readability.
    data = jsonl(
        [
            review_row(1, {"Comprehension": 4, "Logical Correctness": 2}),
            review_row(2, [5, 5], metrics=["Readability", "Logical Efficiency"]),
        ]
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="flask_review",
        files=[("alpha.jsonl", data)],
    )
    assert scores_of(run)[("1", "alpha", "logical_correctness")] == 2
    assert scores_of(run)[("2", "alpha", "logical_efficiency")] == 5
    assert warning_texts(run) == [
        "alpha.jsonl, line 1, field `score`: skill 'Logical Correctness' is not among "
        "the skills of instruction '1' (Comprehension, Factuality, Readability): "
        "imported anyway",
        "alpha.jsonl, line 2, field `score`: skill 'Logical Efficiency' is not "
        "among the skills of instruction '2' (Comprehension, Factuality, "
        "Readability): imported anyway",
    ]


def test_empty_flask_review_text_is_a_warning(dataset, researcher):
    data = jsonl(
        [review_row(1, [4, 4, 4], review="  "), {"question_id": 2, "score": [3, 3, 3]}]
    )
    run = judge_run_import(
        dataset=dataset,
        user=researcher,
        fmt="flask_review",
        files=[("alpha.jsonl", data)],
    )
    # A missing `review` is a scores-only file, not a quirk; an empty one is.
    assert warning_texts(run) == [
        "alpha.jsonl, line 1, field `review`: is empty: the scores are imported "
        "without it"
    ]
    assert JudgeScore.objects.filter(run=run).count() == 6


def test_strict_refuses_a_file_with_warnings_and_writes_nothing(dataset, researcher):
    csv_text = (
        "id,model,skill,score\n"
        "1,alpha,Comprehension,4\n"
        "1,alpha,Comprehension,4\n"  # line 3: same-value duplicate
        "2,alpha,Logical Correctness,3\n"  # line 4: skill not assigned
    )
    with pytest.raises(DomainError) as caught:
        judge_run_import(
            dataset=dataset,
            user=researcher,
            fmt="csv",
            files=[("s.csv", csv_text.encode())],
            strict=True,
        )
    assert "with strict, warnings are errors" in caught.value.message
    assert [(p.file, p.line, p.field) for p in caught.value.problems] == [
        ("s.csv", 3, "skill"),
        ("s.csv", 4, "skill"),
    ]
    assert not JudgeRun.objects.exists()
    assert not JudgeCall.objects.exists() and not JudgeScore.objects.exists()
