"""Judge results imported from files, recorded in the import history.

:func:`judge_run_import` is the entry point of every caller (the upload page, the API,
`manage.py import_judge_run`): :func:`judging.services.imports.import_judge_results`
does the import, and each outcome, refusals included, becomes an `ImportJob`.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils import timezone

from annotation.models import Dataset, ImportJob
from annotation.services.import_jobs import import_recorded
from flaskapp import roles
from judging.models import JudgeRun
from judging.services.imports import import_judge_results


@dataclass
class RunImportReport:
    """What a judge-results import wrote, as the import history keeps it."""

    dataset: str
    run_id: int
    run_name: str
    calls: int
    scores: int
    models: list[str]
    warning_count: int
    warnings: list[dict]

    @property
    def rows(self) -> int:
        return self.scores

    def as_dict(self) -> dict:
        return {
            "kind": "judge_run",
            "rows": self.scores,
            "run_id": self.run_id,
            "run_name": self.run_name,
            "calls": self.calls,
            "scores": self.scores,
            "models": self.models,
            "warning_count": self.warning_count,
            # The history page lists each warning as one line of text.
            "warnings": [
                {"text": w.get("text") or w.get("message", "")} for w in self.warnings
            ],
        }


def judge_run_import(*, source: str = ImportJob.Source.UPLOAD, **kwargs) -> JudgeRun:
    """:func:`import_judge_results` with the same keyword arguments, recorded in the
    import history (`source`: an upload, or the command line): a succeeded job with
    the run's counts, or an invalid one with every problem of the refusal (which is
    then raised). A refusal for want of the researcher role is not an import and
    leaves no record."""
    roles.require_researcher(kwargs["user"])
    dataset: Dataset = kwargs["dataset"]
    record = {
        "source": source,
        "dataset_name": dataset.name,
        "fmt": ImportJob.Format.JUDGE_RUN,
        "files": kwargs.get("files") or [],
        "options": {
            "format": kwargs.get("fmt", ""),
            "model": kwargs.get("model") or "",
            "name": kwargs.get("name", ""),
            "strict": bool(kwargs.get("strict")),
        },
        "user": kwargs["user"],
        "started_at": timezone.now(),
    }
    return import_recorded(
        lambda: import_judge_results(**kwargs), record=record, report_of=_report
    )


def _report(run: JudgeRun) -> RunImportReport:
    """The history's summary of an imported run."""
    snapshot = run.settings_snapshot
    return RunImportReport(
        dataset=run.dataset.name,
        run_id=run.pk,
        run_name=run.name,
        calls=run.total_calls,
        scores=run.scores.count(),
        models=list(run.models_included or []),
        warning_count=snapshot.get("warning_count", 0),
        warnings=snapshot.get("warnings", []),
    )
