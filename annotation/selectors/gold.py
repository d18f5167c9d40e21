"""Reads of gold items: a dataset's known answers, and how each rater did on them.

A rater's answer to one criterion of a gold item is right by `Scale.matches` (within
the item's tolerance; a label exactly). Accuracy is right / checked over the rater's
submitted gold items of a campaign, with a Wilson 95% interval
(`annotation.intervals.wilson_interval`); exact and within-1 agreement are
counted beside it on ordinal criteria. Attention checks are counted apart, one
pass per item (every criterion right).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count, Exists, OuterRef, Q

from annotation.intervals import wilson_interval
from annotation.models import (
    Assignment,
    Campaign,
    CampaignItem,
    Dataset,
    GoldItem,
    GoldScore,
    HumanScore,
    Qualification,
    Skill,
)
from annotation.scales import scale_of


def gold_block_slot(campaign_id: int, rater_id: int, block: int, size: int) -> int:
    """The seeded position of the gold item in a rater's `block`-th block of `size`
    items (`services.gold.gold_due`): raters cannot count their way to it."""
    digest = hashlib.sha256(f"gold:{campaign_id}:{rater_id}:{block}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % size


def gold_answers_seen(*, rater_id: int, response_ref: str = "response_id") -> Exists:
    """True for a gold response whose expected answers this rater was shown, in any
    campaign (`Assignment.answers_shown`: a training phase's feedback, a failed
    qualification's report): such an item is never served to the rater again, since
    it no longer tests them (`services.gold.gold_pick`)."""
    return Exists(
        Assignment.objects.filter(
            rater_id=rater_id, answers_shown=True, response_id=OuterRef(response_ref)
        )
    )


def items_left_counts(*, rater_id: int, campaign_ids) -> dict[int, tuple[int, int]]:
    """Per campaign: (real items, gold items) the rater holds no assignment of (an
    expired one aside), real ones only while they have an open slot, gold ones only
    while they still test the rater (`gold_answers_seen`). One query."""
    not_mine = ~Exists(
        Assignment.objects.filter(rater_id=rater_id, item_id=OuterRef("pk")).exclude(
            status=Assignment.Status.EXPIRED
        )
    )
    rows = (
        CampaignItem.objects.filter(campaign_id__in=campaign_ids)
        .filter(not_mine)
        .filter(Q(gold=False, open_slots__gt=0) | Q(gold=True))
        .values_list("campaign_id")
        .annotate(
            real=Count("id", filter=Q(gold=False)),
            gold=Count(
                "id", filter=Q(gold=True) & ~gold_answers_seen(rater_id=rater_id)
            ),
        )
        .order_by()
    )
    return {cid: (real, gold) for cid, real, gold in rows}


def gold_schedule_left(
    *, campaign: Campaign, rater_id: int, position: int, real: int, gold: int
) -> int:
    """How many more items the serving rules would serve this rater (no other rater
    acting meanwhile): from their `position`-th item (the count of their assignments,
    expired ones aside), `real` real items and `gold` unseen gold items, one gold
    item on each block's seeded slot while any is left (`gold_block_slot`), real
    items elsewhere; serving stops at the first non-gold position with no real item
    left. So each item served, gold or real, takes exactly one off it."""
    rate = campaign.gold_rate
    if not rate or not gold:
        return real
    total, pos, slots = 0, position, {}
    while True:
        block = pos // rate
        if block not in slots:
            slots[block] = gold_block_slot(campaign.pk, rater_id, block, rate)
        if gold and pos % rate == slots[block]:
            gold -= 1
        elif real and gold:
            real -= 1
        else:
            return total + real
        total += 1
        pos += 1


def gold_list(*, dataset: Dataset):
    """The dataset's gold items with their response, instruction and expected scores
    (a constant number of queries)."""
    return (
        GoldItem.objects.filter(dataset=dataset)
        .select_related("response__instruction", "created_by")
        .prefetch_related("scores__skill")
        .order_by("response_id")
    )


def gold_get(*, dataset: Dataset, response_id: int) -> GoldItem | None:
    return gold_list(dataset=dataset).filter(response_id=response_id).first()


def gold_expected(gold: GoldItem) -> dict[str, str]:
    """criterion key -> the expected value as a rater would write it ("N/A" too)."""
    out = {}
    for gs in gold.scores.all():
        scale = scale_of(gs.skill)
        out[gs.skill.key] = "N/A" if gs.score is None else scale.label_of(gs.score)
    return out


@dataclass
class RaterGold:
    rater_id: int
    username: str
    items: int = 0  # gold items submitted (attention checks included)
    checked: int = 0  # criteria compared
    right: int = 0  # within the item's tolerance
    exact: int = 0
    ordinal: int = 0  # ordinal criteria compared (for within-1)
    within1: int = 0
    attention: int = 0  # attention checks submitted
    attention_passed: int = 0
    low: float | None = None  # Wilson 95% interval of right / checked
    high: float | None = None

    @property
    def accuracy(self) -> float | None:
        return self.right / self.checked if self.checked else None

    @property
    def exact_rate(self) -> float | None:
        return self.exact / self.checked if self.checked else None

    @property
    def within1_rate(self) -> float | None:
        return self.within1 / self.ordinal if self.ordinal else None


def campaign_gold_accuracy(*, campaign: Campaign) -> list[RaterGold]:
    """Per rater with a submitted gold item in `campaign`: counts, accuracy with its
    Wilson interval, exact and within-1 rates, attention checks passed. Sorted by
    username. Empty for a campaign without gold items."""
    if not campaign.uses_gold:
        return []
    done = Assignment.objects.filter(
        campaign=campaign, gold=True, status=Assignment.Status.SUBMITTED
    )
    assignments = list(done.values_list("pk", "rater_id", "rater__username",
                                        "response_id"))  # fmt: skip
    if not assignments:
        return []
    golds = {
        g.response_id: g
        for g in GoldItem.objects.filter(
            response_id__in={a[3] for a in assignments}
        ).only("pk", "response_id", "kind", "tolerance")
    }
    expected = {
        (gs.gold_id, gs.skill_id): gs.score
        for gs in GoldScore.objects.filter(gold__in=golds.values())
    }
    skills = Skill.objects.filter(pk__in={sid for _, sid in expected})
    scales = {s.pk: scale_of(s) for s in skills}
    given = defaultdict(dict)
    for aid, sid, score in HumanScore.objects.filter(
        assignment_id__in=[a[0] for a in assignments]
    ).values_list("assignment_id", "skill_id", "score"):
        given[aid][sid] = score
    rows: dict[int, RaterGold] = {}
    for aid, rater_id, username, response_id in assignments:
        gold = golds.get(response_id)
        if gold is None:  # unmarked since it was served: nothing to compare with
            continue
        row = rows.setdefault(rater_id, RaterGold(rater_id, username))
        row.items += 1
        passed = True
        for sid, score in given[aid].items():
            key = (gold.pk, sid)
            if key not in expected:
                continue
            want, scale = expected[key], scales[sid]
            ok = scale.matches(want, score, gold.tolerance)
            passed &= ok
            row.checked += 1
            row.right += ok
            row.exact += scale.matches(want, score, 0)
            if scale.is_ordinal and want is not None and score is not None:
                row.ordinal += 1
                row.within1 += abs(score - want) <= 1
        if gold.kind == GoldItem.Kind.ATTENTION:
            row.attention += 1
            row.attention_passed += passed
    for row in rows.values():
        if row.checked:
            row.low, row.high = wilson_interval(row.right, row.checked)
    return sorted(rows.values(), key=lambda r: r.username)


# --- Qualification --------------------------------------------------------------------


def qualification_tolerance(rule: str) -> int:
    """Points a qualification answer may be off by the campaign's rule."""
    return 1 if rule == Campaign.QualificationRule.WITHIN1 else 0


def qualification_answers(attempt: Qualification):
    """Per done assignment of the attempt, in serving order: (assignment, gold item,
    [(skill, expected, given or "missing" / "skipped")])."""
    done = list(
        Assignment.objects.filter(qualification=attempt)
        .exclude(status__in=[Assignment.Status.EXPIRED, Assignment.Status.SERVED])
        .select_related("response__instruction")
        .order_by("served_at", "pk")
    )
    golds = {
        g.response_id: g
        for g in GoldItem.objects.filter(response_id__in=[a.response_id for a in done])
    }
    expected: dict[int, list[GoldScore]] = {}
    for gs in GoldScore.objects.filter(gold__in=golds.values()).select_related("skill"):
        expected.setdefault(gs.gold_id, []).append(gs)
    given: dict[int, dict[int, int | None]] = {}
    for aid, sid, score in HumanScore.objects.filter(assignment__in=done).values_list(
        "assignment_id", "skill_id", "score"
    ):
        given.setdefault(aid, {})[sid] = score
    out = []
    for a in done:
        gold = golds.get(a.response_id)
        if gold is None:  # unmarked since: nothing to compare with
            continue
        rows = []
        for gs in expected.get(gold.pk, []):
            if a.status == Assignment.Status.SKIPPED:
                mine = "skipped"
            else:
                mine = given.get(a.pk, {}).get(gs.skill_id, "missing")
            rows.append((gs.skill, gs.score, mine))
        out.append((a, gold, rows))
    return out


def qualification_report(attempt: Qualification) -> list[dict]:
    """For the rater once an attempt failed (and for researchers): each item with the
    instruction's opening, and per criterion the rater's answer, the expected one and
    whether it was right by the attempt's rule."""
    tolerance = qualification_tolerance(attempt.rule)
    out = []
    for n, (a, gold, rows) in enumerate(qualification_answers(attempt), start=1):
        criteria = []
        for skill, want, mine in rows:
            scale = scale_of(skill)
            if mine in ("missing", "skipped"):
                yours, right = ("skipped" if mine == "skipped" else ""), False
            else:
                yours = "N/A" if mine is None else scale.label_of(mine)
                right = scale.matches(want, mine, tolerance)
            criteria.append({
                "skill": skill.key,
                "name": skill.name,
                "expected": "N/A" if want is None else scale.label_of(want),
                "yours": yours,
                "right": right,
                "asked": mine != "missing",
            })  # fmt: skip
        out.append({
            "item": n,
            "instruction": a.response.instruction.text[:300],
            "explanation": gold.explanation,
            "criteria": criteria,
        })  # fmt: skip
    return out


def _done_counts(attempt_ids: list[int]) -> dict[int, int]:
    return dict(
        Assignment.objects.filter(qualification_id__in=attempt_ids)
        .exclude(status__in=[Assignment.Status.EXPIRED, Assignment.Status.SERVED])
        .values("qualification_id")
        .annotate(n=Count("id"))
        .values_list("qualification_id", "n")
    )


@dataclass
class RaterQualification:
    """A rater's latest attempt, how many of its items are done, and (once it failed)
    the report of answers against the expected ones."""

    attempt: Qualification
    done: int
    report: list[dict] | None = None

    @property
    def current_item(self) -> int:
        return min(self.done + 1, self.attempt.items)


def rater_qualification(*, campaign: Campaign, rater) -> RaterQualification | None:
    """None for a campaign without qualification or a rater who has not started."""
    if not campaign.qualification_size:
        return None
    attempt = (
        Qualification.objects.filter(campaign=campaign, rater=rater)
        .order_by("-attempt")
        .first()
    )
    if attempt is None:
        return None
    done = _done_counts([attempt.pk]).get(attempt.pk, 0)
    report = (
        qualification_report(attempt)
        if attempt.status == Qualification.Status.FAILED
        else None
    )
    return RaterQualification(attempt, done, report)


def campaign_qualifications(*, campaign: Campaign) -> list[Qualification]:
    """Every attempt of the campaign's raters, by rater then attempt, each with `done`
    (items answered) and `can_retry` (failed, the first, no retry allowed yet)."""
    if not campaign.qualification_size:
        return []
    attempts = list(
        Qualification.objects.filter(campaign=campaign)
        .select_related("rater", "retry_allowed_by")
        .order_by("rater__username", "attempt")
    )
    done = _done_counts([q.pk for q in attempts])
    for q in attempts:
        q.done = done.get(q.pk, 0)
        q.can_retry = (
            q.status == Qualification.Status.FAILED
            and q.attempt == 1
            and q.retry_allowed_by_id is None
            and q.retry_allowed_at is None
        )
    return attempts
