"""Pairwise human campaigns: next, submit, amend, skip (creation:
`services.campaigns`; pairs: `services.pairs`).

The same rules as pointwise rating (`services.rating`), applied to pairs: each
`CampaignItem` carries a `pair` (its `response` is the pair's `response_1`) and the
slot counters `target` / `submitted` / `reserved` / `open_slots`, changed only under
the item's row lock. The next pair is picked with ``SELECT ... FOR UPDATE SKIP
LOCKED`` (breadth-first toward the overlap), a rater never gets the same pair twice
(unique (campaign, pair, rater)), and locks expire after the campaign's TTL
(`services.serving`, the rules of every item kind).

Blinding and order: each assignment records the order in which the rater sees the
two responses (`shown_order` "12": response_1 as A; "21": response_2 as A), drawn
from a hash of (campaign, pair, rater), so a reload or a revived lock shows the same
order. Raters answer in presented terms (A / B / tie); labels are stored in the
ORIGINAL numbering ("1" / "2" / "tie") through the one mapping rule,
`annotation.labels.map_verdict` (a pure module without Django).
"""

from __future__ import annotations

import hashlib
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.http import Http404
from django.utils import timezone

from annotation import roles
from annotation.errors import ConflictError, DomainError, Problem

# The one mapping rule between presented and original labels; a pure module
# without Django, so the annotation app still loads on its own.
from annotation.labels import map_verdict, unmap_verdict
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    HumanPreference,
    ShownOrder,
    Skill,
)
from annotation.services.rating import MAX_RATIONALE
from annotation.services.rubrics import rubric_freeze
from annotation.services.serving import (
    ItemKind,
    NextResult,
    serve_next,
    skip_locked,
    skip_reason_clean,
    submit_check,
    submit_close,
    submit_take_slot,
)
from flaskapp.untrusted import text_problem

SHOWN_LABELS = ("A", "B", "tie")
# Shown order -> `annotation.labels` order ("ab": response_1 presented as A).
_ORDER = {ShownOrder.ORIGINAL: "ab", ShownOrder.SWAPPED: "ba"}


def pairwise_skills(*, campaign: Campaign) -> list[Skill]:
    """The campaign's per-skill questions, in rubric order (empty: overall only)."""
    return list(campaign.chosen_skills.order_by("position", "id"))


# --- Serving ------------------------------------------------------------------------------


def shown_order_for(*, campaign_id: int, pair_id: int, rater_id: int) -> str:
    """The order in which `rater` sees the pair: "12" or "21", a stable coin flip."""
    digest = hashlib.sha256(f"{campaign_id}:{pair_id}:{rater_id}".encode()).digest()
    return ShownOrder.ORIGINAL if digest[0] % 2 == 0 else ShownOrder.SWAPPED


def _require_pairwise(campaign: Campaign) -> None:
    if campaign.kind != Campaign.Kind.PAIRWISE:
        raise DomainError(
            "this is not a pairwise campaign",
            [Problem("is a pointwise campaign", field="campaign")],
        )


def pairwise_next(
    *, campaign: Campaign, rater: User, now: datetime | None = None
) -> NextResult:
    """Serve `rater` the next pair of a pairwise `campaign` (or resume the one held).

    The rules of `assignment_next`, for pairs: in one transaction, under a lock on
    the rater's user row (one rater's parallel calls serialise and the second resumes
    the first's assignment), the rater's live assignment first (its lock extended);
    else the open item with the most submissions and the lowest position that this
    rater has not done or skipped and no one else is locking, reserved with
    ``FOR UPDATE SKIP LOCKED``. Expired locks return to the pool here when nothing is
    free. The assignment records why it was served and the `shown_order` (stable per
    campaign, pair and rater, so a revived lock shows the same order).

    Precondition: the caller checked that `rater` belongs to the campaign. Raises
    `DomainError` for a pointwise campaign. The `NextResult` message explains an
    empty result (paused or closed, quota reached, nothing left, locked by others).
    """
    _require_pairwise(campaign)
    return serve_next(
        campaign=campaign, rater=rater, now=now or timezone.now(), kind=PAIRWISE
    )


def _pair_fields(campaign: Campaign, item: CampaignItem, rater: User) -> dict:
    """A new pairwise assignment's pair and the order its rater is shown."""
    return {
        "pair_id": item.pair_id,
        "shown_order": shown_order_for(
            campaign_id=campaign.pk, pair_id=item.pair_id, rater_id=rater.pk
        ),
    }


PAIRWISE = ItemKind(
    key="pair_id",
    noun="pair",
    verb="compared",
    extra=_pair_fields,
    answer="preferences",
    lost="this preference was not counted",
    skip_submitted="",
)


# --- Submit and skip ----------------------------------------------------------------------


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


def _own_pairwise_assignment_for_update(assignment_id: int, rater: User) -> Assignment:
    assignment = (
        Assignment.objects.select_for_update(of=("self",))
        .select_related("campaign", "campaign__dataset")
        .filter(pk=assignment_id, pair__isnull=False)
        .first()
    )
    # Another rater's assignment is reported exactly like a missing one.
    if assignment is None or assignment.rater_id != rater.pk:
        raise Http404("No such assignment.")
    roles.require_campaign_rater(rater, assignment.campaign_id)
    return assignment


def pairwise_submit(
    *,
    assignment_id: int,
    rater: User,
    label: str,
    skill_labels: dict | None = None,
    rationale: str = "",
    active_seconds: float | None = None,
    now: datetime | None = None,
    conflict_if_changed: bool = False,
) -> Assignment:
    """Save `rater`'s preference on one served pair and release its lock (one
    transaction).

    `label` and `skill_labels` values are in PRESENTED terms ("A", "B" or "tie", as
    the rater saw the pair); they are stored in the original numbering through the
    assignment's `shown_order`, as one `HumanPreference` (origin "campaign", with
    assignment, rater and shown order). Idempotent: submitting an already submitted
    assignment returns it unchanged and writes nothing (a double click, a retried
    POST); with `conflict_if_changed` (the API) a resubmit with another answer raises
    `ConflictError` (409) instead. A submit after the lock expired is accepted while the item still has a
    free slot; otherwise it is refused and the refusal recorded in the assignment's
    note. Raises `Http404` for another rater's (or a pointwise) assignment,
    `DomainError` for bad input (fields named), a skipped assignment or a paused or
    closed campaign.
    """
    now = now or timezone.now()
    refused = ""
    with transaction.atomic():
        assignment = _own_pairwise_assignment_for_update(assignment_id, rater)
        if assignment.status == Assignment.Status.SUBMITTED:
            if conflict_if_changed:
                _refuse_changed_resubmit(assignment, label, skill_labels, rationale)
            return assignment
        campaign = assignment.campaign
        submit_check(assignment, PAIRWISE)
        skills = pairwise_skills(campaign=campaign)
        shown, shown_skills, rationale = validate_pairwise_answer(
            skills=skills,
            label=label,
            skill_labels=skill_labels,
            rationale=rationale,
        )
        refused = submit_take_slot(assignment=assignment, kind=PAIRWISE, now=now)
        if not refused:
            order = assignment.shown_order
            HumanPreference.objects.create(
                pair_id=assignment.pair_id,
                label=map_shown_label(shown, order),
                skill_labels={
                    key: map_shown_label(value, order)
                    for key, value in shown_skills.items()
                },
                rationale=rationale,
                origin=HumanPreference.Origin.CAMPAIGN,
                assignment=assignment,
                rater=rater,
                shown_order=order,
            )
            submit_close(assignment=assignment, now=now, active_seconds=active_seconds)
            if skills:
                rubric_freeze(rubric_id=campaign.dataset.rubric_id)
    if refused:
        raise DomainError(refused)
    return assignment


def _refuse_changed_resubmit(
    assignment: Assignment, label, skill_labels, rationale
) -> None:
    """`ConflictError` when the answer (validated as a submit would be, in presented
    terms) differs from the stored preference of the submitted assignment."""
    shown, shown_skills, rationale = validate_pairwise_answer(
        skills=pairwise_skills(campaign=assignment.campaign),
        label=label,
        skill_labels=skill_labels,
        rationale=rationale,
    )
    order = assignment.shown_order
    stored = HumanPreference.objects.filter(assignment=assignment).first()
    given = (
        map_shown_label(shown, order),
        {k: map_shown_label(v, order) for k, v in shown_skills.items()},
        rationale,
    )
    if stored is None or given != (stored.label, stored.skill_labels, stored.rationale):
        raise ConflictError(
            "this pair is already submitted with another answer; nothing changed",
            [Problem("differs from the submitted answer", field="label")],
        )


def pairwise_amend_refusal(*, assignment: Assignment) -> str:
    """Why the vote of `assignment` cannot be amended now, or "" when it can: only a
    submitted vote, and only until its campaign is closed (a paused campaign still
    takes amendments). The one rule for `pairwise_amend` and the pages that offer
    an "Amend" link."""
    if assignment.status != Assignment.Status.SUBMITTED:
        return "only submitted preferences can be amended"
    if assignment.campaign.status == Campaign.Status.CLOSED:
        return (
            "this campaign is closed; its preferences are final and cannot be amended"
        )
    return ""


def pairwise_amend(
    *,
    assignment_id: int,
    rater: User,
    label: str,
    skill_labels: dict | None = None,
    rationale: str = "",
    now: datetime | None = None,
) -> Assignment:
    """Change `rater`'s own submitted preference while the campaign is not closed
    (the pairwise `rating_amend`).

    Answers are in PRESENTED terms, as at submit, and validated the same way; the
    stored `HumanPreference` is updated in place in the original numbering (through
    the assignment's `shown_order`) and the assignment's `updated_at` records when.
    One transaction under the assignment's row lock. Raises `Http404` for another
    rater's (or a pointwise) assignment, `DomainError` for bad input (fields named),
    an assignment that is not submitted, or a closed campaign (its preferences are
    final). Slot counters do not change: the vote was already counted.
    """
    now = now or timezone.now()
    with transaction.atomic():
        assignment = _own_pairwise_assignment_for_update(assignment_id, rater)
        if refusal := pairwise_amend_refusal(assignment=assignment):
            raise DomainError(refusal)
        shown, shown_skills, rationale = validate_pairwise_answer(
            skills=pairwise_skills(campaign=assignment.campaign),
            label=label,
            skill_labels=skill_labels,
            rationale=rationale,
        )
        order = assignment.shown_order
        HumanPreference.objects.filter(assignment=assignment).update(
            label=map_shown_label(shown, order),
            skill_labels={
                k: map_shown_label(v, order) for k, v in shown_skills.items()
            },
            rationale=rationale,
        )
        assignment.updated_at = now
        assignment.save(update_fields=["updated_at"])
    return assignment


def pairwise_skip(
    *, assignment_id: int, rater: User, reason: str, now: datetime | None = None
) -> Assignment:
    """Skip a served pair with a reason; it goes back to the pool for others.

    The rater is never served it again. Idempotent for an already skipped
    assignment; a submitted one cannot be skipped (`DomainError`). Raises `Http404`
    for another rater's (or a pointwise) assignment.
    """
    now = now or timezone.now()
    reason = skip_reason_clean(reason)
    with transaction.atomic():
        assignment = _own_pairwise_assignment_for_update(assignment_id, rater)
        return skip_locked(assignment=assignment, kind=PAIRWISE, reason=reason, now=now)
