"""Judge results on the one upload page (`annotation.services.uploads`): the judging
app's upload kind, registered when the app starts (`JudgingConfig.ready`).

The check runs :func:`judge_run_import` in a transaction that is always rolled back
(`without_writing`): every problem with its file, line and field, and the calls and
scores a confirm would create; the confirm imports the run (recorded in the import
history, as every judge-results upload is).
"""

from __future__ import annotations

from django.urls import reverse

from annotation.importers import sniff
from annotation.services.uploads import (
    EXISTING_DATASET,
    UploadKind,
    UploadOutcome,
    UploadRequest,
    register,
    without_writing,
)
from flaskapp.errors import DomainError, Problem
from judging.services.run_imports import judge_run_import


def _run(request: UploadRequest):
    if request.dataset is None:
        raise DomainError(
            "choose the dataset the judge scored",
            [Problem("choose an existing dataset", field="dataset")],
        )
    run = judge_run_import(
        dataset=request.dataset,
        user=request.user,
        fmt=request.fmt,
        files=[(request.file, request.data)],
        model=request.model or None,
        mapping=request.mapping or None,
        strict=request.strict,
    )
    scores = run.scores.count()
    models = ", ".join(run.models_included) or "none"
    return run, [
        f"{run.total_calls} judge call{'s' if run.total_calls != 1 else ''}",
        f"{scores} score{'s' if scores != 1 else ''}",
        f"models: {models}",
        *(
            f"warning: {w.get('text') or w.get('message', '')}"
            for w in run.settings_snapshot.get("warnings", [])[:20]
        ),
    ]


def _check(request: UploadRequest) -> UploadOutcome:
    _, lines = without_writing(lambda: _run(request))
    return UploadOutcome(summary=[f"to create: {line}" for line in lines])


def _confirm(request: UploadRequest) -> UploadOutcome:
    run, lines = _run(request)
    return UploadOutcome(
        summary=[f"created: {line}" for line in lines],
        redirect=reverse("judging:run-detail", args=[run.pk]),
    )


register(
    UploadKind(
        key=sniff.JUDGE_RESULTS,
        label="Judge results",
        help="Scores a judge gave elsewhere, imported as a completed run: FLASK review "
        "files, or one score per row (id, model, skill, score).",
        dataset=EXISTING_DATASET,
        check=_check,
        confirm=_confirm,
    )
)
