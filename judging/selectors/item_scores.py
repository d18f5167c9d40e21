"""Scores per item, for runs derived from other runs (`judging.services.derived`).

An *item* is (response id, criterion key): criteria are matched by key, as the
agreement figures match them, so runs and campaigns on two rubric versions line up.
Role checks are the callers' (the services require the researcher role).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Avg

from annotation.models import Assignment, Campaign, Dataset, HumanScore, Skill
from annotation.scales import Scale, scale_of
from annotation.selectors.exclusions import excluded_scores
from judging.models import EvalSplitMember, JudgeRun, JudgeScore
from judging.panels import run_item_value

Item = tuple[int, str]  # (response id, criterion key)
# The kinds of run whose results are criterion scores (a panel's members, a
# calibration's source): `judging.kinds.keys(writes_scores=True)`, spelt out here
# because the kinds read through the selectors (tests/judging/test_kind_plugins.py
# keeps the two equal).
SCORE_KINDS = (JudgeRun.Kind.POINTWISE, JudgeRun.Kind.IMPORTED, JudgeRun.Kind.DERIVED)


@dataclass
class Criterion:
    """The skill a derived score is written for, and its scale."""

    skill: Skill
    scale: Scale


def run_criteria(*, dataset: Dataset, skill_ids: set[int]) -> dict[str, Criterion]:
    """Criterion key -> the skill of that key a derived run writes (the dataset
    rubric's, else the lowest id among `skill_ids`) and its scale. One query."""
    skills = Skill.objects.filter(pk__in=skill_ids) | Skill.objects.filter(
        rubric_id=dataset.rubric_id
    )
    by_key: dict[str, Skill] = {}
    ranked = sorted(skills, key=lambda s: (s.rubric_id != dataset.rubric_id, s.pk))
    for skill in ranked:
        by_key.setdefault(skill.key, skill)
    return {k: Criterion(s, scale_of(s)) for k, s in by_key.items()}


def run_item_values(*, runs: list[JudgeRun]) -> tuple[dict, dict[str, Criterion]]:
    """({run id: {item: score or None (N/A)}}, criteria) of `runs` (one dataset).

    Each run's score of an item is `judging.panels.run_item_value` of its samples
    (the samples' median, or a categorical criterion's most common label). A sample
    outside the criterion's scale counts as missing. Two queries."""
    if not runs:
        return {}, {}
    rows = list(
        JudgeScore.objects.filter(run__in=runs)
        .order_by("run_id", "response_id", "skill_id", "sample_index")
        .values_list("run_id", "response_id", "skill_id", "score")
    )
    key_of = dict(
        Skill.objects.filter(pk__in={r[2] for r in rows}).values_list("pk", "key")
    )
    criteria = run_criteria(dataset=runs[0].dataset, skill_ids=set(key_of))
    samples: dict[int, dict[Item, list]] = {r.pk: defaultdict(list) for r in runs}
    for run_id, response_id, skill_id, score in rows:
        key = key_of[skill_id]
        if score is not None and score not in criteria[key].scale.values:
            continue
        samples[run_id][(response_id, key)].append(score)
    values = {
        run_id: {
            item: run_item_value(s, ordinal=criteria[item[1]].scale.is_ordinal)
            for item, s in items.items()
        }
        for run_id, items in samples.items()
    }
    return values, criteria


def response_parts(*, dataset: Dataset) -> dict[int, str]:
    """Response id -> "dev" or "test" by the dataset's split (empty without one).
    One query."""
    return dict(
        EvalSplitMember.objects.filter(split__dataset=dataset).values_list(
            "instruction__responses__id", "part"
        )
    )


def score_campaigns(*, dataset: Dataset, campaign_ids: list[int] | None) -> list[int]:
    """The campaigns whose human scores a derived run fits on: `campaign_ids`, else
    every pointwise campaign of the dataset (the agreement figures' default), by id.
    Returns the unknown ids' problem through ValueError (the caller names the
    field). One query."""
    pointwise = Campaign.objects.filter(dataset=dataset, kind=Campaign.Kind.POINTWISE)
    found = sorted(pointwise.values_list("pk", flat=True))
    if campaign_ids is None:
        return found
    wanted = sorted({int(c) for c in campaign_ids})
    if missing := [c for c in wanted if c not in found]:
        raise ValueError(
            f"{', '.join(map(str, missing))}: no pointwise campaign of dataset "
            f"{dataset.name!r} has this id"
        )
    return wanted


def dev_human_means(*, dataset: Dataset, campaign_ids: list[int]) -> dict[Item, float]:
    """The mean human score of each item of the DEV split of `dataset`: numeric
    scores of submitted, non-gold assignments of `campaign_ids` whose rater is not
    excluded (`excluded_scores`). Test items are never read. One query."""
    if not campaign_ids:
        return {}
    dev = EvalSplitMember.objects.filter(
        split__dataset=dataset, part=EvalSplitMember.Part.DEV
    ).values("instruction_id")
    rows = (
        HumanScore.objects.filter(
            assignment__campaign_id__in=campaign_ids,
            assignment__status=Assignment.Status.SUBMITTED,
            assignment__gold=False,
            assignment__response__instruction_id__in=dev,
            score__isnull=False,
        )
        .filter(~excluded_scores())
        .values("assignment__response_id", "skill__key")
        .annotate(mean=Avg("score"))
        .order_by()
    )
    return {
        (r["assignment__response_id"], r["skill__key"]): float(r["mean"]) for r in rows
    }


def score_run_list(*, dataset: Dataset) -> list[JudgeRun]:
    """The runs of `dataset` with criterion scores (pointwise, imported, derived),
    newest first, with their configs: what a panel or a calibration can use. Two
    queries; the caller has checked the researcher role."""
    scored = JudgeScore.objects.filter(run__dataset=dataset).values("run_id")
    return list(
        JudgeRun.objects.filter(dataset=dataset, kind__in=SCORE_KINDS, pk__in=scored)
        .select_related("config")
        .order_by("-created_at", "-pk")
    )
