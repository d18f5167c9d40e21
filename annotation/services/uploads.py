"""The one upload page's kinds: a file in from the browser, for every import kind.

Flow (`annotation.views.uploads`): the file is staged (`upload_stage`) and sniffed
(`annotation.importers.sniff`), the guess is shown and may be changed, then the kind
checks the file (`UploadKind.check`: every problem with its line and field, and what a
confirm would create), then the person confirms (`UploadKind.confirm`: all or nothing).

Each kind is one `UploadKind` in `REGISTRY` and calls its import's own service; no
parser is written twice. Datasets go through the import jobs (`import_job_create`:
the check is the job's dry run, its page shows the preview and the confirm button).
Kinds whose service has no dry run are checked by running the import in a transaction
that is always rolled back (`without_writing`): the service's own checks, nothing kept.
Judge results are a kind of the judging app, which registers it (`register`) when it
starts (annotation imports neither judging nor analysis).

Files keep today's limits (`import_check_sizes`: `IMPORT_MAX_BYTES`) and are staged
under MEDIA_ROOT/uploads/<user id>/<token>/, so a token is only good for the person
who uploaded the file; the staged copy is removed once the file is imported (or, for
a dataset, once its import job holds its own copy).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from annotation.importers import sniff
from annotation.models import Dataset
from annotation.services import rubrics as rubric_services
from annotation.services.gold import gold_import_file
from annotation.services.import_jobs import import_job_create, safe_file_name
from annotation.services.imports import import_check_sizes
from annotation.services.preference_imports import preferences_import
from flaskapp import roles
from flaskapp.errors import DomainError, Problem

T = TypeVar("T")
TOKEN = re.compile(r"^[0-9a-f]{32}$")
NEW_DATASET, EXISTING_DATASET, NO_DATASET = "new or existing", "existing", "none"


@dataclass
class UploadRequest:
    """What the person chose for a staged file (the guess, changed or not)."""

    user: Any
    workspace: Any  # where a new dataset or rubric goes (`Workspace`)
    file: str
    data: bytes
    kind: str
    fmt: str
    mapping: list[str] = field(default_factory=list)
    dataset_name: str = ""
    dataset: Dataset | None = None
    rubric_id: int | None = None
    rubric_name: str = ""
    model: str = ""
    strict: bool = False


@dataclass
class UploadOutcome:
    """A check's or a confirm's answer: `summary` lines (what is, or was, created),
    or `redirect` (the page to go to: the import job, the new rubric, ...)."""

    summary: list[str] = field(default_factory=list)
    redirect: str = ""
    message: str = ""


@dataclass(frozen=True)
class UploadKind:
    """One import kind of the upload page. `dataset`: whether the file goes into a
    dataset that may be new (`NEW_DATASET`), must exist (`EXISTING_DATASET`) or none.
    `check` writes nothing (datasets: their import job row and stored files);
    `confirm` imports, all or nothing; both raise `DomainError` listing problems."""

    key: str
    label: str
    help: str
    dataset: str
    check: Callable[[UploadRequest], UploadOutcome]
    confirm: Callable[[UploadRequest], UploadOutcome]

    @property
    def formats(self) -> tuple[str, ...]:
        return sniff.KIND_FORMATS[self.key]

    @property
    def takes_mapping(self) -> bool:
        return self.key in sniff.MAPPED_KINDS


REGISTRY: dict[str, UploadKind] = {}


def register(kind: UploadKind) -> None:
    """Add `kind` to the upload page (its key must be one of `sniff.KINDS`)."""
    if kind.key not in sniff.KINDS:
        raise ValueError(f"unknown upload kind {kind.key!r}")
    REGISTRY[kind.key] = kind


class _Rollback(Exception):
    pass


def without_writing(run: Callable[[], T]) -> T:
    """`run()`'s result, in a transaction that is always rolled back: a service with
    no dry run of its own checks a file with all its rules and keeps nothing. What
    `run` returns must be read inside it (rows it created no longer exist after).
    A `DomainError` from `run` is raised as it is (also rolled back)."""
    result: list[T] = []
    try:
        with transaction.atomic():
            result.append(run())
            raise _Rollback
    except _Rollback:
        pass
    return result[0]


# --- Staged files -----------------------------------------------------------------------


def _stage_folder(user, token: str) -> Path:
    return Path(settings.MEDIA_ROOT) / "uploads" / str(user.pk) / token


def upload_stage(*, user, name: str, size: int, read: Callable[[], bytes]) -> str:
    """Keep an uploaded file for the next steps and return its token. Refuses a file
    over `IMPORT_MAX_BYTES` before reading it (`DomainError` naming the file and the
    limit) and an empty one. Researchers only. Writes one file, no row."""
    roles.require_researcher(user)
    import_check_sizes(sizes=[(name, size)])
    data = read()
    if not data:
        raise DomainError("the file is empty", [Problem("is empty", file=name)])
    token = secrets.token_hex(16)
    folder = _stage_folder(user, token)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / safe_file_name(name)).write_bytes(data)
    return token


def upload_staged(*, user, token: str) -> tuple[str, bytes]:
    """(file name, bytes) of the file `user` staged under `token`; `DomainError`
    naming `token` when there is none (another person's token is none too)."""
    folder = _stage_folder(user, token) if TOKEN.match(token or "") else None
    files = sorted(folder.iterdir()) if folder is not None and folder.is_dir() else []
    if not files:
        raise DomainError(
            "the uploaded file is no longer here; upload it again",
            [Problem("no such upload", field="token")],
        )
    return files[0].name, files[0].read_bytes()


def upload_discard(*, user, token: str) -> None:
    """Remove the file `user` staged under `token` (after its import: a dataset's job
    keeps its own copy, the other kinds keep what they imported). Idempotent."""
    if not TOKEN.match(token or ""):
        return
    folder = _stage_folder(user, token)
    if folder.is_dir():
        for path in folder.iterdir():
            path.unlink(missing_ok=True)
        folder.rmdir()


def upload_sniff(*, user, token: str) -> sniff.UploadGuess:
    """The guess for the staged file (`sniff.sniff_upload`)."""
    name, data = upload_staged(user=user, token=token)
    return sniff.sniff_upload(name=name, data=data)


# --- The annotation app's kinds ---------------------------------------------------------


def _need_dataset(request: UploadRequest) -> Dataset:
    if request.dataset is None:
        raise DomainError(
            "choose the dataset the file belongs to",
            [Problem("choose an existing dataset", field="dataset")],
        )
    return request.dataset


def _dataset_check(request: UploadRequest) -> UploadOutcome:
    options: dict = {}
    if request.mapping:
        options["mapping"] = request.mapping
    if request.model:
        options["model"] = request.model
    if request.strict:
        options["strict"] = True
    if request.rubric_id:
        options["rubric_id"] = request.rubric_id
    job = import_job_create(
        dataset_name=request.dataset_name,
        fmt=request.fmt,
        uploads=[(request.file, request.data)],
        options=options,
        user=request.user,
        workspace=request.workspace,
    )
    return UploadOutcome(
        redirect=reverse("annotation:import-detail", args=[job.pk]),
        message="checked: the preview and every problem are on the import's page",
    )


def _dataset_confirm(request: UploadRequest) -> UploadOutcome:
    # The import job's own page confirms a dataset import.
    return _dataset_check(request)


def _rubric_run(request: UploadRequest) -> tuple[Any, list[str]]:
    roles.require_researcher(request.user)
    rubric = rubric_services.rubric_import(
        name=request.rubric_name or None,
        data=request.data,
        file=request.file,
        workspace=request.workspace,
    )
    count = rubric.skills.count()
    return rubric, [
        f"rubric “{rubric.name}” version {rubric.version}",
        f"{count} criteri{'on' if count == 1 else 'a'}",
    ]


def _rubric_check(request: UploadRequest) -> UploadOutcome:
    _, lines = without_writing(lambda: _rubric_run(request))
    return UploadOutcome(summary=[f"to create: {lines[0]}", *lines[1:]])


def _rubric_confirm(request: UploadRequest) -> UploadOutcome:
    rubric, lines = _rubric_run(request)
    return UploadOutcome(
        summary=[f"created: {lines[0]}", *lines[1:]],
        redirect=reverse("annotation:rubric-detail", args=[rubric.pk]),
    )


def _gold_run(request: UploadRequest) -> dict:
    return gold_import_file(
        dataset=_need_dataset(request),
        data=request.data,
        file=request.file,
        user=request.user,
        fmt=request.fmt,
    )


def _gold_lines(result: dict, verb: str) -> list[str]:
    return [
        f"{result['created']} gold item{'s' if result['created'] != 1 else ''} {verb}",
        f"{result['updated']} replaced (their expected scores)",
    ]


def _gold_check(request: UploadRequest) -> UploadOutcome:
    result = without_writing(lambda: _gold_run(request))
    return UploadOutcome(summary=_gold_lines(result, "to create"))


def _gold_confirm(request: UploadRequest) -> UploadOutcome:
    result = _gold_run(request)
    dataset = _need_dataset(request)
    return UploadOutcome(
        summary=_gold_lines(result, "created"),
        redirect=reverse("annotation:dataset-gold", args=[dataset.pk]),
    )


def _preferences_run(request: UploadRequest, *, dry_run: bool):
    return preferences_import(
        dataset_name=request.dataset_name,
        file=request.file,
        data=request.data,
        fmt=request.fmt,
        mapping=request.mapping or None,
        user=request.user,
        workspace=request.workspace,
        dry_run=dry_run,
        strict=request.strict,
    )


def _preference_lines(report, verb: str) -> list[str]:
    return [
        f"{report.rows} row{'s' if report.rows != 1 else ''} read",
        f"{report.created_pairs} pair(s) {verb} ({report.reused_pairs} reused)",
        f"{report.created_preferences} human preference(s) {verb} "
        f"({report.unchanged_preferences} imported before)",
        f"{report.created_instructions} instruction(s), "
        f"{report.created_responses} response(s) {verb}",
        *(
            f"warning: {w.get('text') or w.get('message', '')}"
            for w in report.warnings[:20]
        ),
    ]


def _preferences_check(request: UploadRequest) -> UploadOutcome:
    report = _preferences_run(request, dry_run=True)
    return UploadOutcome(summary=_preference_lines(report, "to create"))


def _preferences_confirm(request: UploadRequest) -> UploadOutcome:
    report = _preferences_run(request, dry_run=False)
    dataset = Dataset.objects.filter(
        name=report.dataset, workspace=request.workspace
    ).first()
    return UploadOutcome(
        summary=_preference_lines(report, "created"),
        redirect=reverse("annotation:dataset-detail", args=[dataset.pk])
        if dataset
        else reverse("annotation:import-list"),
    )


register(
    UploadKind(
        key=sniff.DATASET,
        label="Dataset",
        help="Instructions, model responses and optionally human scores: a FLASK "
        "evaluation set or its model outputs, or rows of JSON Lines, CSV or Parquet.",
        dataset=NEW_DATASET,
        check=_dataset_check,
        confirm=_dataset_confirm,
    )
)
register(
    UploadKind(
        key=sniff.RUBRIC,
        label="Rubric",
        help="A new rubric, or the next version of one: our rubric file (YAML or "
        "JSON) or FLASK's skillset_description.json.",
        dataset=NO_DATASET,
        check=_rubric_check,
        confirm=_rubric_confirm,
    )
)
register(
    UploadKind(
        key=sniff.GOLD,
        label="Gold items",
        help="Expected scores of responses already in a dataset (response_id, or "
        "instruction and model), with optional tolerance, explanation and kind.",
        dataset=EXISTING_DATASET,
        check=_gold_check,
        confirm=_gold_confirm,
    )
)
register(
    UploadKind(
        key=sniff.PREFERENCES,
        label="Preference set",
        help="Pairwise human preferences: a prompt, two responses and a label "
        "(1, 2 or tie).",
        dataset=NEW_DATASET,
        check=_preferences_check,
        confirm=_preferences_confirm,
    )
)
