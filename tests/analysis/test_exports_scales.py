"""Score exports on rubrics other than FLASK's: every row says its criterion's kind,
scale or label set, rubric name and version, and the value as written (the number,
the label key, N/A); the ORM and the SQL paths agree byte for byte; Parquet holds
the same rows."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.urls import reverse

from analysis.exports.scores import FIELDS, export_chunks, score_rows
from annotation.models import Skill
from tests.analysis.rubric_data import (
    HELPSTEER,
    rubric_0_4,
    rubric_1_10,
    rubric_yes_no,
    scored_dataset,
)
from tests.factories import UserFactory

MEANING = ("skill_kind", "skill_group", "scale", "value", "score", "is_na")


@pytest.fixture
def raters(db):
    return [UserFactory(username=f"r{k}", role="rater") for k in range(2)]


@pytest.fixture
def helpsteer(raters):
    """0-4 on five attributes: rater 0 gives 0..4 across them, rater 1 N/A on the last."""
    human = {key: [i, None if i == 4 else 4 - i] for i, key in enumerate(HELPSTEER)}
    judge = {key: [i, 0] for i, key in enumerate(HELPSTEER)}
    return scored_dataset(
        rubric_0_4(), raters=raters, human_values=human, judge_values=judge
    )


@pytest.fixture
def mtbench(raters):
    return scored_dataset(
        rubric_1_10(),
        raters=raters,
        human_values={"overall": [10, 1]},
        judge_values={"overall": [7, 10]},
    )


@pytest.fixture
def yes_no(raters):
    """Codes: 0 = yes, 1 = no. Rater 0 says yes, rater 1 no; the judge no, then N/A."""
    return scored_dataset(
        rubric_yes_no(),
        raters=raters,
        human_values={"consistent": [0, 1]},
        judge_values={"consistent": [1, None]},
    )


def _meaning(rows, **match):
    return [
        tuple(r[k] for k in MEANING)
        for r in rows
        if all(r[k] == v for k, v in match.items())
    ]


def test_a_0_4_rubric_exports_its_scale_and_values(helpsteer):
    dataset, *_ = helpsteer
    rows = list(score_rows(dataset=dataset))

    assert len(rows) == 2 * 2 * 5 + 2 * 5  # 2 responses x 2 raters x 5, judge 2 x 5
    assert {(r["rubric_name"], r["rubric_version"], r["rubric"]) for r in rows} == {
        ("helpsteer", 2, "helpsteer v2")
    }
    assert _meaning(rows, source="r0", instruction_external_id="helpsteer-0") == [
        ("ordinal", "attributes", "0-4", v, v, False) for v in range(5)
    ]
    # rater 1: 4..1, then N/A on verbosity
    assert [r["value"] for r in rows if r["source"] == "r1"][:5] == [4, 3, 2, 1, "N/A"]
    na = next(r for r in rows if r["source"] == "r1" and r["skill_key"] == "verbosity")
    assert (na["score"], na["is_na"]) == (None, True)
    zero = next(
        r
        for r in rows
        if r["source_type"] == "judge"
        and r["skill_key"] == "helpfulness"
        and r["instruction_external_id"] == "helpsteer-0"
    )
    assert (zero["value"], zero["is_na"]) == (0, False)  # 0 is a score, not N/A


def test_a_1_10_rubric_exports_ten_and_one(mtbench):
    dataset, *_ = mtbench
    rows = list(score_rows(dataset=dataset))

    assert _meaning(
        rows, source_type="human", instruction_external_id="mt-bench-1"
    ) == [
        ("ordinal", "attributes", "1-10", 10, 10, False),
        ("ordinal", "attributes", "1-10", 1, 1, False),
    ]
    assert [r["value"] for r in rows if r["source_type"] == "judge"] == [7, 10]


def test_a_yes_no_rubric_exports_label_keys_not_codes(yes_no):
    dataset, *_ = yes_no
    rows = list(score_rows(dataset=dataset))

    humans = _meaning(
        rows, source_type="human", instruction_external_id="consistency-0"
    )
    assert humans == [
        ("categorical", "attributes", "yes / no", "yes", 0, False),
        ("categorical", "attributes", "yes / no", "no", 1, False),
    ]
    assert [r["value"] for r in rows if r["source_type"] == "judge"] == ["no", "N/A"]
    assert {r["rubric"] for r in rows} == {"consistency v3"}


def test_csv_and_jsonl_write_the_value_as_written(yes_no, helpsteer):
    dataset, *_ = yes_no
    text = b"".join(export_chunks(dataset=dataset, fmt="csv")).decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert list(table[0]) == list(FIELDS)
    assert [(r["scale"], r["value"], r["score"]) for r in table] == [
        ("yes / no", "yes", "0"),
        ("yes / no", "no", "1"),
        ("yes / no", "yes", "0"),
        ("yes / no", "no", "1"),
        ("yes / no", "no", "1"),
        ("yes / no", "N/A", ""),
    ]
    other, *_ = helpsteer
    lines = b"".join(export_chunks(dataset=other, fmt="jsonl")).decode().splitlines()
    values = [json.loads(line)["value"] for line in lines]
    assert values[:5] == [0, 1, 2, 3, 4]  # numbers stay numbers in JSON
    assert "N/A" in values


@pytest.mark.postgres
@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the SQL encoder is PostgreSQL's"
)
def test_orm_and_sql_paths_give_the_same_bytes_on_every_kind(
    settings, helpsteer, mtbench, yes_no
):
    # A hostile label key and group, and an ordinal scale with a negative low end:
    # both paths must encode them alike ("'-2-2", "'=cmd").
    skill = Skill.objects.get(key="consistent")
    skill.labels = [
        {"key": "=cmd", "name": "Formula"},
        {"key": "a,b", "name": "Comma"},
    ]
    skill.group = "+grp"
    skill.save()
    Skill.objects.filter(key="overall").update(scale_min=-2, scale_max=8)
    for dataset, campaign, run, _ in (helpsteer, mtbench, yes_no):
        for filters in ({}, {"campaign_ids": [campaign.pk]}, {"run_ids": [run.pk]}):
            settings.EXPORT_FAST_SQL = True
            fast = b"".join(export_chunks(dataset=dataset, fmt="csv", **filters))
            settings.EXPORT_FAST_SQL = False
            slow = b"".join(export_chunks(dataset=dataset, fmt="csv", **filters))
            assert fast == slow, (dataset.name, filters)
            assert fast.count(b"\r\n") > 1
    settings.EXPORT_FAST_SQL = True
    fast = b"".join(export_chunks(dataset=yes_no[0], fmt="csv")).decode()
    # gold, excluded, split (none), expected_score and expected_mass (none), labels
    # (none declared)
    assert ",'=cmd,false,false,,,,,\r\n" in fast
    assert '"a,b"' in fast
    mt = b"".join(export_chunks(dataset=mtbench[0], fmt="csv")).decode()
    assert ",'-2-8," in mt


def test_parquet_holds_the_same_rows(tmp_path, helpsteer, yes_no):
    for dataset, *_ in (helpsteer, yes_no):
        path = tmp_path / f"{dataset.pk}.parquet"
        path.write_bytes(b"".join(export_chunks(dataset=dataset, fmt="parquet")))
        table = pq.read_table(path)
        assert table.column_names == list(FIELDS)
        rows = list(score_rows(dataset=dataset))
        got = table.to_pylist()
        assert len(got) == len(rows)
        for want, row in zip(rows, got, strict=True):
            assert row == want | {"value": str(want["value"])}


def test_parquet_of_no_scores_is_a_file_with_the_columns(tmp_path, db):
    from tests.factories import DatasetFactory

    path = tmp_path / "empty.parquet"
    path.write_bytes(b"".join(export_chunks(dataset=DatasetFactory(), fmt="parquet")))
    table = pq.read_table(path)
    assert (table.num_rows, table.column_names) == (0, list(FIELDS))


def test_command_writes_parquet_to_a_file_and_refuses_stdout(tmp_path, yes_no):
    dataset, *_ = yes_no
    with pytest.raises(CommandError, match="--out"):
        call_command("export", "--dataset", dataset.name, "--format", "parquet")
    out = tmp_path / "s.parquet"
    call_command(
        "export", "--dataset", dataset.name, "--format", "parquet", "--out", str(out)
    )
    values = pq.read_table(out).column("value").to_pylist()
    assert values == ["yes", "no", "yes", "no", "no", "N/A"]


def test_api_serves_parquet(api_client_for, researcher, mtbench):
    dataset, *_ = mtbench
    url = reverse("analysis_api:dataset-export", args=[dataset.pk])
    response = api_client_for(researcher).get(url + "?format=parquet")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/vnd.apache.parquet"
    assert response["Content-Disposition"].endswith('-scores.parquet"')
    table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
    assert table.column("scale").to_pylist() == ["1-10"] * 6
    bad = api_client_for(researcher).get(url + "?format=xlsx")
    assert bad.status_code == 400
    assert "parquet" in json.dumps(bad.json())
