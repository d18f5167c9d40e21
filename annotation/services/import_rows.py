"""Writing an import's rows: the response rules against the dataset, COPY on
PostgreSQL (batched INSERTs elsewhere), and model-output files streamed into the
database one row at a time (`stream_outputs`). The callers in `imports` plan, hold
the transaction and decide; nothing here commits or reports to the user."""

from __future__ import annotations

import contextlib
import hashlib
import json
import queue
from collections.abc import Callable, Iterable, Iterator

from django.db import connection
from django.db.models.functions import MD5
from django.utils import timezone
from psycopg.copy import QueuedLibpqWriter

from annotation.importers.base import (
    FileData,
    InstructionRecord,
    ParseResult,
    ResponseRecord,
)
from annotation.importers.flask import iter_outputs, outputs_model
from annotation.models import (
    Dataset,
    Instruction,
    InstructionSkill,
    Response,
    Skill,
)
from annotation.services.import_report import ImportReport
from flaskapp.errors import DomainError, Problem

BATCH = 5000


class ResponsePlanner:
    """The one home of the rules for an imported response against the dataset.

    `is_new(record)` says whether the record is to be written: a response whose
    instruction is neither in the dataset nor among the instructions being imported
    is a problem (summed up per file, with a sample of ids, by `problems()`); one
    already stored with the same text is counted unchanged in `report`; one stored
    with a different text is a problem (imported responses are immutable).
    `ids` maps the dataset's instruction ids to keys; `known` is every instruction
    id the import can point at (stored or being imported); `models` the models
    whose stored responses are compared (loaded once, as hashes: 32 characters a row
    instead of every response text).
    """

    def __init__(
        self, dataset, *, ids: dict[str, int], known: set[str], models, report
    ):
        self.ids = ids
        self.known = known
        self.report = report
        self.unknown: dict[str, list] = {}
        self.conflicts: list[Problem] = []
        self.existing: dict[tuple[int, str], str] = {}
        if dataset is not None and dataset.pk is not None and models:
            self.existing = {
                (iid, model): digest
                for iid, model, digest in Response.objects.filter(
                    instruction__dataset=dataset, model_name__in=models
                )
                .annotate(digest=MD5("text"))
                .values_list("instruction_id", "model_name", "digest")
            }

    def is_new(self, response: ResponseRecord) -> bool:
        if response.instruction_external_id not in self.known:
            self.unknown.setdefault(response.file, []).append(
                (response.line, response.instruction_external_id)
            )
            return False
        iid = self.ids.get(response.instruction_external_id)
        digest = self.existing.get((iid, response.model_name)) if iid else None
        if digest is None:
            self.report.created_responses += 1
            return True
        if digest != hashlib.md5(response.text.encode("utf-8")).hexdigest():
            self.conflicts.append(
                Problem(
                    f"the response of model {response.model_name!r} to instruction "
                    f"{response.instruction_external_id!r} already exists with different "
                    "text; imported responses are immutable",
                    line=response.line,
                    file=response.file,
                )
            )
        else:
            self.report.unchanged += 1
        return False

    def problems(self) -> list[Problem]:
        out = []
        for file, rows in self.unknown.items():
            sample = ", ".join(
                sorted({ext for _, ext in rows}, key=lambda x: (len(x), x))[:20]
            )
            out.append(
                Problem(
                    f"{len(rows)} responses name instruction ids that are not in the "
                    f"dataset (first on line {rows[0][0]}): {sample}",
                    file=file,
                )
            )
        return out + self.conflicts


RESPONSE_COLUMNS = ["instruction_id", "model_name", "text", "metadata", "created_at"]


class _ShortQueueWriter(QueuedLibpqWriter):
    """psycopg's queued COPY writer with a short queue: the server keeps storing rows
    while Python makes the next ones, but when the server is the slower side (an
    instruction's full-text index entry costs more than its parsing), at most
    `QUEUE` buffers of about 32 KiB wait in memory, not psycopg's 1,024."""

    QUEUE = 32

    def __init__(self, cursor):
        super().__init__(cursor)
        self._queue = queue.Queue(maxsize=self.QUEUE)


class RowWriter:
    """Rows into one table as they come: one COPY on PostgreSQL (sent by a background
    thread, so the server stores rows while Python reads the next ones), batched
    INSERTs elsewhere. Use as a context manager; nothing is sent after `stop()`."""

    def __init__(self, model, columns: list[str]):
        self.table = model._meta.db_table
        self.columns = columns
        self.stopped = False
        self._batch: list[tuple] = []

    def __enter__(self):
        cols = ", ".join(f'"{c}"' for c in self.columns)
        if connection.vendor == "postgresql":
            connection.ensure_connection()
            self._cursor = connection.connection.cursor()
            self._copy_cm = self._cursor.copy(
                f'COPY "{self.table}" ({cols}) FROM STDIN',
                writer=_ShortQueueWriter(self._cursor),
            )
            self._copy = self._copy_cm.__enter__()
        else:
            self._copy = None
            placeholders = ", ".join(["%s"] * len(self.columns))
            self._insert = (
                f'INSERT INTO "{self.table}" ({cols}) VALUES ({placeholders})'
            )
        return self

    def write(self, row: tuple) -> None:
        if self.stopped:
            return
        if self._copy is not None:
            self._copy.write_row(row)
            return
        self._batch.append(row)
        if len(self._batch) >= 500:
            self._flush()

    def stop(self) -> None:
        self.stopped = True
        self._batch = []

    def _flush(self) -> None:
        with connection.cursor() as cursor:
            cursor.executemany(self._insert, self._batch)
        self._batch = []

    def __exit__(self, *exc):
        if self._copy is not None:
            try:
                self._copy_cm.__exit__(*exc)
            finally:
                self._cursor.close()
        elif self._batch and exc[0] is None:
            self._flush()
        return False


def copy_rows(model, columns: list[str], rows: list[tuple]) -> None:
    """Insert rows fast: COPY on PostgreSQL, batched bulk INSERT elsewhere."""
    if not rows:
        return
    table = model._meta.db_table
    if connection.vendor == "postgresql":
        cols = ", ".join(f'"{c}"' for c in columns)
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f'COPY "{table}" ({cols}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(row)
        return
    placeholders = ", ".join(["%s"] * len(columns))
    cols = ", ".join(f'"{c}"' for c in columns)
    with connection.cursor() as cursor:
        for start in range(0, len(rows), 500):
            cursor.executemany(
                f'INSERT INTO "{table}" ({cols}) VALUES ({placeholders})',
                rows[start : start + 500],
            )


INSTRUCTION_COLUMNS = [
    "id",
    "dataset_id",
    "external_id",
    "text",
    "reference_answer",
    "source_task",
    "domain_1",
    "domain_2",
    "difficulty",
    "is_hard",
    "checklist",
    "instance_rubric",
    "metadata",
    "position",
]


def copy_instructions(
    dataset: Dataset,
    records: Iterable[InstructionRecord],
    count: int,
    ids: dict[str, int],
    start: int,
) -> None:
    """COPY new instructions with keys taken from the table's sequence beforehand, so
    their ids are known without reading the rows back (PostgreSQL only; elsewhere
    `bulk_create`). Fills `ids`. The values are those `bulk_create` would store: the
    JSON columns as `json.dumps` text (tests/annotation/test_import_streaming.py reads
    every column back on both databases). `records` (`count` of them) is read once,
    as it is written."""
    if not count:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT nextval(pg_get_serial_sequence(%s, 'id')) "
            "FROM generate_series(1, %s)",
            [Instruction._meta.db_table, count],
        )
        keys = [pk for (pk,) in cursor.fetchall()]
    with RowWriter(Instruction, INSTRUCTION_COLUMNS) as writer:
        for i, (r, pk) in enumerate(zip(records, keys, strict=True)):
            ids[r.external_id] = pk
            writer.write(
                (
                    pk,
                    dataset.pk,
                    r.external_id,
                    r.text,
                    r.reference_answer,
                    r.source_task,
                    r.domains[0] if r.domains else "",
                    r.domains[1] if len(r.domains) > 1 else "",
                    r.difficulty,
                    r.is_hard,
                    None if r.checklist is None else json.dumps(r.checklist),
                    json.dumps(r.instance_rubric),
                    json.dumps(r.metadata),
                    start + i,
                )
            )


def write_planned(
    dataset: Dataset,
    new_instructions: list[InstructionRecord],
    new_responses: list,
    ids: dict[str, int],
    reread: Callable[[], Iterator[InstructionRecord]] | None = None,
) -> None:
    """Write the planned rows. Caller holds the transaction. Slim instructions (see
    `dataset_parse_files`) are written from `reread`, which yields the full records
    in the order they were parsed; each must match its slim record's digest (a file
    changed since it was checked raises `DomainError`, and the caller rolls back)."""
    skill_ids = dict(
        Skill.objects.filter(rubric_id=dataset.rubric_id).values_list("key", "pk")
    )
    start = Instruction.objects.filter(dataset=dataset).count()
    records: Iterable[InstructionRecord] = new_instructions
    if any(r.slim for r in new_instructions):
        if reread is None:
            raise ValueError("slim instructions need `reread` to be written")
        records = _full_records(new_instructions, reread())
    if connection.vendor == "postgresql":
        copy_instructions(dataset, records, len(new_instructions), ids, start)
    else:
        records = list(records)  # SQLite, the embedded development database
        objs = [
            Instruction(
                dataset=dataset,
                external_id=r.external_id,
                text=r.text,
                reference_answer=r.reference_answer,
                source_task=r.source_task,
                domain_1=r.domains[0] if r.domains else "",
                domain_2=r.domains[1] if len(r.domains) > 1 else "",
                difficulty=r.difficulty,
                is_hard=r.is_hard,
                checklist=r.checklist,
                instance_rubric=r.instance_rubric,
                metadata=r.metadata,
                position=start + i,
            )
            for i, r in enumerate(records)
        ]
        Instruction.objects.bulk_create(objs, batch_size=BATCH)
        for record, obj in zip(records, objs, strict=True):
            ids[record.external_id] = obj.pk
    links = [
        (ids[r.external_id], skill_ids[key], rank)
        for r in new_instructions
        for rank, key in enumerate(r.skills)
    ]
    copy_rows(InstructionSkill, ["instruction_id", "skill_id", "rank"], links)
    now = timezone.now()
    if connection.vendor != "postgresql":
        # Raw INSERTs bypass the field's adapter; store what Django itself would.
        now = connection.ops.adapt_datetimefield_value(now)
    rows = [
        (
            ids[r.instruction_external_id],
            r.model_name,
            r.text,
            json.dumps(r.metadata),
            now,
        )
        for r in new_responses
    ]
    copy_rows(
        Response,
        ["instruction_id", "model_name", "text", "metadata", "created_at"],
        rows,
    )


def _full_records(
    slim: list[InstructionRecord], full: Iterator[InstructionRecord]
) -> Iterator[InstructionRecord]:
    """The full record of each slim one, in order, from `full` (every valid record of
    the same files, in parse order: a superset, holding duplicates the plan left
    out)."""

    def changed(at: InstructionRecord) -> DomainError:
        return DomainError(
            "the file changed while it was being imported; import it again",
            [Problem("changed during the import", line=at.line, file=at.file)],
        )

    wanted = iter(slim)
    target = next(wanted, None)
    for record in full:
        if target is None:
            return
        if (record.file, record.line) != (target.file, target.line):
            continue
        if record.content() != target.content():
            raise changed(record)
        yield record
        target = next(wanted, None)
    if target is not None:
        raise changed(target)


def stream_outputs(
    dataset: Dataset | None,
    files: list[tuple[str, FileData]],
    *,
    ids: dict[str, int],
    known: set[str],
    model: str | None,
    report: ImportReport,
    plan: bool,
    write: bool,
) -> list[Problem]:
    """Read FLASK output files one at a time, checking each response as it is read
    and, while `write` holds and no problem has been found, sending it to the
    database in one COPY for all files. Returns every problem (parse, duplicate and,
    with `plan`, unknown instruction and changed text: without it, as when the
    instructions had problems, only the files themselves are checked); counts, rows
    and warnings go to `report`. The caller holds the transaction and rolls it back
    on a problem."""
    models = [outputs_model(name, model) for name, _ in files]
    report.models = sorted(set(report.models) | {m for m in models if m})
    planner = ResponsePlanner(
        dataset, ids=ids, known=known, models=models, report=report
    )
    repeated = {m for m in models if models.count(m) > 1}
    seen: dict[tuple[str, str], tuple[str, int]] = {}
    problems: list[Problem] = []
    now = timezone.now()
    if connection.vendor != "postgresql":
        # Raw INSERTs bypass the field's adapter; store what Django itself would.
        now = connection.ops.adapt_datetimefield_value(now)
    with contextlib.ExitStack() as stack:
        writer = (
            stack.enter_context(RowWriter(Response, RESPONSE_COLUMNS))
            if write
            else None
        )
        for name, data in files:
            part = ParseResult()
            file_seen: dict[str, int] = {}
            for record in iter_outputs(data, file=name, model_name=model, result=part):
                ext = record.instruction_external_id
                first = file_seen.setdefault(ext, record.line)
                if first != record.line:
                    part.problems.append(
                        Problem(
                            f"duplicate response for question id {ext!r} "
                            f"(first seen on line {first})",
                            line=record.line,
                            file=name,
                        )
                    )
                    continue
                if record.model_name in repeated:
                    other = seen.setdefault(
                        (ext, record.model_name), (name, record.line)
                    )
                    if other[0] != name:
                        part.problems.append(
                            Problem(
                                f"model {record.model_name!r} already has a response "
                                f"to instruction {ext!r} on line {other[1]} of "
                                f"{other[0]} (two files for one model? name it with "
                                "--model)",
                                line=record.line,
                                file=name,
                            )
                        )
                        continue
                if plan and planner.is_new(record) and writer is not None:
                    writer.write(
                        (
                            ids[ext],
                            record.model_name,
                            record.text,
                            json.dumps(record.metadata),
                            now,
                        )
                    )
                if writer is not None and (
                    part.problems or planner.unknown or planner.conflicts
                ):
                    writer.stop()
            report.rows += part.rows
            report.warnings.extend(part.warnings)
            problems.extend(part.problems)
            if problems and writer is not None:
                writer.stop()
    if plan:
        problems.extend(planner.problems())
    return problems
