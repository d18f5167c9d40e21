"""Model-based metadata annotation: creating the runs, and an admin's decisions on the
suggestions they produce.

A metadata run asks the judge, per instruction, for its domains, difficulty and most
relevant skills; a checklist run for an instance-specific checklist (FLASK-Hard). The
execution writes one `MetadataSuggestion` per instruction; nothing changes in the
dataset until an admin accepts a suggestion (DESIGN: admins curate data).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Sum
from django.db.models.functions import Length
from django.utils import timezone

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.importers.base import RowReader, skill_lookup_for
from annotation.models import Dataset, Instruction, InstructionSkill, Skill
from judging.models import JudgeCall, JudgeConfig, JudgeRun, MetadataSuggestion
from judging.selectors import runs as selectors

# The same frozen copy of the config as a pointwise run (the engine reads these keys).
from judging.services.runs import _snapshot

ANNOTATION_KINDS = (JudgeRun.Kind.METADATA, JudgeRun.Kind.CHECKLIST)
# For the estimate: the annotation prompt (definitions of domains, levels and the 12
# skills) and a short structured answer.
ANNOTATION_PROMPT_CHARS = 6000
ANNOTATION_OUTPUT_TOKENS = 300


def annotation_run_estimate(*, config: JudgeConfig, instructions) -> dict:
    """Calls, tokens and cost of a metadata/checklist run: one call per instruction,
    estimated from text lengths before any call is made."""
    n = instructions.count()
    if config.is_baseline or not n:
        return {"calls": n, "input_tokens": 0, "output_tokens": 0, "cost": "0"}
    chars = instructions.aggregate(c=Sum(Length("text")))["c"] or 0
    input_tokens = (chars + n * ANNOTATION_PROMPT_CHARS) // 4
    output_tokens = n * min(config.max_tokens, ANNOTATION_OUTPUT_TOKENS)
    cost = (
        Decimal(input_tokens) * config.price_input_per_m
        + Decimal(output_tokens) * config.price_output_per_m
    ) / Decimal(1_000_000)
    return {
        "calls": n,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": str(cost.quantize(Decimal("0.0001"))),
    }


def judge_run_create_annotation(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    user: User,
    kind: str,
    instruction_limit: int | None = None,
    name: str = "",
) -> JudgeRun:
    """Create a pending metadata or checklist run: one call per instruction.

    Each call targets an instruction (response null, sample 0). Nothing is sent and
    nothing in the dataset changes; `judge_run_start` executes it and the engine
    stores `MetadataSuggestion`s for an admin to accept. Raises `DomainError` naming
    the field for bad input, `PermissionDenied` for a user who is not a researcher.
    """
    roles.require_researcher(user)
    from judging.services.runs import config_endpoint_problems

    problems: list[Problem] = config_endpoint_problems(config)
    if kind not in ANNOTATION_KINDS:
        problems.append(
            Problem(
                f"must be {' or '.join(ANNOTATION_KINDS)}, not {kind!r}", field="kind"
            )
        )
    if config.is_baseline:
        problems.append(
            Problem(
                "a baseline judge cannot annotate metadata; choose an LLM judge",
                field="config",
            )
        )
    if instruction_limit is not None and instruction_limit < 1:
        problems.append(Problem("must be at least 1", field="limit"))
    if problems:
        raise DomainError("the annotation run was not created", problems)
    instructions = selectors.run_instructions(
        dataset=dataset, instruction_limit=instruction_limit
    )
    if kind == JudgeRun.Kind.CHECKLIST:
        # Checklists are written only for instructions that lack one (FLASK-Hard's
        # own checklists are never overwritten by a suggestion run).
        ids = [
            pk
            for pk, checklist in instructions.values_list("pk", "checklist")
            if not checklist
        ]
        instructions = Instruction.objects.filter(pk__in=ids)
    else:
        ids = list(instructions.values_list("pk", flat=True))
    if not ids:
        raise DomainError(
            "nothing to annotate",
            [
                Problem(
                    f"dataset {dataset.name!r} has no instructions to annotate"
                    + (
                        " without a checklist"
                        if kind == JudgeRun.Kind.CHECKLIST
                        else ""
                    ),
                    field="dataset",
                )
            ],
        )
    label = "metadata" if kind == JudgeRun.Kind.METADATA else "checklists"
    with transaction.atomic():
        run = JudgeRun.objects.create(
            config=config,
            dataset=dataset,
            kind=kind,
            instruction_limit=instruction_limit,
            name=name or f"{config.name}: {label} for {dataset.name}",
            settings_snapshot={**_snapshot(config), "kind": kind},
            estimate=annotation_run_estimate(config=config, instructions=instructions),
            total_calls=len(ids),
            created_by=user,
        )
        JudgeCall.objects.bulk_create(
            (
                JudgeCall(
                    run=run,
                    instruction_id=pk,
                    response=None,
                    sample_index=0,
                    status=JudgeCall.Status.PENDING,
                )
                for pk in ids
            ),
            batch_size=5000,
        )
    return run


# --- Deciding on suggestions --------------------------------------------------------------


@dataclass
class _Plan:
    """What accepting one suggestion changes on its instruction."""

    suggestion: MetadataSuggestion
    domains: list[str] | None = None
    difficulty: int | None = None
    skill_keys: list[str] | None = None
    checklist: list[dict] | None = None


def _plan(
    suggestion: MetadataSuggestion,
    lookup: dict[str, str],
    problems: list[Problem],
) -> _Plan:
    """Validate a suggestion's values as an import would (domains, level 1-5, skills
    of the dataset's rubric, checklist entries); problems name the instruction."""
    where = f"instruction {suggestion.instruction.external_id}"
    found: list[Problem] = []
    row = {
        "domains": suggestion.domains or None,
        "difficulty": suggestion.difficulty,
        "skills": suggestion.skills or None,
        "checklist": suggestion.checklist,
    }
    reader = RowReader(row, None, where, found)  # type: ignore[arg-type]
    plan = _Plan(suggestion=suggestion)
    if suggestion.domains:
        plan.domains = reader.domains("domains") or None
    if suggestion.difficulty is not None:
        plan.difficulty = reader.difficulty("difficulty")
    if suggestion.skills:
        plan.skill_keys = reader.skills("skills", lookup) or None
    if suggestion.checklist is not None:
        plan.checklist = reader.checklist("checklist", lookup) or []
    problems.extend(found)
    return plan


def _apply(plans: list[_Plan], user: User) -> None:
    """Write accepted plans: instruction fields, ranked skill links, decisions.

    Caller holds the transaction and the suggestions' row locks.
    """
    now = timezone.now()
    by_instruction = {p.suggestion.instruction_id: p for p in plans}
    instructions = {
        i.pk: i
        for i in Instruction.objects.select_for_update().filter(pk__in=by_instruction)
    }
    changed: list[Instruction] = []
    for instruction_id, plan in by_instruction.items():
        instruction = instructions[instruction_id]
        if plan.domains is not None:
            instruction.domain_1, instruction.domain_2 = ([*plan.domains, "", ""])[:2]
        if plan.difficulty is not None:
            instruction.difficulty = plan.difficulty
        if plan.checklist is not None:
            instruction.checklist = plan.checklist or None
        changed.append(instruction)
    Instruction.objects.bulk_update(
        changed, ["domain_1", "domain_2", "difficulty", "checklist"], batch_size=1000
    )
    relinked = [p for p in plans if p.skill_keys]
    if relinked:
        rubric_ids = {p.suggestion.run.dataset.rubric_id for p in relinked}
        skills = {
            (s.rubric_id, s.key): s.pk
            for s in Skill.objects.filter(rubric_id__in=rubric_ids)
        }
        InstructionSkill.objects.filter(
            instruction_id__in=[p.suggestion.instruction_id for p in relinked]
        ).delete()
        InstructionSkill.objects.bulk_create(
            [
                InstructionSkill(
                    instruction_id=p.suggestion.instruction_id,
                    skill_id=skills[(p.suggestion.run.dataset.rubric_id, key)],
                    rank=rank,
                )
                for p in relinked
                for rank, key in enumerate(p.skill_keys or [])
            ],
            batch_size=1000,
        )
    ids = [p.suggestion.pk for p in plans]
    MetadataSuggestion.objects.filter(pk__in=ids).update(
        status=MetadataSuggestion.Status.ACCEPTED, decided_by=user, decided_at=now
    )


def _lookup_for(run: JudgeRun) -> dict[str, str]:
    return skill_lookup_for(
        list(
            Skill.objects.filter(rubric_id=run.dataset.rubric_id).values_list(
                "key", "name"
            )
        )
    )


def _locked(queryset):
    return list(
        queryset.select_for_update(of=("self",))
        .select_related("run", "run__dataset", "instruction")
        .order_by("pk")
    )


def suggestion_accept(
    *, suggestion: MetadataSuggestion, user: User
) -> MetadataSuggestion:
    """Apply one suggestion to its instruction and mark it accepted (admins only).

    In one transaction: the instruction's domains and difficulty (when suggested), its
    relevant skills (replaced, ranked in the suggested order) and its checklist (when
    suggested). Idempotent for an accepted suggestion; a rejected one is refused.
    Raises `DomainError` when a value is not valid for the dataset (an unknown skill),
    changing nothing.
    """
    roles.require_admin(user)
    with transaction.atomic():
        locked = _locked(MetadataSuggestion.objects.filter(pk=suggestion.pk))
        if not locked:
            raise DomainError("the suggestion no longer exists")
        current = locked[0]
        if current.status == MetadataSuggestion.Status.ACCEPTED:
            return current
        if current.status == MetadataSuggestion.Status.REJECTED:
            raise DomainError(
                f"the suggestion for instruction {current.instruction.external_id} "
                "was rejected; it cannot be accepted now"
            )
        problems: list[Problem] = []
        plan = _plan(current, _lookup_for(current.run), problems)
        if problems:
            raise DomainError("the suggestion was not accepted", problems)
        _apply([plan], user)
    current.refresh_from_db()
    return current


def suggestion_accept_all(*, run: JudgeRun, user: User) -> int:
    """Accept every proposed suggestion of `run` at once (admins only).

    All or nothing: if any suggestion holds an invalid value, `DomainError` lists
    every such problem and nothing changes. Returns how many were accepted.
    """
    roles.require_admin(user)
    with transaction.atomic():
        suggestions = _locked(
            MetadataSuggestion.objects.filter(
                run_id=run.pk, status=MetadataSuggestion.Status.PROPOSED
            )
        )
        if not suggestions:
            return 0
        lookup = _lookup_for(suggestions[0].run)
        problems: list[Problem] = []
        plans = [_plan(s, lookup, problems) for s in suggestions]
        if problems:
            raise DomainError("no suggestion was accepted", problems)
        _apply(plans, user)
    return len(plans)


def suggestion_reject(
    *, suggestion: MetadataSuggestion, user: User
) -> MetadataSuggestion:
    """Mark a proposed suggestion rejected (admins only); the instruction is unchanged.

    Idempotent for a rejected suggestion; an accepted one is refused (its changes are
    already in the dataset).
    """
    roles.require_admin(user)
    with transaction.atomic():
        locked = _locked(MetadataSuggestion.objects.filter(pk=suggestion.pk))
        if not locked:
            raise DomainError("the suggestion no longer exists")
        current = locked[0]
        if current.status == MetadataSuggestion.Status.REJECTED:
            return current
        if current.status == MetadataSuggestion.Status.ACCEPTED:
            raise DomainError(
                f"the suggestion for instruction {current.instruction.external_id} "
                "was already accepted"
            )
        current.status = MetadataSuggestion.Status.REJECTED
        current.decided_by = user
        current.decided_at = timezone.now()
        current.save(update_fields=["status", "decided_by", "decided_at"])
    return current
