"""Reads that depend on a run's criteria: whether a run is a classification (every
criterion of its rubric is categorical), how often each label was given, and the
critiques of a critique run. Role checks are the callers' (`judge_run_get_for_user`).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, QuerySet

from annotation.models import Skill, SkillKind
from annotation.scales import scale_of
from judging.models import JudgeCritique, JudgeRun, JudgeScore

# Kinds whose results are criterion values (scores or labels):
# `judging.kinds.keys(reads_values=True)`, spelt out here because the kinds read
# through the selectors (tests/judging/test_kind_plugins.py keeps the two equal).
VALUE_KINDS = (JudgeRun.Kind.POINTWISE, JudgeRun.Kind.IMPORTED)


def classification_run_ids(runs) -> set[int]:
    """The ids of the `runs` (pointwise or imported) whose rubric's criteria are all
    categorical: pages call them "Classification". No query for runs annotated with
    `has_ordinal_criteria` (`judging.selectors.runs` does), one otherwise."""
    runs = [r for r in runs if r.kind in VALUE_KINDS]
    known = {
        r.pk: not r.has_ordinal_criteria
        for r in runs
        if getattr(r, "has_ordinal_criteria", None) is not None
    }
    runs = [r for r in runs if r.pk not in known]
    rubric_of = {r.pk: r.dataset.rubric_id for r in runs}
    if not rubric_of:
        return {pk for pk, yes in known.items() if yes}
    kinds: dict[int, set[str]] = {}
    for rubric_id, kind in (
        Skill.objects.filter(rubric_id__in=set(rubric_of.values()))
        .values_list("rubric_id", "kind")
        .distinct()
    ):
        kinds.setdefault(rubric_id, set()).add(kind)
    return {pk for pk, yes in known.items() if yes} | {
        pk
        for pk, rubric_id in rubric_of.items()
        if kinds.get(rubric_id) == {SkillKind.CATEGORICAL}
    }


@dataclass(frozen=True)
class LabelCounts:
    """How often a run gave each label of one categorical criterion."""

    skill: str
    counts: list[tuple[str, int]]  # (label name, count), in the criterion's order
    na: int
    allow_na: bool = True

    @property
    def show_na(self) -> bool:
        """Whether N/A deserves a column: allowed, or given anyway (older scores)."""
        return self.allow_na or self.na > 0

    @property
    def total(self) -> int:
        return sum(n for _, n in self.counts) + self.na


def judge_run_label_counts(*, run: JudgeRun) -> list[LabelCounts]:
    """Per categorical criterion of the run's rubric, the count of each label (by its
    display name, never its code) and of N/A; empty when it has none."""
    skills = [
        s
        for s in Skill.objects.filter(rubric_id=run.dataset.rubric_id).order_by(
            "position", "pk"
        )
        if s.kind == SkillKind.CATEGORICAL
    ]
    if not skills:
        return []
    rows: dict[tuple[int, int | None], int] = {
        (skill_id, score): n
        for skill_id, score, n in JudgeScore.objects.filter(
            run_id=run.pk, skill__in=skills
        )
        .values_list("skill_id", "score")
        .annotate(n=Count("id"))
        .order_by()
    }
    out = []
    for skill in skills:
        scale = scale_of(skill)
        out.append(
            LabelCounts(
                skill=skill.name,
                counts=[
                    (scale.name_of(code), rows.get((skill.pk, code), 0))
                    for code in scale.values
                ],
                na=rows.get((skill.pk, None), 0),
                allow_na=scale.allow_na,
            )
        )
    return out


def judge_run_critiques(*, run: JudgeRun) -> QuerySet[JudgeCritique]:
    """A run's critiques in instruction order, with their response and instruction."""
    return (
        JudgeCritique.objects.filter(run_id=run.pk)
        .select_related("response", "response__instruction")
        .order_by("response__instruction__position", "response_id", "sample_index")
    )
