"""Sampling campaigns: a campaign over a drawn sample of a dataset's responses.

The plan (which responses, with which inclusion probabilities) is computed by code
that reads judge scores (`judging.services.sampling.sampling_plan`); this app never
reads them, it receives the plan as plain data and stores it: one `CampaignItem` per
drawn response with its `sampling_probability`, the plan's description in
`Campaign.sampling`. Serving then follows the ordinary rules (`services.serving`),
in the plan's order, and records each item's probability as the reason it was
served ("sampled: p=0.031 (judge uncertainty)").
"""

from __future__ import annotations

import math

from django.contrib.auth.models import User

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.models import Campaign, Dataset, Response
from annotation.services.campaigns import campaign_create

# What a plan's description must say (`Campaign.sampling`).
SAMPLING_KEYS = ("strategy", "why", "seed", "run", "budget", "population", "sampled")


def sample_problems(
    *, dataset: Dataset, sample, sampling, models: list[str] | None
) -> list[Problem]:
    """Problems with a plan handed over for `dataset`, naming `sample` or
    `sampling`: at least one (response id, probability) pair, no response twice, every
    response one of the dataset's (of `models` when given) and not a gold item,
    every probability in (0, 1]; the description a dict with `SAMPLING_KEYS`.
    One query."""
    problems = []
    pairs = list(sample or [])
    if not pairs:
        problems.append(Problem("no response was drawn", field="sample"))
    ids, bad = [], []
    for pair in pairs:
        try:
            response_id, probability = int(pair[0]), float(pair[1])
        except (TypeError, ValueError, IndexError):
            bad.append(repr(pair))
            continue
        if not (math.isfinite(probability) and 0 < probability <= 1):
            bad.append(f"{response_id}: p={probability}")
        ids.append(response_id)
    if bad:
        problems.append(
            Problem(
                "probabilities must be in (0, 1]: " + ", ".join(bad[:5]),
                field="sample",
            )
        )
    if len(set(ids)) != len(ids):
        problems.append(Problem("a response is drawn twice", field="sample"))
    if ids:
        known = Response.objects.filter(
            pk__in=ids, instruction__dataset=dataset, gold__isnull=True
        )
        if models:
            known = known.filter(model_name__in=models)
        missing = sorted(set(ids) - set(known.values_list("pk", flat=True)))
        if missing:
            problems.append(
                Problem(
                    f"not responses of dataset {dataset.name!r} to rate: "
                    + ", ".join(map(str, missing[:10])),
                    field="sample",
                )
            )
    if not isinstance(sampling, dict) or any(k not in sampling for k in SAMPLING_KEYS):
        problems.append(
            Problem("must say " + ", ".join(SAMPLING_KEYS), field="sampling")
        )
    return problems


def sampling_campaign_create(
    *,
    name: str,
    dataset: Dataset,
    user: User,
    sample: list[tuple[int, float]],
    sampling: dict,
    models: list[str] | None = None,
    skill: str = "",
    overlap: int = 1,
    lock_ttl_minutes: int = 30,
    raters: list[User] | None = None,
    guidelines: str = "",
) -> Campaign:
    """Create a campaign whose items are exactly the drawn responses of `sample`
    ((response id, inclusion probability), in serving order), in one transaction,
    storing `sampling` (the plan's description) on it. Researchers and admins only.

    With `skill` (a criterion key) raters score that criterion only; otherwise each
    instruction's own criteria. The other options are `campaign_create`'s. Raises
    `DomainError` naming the field for bad input (see `sample_problems`); then
    nothing is written. Not idempotent: each call creates a campaign."""
    roles.require_researcher(user)
    problems = sample_problems(
        dataset=dataset, sample=sample, sampling=sampling, models=models
    )
    if problems:
        raise DomainError("the sampling campaign was not created", problems)
    return campaign_create(
        name=name,
        dataset=dataset,
        user=user,
        models=models,
        skill_mode=(
            Campaign.SkillMode.CHOSEN if skill else Campaign.SkillMode.INSTRUCTION
        ),
        chosen_skill_keys=[skill] if skill else None,
        overlap=overlap,
        lock_ttl_minutes=lock_ttl_minutes,
        raters=raters,
        guidelines=guidelines,
        sample=[(int(r), float(p)) for r, p in sample],
        sampling=dict(sampling),
    )
