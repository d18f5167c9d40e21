"""The Batch API side of judge runs (issue 36): the provider's batches of a run and
the failures its lines met.

A run made with ``batch`` sends its calls as JSON Lines files through the provider's
``/v1/files`` and ``/v1/batches`` (`judging.llm_batch`), driven by
`judging.services.execution.batch`. A `JudgeBatch` row is written, with the keys of
its calls (`JudgeCall.batch`), BEFORE its file is uploaded and its batch created; the
file id and the batch id are stored as soon as the provider answers, so a worker that
dies at any point resumes the same batches and never submits a key twice.
"""

from __future__ import annotations

from django.db import models

from flaskapp import limits
from judging.models.runs import JudgeCall, JudgeRun


class JudgeBatch(models.Model):
    """One provider batch of a run: its ids, its state and its line counts.

    `state` is ours: preparing (row and keys stored, nothing sent) -> uploaded (the
    input file is at the provider) -> submitted (the batch exists; polled) -> one of
    completed (results stored), failed (the provider refused the file or the batch
    failed: `error` says why), cancelled, expired. `provider_status` is the
    provider's own word, as last polled."""

    class State(models.TextChoices):
        PREPARING = "preparing", "Preparing"
        UPLOADED = "uploaded", "Uploaded"
        SUBMITTED = "submitted", "Submitted"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        EXPIRED = "expired", "Expired"

    OPEN_STATES = (State.PREPARING, State.UPLOADED, State.SUBMITTED)

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="batches")
    # 0: the run's first batches; n: the follow-up batches of the n-th retry.
    round = models.PositiveSmallIntegerField(default=0)
    state = models.CharField(
        max_length=20, choices=State.choices, default=State.PREPARING
    )
    provider_status = models.CharField(max_length=40, blank=True)
    input_file_id = models.CharField(max_length=200, blank=True)
    batch_id = models.CharField(max_length=200, blank=True)
    output_file_id = models.CharField(max_length=200, blank=True)
    error_file_id = models.CharField(max_length=200, blank=True)
    lines = models.PositiveIntegerField(default=0)
    bytes = models.PositiveBigIntegerField(default=0)
    completed_lines = models.PositiveIntegerField(default=0)
    failed_lines = models.PositiveIntegerField(default=0)
    error = models.TextField(max_length=limits.CALL_ERROR, blank=True)
    # What cancelling the run did to this batch at the provider (`batch_run_cancel`):
    # "" (not cancelled), or cancelled / already final / the reason the cancel failed.
    cancel_note = models.TextField(max_length=limits.CALL_ERROR, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    polled_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "id"]
        indexes = [models.Index(fields=["run", "state"])]

    def __str__(self) -> str:
        return f"batch {self.pk} of run {self.run_id} ({self.state})"

    @property
    def is_open(self) -> bool:
        return self.state in self.OPEN_STATES


class JudgeBatchFailure(models.Model):
    """A line of a batch that brought no result, with its reason: an error line, a
    result the reader refused, a line the provider never answered, or a result line
    for a `custom_id` that is not one of the batch's keys (`call` null; recorded and
    ignored, never stored)."""

    batch = models.ForeignKey(
        JudgeBatch, on_delete=models.CASCADE, related_name="failures"
    )
    call = models.ForeignKey(
        JudgeCall,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="batch_failures",
    )
    custom_id = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=40)
    reason = models.TextField(max_length=limits.CALL_ERROR)
    retried = models.BooleanField(default=False)
    # The judge's answer that did not parse (kind "parse"): a follow-up batch replays
    # it to re-ask as the synchronous path does (`TaskKind.reask`); "" otherwise.
    reply = models.TextField(max_length=limits.JUDGE_OUTPUT, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["batch_id", "id"]

    def __str__(self) -> str:
        return f"{self.custom_id}: {self.kind}"
