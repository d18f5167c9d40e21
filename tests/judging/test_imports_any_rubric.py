"""Imported judge results on rubrics other than FLASK's: each value is checked
against its criterion's scale or labels; a bad value names its line and field, and
nothing is written."""

from __future__ import annotations

import json

import pytest

from flaskapp.errors import DomainError
from judging.models import JudgeCall, JudgeRun, JudgeScore
from judging.services.run_imports import judge_run_import
from tests.factories import UserFactory
from tests.judging.rubric_data import HELPSTEER, MT_BENCH, YES_NO, dataset_on

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(db):
    return UserFactory(username="importer", role="researcher")


def run_import(dataset, user, fmt, name, data: bytes, **kw):
    return judge_run_import(
        dataset=dataset, user=user, fmt=fmt, files=[(name, data)], **kw
    )


def problems_of(exc) -> dict[tuple[int | None, str | None], str]:
    return {(p.line, p.field): p.message for p in exc.value.problems}


def stored(run) -> dict:
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


def test_a_csv_of_0_to_4_scores_is_imported_on_its_scale(researcher):
    dataset = dataset_on(HELPSTEER, instructions=2, models=("m-a",))
    csv_text = (
        "id,model,skill,score\n"
        "1,m-a,helpfulness,0\n"
        "1,m-a,Correctness,4\n"
        "2,m-a,verbosity,2.0\n"
    )
    run = run_import(dataset, researcher, "csv", "s.csv", csv_text.encode())
    assert stored(run) == {
        ("1", "m-a", "helpfulness"): 0,
        ("1", "m-a", "correctness"): 4,
        ("2", "m-a", "verbosity"): 2,
    }
    raw = run.calls.get(response__instruction__external_id="1").raw_output
    assert raw == "Helpfulness = 0\nCorrectness = 4"


def test_scores_outside_the_scale_and_na_where_not_allowed_are_refused(researcher):
    dataset = dataset_on(HELPSTEER, instructions=2, models=("m-a",))
    csv_text = (
        "id,model,skill,score\n"
        "1,m-a,helpfulness,3\n"  # line 2: fine
        "1,m-a,correctness,5\n"  # line 3: outside 0-4
        "2,m-a,coherence,N/A\n"  # line 4: N/A is not allowed here
        "2,m-a,complexity,-1\n"  # line 5: outside 0-4
        "2,m-a,verbosity,\n"  # line 6: empty cell
    )
    with pytest.raises(DomainError) as exc:
        run_import(dataset, researcher, "csv", "s.csv", csv_text.encode())
    problems = problems_of(exc)
    assert sorted(problems) == [(3, "score"), (4, "score"), (5, "score"), (6, "score")]
    assert "Correctness" in problems[(3, "score")]
    assert "score 5 is outside the scale" in problems[(3, "score")]
    assert "0-4" in problems[(3, "score")]
    assert "N/A is not allowed" in problems[(4, "score")]
    assert "score -1 is outside the scale" in problems[(5, "score")]
    assert "is empty" in problems[(6, "score")]
    assert not JudgeRun.objects.exists() and not JudgeCall.objects.exists()


def test_a_1_to_10_jsonl_accepts_the_whole_scale(researcher):
    dataset = dataset_on(MT_BENCH, instructions=2, models=("m-a",))
    rows = [
        {"id": "1", "model": "m-a", "skill": "overall", "score": 10},
        {"id": "2", "model": "m-a", "skill": "Overall quality", "score": "7"},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    run = run_import(dataset, researcher, "jsonl", "s.jsonl", data)
    assert stored(run) == {("1", "m-a", "overall"): 10, ("2", "m-a", "overall"): 7}
    bad = data + b'\n{"id": "1", "model": "m-a", "skill": "overall", "score": 11}'
    with pytest.raises(DomainError) as exc:
        run_import(dataset, researcher, "jsonl", "s.jsonl", bad)
    assert "score 11 is outside the scale" in problems_of(exc)[(3, "score")]
    assert JudgeRun.objects.count() == 1


def test_labels_are_stored_as_codes_and_unknown_labels_refused(researcher):
    dataset = dataset_on(YES_NO, instructions=3, models=("m-a",))
    rows = [
        {"id": "1", "model": "m-a", "skill": "consistent", "score": "yes"},
        {"id": "2", "model": "m-a", "skill": "consistent", "score": "NO"},
        {"id": "3", "model": "m-a", "skill": "consistent", "score": "Yes"},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    run = run_import(dataset, researcher, "jsonl", "labels.jsonl", data)
    assert stored(run) == {
        ("1", "m-a", "consistent"): 0,
        ("2", "m-a", "consistent"): 1,
        ("3", "m-a", "consistent"): 0,
    }
    raw = run.calls.get(response__instruction__external_id="2").raw_output
    assert raw == "Consistent with the request = no"  # the label, not its code
    bad_rows = [
        {"id": "1", "model": "m-a", "skill": "consistent", "score": "maybe"},
        {"id": "2", "model": "m-a", "skill": "consistent", "score": 1},  # a code
        {"id": "3", "model": "m-a", "skill": "consistent", "score": None},  # N/A
    ]
    bad = "\n".join(json.dumps(r) for r in bad_rows).encode()
    with pytest.raises(DomainError) as exc:
        run_import(dataset, researcher, "jsonl", "bad.jsonl", bad)
    problems = problems_of(exc)
    assert sorted(problems) == [(1, "score"), (2, "score"), (3, "score")]
    assert "'maybe' is not a label here" in problems[(1, "score")]
    assert "'yes' or 'no'" in problems[(1, "score")]
    assert "must be 'yes' or 'no'" in problems[(2, "score")]
    assert "N/A is not allowed" in problems[(3, "score")]
    assert JudgeRun.objects.count() == 1  # only the good import


def test_a_flask_review_file_on_a_label_rubric(researcher):
    dataset = dataset_on(YES_NO, instructions=2, models=("m-a",))
    rows = [
        {"question_id": "1", "review": "Fine.", "score": {"consistent": "no"}},
        {"question_id": "2", "review": "Odd.", "score": {"Consistent": "perhaps"}},
    ]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    with pytest.raises(DomainError) as exc:
        run_import(dataset, researcher, "flask_review", "m-a_review.jsonl", data)
    problems = problems_of(exc)
    assert list(problems) == [(2, "score")]
    assert "'perhaps' is not a label here" in problems[(2, "score")]
    assert not JudgeRun.objects.exists()
    run = run_import(
        dataset, researcher, "flask_review", "m-a_review.jsonl", data.split(b"\n")[0]
    )
    assert stored(run) == {("1", "m-a", "consistent"): 1}
