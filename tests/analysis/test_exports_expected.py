"""The score exports carry a judge score's probability-weighted value
(`expected_score`) and the mass it covered (`expected_mass`): JSON Lines as numbers,
CSV with the same bytes from the ORM and the SQL path, Parquet as floats; empty on
human rows and on judge scores without one."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.db import connection

from analysis.exports.scores import FIELDS, export_chunks
from judging.models import JudgeScore
from tests.analysis.rubric_data import rubric_1_10, scored_dataset
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def weighted():
    """A 1-10 judge run: response 0 scored 7 (expected 20/3, mass 0.9), response 1
    scored 10 with no probability-weighted value."""
    raters = [UserFactory(username=f"w{k}", role="rater") for k in range(2)]
    dataset, _, run, _ = scored_dataset(
        rubric_1_10(),
        raters=raters,
        human_values={"overall": [10, 1]},
        judge_values={"overall": [7, 10]},
    )
    first = JudgeScore.objects.filter(run=run, score=7).get()
    first.expected_score, first.expected_mass = 20 / 3, 0.9
    first.save()
    return dataset, run


def judge_rows(rows):
    return {r["score"]: r for r in rows if r["source_type"] == "judge"}


def test_fields_end_with_the_expected_columns():
    # then the taxonomy labels (issue 35), added after them
    assert FIELDS[-4:-2] == ("expected_score", "expected_mass")


def test_json_lines_carry_the_expected_score_as_numbers(weighted):
    dataset, _ = weighted
    text = b"".join(export_chunks(dataset=dataset, fmt="jsonl")).decode()
    rows = [json.loads(line) for line in text.splitlines()]
    judged = judge_rows(rows)
    assert judged[7]["expected_score"] == pytest.approx(20 / 3)
    assert judged[7]["expected_mass"] == 0.9
    assert judged[10]["expected_score"] is None
    humans = [r for r in rows if r["source_type"] == "human"]
    assert humans and all(r["expected_score"] is None for r in humans)
    assert list(rows[0]) == list(FIELDS)


@pytest.mark.parametrize("fast", [True, False])
def test_csv_carries_the_expected_score(settings, weighted, fast):
    settings.EXPORT_FAST_SQL = fast
    dataset, _ = weighted
    text = b"".join(export_chunks(dataset=dataset, fmt="csv")).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    judged = {int(r["score"]): r for r in rows if r["source_type"] == "judge"}
    assert float(judged[7]["expected_score"]) == 20 / 3  # full precision
    assert judged[7]["expected_mass"] == "0.9"
    assert judged[10]["expected_score"] == judged[10]["expected_mass"] == ""


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the SQL encoder is PostgreSQL's"
)
def test_orm_and_sql_csv_are_the_same_bytes_with_expected_scores(settings, weighted):
    dataset, run = weighted
    # A whole number and a tiny mass are written as Python writes them.
    JudgeScore.objects.filter(run=run, score=10).update(
        expected_score=9.0, expected_mass=0.00012
    )
    settings.EXPORT_FAST_SQL = True
    fast = b"".join(export_chunks(dataset=dataset, fmt="csv"))
    settings.EXPORT_FAST_SQL = False
    slow = b"".join(export_chunks(dataset=dataset, fmt="csv"))
    assert fast == slow
    assert b",9.0,0.00012,,\r\n" in fast  # then FLASK's (undeclared) labels: empty


def test_parquet_holds_the_expected_score_as_floats(tmp_path, weighted):
    dataset, _ = weighted
    path = tmp_path / "w.parquet"
    path.write_bytes(b"".join(export_chunks(dataset=dataset, fmt="parquet")))
    table = pq.read_table(path)
    assert str(table.schema.field("expected_score").type) == "double"
    judged = judge_rows(table.to_pylist())
    assert judged[7]["expected_score"] == pytest.approx(20 / 3)
    assert judged[10]["expected_mass"] is None
