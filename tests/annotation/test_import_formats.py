"""Public data as it is published: Parquet, JSON arrays and gzip in every importer, quirks
accepted as warnings (empty and identical responses, repeated votes) unless `strict`,
and the limits that stay errors (FLASK ids, field sizes, decompressed size)."""

from __future__ import annotations

import gzip
import io
import json
from io import StringIO

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from annotation.importers import formats
from annotation.models import Dataset, HumanPreference, PreferencePair, Response
from annotation.services.imports import dataset_import_files
from annotation.services.preference_imports import preferences_import
from flaskapp.errors import DomainError
from judging.models import JudgeRun
from judging.services.run_imports import judge_run_import
from judging.services.verdicts import imported_verdicts
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def parquet(rows: list[dict]) -> bytes:
    """A Parquet file of `rows` (every key a column, null where a row lacks it), in
    row groups of 2 rows so that reading crosses batches."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    table = pa.Table.from_pylist([{k: r.get(k) for k in keys} for r in rows])
    sink = io.BytesIO()
    pq.write_table(table, sink, row_group_size=2)
    return sink.getvalue()


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


GENERIC = [
    {"qid": "a", "prompt": "Say hi.", "output": "Hi!", "model": "m1"},
    {"qid": "a", "prompt": "Say hi.", "output": "Hello.", "model": "m2"},
    {"qid": "b", "prompt": "Count to 3.", "output": "1 2 3", "model": "m1"},
]
MAP = {"id": "qid", "instruction": "prompt", "response": "output"}


def _generic(data: bytes, name: str, **options):
    return dataset_import_files(
        dataset_name="public",
        fmt="jsonl",
        files=[(name, data)],
        options={"mapping": MAP, **options},
    )


@pytest.mark.parametrize(
    ("name", "encode"),
    [
        ("hub.parquet", parquet),
        ("release.json", lambda rows: json.dumps(rows, indent=2).encode()),
        ("rows.jsonl.gz", lambda rows: gzip.compress(jsonl(rows))),
        ("hub.parquet.gz", lambda rows: gzip.compress(parquet(rows))),
    ],
)
def test_generic_import_reads_every_published_format_with_the_same_map(name, encode):
    report = _generic(encode(GENERIC), name)
    assert (report.rows, report.created_instructions, report.created_responses) == (
        3,
        2,
        3,
    )
    texts = set(Response.objects.values_list("model_name", "text"))
    assert texts == {("m1", "Hi!"), ("m2", "Hello."), ("m1", "1 2 3")}


@pytest.mark.parametrize(
    ("name", "encode"),
    [
        ("hub.parquet", parquet),
        ("release.json", lambda rows: json.dumps(rows).encode()),
    ],
)
def test_a_bad_row_is_named_by_its_row_number_and_nothing_is_written(name, encode):
    rows = [*GENERIC, {"qid": "c", "output": "x", "model": "m1", "prompt": None}]
    with pytest.raises(DomainError) as caught:
        _generic(encode(rows), name)
    texts = [str(p) for p in caught.value.problems]
    assert texts == [f"{name}, line 4, field `prompt`: is missing"]
    assert not Dataset.objects.exists()


def test_a_parquet_file_without_a_mapped_column_is_refused_naming_it():
    rows = [{"question": "Say hi.", "output": "Hi!", "model": "m1"}]
    with pytest.raises(DomainError) as caught:
        _generic(parquet(rows), "hub.parquet")
    text = str(caught.value)
    assert "the Parquet file has no column `qid` (for field `id`)" in text
    assert "`prompt` (for field `instruction`); its columns are: question" in text


def test_a_json_array_element_that_is_not_an_object_is_named():
    data = json.dumps([GENERIC[0], "oops", GENERIC[2]]).encode()
    with pytest.raises(DomainError) as caught:
        _generic(data, "release.json")
    assert "release.json, line 2: expected a JSON object, got str" in str(caught.value)


def test_broken_json_array_and_gzip_are_problems_not_crashes():
    with pytest.raises(DomainError) as caught:
        _generic(b'[{"qid": "a", "prompt": "x", ', "cut.json")
    assert "invalid JSON after row 0" in str(caught.value)
    with pytest.raises(DomainError) as caught:
        _generic(b"\x1f\x8b" + b"not gzip at all", "bad.jsonl.gz")
    assert "is not a valid gzip file" in str(caught.value)


def test_decompression_stops_at_the_limit(settings):
    settings.IMPORT_MAX_DECOMPRESSED_BYTES = 10_000
    data = gzip.compress(jsonl(GENERIC * 200))  # ~30 kB once decompressed
    with pytest.raises(DomainError) as caught:
        _generic(data, "big.jsonl.gz")
    assert "decompresses to more than 10,000 bytes" in str(caught.value)


# --- warnings and strict ----------------------------------------------------------------


def test_an_empty_model_response_is_imported_with_a_warning():
    rows = [
        *GENERIC,
        {"qid": "b", "prompt": "Count to 3.", "output": "", "model": "m2"},
    ]
    report = _generic(jsonl(rows), "rows.jsonl")
    assert Response.objects.filter(model_name="m2", text="").count() == 1
    assert [str(w) for w in report.warnings] == [
        "rows.jsonl, line 4, field `output`: is empty: imported as an empty response"
    ]
    assert report.as_dict()["warning_count"] == 1


def test_strict_turns_warnings_into_errors_and_writes_nothing():
    rows = [
        *GENERIC,
        {"qid": "b", "prompt": "Count to 3.", "output": "", "model": "m2"},
    ]
    with pytest.raises(DomainError) as caught:
        _generic(jsonl(rows), "rows.jsonl", strict=True)
    assert "with strict, warnings are errors" in caught.value.message
    assert "line 4, field `output`: is empty" in str(caught.value.problems[0])
    assert not Dataset.objects.exists()


def test_an_empty_flask_output_is_a_warning(tmp_path):
    evals = tmp_path / "eval.jsonl"
    evals.write_text(
        json.dumps({"idx": 1, "instruction": "Say hi.", "skill": ["Readability"]})
        + "\n"
    )
    outputs = tmp_path / "bard.jsonl"
    outputs.write_text(json.dumps({"question_id": 1, "text": ""}) + "\n")
    out = StringIO()
    call_command(
        "import_flask",
        str(evals),
        "--outputs",
        str(outputs),
        "--dataset",
        "f",
        stdout=out,
    )
    assert "warnings:      1" in out.getvalue()
    assert "field `text`: is empty: imported as an empty response" in out.getvalue()
    assert Response.objects.get(model_name="bard").text == ""
    with pytest.raises(CommandError, match="with strict, warnings are errors"):
        call_command(
            "import_flask",
            str(evals),
            "--outputs",
            str(outputs),
            "--dataset",
            "g",
            "--strict",
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert not Dataset.objects.filter(name="g").exists()


PAIRS = [
    {"prompt": "P1", "response_1": "Same.", "response_2": "Same.", "label": "tie"},
    {
        "prompt": "P2",
        "response_1": "Same again.",
        "response_2": "Same again.",
        "label": "2",
    },
    {"prompt": "P3", "response_1": "", "response_2": "Something.", "label": "2"},
    {
        "prompt": "P4",
        "response_1": "A.",
        "response_2": "B.",
        "label": "1",
        "voter": "v1",
    },
    {
        "prompt": "P4",
        "response_1": "A.",
        "response_2": "B.",
        "label": "2",
        "voter": "v1",
    },
]


@pytest.mark.parametrize(
    ("name", "encode"),
    [("prefs.jsonl", jsonl), ("prefs.parquet", parquet), ("prefs.json", None)],
)
def test_preference_quirks_are_accepted_counted_and_listed(name, encode):
    data = (encode or (lambda rows: json.dumps(rows).encode()))(PAIRS)
    report = preferences_import(
        dataset_name="bench",
        file=name,
        data=data,
        fmt="jsonl",
        verdict_writer=imported_verdicts,
    )
    assert report.rows == 5 and report.created_preferences == 5
    assert PreferencePair.objects.count() == 4
    assert HumanPreference.objects.count() == 5
    warnings = [(w["line"], w["field"], w["message"][:30]) for w in report.warnings]
    assert warnings == [
        (1, "response_2", "is the same text as response_1"),
        (2, "response_2", "is the same text as response_1"),
        (3, "response_1", "is empty: kept as an empty res"),
        (5, "voter", "voter 'v1' already voted on th"),
    ]
    # Two identical anonymous responses are two stored responses.
    twin = PreferencePair.objects.get(instruction__text="P1")
    assert twin.response_1.text == twin.response_2.text == "Same."
    assert twin.response_1_id != twin.response_2_id
    assert twin.response_2.model_name.endswith("-twin")


def test_preference_strict_refuses_with_nothing_written():
    with pytest.raises(DomainError) as caught:
        preferences_import(
            dataset_name="bench",
            file="prefs.jsonl",
            data=jsonl(PAIRS),
            fmt="jsonl",
            verdict_writer=imported_verdicts,
            strict=True,
        )
    assert len(caught.value.problems) == 4
    assert not Dataset.objects.exists()


def test_import_preferences_command_reads_gzip_and_prints_warnings(tmp_path):
    path = tmp_path / "prefs.jsonl.gz"
    path.write_bytes(gzip.compress(jsonl(PAIRS)))
    out = StringIO()
    call_command("import_preferences", str(path), "--dataset", "bench", stdout=out)
    assert "warnings:      4" in out.getvalue()
    assert "line 3, field `response_1`: is empty" in out.getvalue()


def test_judge_results_import_reads_parquet():
    _generic(jsonl(GENERIC), "rows.jsonl")
    dataset = Dataset.objects.get(name="public")
    user = UserFactory(username="importer", role="researcher")
    rows = [
        {"id": "a", "model": "m1", "skill": "Readability", "score": "4"},
        {"id": "b", "model": "m1", "skill": "Readability", "score": "N/A"},
    ]
    run = judge_run_import(
        dataset=dataset,
        user=user,
        fmt="jsonl",
        files=[("judge.parquet", parquet(rows))],
    )
    assert run.kind == JudgeRun.Kind.IMPORTED
    assert sorted(run.scores.values_list("score", flat=True), key=str) == [4, None]


# --- what stays an error ------------------------------------------------------------------


def test_a_flask_idx_must_be_an_integer():
    data = jsonl(
        [
            {"idx": "abc", "instruction": "Say hi.", "skill": ["Readability"]},
            {"idx": "12", "instruction": "Count.", "skill": ["Readability"]},
        ]
    )
    with pytest.raises(DomainError) as caught:
        dataset_import_files(
            dataset_name="f", fmt="flask", files=[("eval.jsonl", data)]
        )
    assert [str(p) for p in caught.value.problems] == [
        "eval.jsonl, line 1, field `idx`: must be an integer, got 'abc'"
    ]
    # The generic importer keeps string ids.
    _generic(jsonl([{**GENERIC[0], "qid": "abc"}]), "rows.jsonl")


def test_a_field_over_the_size_limit_is_refused_before_anything_is_written(settings):
    settings.IMPORT_MAX_FIELD_BYTES = 1000
    rows = [*GENERIC, {"qid": "c", "prompt": "é" * 600, "output": "x", "model": "m1"}]
    with pytest.raises(DomainError) as caught:
        _generic(jsonl(rows), "rows.jsonl")
    assert [str(p) for p in caught.value.problems] == [
        "rows.jsonl, line 4, field `prompt`: is 1,200 bytes long; the limit is 1,000 "
        "(IMPORT_MAX_FIELD_BYTES)"
    ]
    assert not Dataset.objects.exists()
    big = [{**GENERIC[0], "output": "y" * 1001}]
    with pytest.raises(DomainError, match="field `output`: is 1,001 bytes long"):
        _generic(jsonl(big), "rows.jsonl")


# --- nesting, followed before the parser sees the bytes -----------------------------------

json_values = st.recursive(
    st.none() | st.integers() | st.text(alphabet='ab"\\[]{},\u00e9', max_size=6),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet='k"\\[{', max_size=3), children, max_size=3)
    ),
    max_leaves=30,
)


def _depth(value) -> int:
    if isinstance(value, dict | list):
        children = value.values() if isinstance(value, dict) else value
        return 1 + max((_depth(c) for c in children), default=0)
    return 0


def _first_too_deep(rows: list, limit: int) -> int | None:
    """The number (from 1) of the first row nested deeper than `limit`, else None."""
    for number, row in enumerate(rows, start=1):
        if _depth(row) > limit:
            return number
    return None


class _Chunks(io.RawIOBase):
    """`data` read back `size` bytes at a time, whatever the reader asks for."""

    def __init__(self, data: bytes, size: int):
        self._data, self._at, self._size = data, 0, size

    def read(self, n: int = -1) -> bytes:
        chunk = self._data[self._at : self._at + self._size]
        self._at += len(chunk)
        return chunk


@hyp_settings(max_examples=300, deadline=None)
@given(st.lists(json_values, max_size=5), st.integers(1, 9), st.booleans())
def test_the_nesting_guard_refuses_exactly_the_rows_too_deep(rows, size, ascii_only):
    limit = 3
    data = json.dumps(rows, ensure_ascii=ascii_only).encode()
    guard = formats.JSONNestingGuard(_Chunks(data, size), "f.json", limit + 1)
    read = b""
    expected = _first_too_deep(rows, limit)
    try:
        while chunk := guard.read(size):
            read += chunk
    except formats.FileProblem as refused:
        assert refused.problem.line == expected
        assert "nested more than 3 levels deep" in refused.problem.message
    else:
        assert expected is None and read == data


def test_decompression_stops_at_a_ratio_of_the_compressed_size():
    # 8 MiB of spaces in ~8 kB (of newlines, the blank-line bound would end it first:
    # tests/annotation/test_hostile_lines.py)
    bomb = gzip.compress(b" " * (8 << 20))
    with pytest.raises(DomainError) as caught:
        _generic(bomb, "bomb.jsonl.gz")
    limit = max(100 * len(bomb), 1 << 20)
    assert (
        f"decompresses to more than {limit:,} bytes "
        "(100 times its size, IMPORT_MAX_DECOMPRESSION_RATIO)"
    ) in str(caught.value)
    # Real data, far below the ratio, is read whole.
    rows = [dict(GENERIC[0], qid=f"q{i}") for i in range(3000)]
    _generic(gzip.compress(jsonl(rows)), "fine.jsonl.gz")
    assert Response.objects.filter(instruction__dataset__name="public").count() == 3000
