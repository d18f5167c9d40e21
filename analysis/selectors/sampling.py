"""What a sampling campaign's labels say so far, and what its design saves.

`campaign_sampling_report` reads a sampling campaign (`annotation.services.sampling`),
its judge run's scores and the human labels collected so far, and returns:

* per model, the mean human score on the chosen criterion estimated from the
  labels so far and the judge on every response (`analysis.stats.sampling.
  sampled_mean`), with its interval. Labels arrive in the campaign's random
  serving order, so m labelled of n drawn responses are a design with
  probabilities pi_i x m / n (`judging.designs.scaled_probabilities`);
* the interval width against the human labels spent, for the campaign's strategy
  and for uniform sampling, by **simulation on a synthetic setting built from this
  campaign's data**: the judge's real scores and uncertainty, human labels drawn
  around the judge with a spread fitted to the labels so far as a function of the
  judge's uncertainty (|y - f| ~ a + b u, b >= 0), or, before 5 labels, assumed
  proportional to it (said on the page). Real human labels exist only for the
  drawn responses, so re-running the designs on real labels alone is not possible.

Role checks are the callers' (`campaign_get_for_user`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from math import isfinite, sqrt
from math import pi as PI

import numpy as np
from django.db.models import Count
from django.http import Http404

from analysis.stats.ppi import MeanEstimate
from analysis.stats.sampling import DesignCurve, design_widths, sampled_mean
from annotation.models import Assignment, Campaign, CampaignItem, HumanScore, Response
from judging.designs import scaled_probabilities
from judging.models import JudgeRun
from judging.services.sampling import (
    judge_samples,
    response_uncertainty,
    sampling_population,
)

# Fewer labels than this: the human labels' spread is assumed, not fitted.
MIN_FIT_LABELS = 5
SIGMA_MIN = 0.05


@dataclass
class ModelEstimate:
    model: str
    responses: int
    labelled: int
    judge_mean: float
    estimate: MeanEstimate | None  # None: fewer than one label


@dataclass
class SamplingReport:
    campaign: Campaign
    skill: str
    skills: list[str]
    run: JudgeRun | None
    estimates: list[ModelEstimate] = field(default_factory=list)
    curve: DesignCurve | None = None
    spread_note: str = ""
    sampled: int = 0
    labelled: int = 0
    width_so_far: float | None = None
    problem: str = ""


def _human_means(campaign: Campaign, skill: str) -> dict[int, float]:
    """Response id -> the mean of its submitted, non-gold, numeric human scores on
    criterion `skill` in `campaign`. One query."""
    rows = HumanScore.objects.filter(
        assignment__campaign=campaign,
        assignment__status=Assignment.Status.SUBMITTED,
        assignment__gold=False,
        skill__key=skill,
        score__isnull=False,
    ).values_list("assignment__response_id", "score")
    by_response: dict[int, list[int]] = defaultdict(list)
    for response_id, score in rows:
        by_response[response_id].append(score)
    return {r: float(np.mean(s)) for r, s in by_response.items()}


def _most_labelled(campaign: Campaign, keys: list[str]) -> str:
    """Of the criteria `keys` (the run's), the one the campaign's raters scored most
    often (ties: the first by key); the first key before any label. One query."""
    top = (
        HumanScore.objects.filter(
            assignment__campaign=campaign,
            assignment__status=Assignment.Status.SUBMITTED,
            assignment__gold=False,
            skill__key__in=keys,
            score__isnull=False,
        )
        .values("skill__key")
        .annotate(n=Count("id"))
        .order_by("-n", "skill__key")
        .first()
    )
    return top["skill__key"] if top else (keys[0] if keys else "")


def _spread(u, f, labels, pi) -> tuple[np.ndarray, str]:
    """Each response's human-label spread around the judge (module doc) and how
    it was obtained."""
    if len(labels) < MIN_FIT_LABELS:
        scale = float(np.mean(u)) or 1.0
        sigma = np.maximum(u / scale * 0.5, SIGMA_MIN)
        return sigma, (
            f"fewer than {MIN_FIT_LABELS} labels yet: the human labels' spread is "
            "assumed proportional to the judge's uncertainty (mean 0.5 points)"
        )
    idx = np.array(list(labels))
    resid = np.abs(np.array([labels[i] for i in idx]) - f[idx])
    w = 1 / pi[idx]
    design = np.column_stack([np.ones(idx.size), u[idx]])
    coef, *_ = np.linalg.lstsq(design * np.sqrt(w)[:, None], resid * np.sqrt(w))
    a, b = float(coef[0]), max(float(coef[1]), 0.0)
    if b == 0.0:
        a = float((w * resid).sum() / w.sum())
    sigma = np.maximum(sqrt(PI / 2) * (a + b * u), SIGMA_MIN)
    return sigma, (
        f"fitted to the {len(labels)} labels so far: |human - judge| = "
        f"{a:.2f} + {b:.2f} x uncertainty"
    )


def campaign_sampling_report(
    *, campaign: Campaign, skill: str = "", reps: int = 60
) -> SamplingReport:
    """The report of a sampling campaign on criterion `skill` (default: the plan's,
    else the one of the run's criteria the raters scored most, `_most_labelled`). Http404 for a campaign without a sampling plan;
    a run that is gone or a criterion it did not score is said in `problem`. A
    few queries and `reps` simulated draws per budget and strategy (seeded by the
    plan's seed: the same page every time for the same labels)."""
    plan = campaign.sampling or {}
    if not plan:
        raise Http404("This campaign has no sampling plan.")
    run = JudgeRun.objects.filter(pk=plan.get("run")).first()
    report = SamplingReport(campaign=campaign, skill=skill, skills=[], run=run)
    if run is None:
        report.problem = f"judge run {plan.get('run')} no longer exists"
        return report
    population = sampling_population(
        dataset=campaign.dataset, models=campaign.models_included
    )
    every = judge_samples(run=run, response_ids=population)
    report.skills = sorted({key for _, key in every.scores})
    skill = skill or plan.get("skill") or _most_labelled(campaign, report.skills)
    report.skill = skill
    if skill not in report.skills:
        report.problem = f"run {run.pk} has no scores on criterion {skill!r}"
        return report
    design = judge_samples(run=run, response_ids=population, skill=plan.get("skill"))
    u, _ = response_uncertainty(design, population)
    index = {r: i for i, r in enumerate(population)}
    f = np.full(len(population), np.nan)
    for (response_id, key), scores in every.scores.items():
        if key == skill:
            f[index[response_id]] = float(np.mean(scores))
    items = list(
        CampaignItem.objects.filter(campaign=campaign, gold=False).values_list(
            "response_id", "sampling_probability", "submitted"
        )
    )
    report.sampled = len(items)
    report.labelled = sum(1 for _, _, s in items if s)
    pi = np.ones(len(population))
    for response_id, p, _ in items:
        if response_id in index and p:
            pi[index[response_id]] = p
    pi_now = scaled_probabilities(pi, report.labelled, report.sampled)
    humans = {
        index[r]: y
        for r, y in _human_means(campaign, skill).items()
        if r in index and not np.isnan(f[index[r]])
    }
    model_of = dict(
        Response.objects.filter(pk__in=population).values_list("pk", "model_name")
    )
    models = np.array([model_of[r] for r in population])
    scored = ~np.isnan(f)
    widths = []
    for model in sorted(set(models[scored])):
        members = np.flatnonzero(scored & (models == model))
        hit = [i for i in members if i in humans]
        estimate = None
        if hit:
            estimate = sampled_mean(
                [humans[i] for i in hit], f[hit], pi_now[hit], f[members]
            )
            if isfinite(estimate.se):
                widths.append(estimate.high - estimate.low)
        report.estimates.append(
            ModelEstimate(model, members.size, len(hit), float(f[members].mean()),
                          estimate)
        )  # fmt: skip
    report.width_so_far = float(np.mean(widths)) if widths else None
    sigma, report.spread_note = _spread(u[scored], f[scored], {
        int(np.searchsorted(np.flatnonzero(scored), i)): y for i, y in humans.items()
    }, pi_now[scored])  # fmt: skip
    n_scored = int(scored.sum())
    budget = min(int(plan.get("budget") or n_scored), n_scored)
    steps = sorted({max(2, round(budget * k / 8)) for k in range(1, 9)})
    report.curve = design_widths(
        f=f[scored],
        uncertainty=u[scored],
        sigma=sigma,
        budgets=[b for b in steps if b <= n_scored],
        groups=models[scored],
        reps=reps,
        seed=int(plan.get("seed") or 0),
    )
    return report
