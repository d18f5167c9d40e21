"""Dataset import: files -> validate every row -> one transaction -> dataset.

A bad file changes nothing and the error names the file, line and field. Re-importing
the same rows is a no-op; instructions and responses are immutable once imported (a
changed text under an existing id is an error, because scores may already refer to it).
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from annotation.importers.base import (
    MAX_IDENTIFIER_LENGTH,
    MAX_PROBLEMS,
    FileData,
    InstructionRecord,
    ParseResult,
    Problems,
    ResponseRecord,
    content_key,
    file_size,
    refusal,
    skill_lookup_for,
)
from annotation.importers.flask import (
    iter_eval_set,
    parse_eval_set,
    parse_outputs,
)
from annotation.importers.generic import parse_generic, parse_mapping
from annotation.importers.hub import hub_directory, is_zip, unzip_directory
from annotation.importers.taxonomy import FLASK, Taxonomy, taxonomy_parse
from annotation.models import (
    DATASET_FORMAT_CHOICES,
    Dataset,
    ImportJob,
    Instruction,
    InstructionSkill,
    Rubric,
)
from annotation.services.import_report import ImportReport
from annotation.services.import_rows import (
    ResponsePlanner,
    stream_outputs,
    write_planned,
)
from annotation.services.rubrics import rubric_get_default
from annotation.services.score_imports import (
    rubric_scales,
    scores_plan,
    scores_write,
)
from flaskapp import bounds, roles, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.limits import model_text_problems
from flaskapp.params import ascii_int
from flaskapp.untrusted import printable, text_problem

log = logging.getLogger(__name__)

FORMATS = {choice for choice, _ in DATASET_FORMAT_CHOICES}


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


def check_size(files: list[tuple[str, FileData]]) -> None:
    import_check_sizes(sizes=[(name, file_size(data)) for name, data in files])


def dataset_parse_files(
    *,
    fmt: str,
    files: list[tuple[str, FileData]],
    skill_lookup: dict[str, str],
    options: dict,
    slim: bool = False,
    scales: dict | None = None,
    taxonomy: Taxonomy = FLASK,
) -> ParseResult:
    """Parse every file in format `fmt` (pure: no database). Problems are collected.

    `slim` (FLASK evaluation sets only): the instructions are kept without their
    texts, and `reread` of the result reads them again, file by file, when they are
    written; so the memory an import holds does not grow with the texts' size. The
    files must then stay readable (and unchanged) until the import is written.
    `scales` (generic formats): the rubric's criteria rows may score
    (`score_imports.rubric_scales`); none, no score is read. `taxonomy` (generic
    formats): the dataset's (`taxonomy_for`); FLASK's formats use FLASK's. A
    generic file that is a zip is a Hugging Face dataset directory, extracted into a
    temporary directory for its parse (`importers.hub`; `options["split"]` chooses
    among its splits)."""
    if fmt not in FORMATS:
        raise DomainError(
            f"unknown format {fmt!r}; use one of: {', '.join(sorted(FORMATS))}"
        )
    if not files:
        raise DomainError("no file given")
    if fmt in (ImportJob.Format.FLASK, ImportJob.Format.FLASK_OUTPUTS) and (
        options.get("taxonomy") is not None or options.get("facets")
    ):
        raise DomainError(
            "the file was not imported",
            [
                Problem(
                    "FLASK's own files use FLASK's taxonomy; a dataset declares its "
                    "own with the generic formats (jsonl, csv)",
                    field="taxonomy",
                )
            ],
        )
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
    for name, file_data in files:
        if fmt == ImportJob.Format.FLASK:
            part = parse_eval_set(
                file_data,
                file=name,
                skill_lookup=skill_lookup,
                hard=bool(options.get("hard")),
                slim=slim,
            )
        elif fmt == ImportJob.Format.FLASK_OUTPUTS:
            part = parse_outputs(file_data, file=name, model_name=options.get("model"))
        else:
            with tempfile.TemporaryDirectory(prefix="flask-import-") as tmp:
                if is_zip(file_data):  # a zipped Hugging Face dataset directory
                    root = unzip_directory(file_data, into=Path(tmp), file=name)
                    file_data = hub_directory(root, options.get("split"))
                part = parse_generic(
                    file_data,
                    file=name,
                    fmt=fmt,
                    skill_lookup=skill_lookup,
                    mapping=mapping,
                    default_model=options.get("model"),
                    scales=scales,
                    taxonomy=taxonomy,
                )
        result.extend(part)
    if len(files) > 1:
        _merge_across_files(result)
    if slim and fmt == ImportJob.Format.FLASK:
        hard = bool(options.get("hard"))

        def reread() -> Iterator[InstructionRecord]:
            for name, file_data in files:
                yield from iter_eval_set(
                    file_data,
                    file=name,
                    skill_lookup=skill_lookup,
                    hard=hard,
                    result=ParseResult(),
                )

        result.reread = reread
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


def _existing_instructions(dataset: Dataset | None) -> dict[str, tuple[int, bytes]]:
    """external id -> (pk, `content_key`) for every instruction of `dataset` (2
    queries)."""
    if dataset is None or dataset.pk is None:
        return {}
    skills: dict[int, list[str]] = {}
    for instruction_id, key in (
        InstructionSkill.objects.filter(instruction__dataset=dataset)
        .order_by("instruction_id", "rank")
        .values_list("instruction_id", "skill__key")
    ):
        skills.setdefault(instruction_id, []).append(key)
    rows = Instruction.objects.filter(dataset=dataset).values_list(
        "pk",
        "external_id",
        "text",
        "reference_answer",
        "source_task",
        "domain_1",
        "domain_2",
        "difficulty",
        "instance_rubric",
    )
    out = {}
    # Streamed: only the keys are kept, not the dataset's texts.
    for pk, ext, text, ref, task, d1, d2, diff, own in rows.iterator(chunk_size=2000):
        domains = tuple(d for d in (d1, d2) if d)
        key = content_key(text, ref, task, domains, diff, skills.get(pk, []), own)
        out[ext] = (pk, key)
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

    models = sorted({r.model_name for r in parsed.responses})
    report.models = models
    planner = ResponsePlanner(
        dataset,
        ids=ids,
        known=set(ids) | {r.external_id for r in new_instructions},
        models=models,
        report=report,
    )
    new_responses = [r for r in parsed.responses if planner.is_new(r)]
    problems.extend(planner.problems())
    problems.extend(
        scores_plan(
            dataset,
            parsed,
            known=planner.known,
            existing=set(existing),
            report=report,
        )
    )
    return new_instructions, new_responses, ids, report, problems


def dataset_named(
    dataset_name: str | None, workspace=None
) -> tuple[str, Dataset | None]:
    """The cleaned dataset name and the dataset of that name in `workspace` (None:
    the default workspace), if it exists. Names are unique per workspace: another
    workspace's dataset of the same name is not this one."""
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
    workspace = workspace or workspaces.default_workspace()
    return name, (
        Dataset.objects.filter(name=name, workspace=workspace)
        .select_related("rubric")
        .first()
    )


def rubric_for(dataset: Dataset | None, options: dict, workspace=None) -> Rubric:
    """The dataset's rubric; for a new dataset `options["rubric_id"]` or the default.

    A `rubric_id` given for an existing dataset is ignored (the upload form offers the
    choice on every upload and says it only applies to new datasets). Any rubric will
    do: rating, judging and human scores work on every scale and label set.
    """
    if dataset is not None:
        return dataset.rubric
    if options.get("rubric_id"):
        # Only a built-in rubric or one of the import's workspace (another
        # workspace's rubric does not exist here).
        workspace = workspace or workspaces.default_workspace()
        rubric = (
            Rubric.objects.filter(pk=options["rubric_id"])
            .filter(Q(workspace__isnull=True) | Q(workspace=workspace))
            .first()
        )
        if rubric is None:
            raise DomainError(
                f"rubric {options['rubric_id']} does not exist",
                [Problem("no such rubric", field="rubric")],
            )
        return rubric
    return rubric_get_default()


def taxonomy_for(dataset: Dataset | None, options: dict) -> Taxonomy:
    """The taxonomy rows are checked against: an existing dataset's (what it
    declared at its first import, or FLASK's), or for a new one what
    `options["taxonomy"]` (a JSON object) and `options["facets"]` (inferred facet
    columns) declare, FLASK's by default.

    Raises `DomainError` naming `taxonomy` for a declaration that is not valid, and
    for one that differs from an existing dataset's: a taxonomy is fixed with the
    first import (the stored rows were checked against it)."""
    declared = options.get("taxonomy")
    facets = list(options.get("facets") or [])
    if dataset is None:
        if declared is None and not facets:
            return FLASK
        return taxonomy_parse(declared or {}, facets=facets)
    current = Taxonomy.stored(dataset.taxonomy)
    if declared is None and not facets:
        return current
    # Facets alone (`--facet` again on a later import) add to what it declared.
    given = taxonomy_parse(
        current.to_json() or {} if declared is None else declared, facets=facets
    )
    if given != current:
        message = (
            f"dataset {dataset.name!r} "
            + (
                "uses FLASK's taxonomy"
                if current.is_flask
                else "declared its own taxonomy at its first import"
            )
            + "; a later import cannot change it (leave out the taxonomy and "
            "facets, or import into a new dataset)"
        )
        raise DomainError(
            "the file was not imported", [Problem(message, field="taxonomy")]
        )
    return current


def rubric_named(name: str, workspace=None) -> Rubric:
    """The rubric a command line names among those `workspace` sees (its own and the
    built-ins; None: the default workspace): its id, or its name (the latest version;
    "Name v2" or "Name@2" for another). Raises `DomainError` naming `rubric`, the
    workspace and the rubrics it sees when there is none (another workspace's rubric
    is not found, nor said to exist).

    Ids and versions are read with `flaskapp.params.ascii_int` within their bounds:
    "²" or a 5,000-digit number is a name nobody has, not a traceback from `int()`.
    """
    workspace = workspace or workspaces.default_workspace()
    visible = Rubric.objects.filter(Q(workspace__isnull=True) | Q(workspace=workspace))
    text = str(name).strip()
    rubric = None
    number = ascii_int(text)
    if number is not None and bounds.ID.contains(number):
        rubric = visible.filter(pk=number).first()
    if rubric is None:
        base, version = text, None
        for sep in ("@", " v"):
            head, _, tail = text.rpartition(sep)
            tail_number = ascii_int(tail)
            if (
                head
                and tail_number is not None
                and bounds.RUBRIC_VERSION.contains(tail_number)
            ):
                base, version = head.strip(), tail_number
                break
        found = visible.filter(name=text).order_by("-version")
        if not found.exists() and version is not None:
            found = visible.filter(name=base, version=version)
        rubric = found.first()
    if rubric is None:
        names = ", ".join(
            f"{r.name!r} (id {r.pk})" for r in visible.order_by("name", "version")
        )
        shown = printable(text if len(text) <= 80 else f"{text[:80]}...")
        raise DomainError(
            f"no rubric named {shown!r} in workspace {workspace.slug!r}",
            [
                Problem(
                    f"no rubric {shown!r} in workspace {workspace.slug!r}; the "
                    f"rubrics are: {names}",
                    field="rubric",
                )
            ],
        )
    return rubric


def skill_lookup(rubric: Rubric) -> dict[str, str]:
    return skill_lookup_for(list(rubric.skills.values_list("key", "name")))


def import_parsed(  # noqa: C901, PLR0913 - the workspace is one more input;the import's one transaction, each optional part (scores, rubric, history) a guarded step
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
    output_files: list[tuple[str, FileData]] | None = None,
    workspace=None,
) -> ImportReport:
    """Plan and write validated rows in one transaction (shared by the import services).

    `rubric_factory` creates the new dataset's rubric inside the transaction (so a
    refused import leaves no rubric behind); `after_write` runs last, inside it. A new
    dataset is made in `workspace` (None: the default workspace) and needs
    `roles.can_create_dataset(user, workspace)`; an existing one needs the researcher
    role in its workspace (`user` None: a trusted caller).

    `output_files` are FLASK model-output files read one at a time after the parsed
    instructions are written, each row checked and sent to the database as it is read
    (`stream_outputs`): memory holds one file, not all of them. Their problems roll
    the whole transaction back, so the import is still all or nothing, and every
    problem of every file is still reported (a file is read even when an earlier one
    failed; then nothing more is sent).
    """
    output_files = list(output_files or [])
    _check_description(options.get("description") or "")
    problems = Problems(parsed.problems)
    if options.get("strict") and parsed.warnings and not problems:
        raise DomainError(
            "the file was not imported: with strict, warnings are errors",
            parsed.warnings[:MAX_PROBLEMS],
        )
    if not problems and not output_files and not parsed.has_rows:
        raise DomainError("the file has no rows to import")
    workspace = dataset.workspace if dataset is not None else workspace
    workspace = workspace or workspaces.default_workspace()
    if user is not None:
        # Not a member: the workspace does not exist for them (404) ...
        workspaces.require_workspace_role(user, workspace.pk, workspaces.RATER)
        if dataset is None:  # ... a member below researcher: 403 naming the role.
            roles.require_dataset_creator(user, dataset_name, workspace.pk)
        else:
            workspaces.require_workspace_role(user, workspace.pk, workspaces.RESEARCHER)
    with transaction.atomic():
        ids: dict[str, int] = {}
        report = ImportReport(dataset=dataset_name, rows=parsed.rows)
        known: set[str] = set()
        if not problems:
            if dataset is None and not dry_run:
                if rubric_factory is not None:
                    rubric = rubric_factory()
                try:
                    with transaction.atomic():
                        dataset = Dataset.objects.create(
                            workspace=workspace,
                            name=dataset_name,
                            rubric=rubric,
                            created_by=user,
                            description=options.get("description", ""),
                            taxonomy=taxonomy_for(None, options).to_json(),
                        )
                except IntegrityError as exc:
                    raise DomainError(
                        f"dataset {dataset_name!r} was created by another import "
                        "meanwhile; run this import again"
                    ) from exc
            elif dataset is not None:
                # Serialise concurrent imports into the same dataset.
                locked = (
                    Dataset.objects.select_for_update().filter(pk=dataset.pk).first()
                )
                if locked is not None and locked.taxonomy != dataset.taxonomy:
                    # Rows were checked against the taxonomy read before the lock;
                    # an edit meanwhile (`dataset_taxonomy_update`) may have
                    # dropped a value they hold.
                    raise DomainError(
                        "the file was not imported",
                        [
                            Problem(
                                "the dataset's taxonomy was changed during this "
                                "import; run the import again",
                                field="taxonomy",
                            )
                        ],
                    )
            new_instructions, new_responses, ids, report, problems = _plan(
                dataset, parsed
            )
            report.dataset = dataset_name
            known = set(ids) | {r.external_id for r in new_instructions}
            if not problems and not dry_run:
                write_planned(
                    dataset, new_instructions, new_responses, ids, parsed.reread
                )
                scores_write(
                    dataset,
                    parsed,
                    ids=ids,
                    files=sorted({s.file for s in parsed.scores}),
                    user=user,
                    report=report,
                )
            del new_instructions, new_responses
        known |= {r.external_id for r in parsed.instructions}
        if not problems:
            # Written (or, in a dry run, counted): the streamed output files need
            # only the ids, so the texts are freed before they are read.
            parsed.release_rows()
        report.rubric = str(rubric) if rubric is not None else ""
        report.warnings = list(parsed.warnings)
        if output_files:
            if problems and not ids and dataset is not None:
                ids = dict(
                    Instruction.objects.filter(dataset=dataset).values_list(
                        "external_id", "pk"
                    )
                )
            known |= set(ids)
            problems += stream_outputs(
                dataset,
                output_files,
                ids=ids,
                known=known,
                model=options.get("model"),
                report=report,
                plan=not problems,
                write=not problems and not dry_run,
            )
        if problems:
            raise refusal("the file was not imported", problems)
        if options.get("strict") and report.warnings:
            raise DomainError(
                "the file was not imported: with strict, warnings are errors",
                report.warnings[:MAX_PROBLEMS],
            )
        if not parsed.has_rows and not (report.created_responses or report.unchanged):
            raise DomainError("the file has no rows to import")
        report.dry_run = dry_run
        if after_write is not None:
            after_write(dataset, report)
    log.info("import into %s: %s", dataset_name, report.as_dict())
    return report


def _check_description(description: str) -> None:
    """Refuse (DomainError naming `description`) a new dataset's description that
    cannot be stored or is longer than `Dataset.description` allows."""
    problem = text_problem(description)
    problems = [Problem(problem, field="description")] if problem else []
    problems += model_text_problems(Dataset, {"description": description})
    if problems:
        raise DomainError("the file was not imported", problems)


def dataset_import_files(
    *,
    dataset_name: str,
    fmt: str,
    files: list[tuple[str, bytes]],
    options: dict | None = None,
    user=None,
    dry_run: bool = False,
    workspace=None,
) -> ImportReport:
    """Validate `files` completely, then write them into dataset `dataset_name` of
    `workspace` (None: the default workspace) at once.

    Formats: ``flask`` (evaluation set), ``flask_outputs`` (model outputs; the dataset
    must exist), ``jsonl`` / ``csv`` (generic rows, `options["mapping"]`). Options:
    ``rubric_id`` (for a new dataset; default the built-in rubric; ignored for an
    existing one), ``model`` (one output file's model name; for generic rows, the
    model of rows that name none), ``hard`` (mark instructions FLASK-Hard),
    ``description``, ``taxonomy`` and ``facets`` (a new dataset's own slicing
    taxonomy: `taxonomy_for`), ``split`` (a zipped Hugging Face dataset's split),
    ``strict`` (refuse the file when it has warnings, e.g. an empty
    response, instead of listing them in the report).

    Raises `DomainError` listing every problem (file, line, field); then nothing is
    written. Idempotent: rows already present with the same content are counted as
    unchanged. Runs in its own transaction; `dry_run` writes nothing.
    """
    options = options or {}
    dataset_name, dataset = dataset_named(dataset_name, workspace)
    if dataset is None and fmt == ImportJob.Format.FLASK_OUTPUTS:
        raise DomainError(
            f"dataset {dataset_name!r} does not exist; import its instructions first",
            [Problem("no such dataset", field="dataset")],
        )
    rubric = rubric_for(dataset, options, workspace)
    parsed = dataset_parse_files(
        fmt=fmt,
        files=files,
        skill_lookup=skill_lookup(rubric),
        options=options,
        scales=rubric_scales(rubric),
        taxonomy=taxonomy_for(dataset, options),
    )
    return import_parsed(
        dataset_name=dataset_name,
        dataset=dataset,
        rubric=rubric,
        parsed=parsed,
        options=options,
        user=user,
        dry_run=dry_run,
        workspace=workspace,
    )
