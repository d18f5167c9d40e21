"""Driving a run through the Batch API (issue 36): the run's calls go to the provider
as JSON Lines files (`judging.llm_batch`), in batches within its limits, and come
back as output and error files, streamed both ways.

One driver per run at a time (a PostgreSQL advisory lock on the run; a second driver
returns at once). It registers and beats like the synchronous driver
(`execution.recovery`), so a SIGKILLed worker's run gets a new driver, which resumes
the same batches. Each step writes its state before the next one sends anything:

1. a `JudgeBatch` row (preparing) and its keys: pending calls move to running under
   the batch's claim token with `JudgeCall.batch` set, in one transaction;
2. its input file is written line by line: each call is settled by the synchronous
   driver (`Driver.settle`) with a client that records the request instead of sending
   it, so the line's body is the sync path's (`llm.chat_request_body`); a call the
   cache answers is stored at once and not sent; calls past the byte limit go back
   to pending, unsent;
3. the file is uploaded and its id stored (uploaded);
4. the batch is created and its id stored (submitted). A driver that finds a batch
   uploaded but not submitted looks for it at the provider by its input file before
   creating it (`BatchClient.create` does the same after a failed attempt): a key is
   never submitted twice;
5. it is polled with backoff (`JUDGE_BATCH_POLL_MIN_SECONDS` growing to
   `JUDGE_BATCH_POLL_MAX_SECONDS`); once final, its output and error files are read
   line by line and each line settled by `Driver.settle` with a client that answers
   from that line (read by the sync path's reply reader): parsing, usage and errors
   exactly as a synchronous call. Results are stored through `store.flush_results`
   (only under the batch's claim: one stored result per key), marked `via_batch`.

A line that failed (an error line, a reply the reader refused, no line at all, an
expired batch) is recorded (`JudgeBatchFailure`, with its reason) and goes back to
pending for a follow-up batch while the call has failed at most the config's
`batch_max_retries` times; then, or at once for a permanent error, the call is
stored failed with the reason. A reply the parser refused is re-asked as the
synchronous path re-asks, within the config's `max_parse_retries`: it is recorded
(kind ``reask``, with the answer), and the follow-up batch's line is the synchronous
re-ask, made by `Driver.settle` itself with the earlier answers given back to it
(`_RecordingClient`, `_LineClient`). A line whose `custom_id` is none of the batch's keys
is recorded and ignored. A file the provider refuses fails its batch's calls, naming
its first errors' lines. A cancelled run cancels its batches at the provider; what
they answered before is stored and the rest goes back to pending (resumable). With
no driver left (a SIGKILLed worker), `judge_run_cancel` cancels them itself
(`batch_run_cancel`), recording each batch's outcome and submitting nothing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.core.cache import cache
from django.db import close_old_connections, connection, transaction
from django.db.models import Count
from django.utils import timezone

from annotation.models import Skill
from flaskapp import limits
from judging import endpoints, llm, llm_batch
from judging.kinds import CallResult
from judging.models import JudgeBatch, JudgeBatchFailure, JudgeCall, JudgeRun
from judging.reasoning import apply_adaptations
from judging.services.budgets import budget_room, run_call_estimate
from judging.services.execution.driver import Driver
from judging.services.execution.recovery import (
    driver_beat,
    driver_register,
    driver_unregister,
)
from judging.services.execution.store import (
    cached_entries,
    flush_results,
    load_contexts,
    run_state,
    sent_keys_store,
)
from judging.services.keys import stored_key_grant

log = logging.getLogger(__name__)

# Calls rendered per database round trip.
CHUNK = 500
# Result lines settled and stored per transaction: fewer, larger transactions (each
# COPYs its rows through temporary tables), a few MB of lines in memory at most.
STORE_CHUNK = 2_500
# Kinds of a line's failure that a follow-up batch cannot fix.
# A request larger than a whole batch input file (`JUDGE_BATCH_MAX_BYTES`): it can
# never be sent this way, so it fails at once with the limit named.
TOO_LARGE = "too_large"
PERMANENT_ERRORS = frozenset(
    {"refused", "auth", "not_found", "echoed_credentials", "batch_rejected", TOO_LARGE}
)
# The kind of a line whose answer did not parse while the config allows a re-ask
# (`max_parse_retries`): it is re-asked in a follow-up batch, not counted against
# `batch_max_retries`.
REASK = "reask"
# How long a cancelled run's driver waits for its batches to be final at the provider.
CANCEL_WAIT_SECONDS = 30.0


def batch_settings(config) -> dict:
    """What a batch run freezes in its snapshot (``snapshot["batch"]``), and its
    driver uses, whatever changes later: the limits of one input file
    (`JUDGE_BATCH_MAX_LINES`, `JUDGE_BATCH_MAX_BYTES`; OpenAI's by default), the
    lines of the batches the driver makes (`JUDGE_BATCH_LINES`, at most the limit:
    several batches in flight at once, each stored as it completes), the config
    version's retry limit of failed lines, and the poll backoff
    (`JUDGE_BATCH_POLL_MIN_SECONDS` growing to `JUDGE_BATCH_POLL_MAX_SECONDS`)."""
    max_lines = int(settings.JUDGE_BATCH_MAX_LINES)
    return {
        "max_lines": max_lines,
        "lines": max(1, min(int(settings.JUDGE_BATCH_LINES), max_lines)),
        "max_bytes": int(settings.JUDGE_BATCH_MAX_BYTES),
        "max_retries": int(config.batch_max_retries),
        "poll_min_seconds": float(settings.JUDGE_BATCH_POLL_MIN_SECONDS),
        "poll_max_seconds": float(settings.JUDGE_BATCH_POLL_MAX_SECONDS),
    }


# --- the clients that let the synchronous driver settle batch calls -----------------------


class _Recorded(llm.PermanentJudgeError):
    def __init__(self) -> None:
        super().__init__("batched", "sent in a batch")


class _RecordingClient:
    """Records the request `Driver.settle` would send, and sends nothing. `replies`:
    the call's earlier answers that did not parse, given back first, so that the
    request recorded is the synchronous path's re-ask (`TaskKind.reask`)."""

    calls_backing_off = 0
    requests_in_flight = 0

    def __init__(self, replies: Iterable[str] = ()) -> None:
        self.request: llm.ChatRequest | None = None
        self._replies = list(replies)

    async def complete(self, request: llm.ChatRequest) -> llm.ChatResult:
        if self._replies:
            return _replayed(self._replies.pop(0))
        if self.request is None:
            self.request = request
        raise _Recorded()


class _LineClient:
    """Answers `Driver.settle` from a batch result line (read by the sync path's
    reader), after giving back the call's earlier answers that did not parse
    (`replies`, as `_RecordingClient` did when it wrote the line). A re-ask after
    the line cannot be answered here: it fails with kind ``reask`` and its message
    (the synchronous path's), and the call is re-asked in a follow-up batch."""

    calls_backing_off = 0
    requests_in_flight = 0

    def __init__(
        self, client: llm_batch.BatchClient, line: dict, replies: Iterable[str] = ()
    ) -> None:
        self._client = client
        self._line = line
        self._replies = list(replies)
        self._asked = False

    async def complete(self, request: llm.ChatRequest) -> llm.ChatResult:
        if self._replies:
            return _replayed(self._replies.pop(0))
        if self._asked:
            asked = str(request.messages[-1].get("content", ""))
            raise llm.TransientJudgeError(
                REASK, f"re-asked in a follow-up batch: {asked}"
            )
        self._asked = True
        return self._client.read_reply_line(self._line, request)


def _replayed(text: str) -> llm.ChatResult:
    """An earlier answer given back to `Driver.settle` (paid for when it came)."""
    return llm.ChatResult(
        text=text, input_tokens=0, output_tokens=0, latency_ms=0, attempts=0
    )


def _replies(call_ids: list[int]) -> dict[int, list[str]]:
    """Each call's answers that did not parse and were re-asked, oldest first."""
    replies: dict[int, list[str]] = {}
    for call_id, reply in (
        JudgeBatchFailure.objects.filter(call_id__in=call_ids, kind=REASK)
        .exclude(reply="")
        .order_by("pk")
        .values_list("call_id", "reply")
    ):
        replies.setdefault(call_id, []).append(reply)
    return replies


# --- the driver ----------------------------------------------------------------------------


@dataclass
class _Poll:
    delay: float
    next_at: float = 0.0


class BatchDriver:
    """Drives one batch run from this process until nothing is open (see module)."""

    def __init__(self, run: JudgeRun) -> None:
        self.run = run
        self.snapshot = run.settings_snapshot
        self.limits = self.snapshot["batch"]
        self.token = uuid.uuid4().hex
        self.driver = Driver(run)
        self.skills: list[Skill] = []
        self.template = None
        self.polls: dict[int, _Poll] = {}
        self.last_beat = 0.0
        self.per_call = run_call_estimate(run) if run.budget is not None else Decimal(0)

    # The endpoint --------------------------------------------------------------------

    def client(self) -> llm_batch.BatchClient:
        snapshot = self.snapshot
        key = (
            llm.api_key_from_env(snapshot["api_key_env"])
            if snapshot["api_key_env"]
            else None
        )
        grant = None
        if snapshot.get("stored_key_id"):
            grant = stored_key_grant(
                key_id=snapshot["stored_key_id"],
                base_url=snapshot["base_url"],
                run_id=self.run.pk,
                actor=self.run.created_by,
            )
        return llm_batch.BatchClient(
            base_url=snapshot["base_url"],
            api_key=key,
            key_grant=grant,
            refusal=endpoints.call_refusal(
                snapshot["base_url"], snapshot["api_key_env"]
            ),
            timeout=float(snapshot["timeout_seconds"]),
            backoff_base=settings.JUDGE_BACKOFF_BASE_SECONDS,
            backoff_max=settings.JUDGE_BACKOFF_MAX_SECONDS,
        )

    # The loop ------------------------------------------------------------------------

    def drive(self) -> None:
        self.skills = list(
            Skill.objects.filter(rubric_id=self.run.dataset.rubric_id).order_by(
                "position"
            )
        )
        self.template = self.run.config.prompt
        driver_register(run_id=self.run.pk, token=self.token)
        try:
            with self.client() as client:
                self._loop(client)
        finally:
            driver_unregister(token=self.token)

    def _loop(self, client: llm_batch.BatchClient) -> None:
        while True:
            self._beat()
            if run_state(self.run.pk) != JudgeRun.Status.RUNNING:
                self._cancel(client)
                return
            open_batches = list(
                JudgeBatch.objects.filter(
                    run=self.run, state__in=JudgeBatch.OPEN_STATES
                ).order_by("pk")
            )
            for batch in open_batches:
                self._advance(client, batch)
                if batch.state not in JudgeBatch.OPEN_STATES:
                    # Stored: the provider gets the next batch before another
                    # completed one is stored, so it is never left idle.
                    self._start_batches(client)
            if self._start_batches(client):
                continue
            if not JudgeBatch.objects.filter(
                run=self.run, state__in=JudgeBatch.OPEN_STATES
            ).exists():
                return
            self._wait_for_next_poll()

    def _beat(self) -> None:
        now = time.monotonic()
        if now - self.last_beat < settings.JUDGE_DRIVER_BEAT_SECONDS:
            return
        self.last_beat = now
        driver_beat(run_id=self.run.pk, token=self.token)
        _lease_renew(self.run.pk)
        JudgeRun.objects.filter(pk=self.run.pk).update(heartbeat_at=timezone.now())

    def _wait_for_next_poll(self) -> None:
        """Sleep until the next batch is due a poll, beating, and waking up at once
        when the run is cancelled."""
        due = min((p.next_at for p in self.polls.values()), default=0.0)
        while time.monotonic() < due:
            time.sleep(min(0.25, max(0.0, due - time.monotonic())))
            self._beat()
            if run_state(self.run.pk) != JudgeRun.Status.RUNNING:
                return

    # Starting batches ------------------------------------------------------------------

    def _start_batches(self, client: llm_batch.BatchClient) -> bool:
        """Make one new batch of pending calls and submit it; False if none pending."""
        batch = self._claim()
        if batch is None:
            return False
        self._advance(client, batch)
        return True

    def _claim(self) -> JudgeBatch | None:
        token = uuid.uuid4().hex
        with transaction.atomic():
            # A spend cap (`judging.services.budgets`): only the lines it leaves
            # room for, each at its batch estimate, counting those in flight.
            run = (
                JudgeRun.objects.select_for_update().only("budget").get(pk=self.run.pk)
            )
            size = self.limits.get("lines") or self.limits["max_lines"]
            lines = budget_room(run, int(size), self.per_call)
            ids = list(
                JudgeCall.objects.select_for_update(skip_locked=True)
                .filter(run=self.run, status=JudgeCall.Status.PENDING)
                .order_by("pk")
                .values_list("pk", flat=True)[:lines]
            )
            if not ids:
                return None
            tried = (
                JudgeBatchFailure.objects.filter(call_id__in=ids)
                .values("call_id")
                .annotate(n=Count("id"))
                .order_by("-n")
                .values_list("n", flat=True)
                .first()
            )
            batch = JudgeBatch.objects.create(run=self.run, round=tried or 0)
            JudgeCall.objects.filter(pk__in=ids).update(
                status=JudgeCall.Status.RUNNING,
                claim_token=token,
                driver_token="",
                lease_until=None,
                batch=batch,
                started_at=timezone.now(),
            )
        return batch

    def _advance(self, client: llm_batch.BatchClient, batch: JudgeBatch) -> None:
        """Take `batch` one step further (see the module's steps); a failure of the
        provider's is recorded on the batch and its calls."""
        try:
            if batch.state == JudgeBatch.State.PREPARING:
                self._prepare_and_upload(client, batch)
            if batch.state == JudgeBatch.State.UPLOADED:
                self._submit(client, batch)
            if batch.state == JudgeBatch.State.SUBMITTED:
                self._poll(client, batch)
        except llm.TransientJudgeError as exc:
            log.warning("run %s batch %s: %s", self.run.pk, batch.pk, exc)
            JudgeBatch.objects.filter(pk=batch.pk).update(
                error=str(exc)[: limits.CALL_ERROR]
            )
            poll = self.polls.setdefault(batch.pk, _Poll(self._poll_min()))
            poll.next_at = time.monotonic() + poll.delay
        except llm.JudgeError as exc:
            self._reject(batch, exc.kind, str(exc))

    def _prepare_and_upload(
        self, client: llm_batch.BatchClient, batch: JudgeBatch
    ) -> None:
        handle, path = tempfile.mkstemp(prefix=f"run{self.run.pk}-", suffix=".jsonl")
        try:
            with os.fdopen(handle, "wb") as out:
                lines, size = self._write_file(batch, out)
            JudgeBatch.objects.filter(pk=batch.pk).update(lines=lines, bytes=size)
            batch.lines, batch.bytes = lines, size
            if not lines:  # every call was answered by the cache
                self._finish(batch, JudgeBatch.State.COMPLETED, "")
                return
            file = client.upload(
                path, filename=f"run{self.run.pk}-batch{batch.pk}.jsonl"
            )
        finally:
            os.unlink(path)
        batch.input_file_id = str(file.get("id") or "")
        batch.state = JudgeBatch.State.UPLOADED
        batch.save(update_fields=["input_file_id", "state"])

    def _write_file(self, batch: JudgeBatch, out) -> tuple[int, int]:
        """Write the input lines of the batch's running calls; store what the cache
        answers; release (to pending) the calls past the byte limit."""
        lines = size = 0
        over: list[int] = []
        too_large: list[int] = []
        for ctxs, _token in self._running_contexts(batch):
            cache = cached_entries(self.run.workspace_id, [c.cache_key for c in ctxs])
            replies = _replies([c.call_id for c in ctxs])
            recorders = [_RecordingClient(replies.get(c.call_id, ())) for c in ctxs]
            results = _settle_all(
                self.driver,
                [
                    (ctx, cache.get(ctx.cache_key), rec)
                    for ctx, rec in zip(ctxs, recorders, strict=True)
                ],
            )
            done = []
            sent_keys_store(
                {
                    ctx.call_id: ctx.cache_key
                    for ctx, rec in zip(ctxs, recorders, strict=True)
                    if rec.request is not None and ctx.cache_key
                }
            )
            for ctx, rec, result in zip(ctxs, recorders, results, strict=True):
                if rec.request is None:  # settled without a call (the cache)
                    done.append(result)
                    continue
                # What the endpoint is known to refuse is changed before it is sent,
                # as the synchronous client does (`judging.reasoning`).
                request = apply_adaptations(rec.request, self.driver.adaptations)
                data = llm_batch.line_bytes(ctx.call_id, request)
                if len(data) > self.limits["max_bytes"]:  # fits no batch file
                    too_large.append(ctx.call_id)
                    continue
                if over or size + len(data) > self.limits["max_bytes"]:
                    over.append(ctx.call_id)
                    continue
                size += llm_batch.write_line(out, data)
                lines += 1
            if done:
                flush_results(self.run, done, bulk=True)
        if over:
            _release(over)
        if too_large:
            self._fail_calls(
                batch,
                too_large,
                TOO_LARGE,
                f"the request is larger than a batch input file may be "
                f"(JUDGE_BATCH_MAX_BYTES = {self.limits['max_bytes']:,} bytes): raise "
                "the limit or judge these calls without the Batch API",
            )
        return lines, size

    def _running_contexts(self, batch: JudgeBatch) -> Iterator[tuple[list, str]]:
        ids = list(
            JudgeCall.objects.filter(
                batch=batch, status=JudgeCall.Status.RUNNING
            ).values_list("pk", "claim_token")
        )
        for start in range(0, len(ids), CHUNK):
            chunk = ids[start : start + CHUNK]
            token = chunk[0][1]
            ctxs = load_contexts(
                self.run, token, [pk for pk, _ in chunk], self.skills, self.template
            )
            yield ctxs, token

    def _submit(self, client: llm_batch.BatchClient, batch: JudgeBatch) -> None:
        found = client.find_by_input_file(batch.input_file_id)
        created = found or client.create(
            batch.input_file_id,
            metadata={"run": str(self.run.pk), "batch": str(batch.pk)},
        )
        batch.batch_id = str(created.get("id") or "")
        batch.state = JudgeBatch.State.SUBMITTED
        batch.provider_status = str(created.get("status") or "")
        batch.submitted_at = timezone.now()
        batch.save(
            update_fields=["batch_id", "state", "provider_status", "submitted_at"]
        )
        self.polls[batch.pk] = _Poll(self._poll_min(), time.monotonic())

    # Polling and collecting ------------------------------------------------------------

    def _poll_min(self) -> float:
        return float(
            self.limits.get("poll_min_seconds", settings.JUDGE_BATCH_POLL_MIN_SECONDS)
        )

    def _poll_max(self) -> float:
        return float(
            self.limits.get("poll_max_seconds", settings.JUDGE_BATCH_POLL_MAX_SECONDS)
        )

    def _poll(self, client: llm_batch.BatchClient, batch: JudgeBatch) -> None:
        poll = self.polls.setdefault(batch.pk, _Poll(self._poll_min()))
        if time.monotonic() < poll.next_at:
            return
        remote = client.retrieve(batch.batch_id)
        self._record_remote(batch, remote)
        status = batch.provider_status
        if status not in llm_batch.FINAL_STATUSES:
            poll.delay = min(poll.delay * 1.5, self._poll_max())
            poll.next_at = time.monotonic() + poll.delay
            return
        self.polls.pop(batch.pk, None)
        if status == "failed":
            self._reject(batch, "batch_rejected", _rejection(remote))
            return
        self._collect(client, batch, remote)

    def _record_remote(self, batch: JudgeBatch, remote: dict) -> None:
        counts = remote.get("request_counts") or {}
        batch.provider_status = str(remote.get("status") or "")[:40]
        batch.completed_lines = int(counts.get("completed") or 0)
        batch.failed_lines = int(counts.get("failed") or 0)
        batch.output_file_id = str(remote.get("output_file_id") or "")
        batch.error_file_id = str(remote.get("error_file_id") or "")
        batch.polled_at = timezone.now()
        batch.save(
            update_fields=[
                "provider_status",
                "completed_lines",
                "failed_lines",
                "output_file_id",
                "error_file_id",
                "polled_at",
            ]
        )

    def _collect(
        self, client: llm_batch.BatchClient, batch: JudgeBatch, remote: dict
    ) -> None:
        """Store the results of a final batch from its files, then settle the keys
        no line answered; the batch is then completed (or cancelled, expired)."""
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                for chunk in _chunks(client.lines(file_id), STORE_CHUNK):
                    self._settle_lines(client, batch, chunk)
        status = batch.provider_status
        unanswered = list(
            JudgeCall.objects.filter(
                batch=batch, status=JudgeCall.Status.RUNNING
            ).values_list("pk", flat=True)
        )
        if status == "cancelled":
            _release(unanswered)
            self._finish(batch, JudgeBatch.State.CANCELLED, "")
            return
        reason = (
            "the batch expired before this line was answered"
            if status == "expired"
            else "the batch ended without a result line for this key"
        )
        self._fail_calls(batch, unanswered, status or "missing", reason)
        state = (
            JudgeBatch.State.EXPIRED
            if status == "expired"
            else JudgeBatch.State.COMPLETED
        )
        self._finish(batch, state, "")

    def _settle_lines(
        self, client: llm_batch.BatchClient, batch: JudgeBatch, raw_lines: list[str]
    ) -> None:
        by_call: dict[int, dict] = {}
        strays: list[tuple[str, str]] = []
        for raw in raw_lines:
            try:
                line = json.loads(raw)
            except ValueError:
                strays.append(("", "a result line that is not JSON"))
                continue
            cid = line.get("custom_id") if isinstance(line, dict) else None
            call_id = llm_batch.call_id_of(cid)
            if call_id is None:
                strays.append((str(cid or "")[:200], "unknown custom_id"))
                continue
            by_call[call_id] = line
        rows = {
            pk: (batch_id, status, token)
            for pk, batch_id, status, token in JudgeCall.objects.filter(
                run=self.run, pk__in=list(by_call)
            ).values_list("pk", "batch_id", "status", "claim_token")
        }
        failed_here = set(
            JudgeBatchFailure.objects.filter(
                batch=batch, call_id__in=list(by_call)
            ).values_list("call_id", flat=True)
        )
        live: list[int] = []
        for call_id in by_call:
            row = rows.get(call_id)
            if row and row[0] == batch.pk and row[1] == JudgeCall.Status.RUNNING:
                live.append(call_id)
            elif not row or (row[0] != batch.pk and call_id not in failed_here):
                strays.append(
                    (
                        llm_batch.custom_id(call_id),
                        "custom_id is not a key of this batch",
                    )
                )
        if strays:
            _record_strays(batch, strays)
        if not live:
            return
        ctxs = load_contexts(
            self.run, rows[live[0]][2], live, self.skills, self.template, sent=True
        )
        replies = _replies(live)
        results = _settle_all(
            self.driver,
            [
                (
                    ctx,
                    None,
                    _LineClient(
                        client, by_call[ctx.call_id], replies.get(ctx.call_id, ())
                    ),
                )
                for ctx in ctxs
            ],
        )
        for result in results:
            result.token = rows[result.call_id][2]
            result.batch = True  # priced at the config's batch discount
        good = [r for r in results if r.status == JudgeCall.Status.SUCCEEDED]
        bad = [r for r in results if r.status != JudgeCall.Status.SUCCEEDED]
        if good:
            flush_results(self.run, good, bulk=True)
        if bad:
            self._fail_results(batch, bad)

    # Failures ---------------------------------------------------------------------------

    def _fail_results(self, batch: JudgeBatch, results: list[CallResult]) -> None:
        """Record each failed line; retry it (back to pending) while the call may be
        retried, else store it failed with its reason. An answer that did not parse
        is re-asked while the config's `max_parse_retries` allows (kind ``reask``, its
        answer kept to be replayed); other failures while the call has failed fewer
        than `batch_max_retries` times."""
        max_retries = int(self.limits["max_retries"])
        tried = _failures_so_far([r.call_id for r in results])
        final: list[CallResult] = []
        retry: list[int] = []
        failures = []
        for r in results:
            again = r.error_kind == REASK or (
                r.error_kind not in PERMANENT_ERRORS
                and r.error_kind != "parse"  # out of re-asks, as the sync path
                and tried.get(r.call_id, 0) < max_retries
            )
            failures.append(
                JudgeBatchFailure(
                    batch=batch,
                    call_id=r.call_id,
                    custom_id=llm_batch.custom_id(r.call_id),
                    kind=(r.error_kind or "failed")[:40],
                    reason=r.error[: limits.CALL_ERROR],
                    retried=again,
                    reply=r.raw_output if r.error_kind == REASK else "",
                )
            )
            (retry.append(r.call_id) if again else final.append(r))
        with transaction.atomic():
            JudgeBatchFailure.objects.bulk_create(failures)
            _release(retry)
            if final:  # a later "retry failed" asks afresh, replaying nothing
                JudgeBatchFailure.objects.filter(
                    call_id__in=[r.call_id for r in final], kind=REASK
                ).exclude(reply="").update(reply="")
        if final:
            flush_results(self.run, final, bulk=True)

    def _fail_calls(
        self, batch: JudgeBatch, call_ids: list[int], kind: str, reason: str
    ) -> None:
        """Fail calls that got no usable line at all (no line, an expired or
        rejected batch), each as a failed line."""
        for start in range(0, len(call_ids), CHUNK):
            chunk = call_ids[start : start + CHUNK]
            tokens = dict(
                JudgeCall.objects.filter(pk__in=chunk).values_list("pk", "claim_token")
            )
            self._fail_results(
                batch,
                [
                    CallResult(
                        call_id=pk,
                        token=tokens.get(pk, ""),
                        response_id=None,
                        sample_index=0,
                        status=JudgeCall.Status.FAILED,
                        error=reason,
                        error_kind=kind,
                    )
                    for pk in chunk
                ],
            )

    def _reject(self, batch: JudgeBatch, kind: str, reason: str) -> None:
        """The provider refused the batch (its file, or an operation permanently):
        its calls fail with the reason, unretried; the batch is failed."""
        log.warning("run %s batch %s refused: %s", self.run.pk, batch.pk, reason)
        calls = list(
            JudgeCall.objects.filter(
                batch=batch, status=JudgeCall.Status.RUNNING
            ).values_list("pk", flat=True)
        )
        kind = kind if kind in PERMANENT_ERRORS else "batch_rejected"
        self._fail_calls(batch, calls, kind, reason)
        self._finish(batch, JudgeBatch.State.FAILED, reason)

    def _finish(self, batch: JudgeBatch, state: str, error: str) -> None:
        batch.state = state
        batch.error = error[: limits.CALL_ERROR]
        batch.finished_at = timezone.now()
        batch.save(update_fields=["state", "error", "finished_at"])

    # Cancel -----------------------------------------------------------------------------

    def _cancel(self, client: llm_batch.BatchClient) -> None:
        """The run was cancelled: cancel its batches at the provider
        (`cancel_at_provider`), wait a while for them to be final, store what they
        answered, put the rest back to pending."""
        batches = self.cancel_at_provider(client)
        deadline = time.monotonic() + CANCEL_WAIT_SECONDS
        for batch in batches:
            remote = client.retrieve(batch.batch_id)
            while (
                remote.get("status") not in llm_batch.FINAL_STATUSES
                and time.monotonic() < deadline
            ):
                self._beat()
                time.sleep(0.5)
                remote = client.retrieve(batch.batch_id)
            self._record_remote(batch, remote)
            if batch.provider_status in llm_batch.FINAL_STATUSES:
                self._collect(client, batch, remote)

    def cancel_at_provider(self, client: llm_batch.BatchClient) -> list[JudgeBatch]:
        """Cancel every open batch of the run at the provider and record on each what
        came of it (`JudgeBatch.cancel_note`: cancelled, already final, or why the
        cancel failed). Submits nothing: a batch not yet created (preparing, or
        uploaded with no batch at the provider for its file) is cancelled here and
        its calls go back to pending. Returns the batches that exist at the
        provider; they stay submitted, so whatever answers they hold are collected
        by the next driver (the cancelling one, or one of a resumed run)."""
        at_provider = []
        for batch in JudgeBatch.objects.filter(
            run=self.run, state__in=JudgeBatch.OPEN_STATES
        ).order_by("pk"):
            try:
                if self._cancel_one(client, batch):
                    at_provider.append(batch)
            except llm.JudgeError as exc:
                log.warning("run %s batch %s: cancel: %s", self.run.pk, batch.pk, exc)
                _cancel_note(batch, f"the cancel failed: {exc}")
                if batch.batch_id:
                    at_provider.append(batch)
        return at_provider

    def _cancel_one(self, client: llm_batch.BatchClient, batch: JudgeBatch) -> bool:
        """`cancel_at_provider` of one batch; True when it exists at the provider."""
        if batch.state != JudgeBatch.State.SUBMITTED:
            found = (
                client.find_by_input_file(batch.input_file_id)
                if batch.state == JudgeBatch.State.UPLOADED
                else None
            )
            if found is None:  # a file id alone submits no key
                _release(
                    list(
                        JudgeCall.objects.filter(
                            batch=batch, status=JudgeCall.Status.RUNNING
                        ).values_list("pk", flat=True)
                    )
                )
                self._finish(batch, JudgeBatch.State.CANCELLED, "")
                _cancel_note(batch, "never submitted: its calls wait to resume")
                return False
            batch.batch_id = str(found.get("id") or "")
            batch.state = JudgeBatch.State.SUBMITTED
            batch.save(update_fields=["batch_id", "state"])
        remote = client.retrieve(batch.batch_id)
        status = str(remote.get("status") or "")
        if status in llm_batch.FINAL_STATUSES:
            note = (
                "cancelled at the provider"
                if status == "cancelled"
                else f"already {status} at the provider: nothing to cancel"
            )
        else:
            try:
                remote = client.cancel(batch.batch_id)
                note = "cancelled at the provider"
            except llm.JudgeError as exc:  # e.g. it finished meanwhile (409)
                remote = client.retrieve(batch.batch_id)
                status = str(remote.get("status") or "")
                note = (
                    f"already {status} at the provider: nothing to cancel"
                    if status in llm_batch.FINAL_STATUSES and status != "cancelled"
                    else f"the cancel failed: {exc}"
                )
        self._record_remote(batch, remote)
        _cancel_note(batch, note)
        return True


# --- helpers --------------------------------------------------------------------------------


def _settle_all(driver: Driver, items: list[tuple]) -> list[CallResult]:
    """`Driver.settle` for each (context, cache entry, client), on one event loop
    (none of them waits on I/O)."""

    async def main() -> list[CallResult]:
        return list(
            await asyncio.gather(
                *(driver.settle(ctx, cached, client) for ctx, cached, client in items)
            )
        )

    return asyncio.run(main())


def _chunks(lines: Iterable[str], n: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for line in lines:
        chunk.append(line)
        if len(chunk) >= n:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _release(call_ids: list[int]) -> None:
    """Calls back to pending, in no batch (nothing of theirs is at the provider)."""
    for start in range(0, len(call_ids), 5000):
        JudgeCall.objects.filter(
            pk__in=call_ids[start : start + 5000], status=JudgeCall.Status.RUNNING
        ).update(
            status=JudgeCall.Status.PENDING,
            claim_token="",
            driver_token="",
            lease_until=None,
            batch=None,
        )


def _failures_so_far(call_ids: list[int]) -> dict[int, int]:
    """Each call's failed lines so far, re-asks not counted."""
    return dict(
        JudgeBatchFailure.objects.filter(call_id__in=call_ids)
        .exclude(kind=REASK)
        .values("call_id")
        .annotate(n=Count("id"))
        .values_list("call_id", "n")
    )


def _cancel_note(batch: JudgeBatch, note: str) -> None:
    batch.cancel_note = note[: limits.CALL_ERROR]
    JudgeBatch.objects.filter(pk=batch.pk).update(cancel_note=batch.cancel_note)


def _record_strays(batch: JudgeBatch, strays: list[tuple[str, str]]) -> None:
    log.warning(
        "run %s batch %s: %d result lines for no key of the batch were ignored",
        batch.run_id,
        batch.pk,
        len(strays),
    )
    JudgeBatchFailure.objects.bulk_create(
        JudgeBatchFailure(
            batch=batch, call=None, custom_id=cid, kind="unknown_id", reason=why
        )
        for cid, why in strays
    )


def _rejection(remote: dict) -> str:
    """The provider's reasons for failing a batch, naming lines."""
    errors = ((remote.get("errors") or {}).get("data")) or []
    parts = []
    for e in errors[:5]:
        where = f"line {e['line']}: " if e.get("line") else ""
        parts.append(f"{where}{e.get('message') or e.get('code') or 'error'}")
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    text = "; ".join(parts) or "no reason given"
    return f"the provider rejected the batch file: {text}{more}"[: limits.CALL_ERROR]


def batch_run_drive(run: JudgeRun) -> None:
    """Drive batch run `run` until none of its batches is open and nothing is pending
    (or it is cancelled). Returns at once when another driver holds the run."""
    with _driver_lock(run.pk) as locked:
        if locked:
            BatchDriver(run).drive()


def batch_run_cancel(run: JudgeRun) -> bool:
    """Cancel the open batches of cancelled batch run `run` at the provider when no
    driver is driving it (its worker died, or none ever started): what the run's
    own driver does within a second otherwise (`BatchDriver._cancel`). Records each
    batch's outcome (`cancel_note`) and submits nothing. Returns False, doing
    nothing, while a driver holds the run (it cancels them itself). Idempotent."""
    with _driver_lock(run.pk) as locked:
        if not locked:
            return False
        driver = BatchDriver(run)
        with driver.client() as client:
            driver.cancel_at_provider(client)
    return True


@contextmanager
def _driver_lock(run_id: int) -> Iterator[bool]:
    """One batch driver per run. PostgreSQL: a session advisory lock (released when
    the holder's connection ends, so a killed worker frees it at once). Other
    databases (SQLite: one machine, `make run`): a cache entry with a lease of
    `JUDGE_MIN_LEASE_SECONDS` that the driver's beat renews (`_lease_renew`), so a
    killed worker's run is driven again once its lease runs out."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [36, run_id])
            locked = cursor.fetchone()[0]
        try:
            yield locked
        finally:
            try:
                if locked:
                    with connection.cursor() as cursor:
                        cursor.execute(
                            "SELECT pg_advisory_unlock(%s, %s)", [36, run_id]
                        )
            finally:
                close_old_connections()
        return
    key, token = _lease_key(run_id), uuid.uuid4().hex
    locked = cache.add(key, token, timeout=settings.JUDGE_MIN_LEASE_SECONDS)
    try:
        yield locked
    finally:
        if locked and cache.get(key) == token:
            cache.delete(key)
        close_old_connections()


def _lease_key(run_id: int) -> str:
    return f"judging:batch-driver:{run_id}"


def _lease_renew(run_id: int) -> None:
    """Keep the driver lock of a non-PostgreSQL database alive (see `_driver_lock`)."""
    if connection.vendor != "postgresql":
        cache.touch(_lease_key(run_id), settings.JUDGE_MIN_LEASE_SECONDS)
