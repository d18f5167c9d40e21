"""The audit of exports (issue 35): every export a person downloads is a row of the
audit log (`flaskapp.workspaces.audit_record`), in the dataset's workspace, with what
was exported and how; the data itself is never written there."""

from __future__ import annotations

from annotation.models import Dataset
from flaskapp.workspaces import audit_record


def export_audit(
    *, user, dataset: Dataset, what: str, fmt: str, details: dict | None = None
) -> None:
    """Record that `user` exported `what` (``scores``, ``training``,
    ``preferences``) of `dataset` as `fmt`, with `details` (the filters: campaign
    and run ids, whether the test split's rows were in). One ``export.downloaded``
    row; joins the caller's transaction, if any. Called once the export's checks
    have passed, before its rows are streamed."""
    audit_record(
        action="export.downloaded",
        actor=user,
        workspace=dataset.workspace_id,
        target=dataset,
        after={"what": what, "format": fmt, **(details or {})},
    )
