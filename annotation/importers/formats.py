"""The file formats `base.read_rows` reads besides JSON Lines and CSV: gzip, Parquet and
JSON arrays, as public datasets ship them (dataset hubs publish Parquet; many releases
are one JSON array, or JSON Lines compressed with gzip).

Recognised by their content, whatever the name or the chosen format says: gzip by its
magic bytes (``1f 8b``; the content inside is then recognised in turn), Parquet by
``PAR1``, a JSON array by its first character ``[``. Rows come out as dicts, like a JSON
Lines row, so every importer's `--map` and field checks apply unchanged; a row's number
(``line`` in the problems) counts rows from 1.

Streaming: every format is read from an open file, never from the whole file in memory:
a Parquet file one record batch at a time, a JSON array one element at a time (ijson), a
gzip stream decompressed as it is read. Decompression stops at
`IMPORT_MAX_DECOMPRESSED_BYTES` (a gzip bomb is a problem, not a full disk or memory);
only Parquet inside gzip (it needs to seek) and CSV (read whole, see `base`) are held
in memory, within that limit.
"""

from __future__ import annotations

import datetime as dt
import decimal
import gzip
import io
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from django.conf import settings

from flaskapp.errors import Problem
from flaskapp.untrusted import json_problem

GZIP_MAGIC = b"\x1f\x8b"
PARQUET_MAGIC = b"PAR1"
BATCH_ROWS = 2000


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
                    "(IMPORT_MAX_DECOMPRESSED_BYTES)",
                    file=self._file,
                )
            )
        return count

    def close(self) -> None:
        self._gzip.close()
        super().close()


def gunzip_stream(fileobj: BinaryIO, file: str) -> io.BufferedReader:
    """A buffered reader of the content of the gzip stream `fileobj` (decompressed as
    it is read, never whole)."""
    return io.BufferedReader(_GunzipRaw(fileobj, file), buffer_size=1 << 16)


def _plain(value, column: str):
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
        return [_plain(v, column) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, column) for k, v in value.items()}
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
    gzip file) is read into memory first, within the decompression limit."""
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
                    plain = {k: _plain(v, k) for k, v in row.items()}
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


def json_array_rows(
    stream: io.BufferedReader, file: str, problems: list[Problem]
) -> Iterator[tuple[int, dict]]:
    """The elements of a top-level JSON array, one at a time (ijson, reading `stream`
    as it goes); each must be an object. A syntax error ends the file (a problem naming
    the row reached)."""
    import ijson

    if stream.peek(3)[:3] == b"\xef\xbb\xbf":
        stream.read(3)
    number = 0
    try:
        for item in ijson.items(stream, "item", use_float=True):
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
