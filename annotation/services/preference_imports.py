"""Pairwise preference files imported, recorded in the import history.

:func:`preferences_import` is the entry point of every caller (the API,
`manage.py import_preferences`): :func:`annotation.services.preferences.
import_preference_file` does the import, and each real (not dry-run) outcome, refusals
included, becomes an `ImportJob`.
"""

from __future__ import annotations

from django.utils import timezone

from annotation.errors import DomainError
from annotation.importers.base import FileData
from annotation.models import ImportJob
from annotation.services.import_jobs import import_job_record
from annotation.services.preferences import (
    PreferenceImportReport,
    VerdictWriterFactory,
    import_preference_file,
)


def preferences_import(
    *,
    dataset_name: str,
    file: str,
    data: FileData,
    fmt: str,
    mapping: list[str] | dict[str, str] | None = None,
    label_scheme: str = "one-based",
    judge: str | None = None,
    swapped_mapped_back: bool = False,
    user=None,
    dry_run: bool = False,
    verdict_writer: VerdictWriterFactory | None = None,
    strict: bool = False,
    source: str = ImportJob.Source.UPLOAD,
) -> PreferenceImportReport:
    """:func:`import_preference_file` (same arguments), recorded in the import history
    unless it is a dry run (`source`: an upload, or the command line): a succeeded job
    with the report, or an invalid one with every problem of the refusal (which is
    then raised). A refusal for want of a role is not an import and leaves no record."""
    started = timezone.now()
    kwargs = {
        "dataset_name": dataset_name, "file": file, "data": data, "fmt": fmt,
        "mapping": mapping, "label_scheme": label_scheme, "judge": judge,
        "swapped_mapped_back": swapped_mapped_back, "user": user, "dry_run": dry_run,
        "verdict_writer": verdict_writer, "strict": strict,
    }  # fmt: skip
    record = {
        "source": source,
        "dataset_name": (dataset_name or "").strip(),
        "fmt": ImportJob.Format.PREFERENCES,
        "files": [(file, data)],
        "options": {"format": fmt, "label_scheme": label_scheme,
                    "judge": judge or "", "strict": bool(strict)},
        "user": user,
        "started_at": started,
    }  # fmt: skip
    try:
        report = import_preference_file(**kwargs)
    except DomainError as exc:
        if not dry_run:
            import_job_record(**record, error=exc)
        raise
    if not dry_run:
        import_job_record(**record, report=report)
    return report
