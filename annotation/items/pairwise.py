"""The pairwise item kind: a pair of responses to one instruction, compared.

Blinding and order: each assignment records the order in which the rater sees the
two responses (`shown_order` "12": response_1 as A; "21": response_2 as A), drawn
from a hash of (campaign, pair, rater), so a reload or a revived lock shows the same
order. Raters answer in presented terms (A / B / tie), overall and per chosen skill;
labels are stored in the ORIGINAL numbering ("1" / "2" / "tie") through the one
mapping rule, `annotation.labels.map_verdict` (a pure module without Django), as
one `HumanPreference` per submitted assignment.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime

from django.contrib.auth.models import User
from django.db import connection
from django.db.models import QuerySet

from annotation.items import ItemKind
from annotation.items.pointwise import MAX_RATIONALE

# The one mapping rule between presented and original labels; a pure module
# without Django, so the annotation app still loads on its own.
from annotation.labels import map_verdict, unmap_verdict
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    HumanPreference,
    Instruction,
    PreferencePair,
    Response,
    ShownOrder,
    Skill,
)
from annotation.selectors.pairwise import pairwise_rater_history
from annotation.sqlrows import from_row, table
from flaskapp.errors import ConflictError, DomainError, Problem
from flaskapp.untrusted import text_problem

SHOWN_LABELS = ("A", "B", "tie")
# Shown order -> `annotation.labels` order ("ab": response_1 presented as A).
_ORDER = {ShownOrder.ORIGINAL: "ab", ShownOrder.SWAPPED: "ba"}
# A checked answer in presented terms: (label, skill labels, rationale).
Answer = tuple[str, dict[str, str], str]


def pairwise_skills(*, campaign: Campaign) -> list[Skill]:
    """The campaign's per-skill questions, in rubric order (empty: overall only)."""
    return list(campaign.chosen_skills.order_by("position", "id"))


def shown_order_for(*, campaign_id: int, pair_id: int, rater_id: int) -> str:
    """The order in which `rater` sees the pair: "12" or "21", a stable coin flip."""
    digest = hashlib.sha256(f"{campaign_id}:{pair_id}:{rater_id}".encode()).digest()
    return ShownOrder.ORIGINAL if digest[0] % 2 == 0 else ShownOrder.SWAPPED


def map_shown_label(label: str, shown_order: str) -> str:
    """A label in presented terms ("A"/"B"/"tie") -> the original numbering."""
    return map_verdict(label, _ORDER[ShownOrder(shown_order)])


def unmap_shown_label(label: str, shown_order: str) -> str:
    """The inverse: a stored label ("1"/"2"/"tie") -> what the rater chose as shown
    ("A"/"B"/"tie")."""
    return unmap_verdict(label, _ORDER[ShownOrder(shown_order)])


def _normalise_label(value) -> str | None:
    if not isinstance(value, str):
        return None
    value = value.strip()
    if value in ("A", "a"):
        return "A"
    if value in ("B", "b"):
        return "B"
    if value.lower() == "tie":
        return "tie"
    return None


def validate_pairwise_answer(
    *,
    skills: list[Skill],
    label,
    skill_labels,
    rationale,
) -> tuple[str, dict[str, str], str]:
    """Check a rater's answer in presented terms; returns (label, skill labels,
    rationale) normalised ("A"/"B"/"tie"). Every listed skill needs an answer; keys
    that are not the campaign's skills are refused. Raises `DomainError` naming each
    field (`label`, `skill_labels.<key>`, `rationale`)."""
    problems: list[Problem] = []
    shown = _normalise_label(label)
    if shown is None:
        problems.append(
            Problem(
                f"{label!r} is not one of A, B or tie"
                if label not in (None, "")
                else "is missing: choose A, B or tie",
                field="label",
            )
        )
    wanted = [s.key for s in skills]
    answers: dict[str, str] = {}
    if skill_labels is None:
        skill_labels = {}
    if not isinstance(skill_labels, dict):
        problems.append(
            Problem("must be an object of skill -> A, B or tie", field="skill_labels")
        )
        skill_labels = {}
    for key in skill_labels:
        if key not in wanted:
            problems.append(
                Problem(
                    f"{key!r} is not a skill of this campaign",
                    field=f"skill_labels.{key}",
                )
            )
    for key in wanted:
        value = skill_labels.get(key)
        if value in (None, ""):
            problems.append(
                Problem("is missing: choose A, B or tie", field=f"skill_labels.{key}")
            )
            continue
        normal = _normalise_label(value)
        if normal is None:
            problems.append(
                Problem(
                    f"{value!r} is not one of A, B or tie",
                    field=f"skill_labels.{key}",
                )
            )
            continue
        answers[key] = normal
    if rationale is None:
        rationale = ""
    if not isinstance(rationale, str):
        problems.append(Problem("must be text", field="rationale"))
        rationale = ""
    elif len(rationale) > MAX_RATIONALE:
        problems.append(
            Problem(f"is longer than {MAX_RATIONALE} characters", field="rationale")
        )
    elif problem := text_problem(rationale):
        problems.append(Problem(problem, field="rationale"))
    if problems:
        raise DomainError("the preference was not saved", problems)
    return shown or "", answers, rationale.strip()


def _stored(answer: Answer, order: str) -> tuple[str, dict[str, str], str]:
    """A checked answer in the original numbering, as `HumanPreference` stores it."""
    shown, shown_skills, rationale = answer
    return (
        map_shown_label(shown, order),
        {key: map_shown_label(value, order) for key, value in shown_skills.items()},
        rationale,
    )


def hand_over_preference(assignment: Assignment, saved: HumanPreference) -> None:
    """Attach the vote just saved as if prefetched (``assignment.preferences``), so
    that rendering the answer needs no further query."""
    cache = assignment.preferences.all()
    cache._result_cache = [saved]
    cache._prefetch_done = True
    assignment._prefetched_objects_cache = {"preferences": cache}


class PairwiseItem(ItemKind):
    """A pair to compare (`Campaign.Kind.PAIRWISE`): each `CampaignItem` carries a
    `pair` (its `response` is the pair's `response_1`); a rater never gets the same
    pair twice (unique (campaign, pair, rater))."""

    campaign_kind = Campaign.Kind.PAIRWISE
    key = "pair_id"
    noun = "pair"
    verb = "compared"
    answer = "preferences"
    lost = "this preference was not counted"
    skip_submitted = ""
    sql_fast_path = True
    sql_submit = True
    sql_where = "pair_id IS NOT NULL"
    # `shown_order_for` in SQL: the first byte of the same SHA-256, even -> "12".
    extra_sql = {
        "pair_id": "pick.pair_id",
        "shown_order": (
            "CASE WHEN get_byte(sha256(convert_to(%(campaign)s::text || ':' || "
            "pick.pair_id::text || ':' || %(rater)s::text, 'UTF8')), 0) %% 2 = 0 "
            f"THEN '{ShownOrder.ORIGINAL.value}' ELSE '{ShownOrder.SWAPPED.value}' END"
        ),
    }

    def sql_form(self, *, skills: dict[str, str], skill_mode: str) -> tuple[str, str]:
        """The pair, its instruction, both responses and the campaign's per-skill
        questions (`pairwise_skills`: its chosen skills, in rubric order)."""
        columns = (
            "p.instruction_id, n.text, n.reference_answer, p.response_1_id, "
            "r1.model_name, r1.text, p.response_2_id, r2.model_name, r2.text, "
            + skills["source:chosen"]
        )
        r = table(Response)
        joins = (
            f"JOIN {table(PreferencePair)} p ON p.id = got.pair_id "
            f"JOIN {table(Instruction)} n ON n.id = p.instruction_id "
            f"JOIN {r} r1 ON r1.id = p.response_1_id "
            f"JOIN {r} r2 ON r2.id = p.response_2_id"
        )
        return columns, joins

    def sql_form_load(self, assignment: Assignment, values, skills_of) -> list[Skill]:
        instruction_id = values[0]
        instruction = from_row(
            Instruction, ("id", "text", "reference_answer"), values[:3]
        )
        responses = [
            from_row(
                Response,
                ("id", "instruction_id", "model_name", "text"),
                (values[i], instruction_id, values[i + 1], values[i + 2]),
            )
            for i in (3, 6)
        ]
        pair = from_row(
            PreferencePair,
            ("id", "instruction_id", "response_1_id", "response_2_id"),
            (assignment.pair_id, instruction_id, responses[0].pk, responses[1].pk),
        )
        pair.instruction = instruction
        pair.response_1, pair.response_2 = responses
        assignment.pair = pair
        return skills_of(values[9])

    def extra(self, campaign: Campaign, item: CampaignItem, rater: User) -> dict:
        """A new pairwise assignment's pair and the order its rater is shown."""
        return {
            "pair_id": item.pair_id,
            "shown_order": shown_order_for(
                campaign_id=campaign.pk, pair_id=item.pair_id, rater_id=rater.pk
            ),
        }

    def clean(self, *, assignment: Assignment, answer: dict) -> Answer:
        """`answer`: ``label``, ``skill_labels``, ``rationale``
        (`validate_pairwise_answer`, against the campaign's skills)."""
        return validate_pairwise_answer(
            skills=pairwise_skills(campaign=assignment.campaign),
            label=answer.get("label"),
            skill_labels=answer.get("skill_labels"),
            rationale=answer.get("rationale", ""),
        )

    def holds(self, assignment: Assignment) -> bool:
        return assignment.pair_id is not None

    def uses_rubric(self, valid: Answer) -> bool:
        """Only the per-skill questions use the rubric's criteria."""
        return bool(valid[1])

    def clean_read(self, *, skills: list[Skill], answer: dict) -> Answer:
        return validate_pairwise_answer(
            skills=skills,
            label=answer.get("label"),
            skill_labels=answer.get("skill_labels"),
            rationale=answer.get("rationale", ""),
        )

    def sql_answer_insert(self) -> str:
        p = connection.ops.quote_name(HumanPreference._meta.db_table)
        return f"""INSERT INTO {p} (pair_id, label, skill_labels, rationale, origin,
    voter, source_key, assignment_id, rater_id, shown_order, created_at)
VALUES (%(pair)s, %(label)s, %(skill_labels)s::jsonb, %(rationale)s,
    '{HumanPreference.Origin.CAMPAIGN.value}', '', '', %(assignment)s, %(rater)s,
    %(shown_order)s, %(stamp)s)
RETURNING id"""

    def sql_answer_params(self, *, assignment: Assignment, valid: Answer) -> dict:
        label, skill_labels, rationale = _stored(valid, assignment.shown_order)
        return {
            "pair": assignment.pair_id,
            "label": label,
            "skill_labels": json.dumps(skill_labels),
            "rationale": rationale,
            "rater": assignment.rater_id,
            "shown_order": assignment.shown_order,
        }

    def sql_answer_saved(
        self, *, assignment: Assignment, valid: Answer, rows: list, stamp: datetime
    ) -> None:
        """Hand the saved vote over (`hand_over_preference`)."""
        label, skill_labels, rationale = _stored(valid, assignment.shown_order)
        hand_over_preference(
            assignment,
            HumanPreference(
                id=rows[0][0],
                pair_id=assignment.pair_id,
                label=label,
                skill_labels=skill_labels,
                rationale=rationale,
                origin=HumanPreference.Origin.CAMPAIGN,
                assignment=assignment,
                rater_id=assignment.rater_id,
                shown_order=assignment.shown_order,
                created_at=stamp,
            ),
        )

    def store(
        self, *, assignment: Assignment, valid: Answer, rater: User, now: datetime
    ) -> None:
        """One `HumanPreference` (origin "campaign", with assignment, rater and
        shown order), handed over to `assignment` (`hand_over_preference`)."""
        label, skill_labels, rationale = _stored(valid, assignment.shown_order)
        saved = HumanPreference.objects.create(
            pair_id=assignment.pair_id,
            label=label,
            skill_labels=skill_labels,
            rationale=rationale,
            origin=HumanPreference.Origin.CAMPAIGN,
            assignment=assignment,
            rater=rater,
            shown_order=assignment.shown_order,
        )
        hand_over_preference(assignment, saved)

    def stored_equal(self, *, assignment: Assignment, valid: Answer) -> bool:
        stored = HumanPreference.objects.filter(assignment=assignment).first()
        return stored is not None and _stored(valid, assignment.shown_order) == (
            stored.label,
            stored.skill_labels,
            stored.rationale,
        )

    def conflict(self, assignment: Assignment) -> ConflictError:
        return ConflictError(
            "this pair is already submitted with another answer; nothing changed",
            [Problem("differs from the submitted answer", field="label")],
        )

    def amend_refusal(self, *, assignment: Assignment) -> str:
        """Only a submitted vote, and only until its campaign is closed (a paused
        campaign still takes amendments)."""
        if assignment.status != Assignment.Status.SUBMITTED:
            return "only submitted preferences can be amended"
        if assignment.campaign.status == Campaign.Status.CLOSED:
            return (
                "this campaign is closed; its preferences are final and cannot be "
                "amended"
            )
        return ""

    def amend(
        self, *, assignment: Assignment, valid: Answer, rater: User, now: datetime
    ) -> None:
        """The stored `HumanPreference` updated in place, in the original
        numbering; the assignment's `updated_at` records when."""
        label, skill_labels, rationale = _stored(valid, assignment.shown_order)
        HumanPreference.objects.filter(assignment=assignment).update(
            label=label, skill_labels=skill_labels, rationale=rationale
        )
        assignment.updated_at = now
        assignment.save(update_fields=["updated_at"])

    def history(self, *, user: User, campaign: Campaign) -> QuerySet[Assignment]:
        return pairwise_rater_history(user=user, campaign=campaign)


PAIRWISE = PairwiseItem()
