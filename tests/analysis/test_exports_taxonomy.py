"""Score exports carry the dataset's declared taxonomy labels (issue 35): the
`domain_labels` and `difficulty_label` columns at the end, in CSV (both paths, byte
for byte, on formula-like and quoted labels), JSON Lines and Parquet; empty for a
part the dataset does not declare."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.db import connection

from analysis.exports.scores import FIELDS, export_chunks, score_rows
from annotation.models import Instruction
from annotation.services.taxonomy import dataset_taxonomy_update
from tests.analysis.test_exports import judge_all, make_dataset, rate_all

pytestmark = pytest.mark.django_db

DECLARED = {
    "domains": [
        {"key": "billing", "label": '=Billing, "paid"'},
        {"key": "tech", "label": "@tech"},
        "shipping",
    ],
    "difficulty": {"1": "routine", "4": "+tricky; hard", "7": "a,b"},
}
# instruction q0..q3: (domain_1, domain_2, difficulty)
VALUES = [("billing", "tech", 7), ("shipping", "", 1), ("", "", None), ("tech", "", 4)]


@pytest.fixture
def declared(admin_user, researcher, rater):
    dataset = make_dataset(4, name="declared-set")
    for instruction in Instruction.objects.filter(dataset=dataset):
        d1, d2, level = VALUES[int(instruction.external_id[1:])]
        instruction.domain_1, instruction.domain_2 = d1, d2
        instruction.difficulty = level
        instruction.save()
    dataset_taxonomy_update(user=admin_user, dataset_id=dataset.pk, taxonomy=DECLARED)
    dataset.refresh_from_db()
    campaign = rate_all(dataset, researcher, rater)
    run = judge_all(dataset, samples=2)
    return dataset, campaign, run


def _csv(settings, fast: bool, **kwargs) -> bytes:
    settings.EXPORT_FAST_SQL = fast
    return b"".join(export_chunks(fmt="csv", **kwargs))


def test_fields_end_with_the_label_columns():
    assert FIELDS[-2:] == ("domain_labels", "difficulty_label")


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the SQL encoder is PostgreSQL's"
)
def test_both_csv_paths_write_the_labels_byte_for_byte(settings, declared):
    dataset, campaign, run = declared
    for filters in ({}, {"campaign_ids": [campaign.pk]}, {"run_ids": [run.pk]}):
        fast = _csv(settings, True, dataset=dataset, **filters)
        slow = _csv(settings, False, dataset=dataset, **filters)
        assert fast == slow, filters
    lines = list(csv.DictReader(io.StringIO(fast.decode())))
    by_id = {
        (
            line["instruction_external_id"],
            line["domain_labels"],
            line["difficulty_label"],
        )
        for line in lines
    }
    # Formula-like labels neutralised, as every text cell is; `;` joins the domains.
    assert by_id == {
        ("q0", '\'=Billing, "paid";@tech', "a,b"),
        ("q1", "shipping", "routine"),
        ("q2", "", ""),
        ("q3", "'@tech", "'+tricky; hard"),
    }


def test_json_lines_carry_the_labels_as_a_list_and_text(declared):
    dataset, *_ = declared
    rows = [json.loads(line) for line in b"".join(
        export_chunks(dataset=dataset, fmt="jsonl")).decode().splitlines()]  # fmt: skip
    assert rows and list(rows[0])[-2:] == ["domain_labels", "difficulty_label"]
    got = {
        r["instruction_external_id"]: (r["domains"], r["domain_labels"],
                                       r["difficulty"], r["difficulty_label"])
        for r in rows
    }  # fmt: skip
    assert got == {
        "q0": (["billing", "tech"], ['=Billing, "paid"', "@tech"], 7, "a,b"),
        "q1": (["shipping"], ["shipping"], 1, "routine"),
        "q2": ([], [], None, None),
        "q3": (["tech"], ["@tech"], 4, "+tricky; hard"),
    }


def test_only_the_declared_part_is_labelled(admin_user, declared):
    dataset, *_ = declared
    Instruction.objects.filter(dataset=dataset).update(difficulty=None)
    dataset_taxonomy_update(
        user=admin_user,
        dataset_id=dataset.pk,
        taxonomy={"domains": DECLARED["domains"]},
    )
    dataset.refresh_from_db()
    rows = list(score_rows(dataset=dataset))
    assert {r["difficulty_label"] for r in rows} == {None}
    assert {tuple(r["domain_labels"]) for r in rows} == {
        ('=Billing, "paid"', "@tech"),
        ("shipping",),
        (),
        ("@tech",),
    }


def test_parquet_types_the_labels(tmp_path, declared):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    dataset, *_ = declared
    path = tmp_path / "scores.parquet"
    path.write_bytes(b"".join(export_chunks(dataset=dataset, fmt="parquet")))
    table = pq.read_table(path)
    assert table.schema.field("domain_labels").type == pa.list_(pa.string())
    assert table.schema.field("difficulty_label").type == pa.string()
    got = {
        (r["instruction_external_id"], tuple(r["domain_labels"]), r["difficulty_label"])
        for r in table.to_pylist()
    }
    assert ("q0", ('=Billing, "paid"', "@tech"), "a,b") in got
    assert ("q2", (), None) in got
