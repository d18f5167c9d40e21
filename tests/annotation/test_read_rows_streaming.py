"""`read_rows` reads a file given by its path as the rows are consumed: the memory it
holds stays far below the file's size, whatever the format (JSON Lines, gzip, a JSON
array), and a damaged gzip stream still ends in a problem naming the file."""

from __future__ import annotations

import gzip
import json
import tracemalloc

import pytest

from annotation.importers.base import read_rows

ROWS = 3000
TEXT = "word " * 800  # 4 kB a row: 12 MB in all


def _rows():
    return [{"id": str(i), "text": f"{i} {TEXT}"} for i in range(ROWS)]


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


ENCODINGS = {
    "rows.jsonl": _jsonl,
    "rows.jsonl.gz": lambda rows: gzip.compress(_jsonl(rows), compresslevel=1),
    "rows.json": lambda rows: json.dumps(rows).encode(),
}


@pytest.mark.parametrize("name", sorted(ENCODINGS))
def test_a_file_on_disk_is_read_as_it_is_consumed(tmp_path, name, settings):
    settings.IMPORT_MAX_DECOMPRESSION_RATIO = 10_000  # TEXT repeats one word
    path = tmp_path / name
    path.write_bytes(ENCODINGS[name](_rows()))
    problems = []
    seen = 0
    tracemalloc.start()
    try:
        for number, row in read_rows(path, file=name, fmt="jsonl", problems=problems):
            assert row["id"] == str(number - 1)
            seen += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert problems == []
    assert seen == ROWS
    content = ROWS * len(TEXT)
    # Reading everything at once would hold the whole content (12 MB) at least once.
    assert peak < content / 10, f"peak {peak:,} bytes for {content:,} bytes of text"


def test_a_gzip_file_damaged_midway_yields_its_first_rows_then_a_problem(tmp_path):
    whole = gzip.compress(_jsonl(_rows()[:200]))
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) // 2])
    problems = []
    rows = list(read_rows(path, file="cut.jsonl.gz", fmt="jsonl", problems=problems))
    assert 0 < len(rows) < 200
    assert len(problems) == 1
    assert problems[0].file == "cut.jsonl.gz"
    assert "not a valid gzip file" in problems[0].message


@pytest.mark.parametrize(
    "content",
    [b"", b"\n  \n\n", gzip.compress(b"\n\n", mtime=0)],
    ids=["empty", "blank-lines", "gzip-of-blank-lines"],  # same ids on every worker
)
def test_an_empty_file_on_disk_is_one_problem(tmp_path, content):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(content)
    for fmt in ("jsonl", "csv"):
        problems = []
        assert list(read_rows(path, file="e", fmt=fmt, problems=problems)) == []
        assert [p.message for p in problems] == ["the file is empty"]


@pytest.mark.django_db
def test_slim_instructions_are_written_from_the_file_read_again(tmp_path):
    """The FLASK import keeps instructions without their texts while it checks them
    and reads the texts again to write them: what lands is what the file says."""
    from annotation.models import Instruction
    from annotation.services.flask import dataset_import_flask

    rows = [
        {"idx": i, "instruction": f"Question {i}: " + "why? " * 50, "answer": f"A{i}"}
        for i in range(1, 40)
    ]
    path = tmp_path / "eval.jsonl"
    path.write_bytes(_jsonl(rows))
    dataset_import_flask(dataset_name="slim", eval_files=[(str(path), path)])
    stored = dict(
        Instruction.objects.filter(dataset__name="slim").values_list(
            "external_id", "text"
        )
    )
    assert stored == {str(r["idx"]): r["instruction"] for r in rows}


def test_a_file_changed_between_check_and_write_is_refused():
    from annotation.importers.base import InstructionRecord
    from annotation.services.import_rows import _full_records
    from flaskapp.errors import DomainError

    checked = [InstructionRecord(external_id="1", text="old", line=1, file="f")]
    slim = [r.slimmed() for r in checked]
    changed = iter([InstructionRecord(external_id="1", text="new", line=1, file="f")])
    with pytest.raises(DomainError) as caught:
        list(_full_records(slim, changed))
    assert caught.value.problems[0].line == 1
    same = iter([InstructionRecord(external_id="1", text="old", line=1, file="f")])
    assert [r.text for r in _full_records(slim, same)] == ["old"]
    with pytest.raises(DomainError):
        list(_full_records(slim, iter([])))  # rows gone


def _csv(rows) -> bytes:
    return ("id,text\n" + "".join(f'{r["id"]},"{r["text"]}"\n' for r in rows)).encode()


def _peak(read) -> int:
    tracemalloc.start()
    try:
        read()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("gzipped", [False, True], ids=["csv", "csv-gzip"])
def test_a_csv_file_is_read_as_it_is_consumed_its_header_checked_first(
    tmp_path, gzipped, settings
):
    settings.IMPORT_MAX_DECOMPRESSION_RATIO = 10_000  # TEXT repeats one word
    data = _csv(_rows())
    path = tmp_path / "rows.csv"
    path.write_bytes(gzip.compress(data, compresslevel=1) if gzipped else data)
    content = ROWS * len(TEXT)
    problems, seen = [], []

    def consume():
        for number, row in read_rows(
            path, file="rows.csv", fmt="csv", problems=problems
        ):
            seen.append(number)
            assert row["id"] == str(number - 2)

    peak = _peak(consume)
    assert problems == [] and len(seen) == ROWS
    assert peak < content / 10, f"peak {peak:,} bytes for {content:,} bytes of text"
    # A header without the columns asked for: refused after its first line.
    refused = []

    def wrong_header():
        read = read_rows(
            path,
            file="rows.csv",
            fmt="csv",
            problems=refused,
            header_columns={"instruction": "prompt"},
        )
        assert list(read) == []

    peak = _peak(wrong_header)
    assert [(p.line, p.message[:33]) for p in refused] == [
        (1, "the CSV header has no column `pro")
    ]
    assert peak < content / 10, f"peak {peak:,} bytes for {content:,} bytes of text"
