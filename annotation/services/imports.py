"""Dataset import: files -> validate every row -> one transaction -> dataset.

A bad file changes nothing and the error names the file, line and field. Re-importing
the same rows is a no-op; instructions and responses are immutable once imported (a
changed text under an existing id is an error, because scores may already refer to it).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models.functions import MD5
from django.utils import timezone

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.importers.base import (
    MAX_IDENTIFIER_LENGTH,
    MAX_PROBLEMS,
    InstructionRecord,
    ParseResult,
    ResponseRecord,
    skill_lookup_for,
)
from annotation.importers.flask import parse_eval_set, parse_outputs
from annotation.importers.generic import parse_generic, parse_mapping
from annotation.models import (
    Dataset,
    ImportJob,
    Instruction,
    InstructionSkill,
    Response,
    Rubric,
    Skill,
)
from annotation.services.rubrics import rubric_get_default

log = logging.getLogger(__name__)

FORMATS = {choice for choice, _ in ImportJob.Format.choices}
BATCH = 5000


@dataclass
class ImportReport:
    """What an import did (or, for a dry run, would do)."""

    dataset: str
    rows: int = 0
    created_instructions: int = 0
    created_responses: int = 0
    unchanged: int = 0
    models: list[str] = field(default_factory=list)
    dry_run: bool = False
    rubric: str = ""
    # FLASK-Hard marking (dataset_import_flask only): instructions now marked, and the
    # hard-set lines whose instruction text is not in the dataset ("file, line N (id X)").
    hard_marked: int = 0
    hard_unmatched: list[str] = field(default_factory=list)
    # Accepted but worth a look (e.g. empty responses), each with file, line, field.
    warnings: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "rows": self.rows,
            "created_instructions": self.created_instructions,
            "created_responses": self.created_responses,
            "unchanged": self.unchanged,
            "models": self.models,
            "dry_run": self.dry_run,
            "rubric": self.rubric,
            "hard_marked": self.hard_marked,
            "hard_unmatched": self.hard_unmatched,
            "warnings": [w.as_dict() for w in self.warnings[:MAX_PROBLEMS]],
            "warning_count": len(self.warnings),
        }


def import_check_sizes(*, sizes: list[tuple[str, int]]) -> None:
    """Refuse files over `settings.IMPORT_MAX_BYTES`; `sizes` is (file name, bytes).

    Callers that read from disk call this before reading, so an oversized file is
    refused without being loaded. Raises `DomainError` naming each file and the limit.
    """
    limit = settings.IMPORT_MAX_BYTES
    too_big = [
        Problem(
            f"the file is {size:,} bytes ({size / 1e6:.1f} MB), over the import limit "
            f"of {limit:,} bytes ({limit / 1e6:.1f} MB, setting IMPORT_MAX_BYTES)",
            file=name,
        )
        for name, size in sizes
        if size > limit
    ]
    if too_big:
        raise DomainError("file too large", too_big)


def check_size(files: list[tuple[str, bytes]]) -> None:
    import_check_sizes(sizes=[(name, len(data)) for name, data in files])


def dataset_parse_files(
    *,
    fmt: str,
    files: list[tuple[str, bytes]],
    skill_lookup: dict[str, str],
    options: dict,
) -> ParseResult:
    """Parse every file in format `fmt` (pure: no database). Problems are collected."""
    if fmt not in FORMATS:
        raise DomainError(
            f"unknown format {fmt!r}; use one of: {', '.join(sorted(FORMATS))}"
        )
    if not files:
        raise DomainError("no file given")
    check_size(files)
    try:
        mapping = parse_mapping(options.get("mapping"))
    except ValueError as exc:
        raise DomainError(str(exc), [Problem(str(exc), field="map")]) from exc
    if (
        options.get("model")
        and fmt == ImportJob.Format.FLASK_OUTPUTS
        and len(files) > 1
    ):
        raise DomainError(
            "--model names one model, but several output files were given"
        )
    result = ParseResult()
    for name, data in files:
        if fmt == ImportJob.Format.FLASK:
            part = parse_eval_set(
                data,
                file=name,
                skill_lookup=skill_lookup,
                hard=bool(options.get("hard")),
            )
        elif fmt == ImportJob.Format.FLASK_OUTPUTS:
            part = parse_outputs(data, file=name, model_name=options.get("model"))
        else:
            part = parse_generic(
                data,
                file=name,
                fmt=fmt,
                skill_lookup=skill_lookup,
                mapping=mapping,
                default_model=options.get("model"),
            )
        result.extend(part)
    if len(files) > 1:
        _merge_across_files(result)
    return result


def _merge_across_files(result: ParseResult) -> None:
    """Reconcile rows that several files give for the same instruction or response.

    Each parser checks duplicates inside its own file only; without this, two files
    with the same id (or two output files whose names give the same model) would get
    past validation and fail on a unique constraint mid-write. An instruction given
    identically by two files is one instruction; differing ones, and any response
    given twice, are problems naming both places.
    """
    first: dict[str, InstructionRecord] = {}
    instructions = []
    for record in result.instructions:
        seen = first.setdefault(record.external_id, record)
        if seen is record or seen.file == record.file:
            instructions.append(record)  # a same-file duplicate is already a problem
        elif seen.content() != record.content():
            result.problems.append(
                Problem(
                    f"instruction {record.external_id!r} is also on line {seen.line} of "
                    f"{seen.file}, with different text or metadata",
                    line=record.line,
                    file=record.file,
                )
            )
    result.instructions = instructions
    seen_responses: dict[tuple[str, str], ResponseRecord] = {}
    for response in result.responses:
        key = (response.instruction_external_id, response.model_name)
        seen = seen_responses.setdefault(key, response)
        if seen is not response and seen.file != response.file:
            result.problems.append(
                Problem(
                    f"model {response.model_name!r} already has a response to instruction "
                    f"{response.instruction_external_id!r} on line {seen.line} of "
                    f"{seen.file} (two files for one model? name it with --model)",
                    line=response.line,
                    file=response.file,
                )
            )


def _existing_instructions(dataset: Dataset | None) -> dict[str, tuple[int, tuple]]:
    """external id -> (pk, content tuple) for every instruction of `dataset` (2 queries)."""
    if dataset is None or dataset.pk is None:
        return {}
    rows = list(
        Instruction.objects.filter(dataset=dataset).values_list(
            "pk",
            "external_id",
            "text",
            "reference_answer",
            "source_task",
            "domain_1",
            "domain_2",
            "difficulty",
        )
    )
    skills: dict[int, list[str]] = {}
    for instruction_id, key in (
        InstructionSkill.objects.filter(instruction__dataset=dataset)
        .order_by("instruction_id", "rank")
        .values_list("instruction_id", "skill__key")
    ):
        skills.setdefault(instruction_id, []).append(key)
    out = {}
    for pk, ext, text, ref, task, d1, d2, diff in rows:
        domains = tuple(d for d in (d1, d2) if d)
        out[ext] = (pk, (text, ref, task, domains, diff, tuple(skills.get(pk, []))))
    return out


def _plan(
    dataset: Dataset | None, parsed: ParseResult
) -> tuple[list[InstructionRecord], list, dict[str, int], ImportReport, list[Problem]]:
    """Decide what is new, unchanged or conflicting, against the database (read only)."""
    problems: list[Problem] = []
    report = ImportReport(dataset=dataset.name if dataset else "", rows=parsed.rows)
    existing = _existing_instructions(dataset)
    ids: dict[str, int] = {ext: pk for ext, (pk, _) in existing.items()}
    new_instructions: list[InstructionRecord] = []
    for record in parsed.instructions:
        known = existing.get(record.external_id)
        if known is None:
            new_instructions.append(record)
        elif known[1] != record.content():
            problems.append(
                Problem(
                    f"instruction {record.external_id!r} already exists in the dataset with "
                    "different text or metadata; imported instructions are immutable "
                    "(import into a new dataset instead)",
                    line=record.line,
                    file=record.file,
                )
            )
        else:
            report.unchanged += 1
    report.created_instructions = len(new_instructions)

    new_ids = {r.external_id for r in new_instructions}
    unknown: dict[str, list] = {}
    for response in parsed.responses:
        if response.instruction_external_id not in ids and (
            response.instruction_external_id not in new_ids
        ):
            unknown.setdefault(response.file, []).append(response)
    for file, responses in unknown.items():
        sample = ", ".join(
            sorted(
                {r.instruction_external_id for r in responses},
                key=lambda x: (len(x), x),
            )[:20]
        )
        problems.append(
            Problem(
                f"{len(responses)} responses name instruction ids that are not in the dataset "
                f"(first on line {responses[0].line}): {sample}",
                file=file,
            )
        )

    models = sorted({r.model_name for r in parsed.responses})
    report.models = models
    existing_responses: dict[tuple[int, str], str] = {}
    if dataset is not None and dataset.pk is not None and models:
        # Compare by hash: moving 32 characters per row instead of every response text.
        existing_responses = {
            (iid, model): digest
            for iid, model, digest in Response.objects.filter(
                instruction__dataset=dataset, model_name__in=models
            )
            .annotate(digest=MD5("text"))
            .values_list("instruction_id", "model_name", "digest")
        }
    new_responses = []
    for response in parsed.responses:
        iid = ids.get(response.instruction_external_id)
        digest = existing_responses.get((iid, response.model_name)) if iid else None
        if digest is None:
            new_responses.append(response)
        elif digest != hashlib.md5(response.text.encode("utf-8")).hexdigest():
            problems.append(
                Problem(
                    f"the response of model {response.model_name!r} to instruction "
                    f"{response.instruction_external_id!r} already exists with different "
                    "text; imported responses are immutable",
                    line=response.line,
                    file=response.file,
                )
            )
        else:
            report.unchanged += 1
    report.created_responses = len(new_responses)
    return new_instructions, new_responses, ids, report, problems


def _copy_rows(model, columns: list[str], rows: list[tuple]) -> None:
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


def _write(
    dataset: Dataset,
    new_instructions: list[InstructionRecord],
    new_responses: list,
    ids: dict[str, int],
) -> None:
    """Write the planned rows. Caller holds the transaction."""
    skill_ids = dict(
        Skill.objects.filter(rubric_id=dataset.rubric_id).values_list("key", "pk")
    )
    start = Instruction.objects.filter(dataset=dataset).count()
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
            metadata=r.metadata,
            position=start + i,
        )
        for i, r in enumerate(new_instructions)
    ]
    Instruction.objects.bulk_create(objs, batch_size=BATCH)
    for record, obj in zip(new_instructions, objs, strict=True):
        ids[record.external_id] = obj.pk
    links = [
        (ids[r.external_id], skill_ids[key], rank)
        for r in new_instructions
        for rank, key in enumerate(r.skills)
    ]
    _copy_rows(InstructionSkill, ["instruction_id", "skill_id", "rank"], links)
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
    _copy_rows(
        Response,
        ["instruction_id", "model_name", "text", "metadata", "created_at"],
        rows,
    )


def dataset_named(dataset_name: str | None) -> tuple[str, Dataset | None]:
    """The cleaned dataset name and the dataset of that name, if it exists."""
    name = (dataset_name or "").strip()
    if not name:
        raise DomainError(
            "the dataset name is empty", [Problem("is empty", field="dataset")]
        )
    if len(name) > MAX_IDENTIFIER_LENGTH:
        raise DomainError(
            f"the dataset name is {len(name)} characters long; the limit is "
            f"{MAX_IDENTIFIER_LENGTH}",
            [Problem("is too long", field="dataset")],
        )
    return name, Dataset.objects.filter(name=name).select_related("rubric").first()


def rubric_for(dataset: Dataset | None, options: dict) -> Rubric:
    """The dataset's rubric; for a new dataset `options["rubric_id"]` or the default.

    A `rubric_id` given for an existing dataset is ignored (the upload form offers the
    choice on every upload and says it only applies to new datasets).
    """
    if dataset is not None:
        return dataset.rubric
    if options.get("rubric_id"):
        rubric = Rubric.objects.filter(pk=options["rubric_id"]).first()
        if rubric is None:
            raise DomainError(
                f"rubric {options['rubric_id']} does not exist",
                [Problem("no such rubric", field="rubric")],
            )
        return rubric
    return rubric_get_default()


def skill_lookup(rubric: Rubric) -> dict[str, str]:
    return skill_lookup_for(list(rubric.skills.values_list("key", "name")))


def import_parsed(
    *,
    dataset_name: str,
    dataset: Dataset | None,
    rubric: Rubric | None,
    parsed: ParseResult,
    options: dict,
    user,
    dry_run: bool,
    rubric_factory: Callable[[], Rubric] | None = None,
    after_write: Callable[[Dataset | None, ImportReport], None] | None = None,
) -> ImportReport:
    """Plan and write validated rows in one transaction (shared by the import services).

    `rubric_factory` creates the new dataset's rubric inside the transaction (so a
    refused import leaves no rubric behind); `after_write` runs last, inside it. A new
    dataset needs `roles.can_create_dataset(user)` (`user` None: a trusted caller).
    """
    if parsed.problems:
        raise DomainError("the file was not imported", parsed.problems[:MAX_PROBLEMS])
    if options.get("strict") and parsed.warnings:
        raise DomainError(
            "the file was not imported: with strict, warnings are errors",
            parsed.warnings[:MAX_PROBLEMS],
        )
    if not parsed.instructions and not parsed.responses:
        raise DomainError("the file has no rows to import")
    if dataset is None and user is not None:
        roles.require_dataset_creator(user, dataset_name)
    with transaction.atomic():
        if dataset is None and not dry_run:
            if rubric_factory is not None:
                rubric = rubric_factory()
            try:
                with transaction.atomic():
                    dataset = Dataset.objects.create(
                        name=dataset_name,
                        rubric=rubric,
                        created_by=user,
                        description=options.get("description", ""),
                    )
            except IntegrityError as exc:
                raise DomainError(
                    f"dataset {dataset_name!r} was created by another import meanwhile; "
                    "run this import again"
                ) from exc
        elif dataset is not None:
            # Serialise concurrent imports into the same dataset.
            Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
        new_instructions, new_responses, ids, report, problems = _plan(dataset, parsed)
        report.dataset = dataset_name
        report.rubric = str(rubric) if rubric is not None else ""
        report.warnings = list(parsed.warnings)
        if problems:
            raise DomainError("the file was not imported", problems[:MAX_PROBLEMS])
        report.dry_run = dry_run
        if not dry_run:
            _write(dataset, new_instructions, new_responses, ids)
        if after_write is not None:
            after_write(dataset, report)
    log.info("import into %s: %s", dataset_name, report.as_dict())
    return report


def dataset_import_files(
    *,
    dataset_name: str,
    fmt: str,
    files: list[tuple[str, bytes]],
    options: dict | None = None,
    user=None,
    dry_run: bool = False,
) -> ImportReport:
    """Validate `files` completely, then write them into dataset `dataset_name` at once.

    Formats: ``flask`` (evaluation set), ``flask_outputs`` (model outputs; the dataset
    must exist), ``jsonl`` / ``csv`` (generic rows, `options["mapping"]`). Options:
    ``rubric_id`` (for a new dataset; default the built-in rubric; ignored for an
    existing one), ``model`` (one output file's model name; for generic rows, the
    model of rows that name none), ``hard`` (mark instructions FLASK-Hard),
    ``description``, ``strict`` (refuse the file when it has warnings, e.g. an empty
    response, instead of listing them in the report).

    Raises `DomainError` listing every problem (file, line, field); then nothing is
    written. Idempotent: rows already present with the same content are counted as
    unchanged. Runs in its own transaction; `dry_run` writes nothing.
    """
    options = options or {}
    dataset_name, dataset = dataset_named(dataset_name)
    if dataset is None and fmt == ImportJob.Format.FLASK_OUTPUTS:
        raise DomainError(
            f"dataset {dataset_name!r} does not exist; import its instructions first",
            [Problem("no such dataset", field="dataset")],
        )
    rubric = rubric_for(dataset, options)
    parsed = dataset_parse_files(
        fmt=fmt, files=files, skill_lookup=skill_lookup(rubric), options=options
    )
    return import_parsed(
        dataset_name=dataset_name,
        dataset=dataset,
        rubric=rubric,
        parsed=parsed,
        options=options,
        user=user,
        dry_run=dry_run,
    )
