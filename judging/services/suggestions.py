"""Model-based metadata annotation: creating the runs, and an admin's decisions on the
suggestions they produce.

A metadata run asks the judge, per instruction, for its domains, difficulty and most
relevant skills; a checklist run for an instance-specific checklist (FLASK-Hard). The
execution writes one `MetadataSuggestion` per instruction; nothing changes in the
dataset until an admin accepts a suggestion (DESIGN: admins curate data).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.importers.base import skill_lookup_for
from annotation.importers.fields import RowReader
from annotation.models import Instruction, InstructionSkill, Skill
from flaskapp import workspaces
from flaskapp.errors import DomainError, Problem
from judging.models import JudgeRun, MetadataSuggestion

# The same frozen copy of the config as a pointwise run (the engine reads these keys).

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
    """Validate a suggestion's values as an import would (domains and level of the
    dataset's taxonomy, skills of its rubric, checklist entries); problems name the
    instruction."""
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
    # The dataset's own domains and levels (FLASK's when it declares none): an
    # accepted suggestion never leaves a value its taxonomy does not declare.
    taxonomy = suggestion.run.dataset.declared_taxonomy
    if suggestion.domains:
        plan.domains = reader.domains("domains", taxonomy) or None
    if suggestion.difficulty is not None:
        plan.difficulty = reader.difficulty("difficulty", taxonomy)
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
    workspaces.require_object_role(user, suggestion.run, workspaces.OWNER)
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
    workspaces.require_object_role(user, run, workspaces.OWNER)
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
    workspaces.require_object_role(user, suggestion.run, workspaces.OWNER)
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
