"""The one CSV encoder every export uses, and the JSON Lines encoder beside it.

Spreadsheets run a cell that starts with `=`, `+`, `-` or `@` as a formula, and tab,
carriage return or NUL at the start of a cell lets one through as well (CSV injection);
some trim leading whitespace first. Every text cell that starts with one of these
characters, or with whitespace and then one of them, is written with a leading
apostrophe, as OWASP recommends: spreadsheets show the text and run nothing, and the
apostrophe tells a reader the cell was neutralised. Numbers (int, float, Decimal,
negative ones too) are written as numbers, untouched; so are empty cells. JSON Lines
is not read by spreadsheets and is written unchanged.

Contract of `csv_cell`: None -> "", booleans -> "true"/"false", lists -> `;`-joined
text (then neutralised), dicts -> a JSON object with sorted keys ("" when empty),
numbers as they are, any other value as `str(value)` neutralised.
"""

from __future__ import annotations

import csv
import io
import json
import operator
from collections.abc import Iterable, Iterator
from decimal import Decimal

# Characters that make a spreadsheet treat a cell as a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\0")
_TRIGGERS = frozenset(FORMULA_STARTS)
# First characters that send a text cell to the full check: the triggers, and
# whitespace (some spreadsheets trim a cell before reading it, so " =1+1" is a formula).
_CHECK = _TRIGGERS | {chr(c) for c in range(0x3001) if chr(c).isspace()}
# Rows buffered before a chunk of text is yielded (streaming exports stay flat in memory).
ROWS_PER_WRITE = 500


def neutralise(text: str) -> str:
    """`text` with a leading `'` when it starts with a formula character, or with
    whitespace followed by one."""
    first = text[:1]
    if first in _TRIGGERS or (first.isspace() and text.lstrip()[:1] in _TRIGGERS):
        return "'" + text
    return text


def csv_cell(value) -> str | int | float | Decimal:
    """How one value is written in a CSV cell (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | Decimal):
        return value
    if isinstance(value, str):
        return neutralise(value)
    if isinstance(value, list | tuple):
        return neutralise(";".join(str(v) for v in value))
    if isinstance(value, dict):
        if not value:
            return ""
        return neutralise(json.dumps(value, ensure_ascii=False, sort_keys=True))
    return neutralise(str(value))


def csv_rows(header: list[str] | None, rows: Iterable[Iterable]) -> Iterator[str]:
    """Encode `rows` (sequences of values) as CSV after an optional `header`, every
    cell through `csv_cell`, yielding chunks of text of `ROWS_PER_WRITE` rows."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    if header is not None:
        writer.writerow([csv_cell(h) for h in header])
    pending = 0
    cell = csv_cell
    for row in rows:
        # The common cells (null, ints, text not starting with a formula character)
        # skip the call (csv writes None as ""): this loop runs once per score.
        writer.writerow(
            [
                v
                if v is None
                or (t := type(v)) is int
                or (t is str and v[:1] not in _CHECK)
                else cell(v)
                for v in row
            ]
        )
        pending += 1
        if pending >= ROWS_PER_WRITE:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
            pending = 0
    yield buffer.getvalue()


def csv_dicts(fields: list[str], rows: Iterable[dict]) -> Iterator[str]:
    """Encode dict `rows` as CSV with header `fields`, in that column order."""
    if len(fields) == 1:  # itemgetter of one key returns the value, not a tuple
        return csv_rows(fields, ([row[fields[0]]] for row in rows))
    return csv_rows(fields, map(operator.itemgetter(*fields), rows))


def csv_text(rows: Iterable[Iterable]) -> str:
    """A small table (first row the header) as one CSV string."""
    return "".join(csv_rows(None, rows))


# `json.dumps(row, ensure_ascii=False)` builds an encoder per call; one encoder, the
# same output (rows are flat dicts of plain values: no cycle to check for).
_JSON_LINE = json.JSONEncoder(ensure_ascii=False, check_circular=False).encode


def jsonl(rows: Iterable[dict]) -> Iterator[str]:
    """Encode `rows` as JSON Lines (one object per line), yielding chunks of text:
    each line is ``json.dumps(row, ensure_ascii=False)``."""
    lines: list[str] = []
    encode = _JSON_LINE
    for row in rows:
        lines.append(encode(row))
        if len(lines) >= ROWS_PER_WRITE:
            lines.append("")
            yield "\n".join(lines)
            lines = []
    if lines:
        lines.append("")
        yield "\n".join(lines)


# Rows per Parquet row group: a group is built in memory before it is written.
PARQUET_ROWS = 20000


class _ByteSink(io.RawIOBase):
    """A write-only stream that keeps what is written until `drain` takes it, so a
    Parquet file can be streamed one row group at a time."""

    def __init__(self) -> None:
        super().__init__()
        self._parts: list[bytes] = []
        self._position = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._position += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._position

    def drain(self) -> bytes:
        chunk = b"".join(self._parts)
        self._parts = []
        return chunk


def parquet(rows: Iterable[dict], schema) -> Iterator[bytes]:
    """Encode dict `rows` as one Parquet file of `schema` (a `pyarrow.Schema` whose
    field names are the rows' keys), yielding its bytes one row group of
    `PARQUET_ROWS` rows at a time (memory stays at one group). A value of a `string`
    field that is not text (a number) is written as its `str`; the file has the
    schema even with no rows. No CSV neutralising: Parquet is not read as formulas."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    text = [f.name for f in schema if pa.types.is_string(f.type)]
    sink = _ByteSink()
    writer = pq.ParquetWriter(sink, schema, compression="zstd")
    batch: list[dict] = []

    def flush() -> bytes:
        for row in batch:
            for name in text:
                value = row[name]
                if value is not None and not isinstance(value, str):
                    row[name] = str(value)
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        batch.clear()
        return sink.drain()

    for row in rows:
        batch.append(dict(row))
        if len(batch) >= PARQUET_ROWS:
            yield flush()
    if batch:
        yield flush()
    writer.close()
    yield sink.drain()
