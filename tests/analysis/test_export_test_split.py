"""Issue 34: the score export leaves the locked test split's rows out unless asked
for with a reason, and then logs the export as a look at the test split (who, why,
when), as every look is; the export says which (header, Parquet metadata, the
command's summary)."""

from __future__ import annotations

import csv
import io
import json

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from flaskapp.models import AuditEvent
from judging.models import EvalSplitMember, TestSplitLook
from judging.services.splits import eval_split_create
from tests.analysis.test_exports import (
    body,
    export_url,
    judge_all,
    make_dataset,
    rate_all,
)


@pytest.fixture
def split_scored(researcher, rater):
    dataset = make_dataset(4)
    rate_all(dataset, researcher, rater)
    judge_all(dataset)
    eval_split_create(dataset=dataset, user=researcher, test_fraction=0.5, seed=1)
    test_ids = set(
        EvalSplitMember.objects.filter(part="test").values_list(
            "instruction_id", flat=True
        )
    )
    assert test_ids
    return dataset, test_ids


def _rows(fmt: str, response) -> list[dict]:
    if fmt == "parquet":
        table = pq.read_table(io.BytesIO(b"".join(response.streaming_content)))
        return table.to_pylist()
    text = body(response)
    if fmt == "csv":
        return list(csv.DictReader(io.StringIO(text)))
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_test_rows_are_left_out_by_default(
    api_client_for, researcher, split_scored, fmt
):
    dataset, test_ids = split_scored
    response = api_client_for(researcher).get(export_url(dataset, f"format={fmt}"))
    assert response.status_code == 200
    assert response["X-Test-Split"] == "test rows left out"
    rows = _rows(fmt, response)
    assert rows and {r["split"] for r in rows} == {"dev"}
    assert not {int(r["instruction_id"]) for r in rows} & test_ids
    assert not TestSplitLook.objects.exists()


def test_parquet_metadata_says_whether_test_rows_are_in(
    api_client_for, researcher, split_scored
):
    dataset, _ = split_scored
    response = api_client_for(researcher).get(export_url(dataset, "format=parquet"))
    meta = pq.read_schema(io.BytesIO(b"".join(response.streaming_content))).metadata
    assert meta[b"flask_eval.test_rows"] == b"test rows left out"


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_including_test_rows_needs_a_reason_and_is_a_logged_look(
    api_client_for, researcher, split_scored, fmt
):
    dataset, test_ids = split_scored
    client = api_client_for(researcher)
    refused = client.get(export_url(dataset, f"format={fmt}&include_test=1"))
    assert refused.status_code == 400
    assert refused.json()["problems"][0]["field"] == "reason"
    bad = client.get(export_url(dataset, f"format={fmt}&include_test=maybe"))
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "include_test"
    assert not TestSplitLook.objects.exists()
    response = client.get(
        export_url(dataset, f"format={fmt}&include_test=1&reason=final+figures")
    )
    assert response.status_code == 200
    look = TestSplitLook.objects.get()
    assert look.user == researcher and look.reason == "final figures"
    assert response["X-Test-Split"] == f"test rows included (test look {look.pk})"
    rows = _rows(fmt, response)
    assert {r["split"] for r in rows} == {"dev", "test"}
    assert {int(r["instruction_id"]) for r in rows} & test_ids
    # Both the look and the export are in the workspace's audit log (issue 35).
    audit = {e.action: e for e in AuditEvent.objects.filter(actor=researcher)}
    assert audit["test_split.looked"].after["reason"] == "final figures"
    assert audit["test_split.looked"].workspace_id == dataset.workspace_id
    exported = audit["export.downloaded"].after
    assert (exported["what"], exported["format"]) == ("scores", fmt)
    assert exported["test_split"] == response["X-Test-Split"]


def test_the_command_leaves_test_rows_out_and_says_so(split_scored):
    dataset, test_ids = split_scored
    out, err = io.StringIO(), io.StringIO()
    call_command("export", dataset=dataset.name, stdout=out, stderr=err)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert rows and {r["split"] for r in rows} == {"dev"}
    assert "test rows left out" in err.getvalue()
    assert not TestSplitLook.objects.exists()


def test_the_command_adds_test_rows_only_with_a_reason_and_logs_the_look(
    split_scored, researcher
):
    dataset, test_ids = split_scored
    with pytest.raises(CommandError, match="reason"):
        call_command("export", dataset=dataset.name, include_test=True,
                     stdout=io.StringIO(), stderr=io.StringIO())  # fmt: skip
    assert not TestSplitLook.objects.exists()
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "export", dataset=dataset.name, include_test=True, reason="final figures",
        user=researcher.username, stdout=out, stderr=err,
    )  # fmt: skip
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert {r["split"] for r in rows} == {"dev", "test"}
    assert {int(r["instruction_id"]) for r in rows} >= test_ids
    (look,) = TestSplitLook.objects.all()
    assert (look.user, look.reason) == (researcher, "final figures")


def test_a_dataset_without_a_split_exports_everything(
    api_client_for, researcher, rater
):
    dataset = make_dataset(2)
    rate_all(dataset, researcher, rater)
    response = api_client_for(researcher).get(export_url(dataset))
    assert response["X-Test-Split"] == "no split"
    assert len(list(csv.DictReader(io.StringIO(body(response))))) > 0
