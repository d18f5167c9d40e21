"""Import jobs: an uploaded file, its validation report and its outcome."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models.datasets import Dataset
from flaskapp.models import default_workspace_pk


class ImportJob(models.Model):
    """One import of one or more files into a dataset, with its validation report.

    Lifecycle: ``validated`` (parsed, problems listed, nothing written) or ``invalid``
    -> ``queued`` -> ``running`` -> ``succeeded`` | ``failed``. `errors` keeps every
    rejected line with its reason, so a refused file leaves a record.
    """

    class Status(models.TextChoices):
        VALIDATED = "validated", "Validated"
        INVALID = "invalid", "Invalid"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Format(models.TextChoices):
        FLASK = "flask", "FLASK evaluation set (JSONL)"
        FLASK_OUTPUTS = "flask_outputs", "FLASK model outputs (JSONL)"
        JSONL = "jsonl", "Generic JSONL"
        CSV = "csv", "Generic CSV"
        JUDGE_RUN = "judge_run", "Judge results (an imported run)"
        PREFERENCES = "preferences", "Pairwise preferences"

    class Source(models.TextChoices):
        UPLOAD = "upload", "upload"
        COMMAND = "command", "command line"

    # The workspace the import writes into (and its dataset's).
    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="import_jobs",
    )
    dataset_name = models.CharField(max_length=200)
    dataset = models.ForeignKey(
        Dataset,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="imports",
    )
    format = models.CharField(max_length=20, choices=Format.choices)
    # How the files came in: uploaded (page or API, stored under MEDIA_ROOT) or read
    # by a management command from the paths in `files` (recorded after it ran).
    source = models.CharField(
        max_length=10, choices=Source.choices, default=Source.UPLOAD
    )
    options = models.JSONField(default=dict, blank=True)
    files = models.JSONField(
        default=list, help_text="[{name, path, size}] of stored uploads"
    )
    status = models.CharField(max_length=20, choices=Status.choices)
    summary = models.JSONField(default=dict, blank=True)
    preview = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    total_rows = models.PositiveIntegerField(default=0)
    processed_rows = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import {self.pk} into {self.dataset_name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in {
            self.Status.SUCCEEDED,
            self.Status.FAILED,
            self.Status.INVALID,
        }

    @property
    def has_preview(self) -> bool:
        """Whether the job page shows a preview of rows: dataset uploads have one
        (their confirm step needs it); judge results and preferences, and imports
        run from the command line, are written straight away and keep none."""
        if self.preview:
            return True
        dataset_formats = {value for value, _ in DATASET_FORMAT_CHOICES}
        return self.source == self.Source.UPLOAD and self.format in dataset_formats

    @property
    def progress_percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.total_rows:
            return 0
        return min(100, int(100 * self.processed_rows / self.total_rows))


# The formats of a dataset import (the upload -> confirm flow, `import_dataset`): every
# format but the judge results and preferences, which have importers of their own and
# appear here only as records of the import history.
DATASET_FORMAT_CHOICES = [
    (value, label)
    for value, label in ImportJob.Format.choices
    if value not in (ImportJob.Format.JUDGE_RUN, ImportJob.Format.PREFERENCES)
]


# --- Rating campaigns ---------------------------------------------------------------------
