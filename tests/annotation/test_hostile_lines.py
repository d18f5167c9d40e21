"""Import files made of nothing (issue 34): a CSV of blank lines and a gzip bomb of one
line end at a bound, at once, with a problem naming the line, instead of being read
to the end."""

from __future__ import annotations

import gzip
import time

import pytest
from django.test import override_settings

from annotation.importers.base import MAX_BLANK_RUN, read_rows


def _rows(data: bytes, fmt: str):
    problems = []
    rows = list(read_rows(data, file="f", fmt=fmt, problems=problems))
    return rows, problems


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_a_file_of_blank_lines_ends_after_the_blank_run(fmt):
    started = time.perf_counter()
    rows, problems = _rows(gzip.compress(b"\n" * (MAX_BLANK_RUN * 3)), fmt)
    assert rows == []
    (problem,) = problems
    assert problem.line == MAX_BLANK_RUN
    assert "blank lines in a row" in problem.message
    assert time.perf_counter() - started < 5


def test_blank_lines_between_rows_are_still_skipped_and_counted():
    data = b"id,text\n" + b"\n" * 10 + b"1,a\n"
    rows, problems = _rows(data, "csv")
    assert problems == [] and rows == [(12, {"id": "1", "text": "a"})]


@override_settings(IMPORT_MAX_FIELD_BYTES=1)
def test_a_line_longer_than_the_bound_ends_the_file():
    from annotation.importers.base import max_line_bytes

    limit = max_line_bytes()
    rows, problems = _rows(b'{"a": 1}\n' + b"x" * (limit + 10) + b"\n", "jsonl")
    assert rows == [(1, {"a": 1})]
    (problem,) = problems
    assert problem.line == 2 and f"longer than {limit:,} bytes" in problem.message
    ok, problems = _rows(b'{"a": "' + b"y" * (limit - 9) + b'"}\n', "jsonl")
    assert problems == [] and len(ok) == 1


def test_guidelines_longer_than_their_bound_are_a_400_naming_them(researcher):
    from rest_framework.test import APIClient

    from annotation.models import Campaign
    from flaskapp.limits import GUIDELINES as GUIDELINES_MAX_CHARS
    from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

    dataset = DatasetFactory()
    ResponseFactory(instruction=InstructionFactory(dataset=dataset), model_name="m")
    api = APIClient()
    api.force_authenticate(researcher)
    body = {"name": "g", "dataset": dataset.pk}
    refused = api.post(
        "/api/campaigns/",
        {**body, "guidelines": "g" * (GUIDELINES_MAX_CHARS + 1)},
        format="json",
    )
    assert refused.status_code == 400
    (problem,) = refused.json()["problems"]
    assert problem["field"] == "guidelines" and "100000" in problem["message"]
    assert not Campaign.objects.exists()
    ok = api.post(
        "/api/campaigns/",
        {**body, "guidelines": "g" * GUIDELINES_MAX_CHARS},
        format="json",
    )
    assert ok.status_code == 201
