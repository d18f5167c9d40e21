"""Executing a judge run: a driver per worker process keeps up to the endpoint's
concurrency limit of calls in flight, on one asyncio event loop.

A driver repeatedly claims pending calls (``FOR UPDATE SKIP LOCKED``; each claim gets a
token and a lease), serves them from the cache or the endpoint, parses the output
(re-asking on a parse failure up to the config's limit) and writes results in batches.
A result is written only under the claim that produced it, and scores have a unique key
(run, response, skill, sample), so a task delivered twice or a worker that died
mid-batch can never store a result twice. A driver keeps a heartbeat (`JudgeDriver`);
when it stops beating (its worker died) its claims go back to pending and the run gets
a new driver (`execution.recovery`). Transport retries happen in one layer: `judging.llm`.

Every kind is driven the same way: the run's kind (`judging.kinds`) renders the
claimed calls (`store.load_contexts`), parses each answer (`TaskKind.parse`), says
what a re-ask tells the judge (`TaskKind.reask`) and which rows a batch writes
(`store.flush_results`). Baseline judges (no prompt) score in `Driver._baseline`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections

from annotation.models import Skill
from flaskapp import limits
from flaskapp.limits import too_long
from judging import baselines, endpoints, kinds, llm, parsing, reasoning
from judging.deadlines import HangDeadline
from judging.models import (
    JudgeCache,
    JudgeCall,
    JudgeConfig,
    JudgeRun,
)
from judging.services.adaptations import adaptations_record, known_adaptations
from judging.services.budgets import judge_run_stop_at_budget, run_call_estimate
from judging.services.execution.recovery import (
    driver_beat,
    driver_register,
    driver_unregister,
)
from judging.services.execution.store import (
    CallContext,
    CallResult,
    cached_entries,
    claim_calls,
    claim_calls_within_budget,
    close_connection,
    flush_results,
    judge_run_finish_if_done,
    lease_seconds,
    load_contexts,
    renew_leases,
    run_length_scores,
    run_state,
)
from judging.services.keys import stored_key_grant

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.5
STATUS_CHECK_SECONDS = 1.0
RENEW_SECONDS = 10.0


def calls_to_start(*, concurrency: int, calls_open: int, calls_backing_off: int) -> int:
    """How many more calls a driver may start now.

    `concurrency` bounds the requests in flight (the limiter enforces it on every
    attempt), not the calls: a call sleeping before a retry (a 429's Retry-After, a
    backoff) holds no request, so it does not count against the calls that may be
    open, up to `concurrency` of them (a second full set at most: an endpoint that
    throttles everything is not answered with an unbounded number of claims).
    Without this, 5% of calls told to wait a second kept a slot idle for that
    second, and a run with 5% 429s took 1.3x its clean time.
    """
    sleeping = min(max(0, calls_backing_off), concurrency)
    return max(0, concurrency + sleeping - calls_open)


# --- the event loop side ----------------------------------------------------------------


class Driver:
    """Drives one run from one worker process until no pending call is left."""

    def __init__(self, run: JudgeRun) -> None:
        self.run = run
        self.snapshot = run.settings_snapshot
        self.config = run.config
        self.task = kinds.get(run.kind)
        self.concurrency = int(self.snapshot["max_concurrency"])
        self.lease = lease_seconds(self.config)
        self.results: list[CallResult] = []
        self.in_flight: set[asyncio.Task] = set()
        self.held: dict[int, str] = {}  # call id -> token, while in flight
        self.length_scores: dict[int, tuple[int, int]] = {}
        self.stop = False
        self.exhausted = False
        self.client: llm.JudgeClient | None = None
        # A spend cap (`judging.services.budgets`): claims go through the budget
        # check, and a claim it stopped makes the driver wait for its calls in
        # flight, store them, and try once more before it ends.
        self.capped = run.budget is not None
        self.per_call = run_call_estimate(run) if self.capped else None
        self.budget_blocked = False
        self.token = uuid.uuid4().hex  # this driver's `JudgeDriver` row
        # Probability-weighted scores: ask for token log-probabilities.
        self.logprobs = bool(self.snapshot.get("logprobs"))
        self.db = lambda fn: sync_to_async(fn, thread_sensitive=True)
        # The endpoint's refusals learnt before (for this config version, or by this
        # run): the client starts with them; `_record_adaptations` stores on the run
        # (and the config) those it has not recorded yet.
        self.adaptations = known_adaptations(run)
        self.recorded_adaptations = dict(run.adaptations or {})
        self.request_options = reasoning.request_options(self.snapshot)

    def _client(self, limiter, grant: llm.KeyGrant | None = None) -> llm.JudgeClient:
        key = (
            llm.api_key_from_env(self.snapshot["api_key_env"])
            if self.snapshot["api_key_env"]
            else None
        )
        # Runs frozen before an endpoint was refused (or resumed by recovery) fail
        # each call with the reason instead of sending it.
        refusal = endpoints.call_refusal(
            self.snapshot["base_url"], self.snapshot["api_key_env"]
        )
        return llm.JudgeClient(
            base_url=self.snapshot["base_url"],
            api_key=key,
            refusal=refusal,
            timeout=float(self.snapshot["timeout_seconds"]),
            max_retries=settings.JUDGE_MAX_TRANSPORT_RETRIES,
            backoff_base=settings.JUDGE_BACKOFF_BASE_SECONDS,
            backoff_max=settings.JUDGE_BACKOFF_MAX_SECONDS,
            max_connections=max(self.concurrency, 8),
            limiter=limiter,
            hang_deadline=self._hang_deadline(),
            key_grant=grant,
            adaptations=self.adaptations,
        )

    def _key_grant(self) -> llm.KeyGrant | None:
        """The run's stored key (None: an env-var key or none), its use recorded
        once per run (`stored_key_grant`). Database side: call through `self.db`."""
        key_id = self.snapshot.get("stored_key_id")
        if not key_id:
            return None
        return stored_key_grant(
            key_id=key_id,
            base_url=self.snapshot["base_url"],
            run_id=self.run.pk,
            actor=self.run.created_by,
        )

    def _hang_deadline(self) -> HangDeadline | None:
        if settings.JUDGE_HANG_FACTOR <= 0:
            return None
        return HangDeadline(
            timeout=float(self.snapshot["timeout_seconds"]),
            quantile=settings.JUDGE_HANG_QUANTILE,
            factor=max(1.0, settings.JUDGE_HANG_FACTOR),
            floor=settings.JUDGE_HANG_FLOOR_SECONDS,
            min_samples=settings.JUDGE_HANG_MIN_SAMPLES,
        )

    def _limiter(self):
        from judging.limits import SLOT_LEASE_MARGIN_SECONDS as SLOT_LEASE_MARGIN
        from judging.limits import LocalLimiter, RedisLimiter

        if settings.REDIS_URL:
            return RedisLimiter(
                redis_url=settings.REDIS_URL,
                scope=f"config{self.config.pk}",
                max_concurrency=self.concurrency,
                requests_per_minute=self.snapshot.get("requests_per_minute"),
                tokens_per_minute=self.snapshot.get("tokens_per_minute"),
                # Renewed with every heartbeat (`RedisLimiter.renew`): a dead
                # driver's slots come back as soon as it is presumed dead.
                # (The limiter adds SLOT_LEASE_MARGIN_SECONDS: a lease <= stale.)
                slot_lease_seconds=min(
                    float(self.snapshot["timeout_seconds"]),
                    max(1.0, settings.JUDGE_DRIVER_STALE_SECONDS - SLOT_LEASE_MARGIN),
                ),
            )
        return LocalLimiter(
            max_concurrency=self.concurrency,
            requests_per_minute=self.snapshot.get("requests_per_minute"),
            tokens_per_minute=self.snapshot.get("tokens_per_minute"),
        )

    async def run_loop(self) -> None:
        all_skills = await self.db(
            lambda: list(
                Skill.objects.filter(rubric_id=self.run.dataset.rubric_id).order_by(
                    "position"
                )
            )
        )()
        template = await self.db(lambda: self.config.prompt)()
        limiter = self._limiter()
        grant = await self.db(self._key_grant)()
        client = self.client = self._client(limiter, grant)
        if self.snapshot["backend"] == JudgeConfig.Backend.BASELINE_LENGTH:
            self.length_scores = await self.db(run_length_scores)(self.run.pk)
        await self.db(driver_register)(run_id=self.run.pk, token=self.token)
        last_flush = last_status = last_renew = last_beat = time.monotonic()
        beat_every = settings.JUDGE_DRIVER_BEAT_SECONDS
        try:
            while True:
                now = time.monotonic()
                if now - last_beat > beat_every:
                    last_beat = now
                    await self.db(driver_beat)(
                        run_id=self.run.pk,
                        token=self.token,
                        in_flight=client.requests_in_flight,
                    )
                    if hasattr(limiter, "renew"):
                        await limiter.renew()
                if now - last_status > STATUS_CHECK_SECONDS:
                    last_status = now
                    state = await self.db(run_state)(self.run.pk)
                    self.stop = state != JudgeRun.Status.RUNNING
                free = calls_to_start(
                    concurrency=self.concurrency,
                    calls_open=len(self.in_flight),
                    calls_backing_off=client.calls_backing_off,
                )
                if self.budget_blocked and not self.in_flight:
                    if not self.results:
                        break  # stopped at the budget: nothing in flight, all stored
                    await self._flush()
                    self.budget_blocked = False  # stored costs may leave room
                if (
                    not self.stop
                    and not self.exhausted
                    and not self.budget_blocked
                    and free > 0
                    and (free >= max(1, self.concurrency // 4) or not self.in_flight)
                ):
                    await self._claim_and_launch(free, all_skills, template, client)
                if not self.in_flight and (self.exhausted or self.stop):
                    break
                if self.in_flight:
                    await asyncio.wait(
                        self.in_flight,
                        timeout=0.05,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                if time.monotonic() - last_flush > FLUSH_SECONDS:
                    await self._flush()
                    last_flush = time.monotonic()
                if time.monotonic() - last_renew > RENEW_SECONDS:
                    await self.db(renew_leases)(list(self.held), self.lease)
                    last_renew = time.monotonic()
            await self._flush()
        finally:
            try:
                await self.db(driver_unregister)(token=self.token)
            except Exception:  # the row is then taken for dead: nothing is lost
                log.exception("run %s: could not unregister driver", self.run.pk)
            # The DB thread's connection is this driver's: close it, or it outlives us.
            await self.db(close_connection)()
            await client.aclose()
            if hasattr(limiter, "aclose"):
                await limiter.aclose()

    async def _claim_and_launch(self, free: int, all_skills, template, client) -> None:
        if self.capped:
            token, ids, self.budget_blocked = await self.db(claim_calls_within_budget)(
                self.run.pk, free, self.lease, self.token, self.per_call
            )
            if not ids and self.budget_blocked:
                return
        else:
            token, ids = await self.db(claim_calls)(
                self.run.pk, free, self.lease, self.token
            )
        if not ids:
            # Nothing pending now; keep looping only while our own calls are in flight.
            self.exhausted = True
            return
        contexts = await self.db(load_contexts)(
            self.run, token, ids, all_skills, template
        )
        cache = await self.db(cached_entries)(
            self.run.workspace_id, [c.cache_key for c in contexts]
        )
        for ctx in contexts:
            self.held[ctx.call_id] = token
            task = asyncio.create_task(self._one(ctx, cache.get(ctx.cache_key), client))
            self.in_flight.add(task)
            task.add_done_callback(self.in_flight.discard)

    async def _flush(self) -> None:
        batch, self.results = self.results, []
        if batch:
            await self.db(flush_results)(self.run, batch)
        await self._record_adaptations()

    async def _record_adaptations(self) -> None:
        """Store what the client newly changed on the endpoint's refusals (on the
        config's version and the run): a query only when something changed."""
        client = self.client
        if client is None or client.adaptations == self.recorded_adaptations:
            return
        learnt = dict(client.adaptations)
        await self.db(adaptations_record)(
            run_id=self.run.pk,
            config_id=self.config.pk,
            version=int(self.snapshot.get("config_version") or 0),
            adaptations=learnt,
        )
        self.recorded_adaptations = learnt

    async def _one(
        self, ctx: CallContext, cached: JudgeCache | None, client: llm.JudgeClient
    ) -> None:
        result = await self.settle(ctx, cached, client)
        self.held.pop(ctx.call_id, None)
        self.results.append(result)

    async def settle(
        self, ctx: CallContext, cached: JudgeCache | None, client: llm.JudgeClient
    ) -> CallResult:
        """The result of one claimed call: from the cache, a baseline or the judge
        (`client.complete`, re-asked on a parse failure), parsed by the run's kind;
        any failure is recorded on it. The Batch API path settles its calls here too
        (`execution.batch`), with a client that answers from the batch's lines."""
        result = CallResult(
            call_id=ctx.call_id,
            token=ctx.token,
            response_id=ctx.response_id,
            sample_index=ctx.sample_index,
            status=JudgeCall.Status.FAILED,
            cache_key=ctx.cache_key,
            prompt_hash=ctx.cache_key,
            kind=ctx.kind,
            instruction_id=ctx.instruction_id,
            pair_id=ctx.pair_id,
            order=ctx.order,
            parsed=dict(ctx.keep) if ctx.keep else None,
        )
        try:
            if self.snapshot["backend"].startswith("baseline"):
                self._baseline(ctx, result)
            else:
                await self._ask(ctx, cached, client, result)
        except Exception as exc:  # recorded on the call, never lost
            log.exception(
                "run %s call %s failed unexpectedly", self.run.pk, ctx.call_id
            )
            result.status = JudgeCall.Status.FAILED
            result.error = f"internal error: {type(exc).__name__}: {exc}"
            result.error_kind = "internal"
        return result

    def _baseline(self, ctx: CallContext, result: CallResult) -> None:
        if self.snapshot["backend"] == JudgeConfig.Backend.BASELINE_ROUGE:
            value = baselines.rouge_l_f1(ctx.reference or "", ctx.response_text)
            score = baselines.score_from_unit(value) if ctx.reference else None
            note = (
                f"ROUGE-L F1 {value:.3f} against the reference"
                if ctx.reference
                else "no reference answer: N/A"
            )
            result.parsed = {"rouge_l_f1": round(value, 4)}
        else:
            score, length = self.length_scores.get(ctx.response_id, (None, 0))
            note = f"length {length} characters: score {score} by the run's quintiles"
            result.parsed = {"length": length}
        result.status = JudgeCall.Status.SUCCEEDED
        result.raw_output = note
        # Ordinal skills get the score on their own scale; a baseline has nothing to
        # say about a categorical one (no score).
        scales = ctx.scales or {}
        result.scores = [
            (s.pk, baselines.on_scale(score, scales.get(s.key)), note)
            for s in ctx.skills
            if not (scales.get(s.key) and scales[s.key].is_categorical)
        ]

    async def _ask(
        self,
        ctx: CallContext,
        cached: JudgeCache | None,
        client: llm.JudgeClient,
        result: CallResult,
    ) -> None:
        if cached is not None and not self.logprobs:
            # A cached answer has no token probabilities: a run that wants them asks.
            try:
                self._store_parse(ctx, result, cached.raw_output)
            except parsing.ParseError:
                pass  # a cache entry that no longer parses is simply not used
            else:
                result.cached = True
                result.raw_output = cached.raw_output
                result.input_tokens = cached.input_tokens
                result.output_tokens = cached.output_tokens
                return
        messages = list(ctx.messages)
        max_reasks = int(self.snapshot.get("max_parse_retries", 2))
        for ask in range(max_reasks + 1):
            request = llm.ChatRequest(
                messages=messages,
                model=self.snapshot["model"],
                temperature=float(self.snapshot["temperature"]),
                max_tokens=int(self.snapshot["max_tokens"]),
                response_format=ctx.response_format,
                seed=ctx.sample_index if int(self.snapshot["samples"]) > 1 else None,
                **self.request_options,
                logprobs=self.logprobs,
                top_logprobs=self.snapshot.get("top_logprobs"),
            )
            try:
                answer = await client.complete(request)
            except llm.JudgeError as exc:
                result.attempts += getattr(exc, "attempts", 1)
                result.status = JudgeCall.Status.FAILED
                result.error = str(exc)
                result.error_kind = exc.kind
                return
            result.attempts += answer.attempts
            result.input_tokens += answer.input_tokens
            result.output_tokens += answer.output_tokens
            result.cached_input_tokens += answer.cached_input_tokens
            result.reasoning_tokens += answer.reasoning_tokens
            result.latency_ms = answer.latency_ms
            result.reply_model = answer.model
            result.system_fingerprint = answer.system_fingerprint
            if problem := too_long(answer.text, limits.JUDGE_OUTPUT):
                # Kept whole or not at all: a cut answer would parse as another one.
                result.status = JudgeCall.Status.FAILED
                result.error = f"the judge's answer {problem} (not kept)"
                result.error_kind = "too_long"
                result.raw_output = ""
                return
            result.raw_output = answer.text
            try:
                self._store_parse(ctx, result, answer.text)
            except parsing.ParseError as exc:
                result.parse_failures += 1
                result.status = JudgeCall.Status.FAILED
                result.error = f"could not parse the judge's answer: {exc}"
                result.error_kind = "parse"
                if ask < max_reasks:
                    # Re-ask with the reason; the conversation shows what went wrong.
                    messages = [
                        *ctx.messages,
                        {"role": "assistant", "content": answer.text},
                        {
                            "role": "user",
                            "content": self.task.reask(str(exc), ctx.skills),
                        },
                    ]
                continue
            if ask:
                result.cache_key = ""  # a re-asked answer is not the prompt's answer
            if self.logprobs:
                self._weigh(ctx, result, answer)
            return

    def _weigh(
        self, ctx: CallContext, result: CallResult, answer: llm.ChatResult
    ) -> None:
        """The kind's probability-weighted values of a parsed answer; an answer
        without token probabilities is marked (the run says so: `flush_results`)."""
        if answer.token_logprobs is None:
            result.no_logprobs = True
            return
        self.task.weigh(ctx, result, answer.text, answer.token_logprobs)

    def _store_parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        """Parse `text` with the run's kind into `result`; raises
        `parsing.ParseError`."""
        self.task.parse(ctx, result, text)
        result.status = JudgeCall.Status.SUCCEEDED
        result.error = ""
        result.error_kind = ""


def _run_in_own_loop(make_coroutine) -> None:
    """Run a coroutine to completion on a fresh event loop.

    Celery workers call this from plain threads; when the calling thread already runs
    a loop (a notebook, an async caller), the driver gets a thread of its own.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(make_coroutine())
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(make_coroutine())
        except BaseException as exc:  # re-raised in the caller's thread
            errors.append(exc)
        finally:
            close_old_connections()

    thread = threading.Thread(target=target, name="judge-driver")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]


def judge_run_drive(*, run_id: int) -> str:
    """Drive run `run_id` from this process until nothing is pending; returns its status.

    Precondition: none (a run that is not running returns at once). Side effects:
    calls claimed, executed and stored; the run finished when no call is open.
    Idempotent and safe to run in several processes at once.
    """
    run = (
        JudgeRun.objects.select_related("config", "config__prompt", "dataset")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.status != JudgeRun.Status.RUNNING or run.config is None:
        return run.status if run else ""
    try:
        _run_in_own_loop(lambda: Driver(run).run_loop())
    finally:
        close_old_connections()
    status = judge_run_finish_if_done(run_id=run_id)
    if run.budget is not None and status == JudgeRun.Status.RUNNING:
        status = judge_run_stop_at_budget(run_id=run_id)
    return status
