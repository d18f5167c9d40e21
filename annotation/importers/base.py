"""The one toolkit of every importer: rows, `--map` specs, score and N/A words, records.

Every importer (the FLASK formats, generic datasets, preferences, and judge results in
`judging.services.imports`) reads its files with `read_rows`, parses `--map FIELD=COLUMN`
with `parse_field_map`, reads scores with `parse_score` and recognises "not applicable"
with `is_na`; a second importer calls these instead of writing its own.

Everything here is pure: bytes in, records and `Problem`s out. No database access; the
caller passes what the parser must know about the database (the rubric's skills).
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from annotation.importers import formats
from flaskapp.errors import DomainError, Problem
from flaskapp.untrusted import JSONInputError, json_loads, json_syntax_error

DOMAIN_BY_NAME = {
    "humanities": "humanities",
    "language": "language",
    "culture": "culture",
    "health": "health",
    "history": "history",
    "natural science": "natural_science",
    "math": "math",
    "social science": "social_science",
    "technology": "technology",
    "coding": "coding",
}
# Spellings seen in the FLASK release besides the canonical names.
DOMAIN_ALIASES = {"social sciences": "social_science", "mathematics": "math"}

DIFFICULTY_BY_NAME = {
    "simple lifestyle knowledge": 1,
    "advanced lifestyle knowledge": 2,
    "formal education knowledge": 3,
    "major level knowledge": 4,
    "expert level knowledge": 5,
}
# The release marks labels its annotator could not parse with -1; they mean "unknown",
# and so does an N/A word (`is_na`).
UNKNOWN_SENTINELS = {"-1", "", "unknown"}
# THE words for "not applicable", wherever a score, label or verdict may be one: import
# files, judge replies. Compared by `is_na`, which ignores case, surrounding quotes and
# asterisks, spaces, hyphens and underscores ("Not-Applicable", "**N/A**").
NA_WORDS = frozenset({"n/a", "na", "n.a.", "n.a", "none", "null", "not applicable"})

MAX_DOMAINS = 2
# Column sizes of the models (external ids, model names and source tasks): a longer value
# would make PostgreSQL fail the whole import with a database error, not a line number.
MAX_IDENTIFIER_LENGTH = 200
SIGNED_INTEGER = re.compile(r"[+-]?\d+")


def content_key(
    text: str,
    reference_answer: str,
    source_task: str,
    domains,
    difficulty: int | None,
    skills,
    instance_rubric: dict | None = None,
) -> bytes:
    """A digest of what must be equal for a re-import of an instruction to be a no-op:
    compared instead of the texts themselves, so that a parsed instruction can let its
    texts go (`InstructionRecord.slimmed`) and the database's need not be read."""
    fields = [text, reference_answer, source_task, list(domains), difficulty]
    fields.append(list(skills))
    if instance_rubric:  # absent: the same key as before per-instance rubrics
        fields.append(instance_rubric)
    payload = json.dumps(fields, sort_keys=True)
    return hashlib.blake2b(payload.encode("utf-8"), digest_size=16).digest()


def text_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


# The one cap on the problems an import lists (`Problems`, `refusal`): a file of a
# million bad rows must not make a million messages (each may name the rubric's
# criteria: a 2 KB gzip upload once made 2.3 GB of them).
MAX_PROBLEMS = 1000


class Problems(list):
    """An import's problems, at most `MAX_PROBLEMS` of them kept: past the cap,
    `append` and `extend` only count them (`more`), so memory stays bounded whatever
    the file. A plain list everywhere else (`refusal` reads `more`)."""

    def __init__(self, problems=(), *, limit: int = MAX_PROBLEMS):
        super().__init__()
        self.limit = limit
        self.more = 0
        self.extend(problems)

    def append(self, problem: Problem) -> None:
        if len(self) < self.limit:
            super().append(problem)
        else:
            self.more += 1

    def extend(self, problems) -> None:
        for problem in problems:
            self.append(problem)
        self.more += getattr(problems, "more", 0)

    def __iadd__(self, problems):
        self.extend(problems)
        return self

    # The line at which reading stopped because the cap was reached (`until_full`).
    stopped_at: int | None = None

    @property
    def full(self) -> bool:
        return len(self) >= self.limit


def until_full(rows: Iterable[tuple[int | None, dict]], problems: Problems):
    """The (line, row) pairs of `rows` until `problems` holds `MAX_PROBLEMS`: then
    reading stops (the rest of the file is not read), and ``problems.stopped_at``
    records the line of the first row not read, which `refusal` states. For an
    import that is refused anyway once it has that many problems (issue 34: a gold
    file of 300,000 bad rows was read to the end, 11 s, only to count them)."""
    for line, row in rows:
        if problems.full:
            problems.stopped_at = line
            return
        yield line, row


def refusal(message: str, problems: list[Problem]) -> DomainError:
    """The `DomainError` refusing an import for `problems`: the first `MAX_PROBLEMS`
    listed, and the message saying how many more were found ("... (and 41,210 more
    problems)"), or, when reading stopped at the cap (`until_full`), how many at
    least and where ("... (and at least 2,000 more problems; reading stopped at line
    1,002)"). Every importer's refusal is made here."""
    more = max(0, len(problems) - MAX_PROBLEMS) + getattr(problems, "more", 0)
    stopped = getattr(problems, "stopped_at", None)
    if stopped is not None:
        message = (
            f"{message} (and at least {more:,} more problems; reading stopped at "
            f"line {stopped:,}, after the first {MAX_PROBLEMS:,} problems)"
        )
    elif more:
        message = f"{message} (and {more:,} more problems)"
    return DomainError(message, list(problems[:MAX_PROBLEMS]))


@dataclass(slots=True)  # many thousands of them are held during an import
class InstructionRecord:
    """One parsed instruction, ready to be written; or, `slim`, its ids, skills and
    digests only (the texts are read again from the file when it is written)."""

    external_id: str
    text: str
    line: int
    file: str
    reference_answer: str = ""
    source_task: str = ""
    domains: list[str] = field(default_factory=list)
    difficulty: int | None = None
    skills: list[str] = field(default_factory=list)  # skill keys, most relevant first
    checklist: list[dict] | None = None
    instance_rubric: dict[str, Any] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    is_hard: bool = False
    slim: bool = False
    keys: tuple[bytes, bytes] | None = field(default=None, repr=False)

    def content(self) -> bytes:
        """The `content_key` of this instruction (equal content, equal key)."""
        if self.keys is not None:
            return self.keys[0]
        return content_key(
            self.text,
            self.reference_answer,
            self.source_task,
            self.domains,
            self.difficulty,
            self.skills,
            self.instance_rubric,
        )

    def text_digest(self) -> bytes:
        return self.keys[1] if self.keys is not None else text_key(self.text)

    def slimmed(self) -> InstructionRecord:
        """This record without its texts (instruction, answer, checklist, metadata):
        what validation and planning need, a small fraction of the memory."""
        return InstructionRecord(
            external_id=self.external_id,
            text="",
            line=self.line,
            file=self.file,
            # Interned: the same few tasks, domains and skill keys recur on every row.
            source_task=sys.intern(self.source_task),
            domains=[sys.intern(d) for d in self.domains],
            difficulty=self.difficulty,
            skills=[sys.intern(k) for k in self.skills],
            is_hard=self.is_hard,
            slim=True,
            keys=(self.content(), self.text_digest()),
        )


@dataclass(slots=True)
class ResponseRecord:
    """One parsed model response to an instruction (by the instruction's external id)."""

    instruction_external_id: str
    model_name: str
    text: str
    line: int
    file: str
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParseResult:
    instructions: list[InstructionRecord] = field(default_factory=list)
    responses: list[ResponseRecord] = field(default_factory=list)
    # Human scores on the rows (generic files only; `annotation.importers.scores`).
    scores: list = field(default_factory=list)
    # Responses the rows point at by instruction id and model without giving their
    # text, (external id, model) -> (file, line, field): they must be in the dataset.
    referenced: dict = field(default_factory=dict)
    # Rows that name an instruction by id only, (external id) -> (file, line, field).
    referenced_instructions: dict = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=Problems)
    # Accepted but worth a look (an empty model response): listed in the report, or
    # refused as problems with `strict`.
    warnings: list[Problem] = field(default_factory=list)
    rows: int = 0
    preview: list[dict] = field(default_factory=list)
    had_rows: bool = False  # set by `release_rows`
    # With slim instructions: the full records again, read from the files, in order.
    reread: Callable[[], Iterator[InstructionRecord]] | None = None

    def extend(self, other: ParseResult) -> None:
        """Add `other`'s rows and findings (not its `reread`)."""
        self.instructions.extend(other.instructions)
        self.responses.extend(other.responses)
        self.scores.extend(other.scores)
        for key, where in other.referenced.items():
            self.referenced.setdefault(key, where)
        for key, where in other.referenced_instructions.items():
            self.referenced_instructions.setdefault(key, where)
        self.problems.extend(other.problems)
        self.warnings.extend(other.warnings)
        self.rows += other.rows
        self.preview.extend(other.preview[: max(0, PREVIEW_ROWS - len(self.preview))])

    def release_rows(self) -> None:
        """Let go of the parsed instructions and responses (their texts are most of an
        import's memory) once they are written; counts, problems, warnings and the
        preview stay, and `had_rows` still tells whether there were any."""
        self.had_rows = self.had_rows or bool(
            self.instructions or self.responses or self.scores
        )
        self.instructions = []
        self.responses = []
        self.scores = []

    @property
    def has_rows(self) -> bool:
        return self.had_rows or bool(self.instructions or self.responses or self.scores)


PREVIEW_ROWS = 10
# --- Names, N/A words and scores ------------------------------------------------------


def normalise_name(value: str) -> str:
    """Case-, underscore-, hyphen- and space-insensitive form used for exact matching."""
    return re.sub(r"[\s_\-]+", " ", value.strip().strip("'\"")).strip().lower()


def skill_lookup_for(skills: list[tuple[str, str]]) -> dict[str, str]:
    """Map normalised skill names and keys to skill keys, from (key, name) pairs."""
    lookup: dict[str, str] = {}
    for key, name in skills:
        lookup[normalise_name(name)] = key
        lookup[normalise_name(key)] = key
    return lookup


def _compact(text: str) -> str:
    """The form N/A words are compared in: lower case, no quotes, asterisks or gaps."""
    return re.sub(r"[\s_\-]+", "", text.strip().strip("'\"*`").lower())


_NA_KEYS = frozenset(_compact(word) for word in NA_WORDS)


def is_na(value: object) -> bool:
    """True when `value` is a string holding one of `NA_WORDS` ("N/A", "none", ...)."""
    return isinstance(value, str) and _compact(value) in _NA_KEYS


def is_unknown(value: str) -> bool:
    """True for the release's "could not parse" markers ("-1", empty, "unknown", N/A)."""
    return value.strip().strip("'\"").strip().lower() in UNKNOWN_SENTINELS or is_na(
        value
    )


def parse_score(value, *, csv_cell: bool = False) -> tuple[bool, int | None, str]:
    """(ok, score or None for N/A, problem text) for one score value of an import file.

    Accepts 1-5 as a number or numeric string ("4", "4.0") and an N/A word (`is_na`);
    a JSON null is N/A too, but an empty CSV cell (`csv_cell`) is refused (write N/A).
    """
    if value is None:
        if csv_cell:
            return False, None, "is empty; write a score 1-5 or N/A"
        return True, None, ""
    if isinstance(value, bool):
        return False, None, "must be a score 1-5 or N/A, got a boolean"
    if isinstance(value, str):
        if is_na(value):
            return True, None, ""
        try:
            value = float(value.strip().strip("'\"").strip())
        except ValueError:
            return False, None, f"score {value!r} is not a number 1-5 or N/A"
    if isinstance(value, int | float):
        if not math.isfinite(value) or not float(value).is_integer():
            return False, None, f"score {value!r} is not a whole number 1-5 or N/A"
        score = int(value)
        if not 1 <= score <= 5:
            return False, None, f"score {score} is out of range; use 1-5 or N/A"
        return True, score, ""
    return False, None, f"must be a score 1-5 or N/A, got {type_name(value)}"


# --- `--map FIELD=COLUMN` -------------------------------------------------------------


def parse_field_map(
    pairs: list[str] | Mapping[str, str] | None,
    fields: tuple[str, ...],
    *,
    distinct_columns: bool = False,
) -> dict[str, str]:
    """`["instruction=prompt", ...]` or {"instruction": "prompt"} -> {"instruction": "prompt"}.

    The one parser of `--map FIELD=COLUMN` specs, from a command line, a form or an
    API. Names and columns are stripped; a field left out is read from the column of
    its own name. Raises `ValueError` whose message names the `--map` spec at fault: no
    `=`, a field not in `fields`, an empty column, and, with `distinct_columns`, two
    fields (mapped or not) that would be read from the same column.
    """
    if not pairs:
        return {}
    if isinstance(pairs, Mapping):
        items = list(pairs.items())
    else:
        items = []
        for pair in pairs:
            if "=" not in pair:
                raise ValueError(f"--map {pair!r}: expected FIELD=COLUMN")
            items.append(tuple(pair.split("=", 1)))
    mapping: dict[str, str] = {}
    for name, column in items:
        name, column = str(name).strip(), str(column).strip()
        if name not in fields:
            raise ValueError(
                f"--map {name}={column}: unknown field {name!r}; fields are "
                + ", ".join(fields)
            )
        if not column:
            raise ValueError(f"--map {name}=: the column name is empty")
        mapping[name] = column
    if distinct_columns:
        columns = [mapping.get(n, n) for n in fields]
        doubled = sorted({c for c in columns if columns.count(c) > 1})
        if doubled:
            raise ValueError(
                "--map: two fields would be read from the same column "
                + ", ".join(repr(c) for c in doubled)
            )
    return mapping


# --- Files -----------------------------------------------------------------------------

# An import file's content: its bytes, or the path to read them from when they are
# needed (so a command holds one file in memory at a time, not all of them), or a
# source of rows of its own (`hub.HubDirectory`: a Hugging Face dataset directory,
# with `size` and `rows(...)`).
FileData = bytes | Path


def file_size(data: FileData) -> int:
    if hasattr(data, "rows"):
        return data.size
    return data.stat().st_size if isinstance(data, Path) else len(data)


@contextlib.contextmanager
def open_file_data(data: FileData) -> Iterator[io.BufferedReader]:
    """A buffered, seekable binary reader of `data` (the file at a path, or the bytes),
    closed on exit."""
    if isinstance(data, Path):
        with data.open("rb") as stream:
            yield stream
    else:
        with io.BufferedReader(io.BytesIO(data)) as stream:
            yield stream


def file_sha256(data: FileData) -> str:
    """The hex SHA-256 of a file's content, read in chunks."""
    digest = hashlib.sha256()
    with open_file_data(data) as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


# --- Reading rows ---------------------------------------------------------------------


def read_rows(
    data: FileData,
    *,
    file: str,
    fmt: str,
    problems: list[Problem],
    header_columns: Mapping[str, str] | None = None,
) -> Iterator[tuple[int, dict]]:
    """Yield (line number, row) for each row of a CSV (`fmt="csv"`) or JSON Lines file,
    or, recognised by their content whatever `fmt` says, of a Parquet file or a JSON
    array, any of them possibly gzip-compressed (`annotation.importers.formats`; there
    the number counts rows).

    The one reader of every importer. `data` is the file's bytes or its path; a path
    is read as the rows are consumed (JSON Lines line by line, JSON arrays element by
    element, Parquet batch by batch, CSV and gzip line by line), so a large file is
    never in memory whole. Line numbers are the file's own,
    counting from 1 (a UTF-8 byte-order mark is dropped; blank lines are skipped but
    counted; a CSV row is numbered by the line it ends on). A JSONL row is the line's
    JSON object; a CSV row maps each header column to its cell, an empty cell to None.

    Problems are appended to `problems`, never raised, each with its file and line.
    JSONL goes line by line: a bad line (not UTF-8, not JSON, not an object) is
    reported and skipped. CSV checks its header first: one that lacks a column of
    `header_columns` (field -> column) yields no row; a line that is not UTF-8 or not
    valid CSV ends the file; a row with more cells than the header is reported and
    skipped. An
    empty file yields no row. A damaged or oversized gzip stream ends the file with a
    problem (rows read before it have been yielded: the caller rejects the import on
    any problem).
    """
    if hasattr(data, "rows"):  # a directory of files (`hub.HubDirectory`)
        try:
            yield from data.rows(
                file=file, fmt=fmt, problems=problems, header_columns=header_columns
            )
        except formats.FileProblem as exc:
            problems.append(exc.problem)
        return
    with contextlib.ExitStack() as stack:
        stream = stack.enter_context(open_file_data(data))
        try:
            if formats.is_gzip(stream.peek(2)[:2]):
                stream = stack.enter_context(formats.gunzip_stream(stream, file))
            head = stream.peek(64)[:64]
            if formats.is_parquet(head):
                required = dict(header_columns or {})
                yield from formats.parquet_rows(stream, file, problems, required)
            elif formats.is_json_array(head):
                yield from formats.json_array_rows(stream, file, problems)
            elif fmt == "csv":
                yield from _csv_rows(stream, file, problems, header_columns or {})
            else:
                yield from _jsonl_rows(stream, file, problems)
        except formats.FileProblem as exc:
            problems.append(exc.problem)


# A file whose lines are blank this many times in a row is no data file: a CSV of
# newlines (issue 34) made the reader count 14 million blank lines for two minutes.
MAX_BLANK_RUN = 10_000


def max_line_bytes() -> int:
    """The longest line a CSV or JSON Lines file may have: eight fields of the largest
    size (`IMPORT_MAX_FIELD_BYTES`), at least 16 MiB. A gzip bomb of one line was read
    whole (95 MB) before any check."""
    from django.conf import settings

    return max(16 << 20, 8 * settings.IMPORT_MAX_FIELD_BYTES)


def _lines(stream: BinaryIO, file: str) -> Iterator[tuple[int, bytes]]:
    """(line number, bytes) of each line, ending the file with a `FileProblem` at a
    line longer than `max_line_bytes` or after `MAX_BLANK_RUN` blank lines in a row."""
    limit, blank_run, number = max_line_bytes(), 0, 0
    while raw := stream.readline(limit + 1):
        number += 1
        if len(raw) > limit and not raw.endswith(b"\n"):
            raise formats.FileProblem(
                Problem(f"the line is longer than {limit:,} bytes", line=number,
                        file=file)
            )  # fmt: skip
        blank_run = blank_run + 1 if not raw.strip() else 0
        if blank_run >= MAX_BLANK_RUN:
            raise formats.FileProblem(
                Problem(f"{MAX_BLANK_RUN:,} blank lines in a row: is this a data "
                        "file?", line=number, file=file)
            )  # fmt: skip
        yield number, raw


def _decode_lines(
    stream: BinaryIO, file: str, problems: list[Problem]
) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of `stream`, read and decoded one line at a
    time; a line that is not UTF-8 is reported and skipped; an overlong line or too
    many blank lines end the file (`_lines`)."""
    for number, raw in _lines(stream, file):
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(
                Problem(
                    f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                    f"{exc.start + 1}); save the file as UTF-8",
                    line=number,
                    file=file,
                )
            )


def _empty_file(file: str) -> Problem:
    return Problem("the file is empty", file=file)


def _jsonl_rows(
    stream: BinaryIO, file: str, problems: list[Problem]
) -> Iterator[tuple[int, dict]]:
    before = len(problems)
    blank = True
    for number, text in _decode_lines(stream, file, problems):
        if not text.strip():
            continue
        blank = False
        try:
            obj = json_loads(text, allow_nan=True)
        except JSONInputError as exc:
            # Too deep to parse, or text PostgreSQL cannot store (NUL, lone surrogate).
            problems.append(
                Problem(exc.message, line=number, field=exc.field, file=file)
            )
            continue
        except json.JSONDecodeError as exc:
            problems.append(
                Problem(
                    f"invalid JSON ({json_syntax_error(exc)})",
                    line=number,
                    file=file,
                )
            )
            continue
        if not isinstance(obj, dict):
            problems.append(
                Problem(
                    f"expected a JSON object, got {type(obj).__name__}",
                    line=number,
                    file=file,
                )
            )
            continue
        yield number, obj
    if blank and len(problems) == before:
        problems.append(_empty_file(file))


def _csv_rows(
    stream: BinaryIO,
    file: str,
    problems: list[Problem],
    header_columns: Mapping[str, str],
) -> Iterator[tuple[int, dict]]:
    """A CSV file's rows as it is read, line by line: the header is checked first (a
    missing column of `header_columns` yields no row), then each row is yielded; a line
    that is not UTF-8 or a CSV error ends the file with a problem (the rows before it
    were yielded: the caller refuses the import on any problem)."""
    not_utf8: list[Problem] = []

    def lines() -> Iterator[str]:
        for _, text in _decode_lines(stream, file, not_utf8):
            if not_utf8:  # the line before was not UTF-8: stop there
                break
            yield text + "\n"
        problems.extend(not_utf8)

    reader = csv.DictReader(lines())
    try:
        header = reader.fieldnames or []
        if not any(name.strip() for name in header):
            if any(any(cell.strip() for cell in row) for row in reader.reader):
                problems.append(
                    Problem(
                        "the first line, the CSV header, is empty", line=1, file=file
                    )
                )
            elif not not_utf8:
                problems.append(_empty_file(file))
            return
        missing = [
            f"`{column}` (for field `{name}`)"
            for name, column in header_columns.items()
            if column not in header
        ]
        if missing:
            problems.append(
                Problem(
                    "the CSV header has no column "
                    + ", ".join(missing)
                    + "; its columns are: "
                    + ", ".join(header),
                    line=1,
                    file=file,
                )
            )
            return
        for row in reader:
            if None in row:
                problems.append(
                    Problem(
                        f"has more cells than the header's {len(header)} columns "
                        f"({len(header) + len(row[None])} cells)",
                        line=reader.line_num,
                        file=file,
                    )
                )
                continue
            yield (
                reader.line_num,
                {k: (v if v != "" else None) for k, v in row.items()},
            )
    except csv.Error as exc:
        problems.append(Problem(f"CSV error: {exc}", line=reader.line_num, file=file))


# --- Reading fields of a row ----------------------------------------------------------


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "object", list: "array", str: "string", bool: "boolean"}.get(
        type(value),
        "number" if isinstance(value, int | float) else type(value).__name__,
    )


def duplicate_check(records: list, key_of, what: str, problems: list[Problem]) -> None:
    """Report every record whose key was already used earlier in the same input."""
    seen: dict[Any, Any] = {}
    for record in records:
        key = key_of(record)
        if key in seen:
            first = seen[key]
            problems.append(
                Problem(
                    f"duplicate {what} {key if not isinstance(key, tuple) else key[0]!r} "
                    f"(first seen on line {first.line}"
                    f"{'' if first.file == record.file else ' of ' + first.file})",
                    line=record.line,
                    file=record.file,
                )
            )
        else:
            seen[key] = record
