"""Sampling campaigns: choose which responses humans label from a judge run's scores.

`sampling_plan` reads a run's scores and draws a Poisson sample of the dataset's
responses (`judging.designs`): with the ``uncertainty`` strategy a response's
inclusion probability follows the judge's uncertainty about it, with ``uniform``
every response has the same. `sampling_campaign_start` hands the plan, as plain data
(response id -> probability, in serving order), to
`annotation.services.sampling.sampling_campaign_create`, which stores it.

The judge's uncertainty about a response (`response_uncertainty`), on the ordinal
criteria it scored (one criterion when `skill` is given, else the mean over them):

* with several samples per item: their disagreement, the standard deviation of the
  samples' scores;
* with one sample per item: the closeness of its score to the criterion's decision
  boundary, the middle of its scale (1 at the middle, 0 at either end): a score near
  the middle is the one most likely to fall on the other side of a comparison.

A response the run did not score gets the largest uncertainty seen (the judge knows
nothing about it). Categorical criteria are not read (a mean of label codes means
nothing); a run with only categorical criteria is refused.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from django.contrib.auth.models import User

from annotation.models import Campaign, Dataset, Response, Skill
from annotation.scales import scale_of
from annotation.services.sampling import sampling_campaign_create
from flaskapp import workspaces
from flaskapp.errors import DomainError, Problem
from judging import kinds
from judging.designs import (
    FLOOR,
    STRATEGIES,
    inclusion_probabilities,
    poisson_sample,
)
from judging.models import JudgeRun, JudgeScore

MEASURE_DISAGREEMENT = "disagreement among the judge's samples"
MEASURE_BOUNDARY = "closeness of the judge's score to the scale's middle"


@dataclass
class JudgeSamples:
    """A run's numeric sample scores on ordinal criteria: {(response id, criterion
    key): [scores]}, and each criterion's (low, high) scale ends."""

    scores: dict[tuple[int, str], list[int]]
    scales: dict[str, tuple[int, int]]

    @property
    def max_samples(self) -> int:
        return max((len(s) for s in self.scores.values()), default=0)


@dataclass
class SamplingPlan:
    """A drawn sample: `sample` is [(response id, inclusion probability)] in serving
    order; `population` every response id that could be drawn, with its
    `probabilities` (same order); `sampling` the description stored on the campaign."""

    sample: list[tuple[int, float]]
    population: list[int]
    probabilities: list[float]
    sampling: dict


def sampling_population(*, dataset: Dataset, models: list[str] | None) -> list[int]:
    """The response ids a sampling campaign draws from: the dataset's responses of
    `models` (every model when empty) that are not gold items, by id. One query."""
    responses = Response.objects.filter(instruction__dataset=dataset, gold__isnull=True)
    if models:
        responses = responses.filter(model_name__in=models)
    return sorted(responses.values_list("pk", flat=True))


def judge_samples(
    *, run: JudgeRun, response_ids: list[int] | None = None, skill: str = ""
) -> JudgeSamples:
    """The run's numeric sample scores on its ordinal criteria (of criterion `skill`
    only when given), of `response_ids` when given. N/A samples and scores outside
    the criterion's scale are left out. Two queries."""
    rows = JudgeScore.objects.filter(run=run, score__isnull=False)
    if response_ids is not None:
        rows = rows.filter(response_id__in=response_ids)
    rows = list(
        rows.order_by("response_id", "skill_id", "sample_index").values_list(
            "response_id", "skill_id", "score"
        )
    )
    skills = {s.pk: s for s in Skill.objects.filter(pk__in={r[1] for r in rows})}
    ordinal = {}
    for pk, s in skills.items():
        scale = scale_of(s, anchors=False)
        if scale.is_ordinal and (not skill or s.key == skill):
            ordinal[pk] = (s.key, scale)
    scores: dict[tuple[int, str], list[int]] = defaultdict(list)
    scales: dict[str, tuple[int, int]] = {}
    for response_id, skill_id, score in rows:
        if skill_id not in ordinal:
            continue
        key, scale = ordinal[skill_id]
        if score in scale.values:
            scores[(response_id, key)].append(int(score))
            scales[key] = (scale.low, scale.high)
    return JudgeSamples(dict(scores), scales)


def response_uncertainty(
    samples: JudgeSamples, response_ids: list[int]
) -> tuple[np.ndarray, str]:
    """(the judge's uncertainty about each of `response_ids`, the measure used): see
    the module docstring. Pure."""
    by_response: dict[int, list[float]] = defaultdict(list)
    several = samples.max_samples > 1
    for (response_id, key), scores in samples.scores.items():
        if several:
            by_response[response_id].append(float(np.std(scores)))
        else:
            low, high = samples.scales[key]
            half = (high - low) / 2 or 1.0
            by_response[response_id].append(
                1.0 - abs(float(np.mean(scores)) - (low + high) / 2) / half
            )
    known = [float(np.mean(v)) for v in by_response.values()]
    unknown = max(known, default=1.0)
    u = np.array(
        [
            float(np.mean(by_response[r])) if r in by_response else unknown
            for r in response_ids
        ]
    )
    return u, MEASURE_DISAGREEMENT if several else MEASURE_BOUNDARY


def _run_for(dataset: Dataset, run_id) -> JudgeRun:
    """The judge run of `dataset` that a plan reads; `DomainError` naming `run`."""
    if run_id in (None, ""):
        raise DomainError(
            "a sampling campaign needs a judge run",
            [Problem("is required: the judge run whose scores guide the sample",
                     field="run")],
        )  # fmt: skip
    try:
        run_id = int(run_id)
    except (TypeError, ValueError):
        raise DomainError(
            "the sample was not drawn", [Problem("must be a run id", field="run")]
        ) from None
    run = JudgeRun.objects.filter(pk=run_id, dataset=dataset).first()
    if run is None:
        raise DomainError(
            "the sample was not drawn",
            [Problem(f"no judge run {run_id} of dataset {dataset.name!r}",
                     field="run")],
        )  # fmt: skip
    if not kinds.get(run.kind).writes_scores:
        raise DomainError(
            "the sample was not drawn",
            [Problem(f"run {run_id} is a {run.get_kind_display().lower()} run, "
                     "not one of criterion scores", field="run")],
        )  # fmt: skip
    return run


def sampling_plan(
    *,
    dataset: Dataset,
    run_id,
    budget,
    strategy: str = "uncertainty",
    seed=0,
    skill: str = "",
    models: list[str] | None = None,
) -> SamplingPlan:
    """Draw a sample of `dataset`'s responses (of `models`) for humans to label.

    `budget` is the expected number of responses drawn (1..N, N the population),
    `strategy` one of `judging.designs.STRATEGIES`, `seed` makes the draw
    reproducible, `skill` (a criterion key) narrows the judge's uncertainty to one
    criterion; without it, a run that scored one criterion only names that one in
    the plan (``sampling["skill"]``). Reads only; raises `DomainError` naming `run` (missing, not of this
    dataset, or without judge scores on an ordinal criterion of these responses),
    `budget`, `strategy`, `seed`, `skill` or `models`."""
    problems = []
    if strategy not in STRATEGIES:
        problems.append(
            Problem(
                f"unknown strategy {strategy!r}; use " + " or ".join(STRATEGIES),
                field="strategy",
            )
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        problems.append(Problem("must be a whole number >= 0", field="seed"))
    population = sampling_population(dataset=dataset, models=models)
    if not population:
        problems.append(
            Problem(f"dataset {dataset.name!r} has no responses of these models",
                    field="models")
        )  # fmt: skip
    n = len(population)
    if isinstance(budget, bool) or not isinstance(budget, int) or not 1 <= budget <= n:
        problems.append(
            Problem(f"must be a whole number between 1 and {n} (the responses)",
                    field="budget")
        )  # fmt: skip
    if problems:
        raise DomainError("the sample was not drawn", problems)
    run = _run_for(dataset, run_id)
    samples = judge_samples(run=run, response_ids=population, skill=skill)
    if not samples.scores:
        what = f"criterion {skill!r}" if skill else "an ordinal criterion"
        raise DomainError(
            "the sample was not drawn",
            [Problem(f"run {run.pk} has no judge scores on {what} for these "
                     f"responses of dataset {dataset.name!r}", field="run")],
        )  # fmt: skip
    if not skill:
        # A run that scored one criterion: that is what humans are asked for and
        # what the estimates are on (raters would otherwise score each
        # instruction's own criteria, which need not include it).
        keys = {key for _, key in samples.scores}
        if len(keys) == 1:
            skill = keys.pop()
    u, measure = response_uncertainty(samples, population)
    pi = inclusion_probabilities(u, budget, strategy=strategy)
    chosen, _ = poisson_sample(pi, seed)
    if chosen.size == 0:
        raise DomainError(
            "the sample was not drawn",
            [Problem(f"this seed drew no response at an expected {budget}; raise "
                     "the budget or change the seed", field="budget")],
        )  # fmt: skip
    sampling = {
        "strategy": strategy,
        "why": STRATEGIES[strategy],
        "seed": seed,
        "run": run.pk,
        "budget": budget,
        "skill": skill,
        "measure": measure if strategy == "uncertainty" else "",
        "floor": FLOOR if strategy == "uncertainty" else None,
        "population": n,
        "sampled": int(chosen.size),
    }
    return SamplingPlan(
        sample=[(population[i], float(pi[i])) for i in chosen],
        population=population,
        probabilities=[float(p) for p in pi],
        sampling=sampling,
    )


def sampling_campaign_start(  # noqa: PLR0913 - keyword-only options of the sampling plan, one per form field
    *,
    user: User,
    name: str,
    dataset: Dataset,
    run_id,
    budget,
    strategy: str = "uncertainty",
    seed=0,
    skill: str = "",
    models: list[str] | None = None,
    overlap: int = 1,
    lock_ttl_minutes: int = 30,
    raters: list[User] | None = None,
    guidelines: str = "",
) -> Campaign:
    """Draw a sample (`sampling_plan`) and create its campaign: one item per drawn
    response with its inclusion probability, served in the plan's random order, each
    assignment's reason naming the probability. Researchers and admins only.

    `DomainError` naming the parameter for bad input (see `sampling_plan` and
    `campaign_create`); then nothing is written. Not idempotent: each call creates
    a campaign."""
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    if skill and not Skill.objects.filter(rubric_id=dataset.rubric_id, key=skill):
        raise DomainError(
            "the sample was not drawn",
            [Problem(f"not a criterion of the dataset's rubric: {skill}",
                     field="skill")],
        )  # fmt: skip
    plan = sampling_plan(
        dataset=dataset,
        run_id=run_id,
        budget=budget,
        strategy=strategy,
        seed=seed,
        skill=skill,
        models=models,
    )
    return sampling_campaign_create(
        name=name,
        dataset=dataset,
        user=user,
        sample=plan.sample,
        sampling=plan.sampling,
        models=models,
        skill=plan.sampling["skill"],
        overlap=overlap,
        lock_ttl_minutes=lock_ttl_minutes,
        raters=raters,
        guidelines=guidelines,
    )
