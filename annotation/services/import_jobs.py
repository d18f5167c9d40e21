"""Import jobs: the browser's and the API's upload -> validate -> confirm -> run flow.

The files are stored under MEDIA_ROOT/imports/<job>/ so that a background run, and
anyone reading the job later, sees exactly what was uploaded.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import Dataset, ImportJob
from annotation.services.imports import (
    dataset_import_files,
    dataset_named,
    dataset_parse_files,
    rubric_for,
    skill_lookup,
    taxonomy_for,
)
from annotation.services.score_imports import rubric_scales
from annotation.tasks import import_job_execute_task
from flaskapp import workspaces
from flaskapp.errors import DomainError, Problem

T = TypeVar("T")


def safe_file_name(name: str) -> str:
    """The upload's base name as a file name any file system takes: no control
    characters or lone surrogates, at most 200 bytes of UTF-8 (the limit is 255)."""
    base = Path(name or "").name
    base = "".join(c for c in base if c.isprintable() and not 0xD800 <= ord(c) < 0xE000)
    base = base.encode("utf-8")[:200].decode("utf-8", "ignore").strip()
    return base if base not in ("", ".", "..") else "upload"


def _store(job_key: str, name: str, data: bytes) -> dict:
    folder = Path(settings.MEDIA_ROOT) / "imports" / job_key
    folder.mkdir(parents=True, exist_ok=True)
    safe = safe_file_name(name)
    path = folder / safe
    path.write_bytes(data)
    return {"name": safe, "path": str(path), "size": len(data)}


def _refusal_summary(exc: DomainError) -> dict:
    """What the job page says of a refused import: the refusal's own sentence
    (`message`, e.g. "the file was not imported") and whether the listed problems
    point into the files (`fix_in_file`: a line or a file named), in which case the
    page asks for a corrected upload; a refusal such as a missing dataset carries
    its own advice instead."""
    return {
        "message": exc.message,
        "fix_in_file": any(p.line is not None or p.file for p in exc.problems),
    }


def _load(job: ImportJob) -> list[tuple[str, bytes]]:
    return [(f["name"], Path(f["path"]).read_bytes()) for f in job.files]


def import_job_create(
    *,
    dataset_name: str,
    fmt: str,
    uploads: list[tuple[str, bytes | io.BufferedIOBase]],
    options: dict | None = None,
    user=None,
    workspace=None,
) -> ImportJob:
    """Store the uploaded files and validate them without importing (a dry run), for
    an import into `workspace` (None: the default workspace).

    Returns an `ImportJob` in status ``validated`` (with preview and the counts that a
    confirm would create) or ``invalid`` (with every problem). Writes only the job row
    and the stored files. An empty or too long `dataset_name` raises `DomainError`
    naming `dataset` and writes nothing.
    """
    options = options or {}
    # A name the job row cannot hold is refused before anything is stored.
    dataset_name, _ = dataset_named(dataset_name, workspace)
    workspace = workspace or workspaces.default_workspace()
    if user is not None:
        workspaces.require_workspace_role(user, workspace.pk, workspaces.RESEARCHER)
    files = [
        (name, data if isinstance(data, bytes) else data.read())
        for name, data in uploads
    ]
    job_key = uuid.uuid4().hex
    stored = [_store(job_key, name, data) for name, data in files]
    job = ImportJob(
        workspace=workspace,
        dataset_name=(dataset_name or "").strip(),
        format=fmt,
        options=options,
        files=stored,
        status=ImportJob.Status.VALIDATED,
        created_by=user,
    )
    try:
        report = dataset_import_files(
            dataset_name=dataset_name,
            fmt=fmt,
            files=files,
            options=options,
            user=user,
            dry_run=True,
            workspace=workspace,
        )
        job.summary = report.as_dict()
        job.total_rows = report.rows
    except DomainError as exc:
        job.status = ImportJob.Status.INVALID
        job.errors = [p.as_dict() for p in exc.problems] or [
            Problem(exc.message).as_dict()
        ]
        job.summary = _refusal_summary(exc)
        job.finished_at = timezone.now()
    job.preview = _preview(dataset_name, fmt, files, options, workspace)
    job.save()
    return job


def _preview(
    dataset_name: str,
    fmt: str,
    files: list[tuple[str, bytes]],
    options: dict,
    workspace=None,
) -> list[dict]:
    """The first rows as parsed (shown before confirming) with the rubric the import
    uses (its scores included), whatever their problems."""
    try:
        _, dataset = dataset_named(dataset_name, workspace)
        rubric = rubric_for(dataset, options, workspace)
        return dataset_parse_files(
            fmt=fmt,
            files=files[:1],
            skill_lookup=skill_lookup(rubric),
            options=options,
            scales=rubric_scales(rubric),
            taxonomy=taxonomy_for(dataset, options),
        ).preview
    except DomainError:
        return []


def import_job_confirm(
    *, job: ImportJob, inline_max_rows: int | None = None
) -> ImportJob:
    """Start a validated import: inline when small, else as a background task.

    Precondition: `job.status == validated` (else `DomainError`). Side effects: either
    the import runs now, or the job becomes ``queued`` and `import_job_execute_task`
    is enqueued after commit. Idempotent for a job already queued/running/finished.
    """
    if job.status != ImportJob.Status.VALIDATED:
        if job.status == ImportJob.Status.INVALID:
            raise DomainError(
                "this import has problems; fix the file and upload it again"
            )
        return job
    limit = (
        settings.IMPORT_INLINE_MAX_ROWS if inline_max_rows is None else inline_max_rows
    )
    updated = ImportJob.objects.filter(
        pk=job.pk, status=ImportJob.Status.VALIDATED
    ).update(status=ImportJob.Status.QUEUED)
    if not updated:
        job.refresh_from_db()
        return job
    if job.total_rows <= limit:
        import_job_execute(job_id=job.pk)
    else:
        transaction.on_commit(lambda: import_job_execute_task.delay(job.pk))
    job.refresh_from_db()
    return job


def import_job_execute(
    *, job_id: int, progress: Callable[[int], None] | None = None
) -> None:
    """Run a queued import job. Idempotent: only a ``queued`` job is started.

    The job row records the outcome: ``succeeded`` with the report, or ``failed`` with
    every problem. The files stay stored for the record.
    """
    started = ImportJob.objects.filter(
        pk=job_id, status=ImportJob.Status.QUEUED
    ).update(status=ImportJob.Status.RUNNING, started_at=timezone.now())
    if not started:
        return
    job = ImportJob.objects.get(pk=job_id)
    try:
        report = dataset_import_files(
            dataset_name=job.dataset_name,
            fmt=job.format,
            files=_load(job),
            options=job.options,
            user=job.created_by,
            workspace=job.workspace,
        )
    except DomainError as exc:
        job.status = ImportJob.Status.FAILED
        job.errors = [p.as_dict() for p in exc.problems] or [
            Problem(exc.message).as_dict()
        ]
        job.summary = {**job.summary, **_refusal_summary(exc)}
    except Exception as exc:  # recorded, then re-raised for the worker's log
        ImportJob.objects.filter(pk=job_id).update(
            status=ImportJob.Status.FAILED,
            finished_at=timezone.now(),
            errors=[Problem(f"internal error: {type(exc).__name__}: {exc}").as_dict()],
        )
        raise
    else:
        job.status = ImportJob.Status.SUCCEEDED
        job.summary = report.as_dict()
        job.processed_rows = report.rows
        job.dataset = Dataset.objects.get(
            name=job.dataset_name, workspace_id=job.workspace_id
        )
    job.finished_at = timezone.now()
    job.save()


def import_job_record_command(
    *,
    dataset_name: str,
    fmt: str,
    paths: list[Path],
    options: dict | None = None,
    report=None,
    error: DomainError | None = None,
    started_at=None,
    workspace=None,
) -> ImportJob:
    """Record, in the import history, an import a management command has just run
    (`source` "command line", no user): :func:`import_job_record` with each path as
    given and its size; nothing is copied. A dry run is not an import and is not
    recorded: callers record real runs only. Writes one row.
    """
    return import_job_record(
        source=ImportJob.Source.COMMAND,
        dataset_name=dataset_name,
        fmt=fmt,
        files=[(str(p), p) for p in paths],
        options=options,
        report=report,
        error=error,
        started_at=started_at,
        workspace=workspace,
    )


def import_recorded(
    do_import: Callable[[], T],
    *,
    record: dict,
    report_of: Callable[[T], object] = lambda result: result,
    enabled: bool = True,
) -> T:
    """Run `do_import` and record its outcome with :func:`import_job_record`
    (`record`: its arguments but the outcome): the report made by `report_of` from the
    result, or the `DomainError` it raised, which is raised again. `enabled` False (a
    dry run) records nothing. Any other error is not a refusal and is not recorded."""
    try:
        result = do_import()
    except DomainError as exc:
        if enabled:
            import_job_record(**record, error=exc)
        raise
    if enabled:
        import_job_record(**record, report=report_of(result))
    return result


def _file_entry(name: str, data) -> dict:
    """{name, path, size} of a file an import read (a path is kept, bytes are not)."""
    if isinstance(data, Path):
        return {
            "name": name,
            "path": str(data),
            "size": data.stat().st_size if data.is_file() else 0,
        }
    return {"name": name, "path": "", "size": len(data or b"")}


def import_job_record(
    *,
    source: str,
    dataset_name: str,
    fmt: str,
    files: list[tuple[str, object]],
    options: dict | None = None,
    report=None,
    error: DomainError | None = None,
    user=None,
    started_at=None,
    workspace=None,
) -> ImportJob:
    """Record, in the import history, an import that has just run outside the
    upload -> confirm flow (a command, a judge-results or preference upload):
    ``succeeded`` with its `report` (anything with ``as_dict()``, ``rows`` and
    ``dataset``, the dataset's name), or ``invalid`` with every problem of `error`
    (the import wrote nothing). Exactly one of `report` and `error` is given.
    `files`: (name, path or bytes) as the import read them; paths are recorded,
    bytes only by size. Writes one row.
    """
    if (report is None) == (error is None):
        raise ValueError("give either the report or the error")
    workspace = workspace or workspaces.default_workspace()
    job = ImportJob(
        workspace=workspace,
        dataset_name=(dataset_name or "")[
            : ImportJob._meta.get_field("dataset_name").max_length
        ],
        format=fmt,
        source=source,
        options=options or {},
        files=[_file_entry(name, data) for name, data in files],
        created_by=user if getattr(user, "pk", None) else None,
        started_at=started_at or timezone.now(),
        finished_at=timezone.now(),
    )
    if report is not None:
        job.status = ImportJob.Status.SUCCEEDED
        job.summary = report.as_dict()
        job.total_rows = job.processed_rows = report.rows
        job.dataset = Dataset.objects.filter(
            name=report.dataset, workspace=workspace
        ).first()
    else:
        job.status = ImportJob.Status.INVALID
        job.errors = [p.as_dict() for p in error.problems] or [
            Problem(error.message).as_dict()
        ]
        job.summary = _refusal_summary(error)
        job.dataset = Dataset.objects.filter(
            name=dataset_name, workspace=workspace
        ).first()
    job.save()
    return job
