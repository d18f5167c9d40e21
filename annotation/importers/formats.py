"""The file formats `base.read_rows` reads besides JSON Lines and CSV: gzip, Parquet and
JSON arrays, as public datasets ship them (dataset hubs publish Parquet; many releases
are one JSON array, or JSON Lines compressed with gzip).

Recognised by their content, whatever the name or the chosen format says: gzip by its
magic bytes (``1f 8b``; the content inside is then recognised in turn), Parquet by
``PAR1``, a JSON array by its first character ``[``. Rows come out as dicts, like a JSON
Lines row, so every importer's `--map` and field checks apply unchanged; a row's number
(``line`` in the problems) counts rows from 1.

Streaming: every format is read from an open file, never from the whole file in memory:
a Parquet file one record batch at a time, a JSON array one element at a time (ijson,
behind `JSONNestingGuard`, which refuses nesting past `MAX_JSON_DEPTH` before ijson
sees it), a gzip stream decompressed as it is read. Decompression stops at
`IMPORT_MAX_DECOMPRESSED_BYTES`, or sooner at `IMPORT_MAX_DECOMPRESSION_RATIO` times
the compressed size (a gzip bomb is a problem, not a full disk, memory or minutes);
only Parquet inside gzip (it needs to seek) is held in memory, within that limit.
"""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import io
import re
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from django.conf import settings

from flaskapp.errors import Problem
from flaskapp.optional import PARQUET
from flaskapp.untrusted import MAX_JSON_DEPTH, json_problem

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
BATCH_ROWS = 2000
# The ratio limit never refuses less than this (a small file of repeated values).
MIN_RATIO_LIMIT = 1 << 20


class FileProblem(Exception):
    """A problem that ends the reading of a whole file (bad or oversized gzip), raised
    from inside a stream so that `base.read_rows` can record it and stop."""

    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


def is_gzip(head: bytes) -> bool:
    return head[:2] == GZIP_MAGIC


def is_parquet(head: bytes) -> bool:
    return head[:4] == PARQUET_MAGIC


def is_json_array(text_start: bytes) -> bool:
    return text_start.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"["


class _GunzipRaw(io.RawIOBase):
    """The decompressed bytes of a gzip stream, counted against
    `IMPORT_MAX_DECOMPRESSED_BYTES`; a damaged stream or one past the limit raises
    `FileProblem` from the read that finds it."""

    def __init__(self, fileobj: BinaryIO, file: str):
        self._gzip = gzip.GzipFile(fileobj=fileobj)
        self._file = file
        self._limit = settings.IMPORT_MAX_DECOMPRESSED_BYTES
        self._setting = "IMPORT_MAX_DECOMPRESSED_BYTES"
        size = _size(fileobj)
        ratio = settings.IMPORT_MAX_DECOMPRESSION_RATIO
        if size is not None and max(size * ratio, MIN_RATIO_LIMIT) < self._limit:
            self._limit = max(size * ratio, MIN_RATIO_LIMIT)
            self._setting = f"{ratio} times its size, IMPORT_MAX_DECOMPRESSION_RATIO"
        self._count = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        try:
            count = self._gzip.readinto(buffer)
        except (OSError, EOFError, zlib.error) as exc:
            raise FileProblem(
                Problem(f"is not a valid gzip file ({exc})", file=self._file)
            ) from exc
        self._count += count
        if self._count > self._limit:
            raise FileProblem(
                Problem(
                    f"decompresses to more than {self._limit:,} bytes "
                    f"({self._setting})",
                    file=self._file,
                )
            )
        return count

    def close(self) -> None:
        self._gzip.close()
        super().close()


def _size(fileobj: BinaryIO) -> int | None:
    """The size of a seekable stream (its position kept), else None."""
    try:
        here = fileobj.tell()
        end = fileobj.seek(0, io.SEEK_END)
        fileobj.seek(here)
    except (OSError, ValueError, AttributeError):
        return None
    return end


def gunzip_stream(fileobj: BinaryIO, file: str) -> io.BufferedReader:
    """A buffered reader of the content of the gzip stream `fileobj` (decompressed as
    it is read, never whole)."""
    return io.BufferedReader(_GunzipRaw(fileobj, file), buffer_size=1 << 16)


def plain_value(value, column: str):
    """A Parquet cell as a JSON-like value (what a JSON Lines row would hold)."""
    if isinstance(value, bytes):
        raise ValueError(f"column `{column}` holds binary data, not text")
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, list):
        return [plain_value(v, column) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v, column) for k, v in value.items()}
    return value


def parquet_rows(
    stream: BinaryIO,
    file: str,
    problems: list[Problem],
    required_columns: dict[str, str],
) -> Iterator[tuple[int, dict]]:
    """Rows of a Parquet file, one record batch at a time. A file whose schema lacks a
    column of `required_columns` (field -> column) yields no row. Parquet is read by
    seeking (its index is at the end): a stream that cannot seek (the content of a
    gzip file) is read into memory first, within the decompression limit. Without
    pyarrow (an optional package, `flaskapp.optional`) the file is one problem
    saying so, and yields no row."""
    if not PARQUET.available():
        problems.append(Problem(PARQUET.missing(), file=file))
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = stream if stream.seekable() else pa.BufferReader(stream.read())
    try:
        parquet = pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        problems.append(Problem(f"is not a readable Parquet file ({exc})", file=file))
        return
    names = parquet.schema_arrow.names
    missing = [
        f"`{column}` (for field `{name}`)"
        for name, column in required_columns.items()
        if column not in names
    ]
    if missing:
        problems.append(
            Problem(
                "the Parquet file has no column "
                + ", ".join(missing)
                + "; its columns are: "
                + ", ".join(names),
                file=file,
            )
        )
        return
    number = 0
    try:
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
            for row in batch.to_pylist():
                number += 1
                try:
                    plain = {k: plain_value(v, k) for k, v in row.items()}
                except ValueError as exc:
                    problems.append(Problem(str(exc), line=number, file=file))
                    continue
                problem = json_problem(plain)
                if problem is not None:
                    problems.append(
                        Problem(
                            problem.message, line=number, field=problem.field, file=file
                        )
                    )
                    continue
                yield number, plain
    except (pa.ArrowException, OSError) as exc:
        problems.append(
            Problem(
                f"the Parquet file is damaged after row {number} ({exc})", file=file
            )
        )


# The rest of a JSON string after its opening quote, up to its closing quote (which
# is not part of the match); a whole string. Both run in the regex engine, not in a
# Python loop over bytes.
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b"[]{},")


class JSONNestingGuard:
    """A JSON stream read through, its nesting followed as the bytes pass: past
    `max_depth` levels, the read raises `FileProblem` naming the row, before the
    parser sees the bytes. ijson's C parser takes seconds per thousand levels of
    ``[[[[...`` while holding the GIL (a 200 KB file held a web worker until it was
    killed); this scan is linear and mostly in C: strings are cut out by a regex,
    then only the brackets and commas left are walked."""

    def __init__(self, stream: BinaryIO, file: str, max_depth: int):
        self._stream = stream
        self._file = file
        self._max_depth = max_depth
        self._depth = 0
        self._row = 1  # the element of the top-level array being read
        self._in_string = False
        self._escaped = False  # the last chunk ended with a backslash in a string

    def read(self, size: int = -1) -> bytes:
        chunk = self._stream.read(size)
        self._scan(chunk)
        return chunk

    def _scan(self, chunk: bytes) -> None:
        if self._in_string:
            start = min(len(chunk), 1 if self._escaped else 0)
            end = _STRING_REST.match(chunk, start).end()
            if end == len(chunk) or chunk[end] == 0x5C:  # the string goes on
                self._escaped = end < len(chunk)  # a backslash, the last byte
                return
            self._in_string = self._escaped = False
            chunk = chunk[end + 1 :]
        outside = _STRING.sub(b"", chunk)
        quote = outside.find(b'"')
        if quote >= 0:  # a string begins that the next chunk continues
            tail = outside[quote:]
            self._in_string = True
            self._escaped = _STRING_REST.match(tail, 1).end() == len(tail) - 1
            outside = outside[:quote]
        self._walk(outside.translate(None, _NOT_STRUCTURE))

    def _walk(self, structure: bytes) -> None:
        """Follow the brackets and top-level commas `structure` holds, in order."""
        depth, row = self._depth, self._row
        for byte in structure:
            if byte == 0x2C:  # a comma
                row += depth == 1
            elif byte == 0x5B or byte == 0x7B:  # [ {
                depth += 1
                if depth > self._max_depth:
                    raise FileProblem(
                        Problem(
                            f"is nested more than {self._max_depth - 1} levels deep",
                            line=row,
                            file=self._file,
                        )
                    )
            else:
                depth -= 1
        self._depth, self._row = depth, row


def json_array_rows(
    stream: io.BufferedReader, file: str, problems: list[Problem]
) -> Iterator[tuple[int, dict]]:
    """The elements of a top-level JSON array, one at a time (ijson, reading `stream`
    as it goes); each must be an object. A syntax error ends the file (a problem naming
    the row reached), and so does an element nested more than `MAX_JSON_DEPTH` levels
    deep, found before it is parsed (`JSONNestingGuard`)."""
    import ijson

    if stream.peek(3)[:3] == b"\xef\xbb\xbf":
        stream.read(3)
    guarded = JSONNestingGuard(stream, file, MAX_JSON_DEPTH + 1)  # + the array itself
    number = 0
    try:
        for item in ijson.items(guarded, "item", use_float=True):
            number += 1
            if not isinstance(item, dict):
                kind = type(item).__name__
                problems.append(
                    Problem(
                        f"expected a JSON object, got {kind}", line=number, file=file
                    )
                )
                continue
            problem = json_problem(item)
            if problem is not None:
                problems.append(
                    Problem(
                        problem.message, line=number, field=problem.field, file=file
                    )
                )
                continue
            yield number, item
    except ijson.common.IncompleteJSONError as exc:
        problems.append(
            Problem(
                f"invalid JSON after row {number} ({str(exc).strip()[:200]})",
                line=number + 1,
                file=file,
            )
        )
    except UnicodeDecodeError:
        problems.append(
            Problem(
                "not valid UTF-8; save the file as UTF-8", line=number + 1, file=file
            )
        )
