"""Pairwise preference files imported, recorded in the import history.

:func:`preferences_import` is the entry point of every caller (the API,
`manage.py import_preferences`): :func:`annotation.services.preferences.
import_preference_file` does the import, and each real (not dry-run) outcome, refusals
included, becomes an `ImportJob`.
"""

from __future__ import annotations

from django.utils import timezone

from annotation.models import ImportJob
from annotation.services.import_jobs import import_recorded
from annotation.services.preferences import (
    PreferenceImportReport,
    import_preference_file,
)


def preferences_import(
    *, source: str = ImportJob.Source.UPLOAD, **kwargs
) -> PreferenceImportReport:
    """:func:`import_preference_file` with the same keyword arguments, recorded in the
    import history unless it is a dry run (`source`: an upload, or the command line):
    a succeeded job with the report, or an invalid one with every problem of the
    refusal (which is then raised). A refusal for want of a role is not an import and
    leaves no record."""
    record = {
        "source": source,
        "dataset_name": (kwargs.get("dataset_name") or "").strip(),
        "fmt": ImportJob.Format.PREFERENCES,
        "files": [(kwargs.get("file", ""), kwargs.get("data"))],
        "options": {
            "format": kwargs.get("fmt", ""),
            "label_scheme": kwargs.get("label_scheme", "one-based"),
            "judge": kwargs.get("judge") or "",
            "strict": bool(kwargs.get("strict")),
        },
        "user": kwargs.get("user"),
        "started_at": timezone.now(),
        "workspace": kwargs.get("workspace"),
    }
    return import_recorded(
        lambda: import_preference_file(**kwargs),
        record=record,
        enabled=not kwargs.get("dry_run"),
    )
