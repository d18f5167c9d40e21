"""The database side of judge execution: claims and leases, loading what the calls
need, the cache, writing results in batches, finishing and recovering runs.

Runs in the driver's database thread (`driver.Driver`), synchronously. A result is
written only under the claim that produced it (see `driver`).
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from annotation.models import InstructionSkill, Skill
from judging import baselines, prompts
from judging.models import (
    JudgeCache,
    JudgeCall,
    JudgeConfig,
    JudgeCritique,
    JudgeRun,
    JudgeScore,
    MetadataSuggestion,
    PairwiseVerdict,
    PromptTemplate,
)
from judging.selectors.fewshot import few_shot_prompt_examples
from judging.services.execution import metadata as annotation_execution
from judging.services.execution import pairwise as pairwise_execution
from judging.services.runs import ANNOTATION_KINDS

log = logging.getLogger(__name__)


def reask_message(
    reason: str, kind: str = JudgeRun.Kind.POINTWISE, skills: list | None = None
) -> str:
    """What the judge is told after an answer that could not be read. Pointwise:
    FLASK's sentence when every skill is FLASK-shaped (or none is given), else each
    skill's own values (`judging.prompts.value_hint`)."""
    if kind == JudgeRun.Kind.PAIRWISE:
        return pairwise_execution.PAIRWISE_REASK.format(reason=reason)
    start = f"Your previous answer could not be read ({reason}). "
    if kind == JudgeRun.Kind.CRITIQUE:
        return start + "Answer again in the requested format, with your critique."
    specs = [prompts.SkillSpec.from_model(s) for s in skills or []]
    if prompts.all_flask(specs):
        return start + (
            "Answer again in the requested format, with a score from 1 to 5 or N/A "
            "for every listed skill."
        )
    values = "; ".join(f"{s.key}: {prompts.value_hint(s.scale)}" for s in specs)
    return start + (
        "Answer again in the requested format, with a value each listed skill "
        f"allows ({values})."
    )


@dataclass
class CallContext:
    """Everything needed to make one call, loaded before the event loop needs it."""

    call_id: int
    token: str
    response_id: int
    sample_index: int
    skills: list[Skill]
    messages: list[dict]
    cache_key: str
    response_text: str = ""
    reference: str = ""
    kind: str = JudgeRun.Kind.POINTWISE
    instruction_id: int | None = None
    response_format: dict | None = None
    # Pairwise calls (see judging.services.execution.pairwise).
    pair_id: int | None = None
    order: str = ""
    allow_tie: bool = True
    keep: dict = field(default_factory=dict)  # kept in `parsed` whatever the outcome
    # Pointwise: skill key -> `annotation.scales.Scale`, what the parser accepts.
    scales: dict = field(default_factory=dict)


@dataclass
class CallResult:
    call_id: int
    token: str
    response_id: int | None
    sample_index: int
    status: str
    kind: str = JudgeRun.Kind.POINTWISE
    instruction_id: int | None = None
    raw_output: str = ""
    parsed: dict | None = None
    error: str = ""
    error_kind: str = ""
    attempts: int = 0
    parse_failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: int | None = None
    cached: bool = False
    cache_key: str = ""
    prompt_hash: str = ""  # of the rendered request: reproducible from template + data
    scores: list[tuple[int, int | None, str]] = field(default_factory=list)  # skill id
    pair_id: int | None = None
    order: str = ""
    rationale: str = ""  # a pairwise verdict's rationale
    critique: str = ""  # a critique call's critique (stored as `JudgeCritique`)


def lease_seconds(config: JudgeConfig) -> float:
    """How long a claim may stay running before it is presumed dead."""
    return max(settings.JUDGE_MIN_LEASE_SECONDS, config.timeout_seconds * 3)


def _claim(
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
    )


def _skill_specs(skills: list[Skill]) -> tuple:
    return tuple(prompts.SkillSpec.from_model(s) for s in skills)


def _load_contexts(
    run: JudgeRun, token: str, ids: list[int], all_skills: list[Skill], template
) -> list[CallContext]:
    """Render the prompt of every claimed call (a fixed number of queries per batch).

    Pointwise calls show the instruction's skills (else the rubric's) each with its
    own scale or labels; critique calls the critique task (`prompts.render_critique`,
    in the template's layout), no rubric and no schema."""
    if run.kind in (JudgeRun.Kind.METADATA, JudgeRun.Kind.CHECKLIST):
        return annotation_execution.load_annotation_contexts(
            run,
            token,
            ids,
            all_skills,
            _skill_specs(all_skills),
            CallContext,
            _cache_key,
        )
    if run.kind == JudgeRun.Kind.PAIRWISE:
        return pairwise_execution.load_pairwise_contexts(
            run, token, ids, template, CallContext, _cache_key
        )
    snapshot = run.settings_snapshot
    calls = list(
        JudgeCall.objects.filter(pk__in=ids)
        .select_related("response", "response__instruction")
        .order_by("pk")
    )
    instruction_ids = {c.response.instruction_id for c in calls}
    links: dict[int, list[Skill]] = {}
    for link in (
        InstructionSkill.objects.filter(instruction_id__in=instruction_ids)
        .select_related("skill")
        .order_by("instruction_id", "rank")
    ):
        links.setdefault(link.instruction_id, []).append(link.skill)
    specs = {s.pk: prompts.SkillSpec.from_model(s) for s in all_skills}
    for skill_list in links.values():
        for s in skill_list:
            specs.setdefault(s.pk, prompts.SkillSpec.from_model(s))
    critique = run.kind == JudgeRun.Kind.CRITIQUE
    # The run's few-shot examples (run.few_shot); each call shows its criteria's.
    examples = few_shot_prompt_examples(
        run=run, specs={spec.key: spec for spec in specs.values()}
    )
    out = []
    for call in calls:
        response = call.response
        instruction = response.instruction
        skills = links.get(instruction.pk) or all_skills
        checklist = tuple(
            (item.get("skill"), item.get("question", ""))
            for item in (instruction.checklist or [])
        )
        messages: list[dict] = []
        if critique:
            messages = prompts.render_critique(
                instruction.text,
                response.text,
                reference=instruction.reference_answer or None,
                include_reference=snapshot["include_reference"],
                layout=snapshot.get("layout") or _layout(template),
            )
        elif not snapshot["backend"].startswith("baseline"):
            inp = prompts.PointwiseInput(
                instruction=instruction.text,
                response=response.text,
                reference=instruction.reference_answer or None,
                skills=tuple(specs[s.pk] for s in skills),
                checklist=checklist,
                instance_rubric=instruction.instance_rubric or {},
                examples=examples,
            )
            if _layout(template) == PromptTemplate.Layout.FLAME:
                # FLAMe text-to-text layout: the template's texts are not used; the
                # judge answers "field: value" lines (or JSON under a schema).
                messages = prompts.render_pointwise_flame(
                    inp, include_reference=snapshot["include_reference"]
                )
            else:
                messages = prompts.render_pointwise(
                    inp,
                    system_text=template.system_text,
                    user_text=template.user_text,
                    include_reference=snapshot["include_reference"],
                    output_mode=snapshot["output_mode"],
                )
        response_format = (
            None if critique else _response_format(snapshot, specs, skills)
        )
        out.append(
            CallContext(
                call_id=call.pk,
                token=token,
                response_id=response.pk,
                sample_index=call.sample_index,
                skills=skills,
                messages=messages,
                cache_key=_cache_key(
                    snapshot, messages, call.sample_index, response_format
                )
                if messages
                else "",
                response_text=response.text,
                reference=instruction.reference_answer,
                instruction_id=instruction.pk,
                response_format=response_format,
                kind=run.kind,
                scales={s.key: specs[s.pk].scale for s in skills},
            )
        )
    return out


def _layout(template) -> str:
    """The prompt layout of a run's template ("flask" without a template)."""
    return getattr(template, "layout", "") or PromptTemplate.Layout.FLASK


def _response_format(snapshot: dict, specs: dict, skills: list[Skill]) -> dict | None:
    """The strict schema of a pointwise call: an enum of each skill's values."""
    if snapshot["output_mode"] != JudgeConfig.OutputMode.JSON_SCHEMA:
        return None
    return prompts.pointwise_response_format(
        [s.key for s in skills], {s.key: specs[s.pk].scale for s in skills}
    )


def _cached(keys: list[str]) -> dict[str, JudgeCache]:
    return {c.key: c for c in JudgeCache.objects.filter(key__in=[k for k in keys if k])}


def _flush(run: JudgeRun, results: list[CallResult]) -> None:
    """Write finished calls (only under their current claim), their scores and new cache
    entries, in one transaction; refresh the run's heartbeat."""
    if not results:
        return
    snapshot = run.settings_snapshot
    price_in = Decimal(snapshot.get("price_input_per_m") or 0)
    price_out = Decimal(snapshot.get("price_output_per_m") or 0)
    now = timezone.now()
    with transaction.atomic():
        owned = set(
            JudgeCall.objects.select_for_update()
            .filter(
                status=JudgeCall.Status.RUNNING, pk__in=[r.call_id for r in results]
            )
            .values_list("pk", "claim_token")
        )
        kept = [r for r in results if (r.call_id, r.token) in owned]
        if kept and connection.vendor == "postgresql":
            _update_calls_pg(kept, price_in, price_out, now)
        else:
            for r in kept:
                JudgeCall.objects.filter(pk=r.call_id).update(
                    status=r.status,
                    raw_output=r.raw_output,
                    parsed=r.parsed,
                    error=r.error[:5000],
                    error_kind=r.error_kind,
                    attempts=r.attempts,
                    parse_failures=r.parse_failures,
                    input_tokens=r.input_tokens,
                    output_tokens=r.output_tokens,
                    cost=_cost(r, price_in, price_out),
                    latency_ms=r.latency_ms,
                    cached=r.cached,
                    prompt_hash=r.prompt_hash,
                    finished_at=now,
                    claim_token="",
                    driver_token="",
                    lease_until=None,
                )
        JudgeScore.objects.bulk_create(
            [
                JudgeScore(
                    run_id=run.pk,
                    call_id=r.call_id,
                    response_id=r.response_id,
                    skill_id=skill_id,
                    sample_index=r.sample_index,
                    score=score,
                    rationale=rationale,
                )
                for r in kept
                if r.status == JudgeCall.Status.SUCCEEDED
                for skill_id, score, rationale in r.scores
            ],
            ignore_conflicts=True,
        )
        MetadataSuggestion.objects.bulk_create(
            [
                MetadataSuggestion(
                    run_id=run.pk,
                    instruction_id=r.instruction_id,
                    **(r.parsed or {}).get("suggestion", {}),
                )
                for r in kept
                if r.status == JudgeCall.Status.SUCCEEDED and r.kind in ANNOTATION_KINDS
            ],
            ignore_conflicts=True,
        )
        PairwiseVerdict.objects.bulk_create(
            pairwise_execution.pairwise_verdict_rows(run, kept), ignore_conflicts=True
        )
        JudgeCritique.objects.bulk_create(
            [
                JudgeCritique(
                    run_id=run.pk,
                    call_id=r.call_id,
                    response_id=r.response_id,
                    sample_index=r.sample_index,
                    text=r.critique,
                )
                for r in kept
                if r.status == JudgeCall.Status.SUCCEEDED
                and r.kind == JudgeRun.Kind.CRITIQUE
                and r.critique
            ],
            ignore_conflicts=True,
        )
        JudgeCache.objects.bulk_create(
            [
                JudgeCache(
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
            ignore_conflicts=True,
        )
        JudgeRun.objects.filter(pk=run.pk).update(heartbeat_at=now)
    if len(kept) < len(results):
        log.warning(
            "run %s: %d results dropped: their claim had been taken over",
            run.pk,
            len(results) - len(kept),
        )


def _cost(r: CallResult, price_in: Decimal, price_out: Decimal) -> Decimal:
    if r.cached:
        return Decimal(0)  # served from the cache: not paid again
    return (
        Decimal(r.input_tokens) * price_in + Decimal(r.output_tokens) * price_out
    ) / (Decimal(1_000_000))


def _renew_leases(call_ids: list[int], lease: float) -> None:
    """Keep the claims of calls still in flight (slow endpoints, long retries) alive."""
    if call_ids:
        JudgeCall.objects.filter(
            pk__in=call_ids, status=JudgeCall.Status.RUNNING
        ).update(lease_until=timezone.now() + timedelta(seconds=lease))


def _update_calls_pg(
    results: list[CallResult], price_in: Decimal, price_out: Decimal, now
) -> None:
    """One UPDATE ... FROM (VALUES ...) for a whole batch of finished calls."""
    rows = []
    params: list = []
    for r in results:
        cost = _cost(r, price_in, price_out)
        rows.append(
            "(%s::bigint, %s, %s, %s::jsonb, %s, %s, %s::int, %s::int, %s::int, "
            "%s::int, %s::numeric, %s::int, %s::boolean, %s)"
        )
        params += [
            r.call_id,
            r.status,
            r.raw_output,
            json.dumps(r.parsed) if r.parsed is not None else None,
            r.error[:5000],
            r.error_kind,
            r.attempts,
            r.parse_failures,
            r.input_tokens,
            r.output_tokens,
            cost,
            r.latency_ms,
            r.cached,
            r.prompt_hash,
        ]
    sql = (
        "UPDATE judging_judgecall AS c SET status = v.status, raw_output = v.raw, "
        "parsed = v.parsed, error = v.error, error_kind = v.kind, attempts = v.attempts, "
        "parse_failures = v.pf, input_tokens = v.itok, output_tokens = v.otok, "
        "cost = v.cost, latency_ms = v.lat, cached = v.cached, prompt_hash = v.ph, "
        "finished_at = %s, "
        "claim_token = '', driver_token = '', lease_until = NULL "
        "FROM (VALUES "
        + ", ".join(rows)
        + ") AS v(id, status, raw, parsed, error, kind, "
        "attempts, pf, itok, otok, cost, lat, cached, ph) WHERE c.id = v.id"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, *params])


def _length_scores(run_id: int) -> dict[int, tuple[int, int]]:
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


def _close_connection() -> None:
    """Close the calling thread's database connection (resolved in that thread)."""
    connection.close()


def _run_state(run_id: int) -> str:
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
        return run.status
