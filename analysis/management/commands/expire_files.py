"""`manage.py expire_files [--dry-run]`.

Deletes what the app keeps only for a while, as the hourly beat tasks do
(`annotation.tasks.uploads_expire_task`, `analysis.tasks.job_files_expire_task`):
staged uploads and import previews never confirmed, older than
`UPLOAD_STAGED_EXPIRY_HOURS` (`annotation.services.upload_expiry`), and background
jobs' result files, `JOB_FILE_EXPIRY_DAYS` after the job finished
(`analysis.services.jobs.job_files_expire`). Prints what was removed (each service
also logs it); `--dry-run` prints what would be, removing nothing.
"""

from __future__ import annotations

from analysis.services.jobs import job_files_expire
from annotation.services.upload_expiry import uploads_expire
from flaskapp.commands import DataCommand


class Command(DataCommand):
    help = (
        "Delete expired staged uploads, unconfirmed import previews and job result "
        "files (UPLOAD_STAGED_EXPIRY_HOURS, JOB_FILE_EXPIRY_DAYS)."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--dry-run",
            action="store_true",
            help="Print what would be removed; remove nothing.",
        )

    def handle(self, *args, **options):
        dry_run = options["dry_run"]
        uploads = uploads_expire(dry_run=dry_run)
        jobs = job_files_expire(dry_run=dry_run)
        verb = "would remove" if dry_run else "removed"
        self.stdout.write(f"uploads ({verb}):")
        for line in uploads.lines():
            self.stdout.write(f"  {line}")
        self.stdout.write(
            f"job result files {verb}: {len(jobs)} "
            f"({sum(size for _, _, size in jobs)} bytes)"
        )
        for job_id, name, size in jobs:
            self.stdout.write(f"  job {job_id}: {name} ({size} bytes)")
