"""Item-level diff of two judge runs: the items (a response and a criterion) where
two runs of the same dataset gave different scores, with both scores and both
rationales (the experiment page links here from its comparison with the baseline).

An item's score of a run is the median of its numeric samples (N/A when every
sample is N/A), so a run with several samples per item is compared by what the
agreement figures use; the rationale shown is its first sample's. Only items both
runs scored are compared; they "differ" when the two scores are not equal (a number
against N/A differs). Order: the largest gap first (N/A against a number counts as
the largest), then the response and the criterion.
"""

from __future__ import annotations

import statistics as pystats
from dataclasses import dataclass

from django.core.paginator import Paginator

from annotation.models import Response, Skill
from annotation.scales import scale_of
from flaskapp.errors import DomainError, Problem
from judging.models import JudgeRun, JudgeScore
from judging.selectors.runs import judge_run_get_for_user

PER_PAGE = 25


@dataclass
class Side:
    """One run's judgment of an item: the item score (None: N/A), every sample's
    label and the first sample's rationale."""

    score: float | None
    samples: list[str]
    rationale: str


def _item_score(scores: list[int | None]) -> float | None:
    numeric = [s for s in scores if s is not None]
    return float(pystats.median(numeric)) if numeric else None


def _sides(run: JudgeRun, skill_id: int | None) -> dict[tuple[int, int], list]:
    rows = JudgeScore.objects.filter(run=run)
    if skill_id is not None:
        rows = rows.filter(skill_id=skill_id)
    out: dict[tuple[int, int], list] = {}
    for response_id, sk, score, rationale in rows.order_by(
        "response_id", "skill_id", "sample_index"
    ).values_list("response_id", "skill_id", "score", "rationale"):
        out.setdefault((response_id, sk), []).append((score, rationale))
    return out


def _gap(a: float | None, b: float | None) -> float:
    if a is None or b is None:
        return float("inf")
    return abs(a - b)


def run_diff_for_user(
    *,
    user,
    run_id: int,
    other_id: int,
    criterion: str = "",
    page: int = 1,
    per_page: int = PER_PAGE,
) -> dict:
    """The items where run `run_id` and run `other_id` differ (module doc), on one
    page of `per_page`. Another workspace's run is a 404 and a role below researcher
    a 403 (:func:`judge_run_get_for_user`); runs of two datasets, a run compared with
    itself or an unknown `criterion` (a skill key of the dataset's rubric) raise
    DomainError naming the parameter. A page past the last shows the last.

    Returns {"a", "b" (the runs), "criteria" [(key, name)] of the criteria both runs
    scored, "criterion" (key or ""), "compared" (items both scored), "n_differ",
    "page" (a Django Page of rows), each row {"response", "skill", "a": Side,
    "b": Side, "gap"}}. Queries: a fixed number whatever the runs' sizes."""
    a = judge_run_get_for_user(user=user, run_id=run_id)
    b = judge_run_get_for_user(user=user, run_id=other_id)
    if a.pk == b.pk:
        raise DomainError(
            "nothing to compare", [Problem("choose two different runs", field="run")]
        )
    if a.dataset_id != b.dataset_id:
        raise DomainError(
            "the two runs score different datasets",
            [
                Problem(
                    f"run {b.pk} scores another dataset than run {a.pk}", field="run"
                )
            ],
        )
    used = set(
        JudgeScore.objects.filter(run__in=[a, b])
        .values_list("skill_id", flat=True)
        .distinct()
    )
    skills = {
        s.pk: s for s in Skill.objects.filter(pk__in=used).order_by("position", "pk")
    }
    skill_id = None
    if criterion:
        skill_id = next((pk for pk, s in skills.items() if s.key == criterion), None)
        if skill_id is None:
            raise DomainError(
                "unknown criterion",
                [
                    Problem(
                        f"no criterion {criterion[:40]!r} in these runs",
                        field="criterion",
                    )
                ],
            )
    side_a, side_b = _sides(a, skill_id), _sides(b, skill_id)
    both = sorted(set(side_a) & set(side_b))
    differ = []
    for key in both:
        sa, sb = (
            _item_score([s for s, _ in side_a[key]]),
            _item_score([s for s, _ in side_b[key]]),
        )
        if sa != sb:
            differ.append((key, sa, sb))
    differ.sort(key=lambda d: (-_gap(d[1], d[2]), d[0]))
    paginator = Paginator(differ, per_page)
    page_obj = paginator.get_page(page)
    responses = Response.objects.select_related("instruction").in_bulk(
        [key[0] for key, _, _ in page_obj.object_list]
    )
    rows = []
    for (response_id, sk), sa, sb in page_obj.object_list:
        skill = skills[sk]
        scale = scale_of(skill, anchors=False)

        def side(samples, score, scale=scale) -> Side:
            return Side(
                score,
                [scale.label_of(s) for s, _ in samples],
                samples[0][1] if samples else "",
            )

        rows.append(
            {
                "response": responses.get(response_id),
                "skill": skill,
                "a": side(side_a[(response_id, sk)], sa),
                "b": side(side_b[(response_id, sk)], sb),
                "gap": _gap(sa, sb),
            }
        )
    page_obj.object_list = rows
    return {
        "a": a,
        "b": b,
        "criteria": [(s.key, s.name) for s in skills.values()],
        "criterion": criterion if skill_id is not None else "",
        "compared": len(both),
        "n_differ": len(differ),
        "page": page_obj,
    }
