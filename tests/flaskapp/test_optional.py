"""Parquet without pyarrow (flaskapp/optional.py): `make run` does not install it, so
a server may lack it. Each way in refuses Parquet with a message that says how to
enable it, naming the file or `format`, and changes nothing; everything else works.

pyarrow is made unimportable the way a missing package is (`sys.modules[name] =
None` makes `import` raise ImportError and `find_spec` answer None), for the test
only; the tests around it read real Parquet with the real package."""

from __future__ import annotations

import importlib
import io
import json
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotation.models import Dataset
from annotation.services.imports import dataset_import_files
from flaskapp.errors import DomainError
from flaskapp.optional import PACKAGES, PARQUET

pytestmark = pytest.mark.django_db

ROWS = [{"qid": "a", "prompt": "Say hi.", "output": "Hi!", "model": "m1"}]
MAP = {"id": "qid", "instruction": "prompt", "response": "output"}


@pytest.fixture
def no_pyarrow(monkeypatch):
    """pyarrow as if it were not installed, for this test."""
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith("pyarrow.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError):
        importlib.import_module("pyarrow")


def _import(data: bytes, name: str):
    return dataset_import_files(
        dataset_name="optional",
        fmt="jsonl",
        files=[(name, data)],
        options={"mapping": MAP},
    )


def test_the_package_is_seen_present_and_absent(no_pyarrow):
    assert not PARQUET.available()
    assert "pip install -r requirements-parquet.txt" in PARQUET.missing()
    assert PARQUET in PACKAGES


@pytest.fixture
def hub_file() -> bytes:
    """A real Parquet file, written before the test hides pyarrow."""
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(ROWS), sink)
    return sink.getvalue()


def test_a_parquet_file_is_one_problem_and_no_dataset(hub_file, no_pyarrow):
    with pytest.raises(DomainError) as caught:
        _import(hub_file, "hub.parquet")
    text = str(caught.value)
    assert "hub.parquet" in text and "requirements-parquet.txt" in text
    assert not Dataset.objects.exists()
    # JSON Lines of the same rows still imports
    _import("".join(json.dumps(r) + "\n" for r in ROWS).encode(), "hub.jsonl")
    assert Dataset.objects.get(name="optional").instructions.count() == 1


def test_export_refuses_parquet_naming_format(api_client_for, researcher, no_pyarrow):
    from tests.factories import DatasetFactory

    dataset = DatasetFactory()
    url = reverse("analysis_api:dataset-export", args=[dataset.pk])
    client = api_client_for(researcher)
    refused = client.get(url + "?format=parquet")
    assert refused.status_code == 400
    body = json.dumps(refused.json())
    assert '"format"' in body and "requirements-parquet.txt" in body
    assert client.get(url + "?format=csv").status_code == 200
    with pytest.raises(CommandError, match="requirements-parquet.txt"):
        call_command(
            "export",
            "--dataset",
            dataset.name,
            "--format",
            "parquet",
            "--out",
            "/dev/null",
        )
