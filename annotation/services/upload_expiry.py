"""Expiry of what the upload steps keep between requests: a staged upload that was
never imported (`annotation.services.uploads.upload_stage`: a folder under
MEDIA_ROOT/uploads/<user>/<token>/) and an import's preview that was never
confirmed (`import_job_create`: a ``validated`` or ``invalid`` `ImportJob` of the
upload page or the API, with its copy of the files under MEDIA_ROOT/imports/).

After `settings.UPLOAD_STAGED_EXPIRY_HOURS` (24 by default) both go: the staged
folder; the files of the preview; the row of a ``validated`` preview (nothing was
imported and nobody confirmed it). An ``invalid`` job's row stays, as the record of
the refusal with its problems, and only its files go (their entries keep the name
and size, with an empty path and ``expired`` set). Confirmed imports (queued,
running, succeeded, failed) and command-line imports are never touched.
"""

from __future__ import annotations

import logging
import shutil
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from annotation.models import ImportJob

logger = logging.getLogger(__name__)

UNCONFIRMED = (ImportJob.Status.VALIDATED, ImportJob.Status.INVALID)


@dataclass
class UploadExpiry:
    """What one pass removed (or, with `dry_run`, would remove)."""

    staged_folders: list[str] = field(default_factory=list)  # "<user>/<token>"
    deleted_jobs: list[int] = field(default_factory=list)  # validated previews
    emptied_jobs: list[int] = field(default_factory=list)  # invalid: files only
    files: int = 0
    bytes: int = 0

    def lines(self) -> list[str]:
        return [
            f"staged uploads removed: {len(self.staged_folders)}"
            + (f" ({', '.join(self.staged_folders)})" if self.staged_folders else ""),
            f"unconfirmed import previews deleted: {len(self.deleted_jobs)}"
            + (f" (jobs {_ids(self.deleted_jobs)})" if self.deleted_jobs else ""),
            f"refused imports' files removed, their records kept: "
            f"{len(self.emptied_jobs)}"
            + (f" (jobs {_ids(self.emptied_jobs)})" if self.emptied_jobs else ""),
            f"files removed: {self.files} ({self.bytes} bytes)",
        ]


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids))


def _media(*parts: str) -> Path:
    return Path(settings.MEDIA_ROOT).joinpath(*parts)


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _expire_staged(before: datetime, report: UploadExpiry, dry_run: bool) -> None:
    root = _media("uploads")
    if not root.is_dir():
        return
    cutoff = before.timestamp()
    for user_dir in sorted(p for p in root.iterdir() if p.is_dir()):
        for folder in sorted(p for p in user_dir.iterdir() if p.is_dir()):
            files = [p for p in folder.iterdir() if p.is_file()]
            newest = max([folder.stat().st_mtime, *(p.stat().st_mtime for p in files)])
            if newest >= cutoff:
                continue
            report.staged_folders.append(f"{user_dir.name}/{folder.name}")
            report.files += len(files)
            report.bytes += sum(p.stat().st_size for p in files)
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
        if not dry_run and not any(user_dir.iterdir()):
            user_dir.rmdir()


def _remove_job_files(job: ImportJob, report: UploadExpiry, dry_run: bool) -> None:
    """The job's own copies (under MEDIA_ROOT/imports/ only: never a path a
    command-line import recorded) and their folder."""
    root = _media("imports")
    for entry in job.files:
        path = Path(entry.get("path") or "")
        if not entry.get("path") or not _inside(path, root) or not path.is_file():
            continue
        report.files += 1
        report.bytes += path.stat().st_size
        if not dry_run:
            path.unlink(missing_ok=True)
            folder = path.parent
            if folder != root and _inside(folder, root) and not any(folder.iterdir()):
                folder.rmdir()


def uploads_expire(
    *, now: datetime | None = None, dry_run: bool = False
) -> UploadExpiry:
    """Remove the staged uploads and unconfirmed import previews older than
    `settings.UPLOAD_STAGED_EXPIRY_HOURS` (see the module's docstring for what goes
    and what stays), and log one line saying what was removed. With `dry_run`,
    only report. Idempotent (a second pass finds nothing); each job is handled in
    its own transaction with its row locked and its status checked again, so a
    preview confirmed meanwhile is left alone."""
    now = now or timezone.now()
    before = now - timedelta(hours=settings.UPLOAD_STAGED_EXPIRY_HOURS)
    report = UploadExpiry()
    _expire_staged(before, report, dry_run)
    candidates = ImportJob.objects.filter(
        source=ImportJob.Source.UPLOAD, status__in=UNCONFIRMED, created_at__lt=before
    ).order_by("pk")
    for job_id in candidates.values_list("pk", flat=True):
        with transaction.atomic():
            job = (
                ImportJob.objects.select_for_update()
                .filter(pk=job_id, status__in=UNCONFIRMED)
                .first()
            )
            if job is None:
                continue
            if job.status == ImportJob.Status.INVALID and not any(
                f.get("path") for f in job.files
            ):
                continue  # emptied by an earlier pass
            _remove_job_files(job, report, dry_run)
            if job.status == ImportJob.Status.VALIDATED:
                report.deleted_jobs.append(job.pk)
                if not dry_run:
                    job.delete()
            else:
                report.emptied_jobs.append(job.pk)
                if not dry_run:
                    job.files = [
                        {**f, "path": "", "expired": now.isoformat()} for f in job.files
                    ]
                    job.preview = []
                    job.save(update_fields=["files", "preview"])
    logger.info(
        "uploads expired%s (older than %s): %s",
        " (dry run)" if dry_run else "",
        before.isoformat(timespec="seconds"),
        "; ".join(report.lines()),
    )
    return report
