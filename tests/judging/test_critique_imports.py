"""Judge critiques made elsewhere (FLAMe's open-ended task), imported with a `critique`
column next to scores or alone; listed by the run's critique API, shown on the
instruction page and exported as training examples. Bad rows name their line and
field, and nothing is written."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from flaskapp.errors import DomainError
from judging.models import JudgeCall, JudgeCritique, JudgeRun, JudgeScore
from judging.services.run_imports import judge_run_import
from tests.factories import UserFactory
from tests.judging.rubric_data import MT_BENCH, dataset_on

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher(db):
    return UserFactory(username="critic", role="researcher")


def jsonl(*rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def run_import(dataset, user, data: bytes, fmt="jsonl", name="c.jsonl"):
    return judge_run_import(
        dataset=dataset, user=user, fmt=fmt, files=[(name, data)], name="critic"
    )


def test_critiques_alone_import_as_a_run_of_critiques(researcher):
    dataset = dataset_on(MT_BENCH, instructions=2, models=("m-a",))
    run = run_import(
        dataset,
        researcher,
        jsonl(
            {"id": "1", "model": "m-a", "critique": "Misses the second case."},
            {"id": "2", "model": "m-a", "critique": "Correct and short."},
        ),
    )
    assert run.status == JudgeRun.Status.COMPLETED
    assert JudgeScore.objects.filter(run=run).count() == 0
    texts = {
        c.response.instruction.external_id: c.text
        for c in JudgeCritique.objects.filter(run=run).select_related(
            "response__instruction"
        )
    }
    assert texts == {"1": "Misses the second case.", "2": "Correct and short."}
    # Each critique hangs on its call, as a critique run's do.
    assert set(JudgeCritique.objects.values_list("call_id", flat=True)) == set(
        JudgeCall.objects.filter(run=run).values_list("pk", flat=True)
    )


def test_a_csv_with_scores_and_critiques_keeps_both(researcher):
    dataset = dataset_on(MT_BENCH, instructions=1, models=("m-a", "m-b"))
    csv_text = (
        "id,model,skill,score,critique\n"
        "1,m-a,overall,7,Good but long.\n"
        "1,m-b,overall,3,\n"
    )
    run = run_import(dataset, researcher, csv_text.encode(), fmt="csv", name="c.csv")
    assert sorted(
        JudgeScore.objects.filter(run=run).values_list("score", flat=True)
    ) == [3, 7]
    assert list(
        JudgeCritique.objects.filter(run=run).values_list("text", flat=True)
    ) == ["Good but long."]


BAD = [
    # Two different critiques of the same response and sample.
    (
        [
            {"id": "1", "model": "m-a", "critique": "One."},
            {"id": "1", "model": "m-a", "critique": "Another."},
        ],
        2,
        "critique",
        "one critique per response and sample",
    ),
    ([{"id": "9", "model": "m-a", "critique": "x"}], 1, "id", "unknown instruction id"),
    ([{"id": "1", "model": "m-a", "critique": 5}], 1, "critique", "must be a string"),
    (
        [{"id": "1", "model": "m-a", "score": 4, "critique": "x"}],
        1,
        "skill",
        "needs its skill",
    ),
    ([{"id": "1", "model": "m-a"}], 1, "skill", "is missing"),
    (
        [{"id": "1", "model": "m-a", "skill": "overall", "score": 11, "critique": "x"}],
        1,
        "score",
        "",
    ),
]


@pytest.mark.parametrize(("rows", "line", "field", "message"), BAD)
def test_bad_critique_rows_are_refused_with_line_and_field(
    researcher, rows, line, field, message
):
    dataset = dataset_on(MT_BENCH, instructions=1, models=("m-a",))
    good = {"id": "1", "model": "m-a", "skill": "overall", "score": 5}
    with pytest.raises(DomainError) as caught:
        run_import(dataset, researcher, jsonl(good, *rows))
    found = [(p.line, p.field, p.message) for p in caught.value.problems]
    assert any(
        p_line == line + 1 and p_field == field and message in text
        for p_line, p_field, text in found
    ), found
    assert JudgeRun.objects.count() == 0
    assert JudgeCritique.objects.count() == JudgeScore.objects.count() == 0


def test_the_same_critique_twice_is_kept_once_with_a_warning(researcher):
    dataset = dataset_on(MT_BENCH, instructions=1, models=("m-a",))
    row = {"id": "1", "model": "m-a", "critique": "Same words."}
    run = run_import(dataset, researcher, jsonl(row, row))
    assert JudgeCritique.objects.filter(run=run).count() == 1
    assert run.settings_snapshot["warning_count"] == 1
    assert "same critique" in run.settings_snapshot["warnings"][0]["message"]


def test_the_critique_api_lists_them_and_the_instruction_page_shows_them(
    researcher, api_client_for, client_for
):
    dataset = dataset_on(MT_BENCH, instructions=1, models=("m-a",))
    run = run_import(
        dataset,
        researcher,
        jsonl({"id": "1", "model": "m-a", "critique": "CRIT-TEXT here."}),
    )
    listed = api_client_for(researcher).get(f"/api/runs/{run.pk}/critiques/")
    assert listed.status_code == 200
    (row,) = listed.json()["results"]
    assert row["text"] == "CRIT-TEXT here."
    assert row["instruction_external_id"] == "1" and row["model"] == "m-a"
    assert row["sample_index"] == 0 and row["call_id"] is not None
    instruction = dataset.instructions.get()
    url = reverse("analysis:instruction-detail", args=[instruction.pk])
    assert "CRIT-TEXT here." in client_for(researcher).get(url).content.decode()


def test_the_critique_api_refuses_raters_and_other_runs_404(researcher, api_client_for):
    dataset = dataset_on(MT_BENCH, instructions=1, models=("m-a",))
    run = run_import(
        dataset, researcher, jsonl({"id": "1", "model": "m-a", "critique": "x"})
    )
    rater = UserFactory(username="r-crit", role="rater")
    assert (
        api_client_for(rater).get(f"/api/runs/{run.pk}/critiques/").status_code == 403
    )
    assert api_client_for(None).get(f"/api/runs/{run.pk}/critiques/").status_code == 401
    missing = api_client_for(researcher).get(f"/api/runs/{run.pk + 999}/critiques/")
    assert missing.status_code == 404
