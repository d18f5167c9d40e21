"""The database side of judge execution: claims and leases, loading what the calls
need, the cache, writing results in batches, finishing and recovering runs.

Runs in the driver's database thread (`driver.Driver`), synchronously. A result is
written only under the claim that produced it (see `driver`). Its public functions
are what the driver calls; each is one database step of a run's execution.
"""

from __future__ import annotations

import json
import logging
import uuid
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from psycopg.types.json import Jsonb

from annotation.models import Skill
from flaskapp import limits
from flaskapp.notifications import notify
from judging import baselines, costs, kinds, prompts, reasoning
from judging.kinds import CallContext, CallResult, Claim
from judging.logprobs import NO_LOGPROBS_NOTE
from judging.models import (
    JudgeCache,
    JudgeCall,
    JudgeConfig,
    JudgeRun,
)
from judging.services import budgets

log = logging.getLogger(__name__)


def lease_seconds(config: JudgeConfig) -> float:
    """How long a claim may stay running before it is presumed dead."""
    return max(settings.JUDGE_MIN_LEASE_SECONDS, config.timeout_seconds * 3)


def claim_calls(
    run_id: int, n: int, lease: float, driver_token: str = ""
) -> tuple[str, list[int]]:
    """Atomically move up to `n` pending calls of the run to running under a new token,
    recording the claiming driver (`JudgeDriver`)."""
    token = uuid.uuid4().hex
    now = timezone.now()
    with transaction.atomic():
        ids = list(
            JudgeCall.objects.select_for_update(skip_locked=True)
            .filter(run_id=run_id, status=JudgeCall.Status.PENDING)
            .order_by("pk")
            .values_list("pk", flat=True)[:n]
        )
        if ids:
            JudgeCall.objects.filter(pk__in=ids).update(
                status=JudgeCall.Status.RUNNING,
                claim_token=token,
                driver_token=driver_token,
                lease_until=now + timedelta(seconds=lease),
                started_at=now,
            )
    return token, ids


def claim_calls_within_budget(
    run_id: int, n: int, lease: float, driver_token: str, per_call: Decimal
) -> tuple[str, list[int], bool]:
    """`claim_calls`, but only as many calls as the run's spend cap leaves room for
    (`budgets.budget_room`), under a lock on the run row so that several drivers of
    one run share the cap. Returns (token, ids, blocked): `blocked` is True when the
    cap stopped a claim that would otherwise have found room (pending calls may
    remain)."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().only("budget").get(pk=run_id)
        allowed = budgets.budget_room(run, n, per_call)
        token, ids = claim_calls(run_id, allowed, lease, driver_token)
        blocked = allowed < n and len(ids) == allowed
    return token, ids, blocked


def _cache_key(
    snapshot: dict,
    messages: list[dict],
    sample_index: int,
    response_format: dict | None,
) -> str:
    return prompts.prompt_hash(
        messages,
        base_url=snapshot["base_url"].rstrip("/"),
        model=snapshot["model"],
        temperature=snapshot["temperature"],
        max_tokens=snapshot["max_tokens"],
        output_mode=snapshot["output_mode"],
        response_format=response_format,
        sample_index=sample_index,
        **reasoning.cache_params(snapshot),
    )


def load_contexts(  # noqa: PLR0913 - the claim's parts, as `Claim` takes them
    run: JudgeRun,
    token: str,
    ids: list[int],
    all_skills: list[Skill],
    template,
    *,
    sent: bool = False,
) -> list[CallContext]:
    """Render the prompt of every claimed call (a fixed number of queries per batch):
    the run's kind does it (`TaskKind.load_contexts`). `sent`: only the answers of
    calls sent already are to be read (`Claim.sent`: a call whose key was stored
    by `sent_keys_store` need not be rendered again)."""
    return kinds.get(run.kind).load_contexts(
        Claim(run, token, ids, all_skills, template, _cache_key, sent=sent)
    )


def sent_keys_store(keys: dict[int, str]) -> None:
    """Store the cache key of each call about to be sent in a batch (call id -> key,
    as `JudgeCall.prompt_hash`, which its result writes again), so that reading
    its answer need not render it again (`load_contexts(sent=True)`). PostgreSQL
    only (one statement); elsewhere the answer's reader renders."""
    if not keys or connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE judging_judgecall AS c SET prompt_hash = v.key "
            "FROM unnest(%s::bigint[], %s::text[]) AS v(id, key) WHERE c.id = v.id",
            [list(keys), list(keys.values())],
        )


def cached_entries(workspace_id: int, keys: list[str]) -> dict[str, JudgeCache]:
    """The cache entries of workspace `workspace_id` (the run's) for the non-empty
    `keys`, by key; a key with no entry there is absent. Another workspace's paid
    answer is never served: that workspace's run pays and records its own call."""
    return {
        c.key: c
        for c in JudgeCache.objects.filter(
            workspace_id=workspace_id, key__in=[k for k in keys if k]
        )
    }


def flush_results(
    run: JudgeRun, results: list[CallResult], *, bulk: bool = False
) -> None:
    """Write finished calls (only under their current claim), their scores and new cache
    entries, in one transaction; refresh the run's heartbeat. A result made through a
    batch (`CallResult.batch`) is marked `via_batch`.

    `bulk` (the Batch API's store of thousands of result lines): on PostgreSQL the
    rows go through COPY (`_copy_update_calls`, `_copy_insert`) instead of one
    statement of parameters each, with the same effect: a row already stored (the
    unique constraints of scores and cache entries) is kept, never doubled."""
    if not results:
        return
    prices = costs.Prices.from_snapshot(run.settings_snapshot)
    now = timezone.now()
    copy = bulk and connection.vendor == "postgresql"
    with transaction.atomic():
        owned = set(
            JudgeCall.objects.select_for_update()
            .filter(
                status=JudgeCall.Status.RUNNING, pk__in=[r.call_id for r in results]
            )
            .values_list("pk", "claim_token")
        )
        kept = [r for r in results if (r.call_id, r.token) in owned]
        if kept and copy:
            _copy_update_calls(kept, prices, now)
        elif kept and connection.vendor == "postgresql":
            _update_calls_pg(kept, prices, now)
        else:
            for r in kept:
                JudgeCall.objects.filter(pk=r.call_id).update(
                    status=r.status,
                    raw_output=r.raw_output,
                    parsed=r.parsed,
                    error=r.error[: limits.CALL_ERROR],
                    error_kind=r.error_kind,
                    attempts=r.attempts,
                    parse_failures=r.parse_failures,
                    input_tokens=r.input_tokens,
                    output_tokens=r.output_tokens,
                    cost=_cost(r, prices),
                    cached_input_tokens=r.cached_input_tokens,
                    reasoning_tokens=r.reasoning_tokens,
                    latency_ms=r.latency_ms,
                    cached=r.cached,
                    prompt_hash=r.prompt_hash,
                    reply_model=r.reply_model,
                    system_fingerprint=r.system_fingerprint,
                    finished_at=now,
                    claim_token="",
                    driver_token="",
                    lease_until=None,
                    **({"via_batch": True} if r.batch else {}),
                )
        _write_result_rows(run, kept, copy=copy)
        _note_missing_logprobs(run, kept)
        _insert_ignoring_conflicts(
            JudgeCache,
            [
                JudgeCache(
                    workspace_id=run.workspace_id,
                    key=r.cache_key,
                    raw_output=r.raw_output,
                    input_tokens=r.input_tokens,
                    output_tokens=r.output_tokens,
                )
                for r in kept
                if r.status == JudgeCall.Status.SUCCEEDED
                and not r.cached
                and r.cache_key
            ],
            copy=copy,
        )
        JudgeRun.objects.filter(pk=run.pk).update(heartbeat_at=now)
    if len(kept) < len(results):
        log.warning(
            "run %s: %d results dropped: their claim had been taken over",
            run.pk,
            len(results) - len(kept),
        )


def _note_missing_logprobs(run: JudgeRun, kept: list[CallResult]) -> None:
    """Record on the run, once, that the endpoint returned no token
    probabilities for an answer of a run that asked (its scores are integers)."""
    if any(r.no_logprobs for r in kept):
        JudgeRun.objects.filter(pk=run.pk, logprobs_note="").update(
            logprobs_note=NO_LOGPROBS_NOTE
        )


def _write_result_rows(run: JudgeRun, kept: list[CallResult], *, copy: bool) -> None:
    """The rows the kind writes for the succeeded results (`TaskKind.result_rows`),
    by model; each is unique per call target, so a result stored twice is one row."""
    succeeded = [r for r in kept if r.status == JudgeCall.Status.SUCCEEDED]
    if not succeeded:
        return
    by_model: dict[type, list] = {}
    for row in kinds.get(run.kind).result_rows(run, succeeded):
        by_model.setdefault(type(row), []).append(row)
    for model, rows in by_model.items():
        _insert_ignoring_conflicts(model, rows, copy=copy)


def _insert_ignoring_conflicts(model, rows: list, *, copy: bool) -> None:
    """Insert `rows` (unsaved instances of `model`, whose primary key the database
    assigns); a row that breaks a unique constraint is skipped (it is stored already).
    `copy` (PostgreSQL): COPY into a temporary table, then one INSERT ... SELECT ...
    ON CONFLICT DO NOTHING; else `bulk_create(ignore_conflicts=True)`."""
    if not rows:
        return
    if not copy:
        model.objects.bulk_create(rows, ignore_conflicts=True)
        return
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    stamped = [
        f
        for f in fields
        if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False)
    ]
    for row in rows:
        for f in stamped:  # what save() would fill in
            f.pre_save(row, add=True)
    # psycopg adapts every stored value as it is but JSON's (Django's own
    # get_db_prep_save per value costs more than the COPY itself).
    names = [f.attname for f in fields]
    json_at = [i for i, f in enumerate(fields) if f.get_internal_type() == "JSONField"]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    table = connection.ops.quote_name(model._meta.db_table)
    temp = connection.ops.quote_name(f"copy_{model._meta.db_table}")
    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TEMPORARY TABLE {temp} ON COMMIT DROP AS "
            f"SELECT {columns} FROM {table} WITH NO DATA"
        )
        with cursor.cursor.copy(f"COPY {temp} ({columns}) FROM STDIN") as out:
            for row in rows:
                values = [getattr(row, name) for name in names]
                for i in json_at:
                    if values[i] is not None:
                        values[i] = Jsonb(values[i])
                out.write_row(values)
        cursor.execute(
            f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {temp} "
            "ON CONFLICT DO NOTHING"
        )
        cursor.execute(f"DROP TABLE {temp}")


def _cost(r: CallResult, prices: costs.Prices) -> Decimal:
    if r.cached:
        return Decimal(0)  # served from our own cache: not paid again
    return costs.call_cost(
        prices=prices,
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        cached_input_tokens=r.cached_input_tokens,
        batch=r.batch,
    )


def renew_leases(call_ids: list[int], lease: float) -> None:
    """Keep the claims of calls still in flight (slow endpoints, long retries) alive."""
    if call_ids:
        JudgeCall.objects.filter(
            pk__in=call_ids, status=JudgeCall.Status.RUNNING
        ).update(lease_until=timezone.now() + timedelta(seconds=lease))


# The columns a finished call's row takes from its result (`_copy_update_calls`).
_RESULT_COLUMNS = (
    "id, status, raw_output, parsed, error, error_kind, attempts, parse_failures, "
    "input_tokens, output_tokens, cost, latency_ms, cached, prompt_hash, "
    "reply_model, system_fingerprint, cached_input_tokens, reasoning_tokens, via_batch"
)


def _result_row(r: CallResult, prices: costs.Prices, parsed) -> tuple:
    """A finished call's values in `_RESULT_COLUMNS` order (`parsed` as the caller's
    statement takes it: JSON text or a psycopg `Jsonb`), for both bulk updates."""
    return (
        r.call_id,
        r.status,
        r.raw_output,
        parsed,
        r.error[: limits.CALL_ERROR],
        r.error_kind,
        r.attempts,
        r.parse_failures,
        r.input_tokens,
        r.output_tokens,
        _cost(r, prices),
        r.latency_ms,
        r.cached,
        r.prompt_hash,
        r.reply_model,
        r.system_fingerprint,
        r.cached_input_tokens,
        r.reasoning_tokens,
        r.batch,
    )


def _copy_update_calls(results: list[CallResult], prices: costs.Prices, now) -> None:
    """`_update_calls_pg` through COPY: the results into a temporary table, then one
    UPDATE ... FROM it (no statement of thousands of parameters to build)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TEMPORARY TABLE copy_call_results ON COMMIT DROP AS "
            f"SELECT {_RESULT_COLUMNS} FROM judging_judgecall WITH NO DATA"
        )
        with cursor.cursor.copy(
            f"COPY copy_call_results ({_RESULT_COLUMNS}) FROM STDIN"
        ) as out:
            for r in results:
                out.write_row(
                    _result_row(
                        r, prices, Jsonb(r.parsed) if r.parsed is not None else None
                    )
                )
        cursor.execute(
            "UPDATE judging_judgecall AS c SET status = v.status, "
            "raw_output = v.raw_output, parsed = v.parsed, error = v.error, "
            "error_kind = v.error_kind, attempts = v.attempts, "
            "parse_failures = v.parse_failures, input_tokens = v.input_tokens, "
            "output_tokens = v.output_tokens, cost = v.cost, "
            "latency_ms = v.latency_ms, cached = v.cached, "
            "prompt_hash = v.prompt_hash, reply_model = v.reply_model, "
            "system_fingerprint = v.system_fingerprint, "
            "cached_input_tokens = v.cached_input_tokens, "
            "reasoning_tokens = v.reasoning_tokens, "
            "via_batch = c.via_batch OR v.via_batch, finished_at = %s, "
            "claim_token = '', driver_token = '', lease_until = NULL "
            "FROM copy_call_results AS v WHERE c.id = v.id",
            [now],
        )
        cursor.execute("DROP TABLE copy_call_results")


def _update_calls_pg(results: list[CallResult], prices: costs.Prices, now) -> None:
    """One UPDATE ... FROM (VALUES ...) for a whole batch of finished calls."""
    rows = []
    params: list = []
    for r in results:
        rows.append(
            "(%s::bigint, %s, %s, %s::jsonb, %s, %s, %s::int, %s::int, %s::int, "
            "%s::int, %s::numeric, %s::int, %s::boolean, %s, %s, %s, %s::int, %s::int, "
            "%s::boolean)"
        )
        params += _result_row(
            r, prices, json.dumps(r.parsed) if r.parsed is not None else None
        )
    sql = (
        "UPDATE judging_judgecall AS c SET status = v.status, raw_output = v.raw, "
        "parsed = v.parsed, error = v.error, error_kind = v.kind, attempts = v.attempts, "
        "parse_failures = v.pf, input_tokens = v.itok, output_tokens = v.otok, "
        "cost = v.cost, latency_ms = v.lat, cached = v.cached, prompt_hash = v.ph, "
        "reply_model = v.rmodel, system_fingerprint = v.fp, "
        "cached_input_tokens = v.citok, reasoning_tokens = v.rtok, "
        "via_batch = c.via_batch OR v.vb, finished_at = %s, "
        "claim_token = '', driver_token = '', lease_until = NULL "
        "FROM (VALUES "
        + ", ".join(rows)
        + ") AS v(id, status, raw, parsed, error, kind, "
        "attempts, pf, itok, otok, cost, lat, cached, ph, rmodel, fp, citok, rtok, vb) "
        "WHERE c.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, *params])


def run_length_scores(run_id: int) -> dict[int, tuple[int, int]]:
    """Response id -> (1-5 score by length quintile within the run, length)."""
    from django.db.models.functions import Length

    rows = list(
        JudgeCall.objects.filter(run_id=run_id)
        .values_list("response_id", Length("response__text"))
        .distinct()
    )
    scores = baselines.length_scores([length for _, length in rows])
    return {
        rid: (score, length) for (rid, length), score in zip(rows, scores, strict=True)
    }


def close_connection() -> None:
    """Close the calling thread's database connection (resolved in that thread)."""
    connection.close()


def run_state(run_id: int) -> str:
    """The run's current status as stored ("" when the run is gone): how the driver
    notices a pause or cancel made elsewhere."""
    return (
        JudgeRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
        or ""
    )


def judge_run_finish_if_done(*, run_id: int) -> str:
    """Mark a running run completed (or failed, if any call failed) once no call is
    pending or running. Idempotent; returns the run's status."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != JudgeRun.Status.RUNNING:
            return run.status if run else ""
        open_calls = run.calls.filter(
            status__in=[JudgeCall.Status.PENDING, JudgeCall.Status.RUNNING]
        ).exists()
        if open_calls:
            return run.status
        failed = run.calls.filter(status=JudgeCall.Status.FAILED).exists()
        run.status = JudgeRun.Status.FAILED if failed else JudgeRun.Status.COMPLETED
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
        _run_finished_notify(run)
        return run.status


def _run_finished_notify(run: JudgeRun) -> None:
    """Tell the run's workspace it finished (`flaskapp.notifications`; sent after
    the caller's commit, only once: the status guard above lets one caller here)."""
    calls = dict(run.calls.values_list("status").annotate(n=Count("id")).order_by())
    notify(
        workspace_id=run.workspace_id,
        event="judge_run.finished",
        obj={
            "type": "judge_run",
            "id": run.pk,
            "name": str(run),
            "status": run.status,
            "dataset_id": run.dataset_id,
            "url": reverse("judging:run-detail", args=[run.pk]),
        },
        counts={
            "calls": sum(calls.values()),
            "calls_succeeded": calls.get(JudgeCall.Status.SUCCEEDED, 0),
            "calls_failed": calls.get(JudgeCall.Status.FAILED, 0),
            "scores": run.scores.count(),
        },
    )
