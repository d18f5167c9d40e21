"""The tables of the analysis app: the log of changes to the inputs of agreement, and
the background jobs that compute what a web request should not wait for.

`InputChange` is written only by PostgreSQL triggers (migration 0001), never by Python:
every statement that inserts, updates or deletes human scores, submitted assignments,
judge scores, responses, instructions or metadata suggestions appends one row per
campaign, judge run or dataset it touched. The agreement cache key then needs one
index-only count per input instead of scans of the score tables
(`analysis.selectors.agreement.cache`). On SQLite there are no triggers and the cache
key is computed from the score tables themselves.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from flaskapp import limits
from flaskapp.models import default_workspace_pk


class InputChange(models.Model):
    """One statement's change to the inputs of a campaign, a judge run or a dataset.

    `scope` is ``c`` (campaign: human scores, submitted assignments), ``r`` (judge run:
    judge scores) or ``d`` (dataset: responses, instructions, metadata suggestions);
    `key` is that campaign's, run's or dataset's id. Rows are only ever appended: the
    (count, max id) per key changes with every committed change, whatever the commit
    order of concurrent writers.
    """

    scope = models.CharField(max_length=1)
    key = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["scope", "key", "id"], name="inputchange_scope_key_id")
        ]

    def __str__(self) -> str:
        return f"{self.scope}{self.key} #{self.pk}"


class Job(models.Model):
    """Heavy work done by a Celery worker for one user, with its progress and result
    (issue 34: a report or a rater-model fit held a web thread for minutes).

    Lifecycle: ``queued`` -> ``running`` -> ``done`` | ``failed`` (`reason` says why,
    in words a researcher can act on). `kind` names an entry of
    `analysis.jobs.JOB_KINDS` (what runs, how its result is kept); `params` are its
    arguments; `progress_done` of `progress_total` steps; the result is JSON
    (`result`) and/or a file under MEDIA_ROOT (`result_file`, downloaded as
    `result_name`). Written only by `analysis.services.jobs`; read by the owner and
    by the researchers who may see `dataset` (`analysis.selectors.jobs`), never by
    raters.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="analysis_jobs",
    )
    kind = models.CharField(max_length=40)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="jobs"
    )
    dataset = models.ForeignKey(
        "annotation.Dataset", on_delete=models.CASCADE, related_name="jobs"
    )
    params = models.JSONField(default=dict)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.QUEUED
    )
    reason = models.TextField(max_length=limits.CALL_ERROR, blank=True, default="")
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    result = models.JSONField(null=True, blank=True)
    result_file = models.CharField(max_length=500, blank=True, default="")
    result_name = models.CharField(max_length=200, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["owner", "status"], name="job_owner_status"),
        ]

    def __str__(self) -> str:
        return f"job {self.pk} {self.kind} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        if not self.progress_total:
            return 0
        return min(100, round(100 * self.progress_done / self.progress_total))
