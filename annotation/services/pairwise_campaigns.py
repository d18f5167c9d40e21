"""Pairwise human campaigns: creation (serving and answers: `services.pairwise`).

A pairwise campaign is a `Campaign` of kind "pairwise" with one `CampaignItem` per
preference pair (`services.pairs` makes or reuses the pairs); the options both kinds
share are checked by the rules of `services.campaigns`.
"""

from __future__ import annotations

import random

from django.contrib.auth.models import User
from django.db import connection, transaction

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.models import (
    Campaign,
    CampaignItem,
    Dataset,
    PreferencePair,
    Skill,
)
from annotation.services.campaigns import _in_overlap_sample, campaign_option_problems
from annotation.services.pairs import (
    PAIR_MODES,
    dataset_models,
    pair_problems,
    pairs_create_from_dataset,
)

# "existing": the pairs already stored for the dataset (e.g. imported preference data).
CAMPAIGN_PAIR_MODES = (*PAIR_MODES, "existing")


def _option_problems(
    *,
    name: str,
    overlap,
    overlap_percent,
    lock_ttl_minutes,
    rater_quota,
    raters: list[User],
) -> list[Problem]:
    """The checks `campaign_create` makes on the options both kinds share."""
    problems: list[Problem] = []
    if not name:
        problems.append(Problem("is empty", field="name"))
    problems += campaign_option_problems(
        overlap=overlap,
        overlap_percent=overlap_percent,
        lock_ttl_minutes=lock_ttl_minutes,
        rater_quota=rater_quota,
        rater_count=len(raters),
    )
    not_raters = [u.username for u in raters if not roles.is_rater(u)]
    if not_raters:
        problems.append(Problem(f"not raters: {', '.join(not_raters)}", field="raters"))
    return problems


def pairwise_campaign_create(
    *,
    name: str,
    dataset: Dataset,
    user: User,
    pair_mode: str = "all_pairs",
    baseline_model: str | None = None,
    models: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    categories: list[str] | None = None,
    skill_keys: list[str] | None = None,
    overlap: int = 1,
    overlap_percent: int = 100,
    show_reference: bool = True,
    show_model_names: bool = False,
    lock_ttl_minutes: int = 30,
    rater_quota: int | None = None,
    guidelines: str = "",
    raters: list[User] | None = None,
) -> Campaign:
    """Create a pairwise campaign (kind "pairwise") and one `CampaignItem` per pair.

    Pairs: ``pair_mode`` ``all_pairs`` / ``baseline`` / ``sample`` make them with
    `pairs_create_from_dataset` (same parameters); ``existing`` takes the pairs the
    dataset already has (imported preference data), optionally only those in
    `categories` and, with `models`, only pairs of those models. `skill_keys` lists
    the per-skill questions (skills of the dataset's rubric; none: overall only); they
    are stored as the campaign's chosen skills (skill mode "chosen"). Overlap,
    overlap percent, lock TTL, quota, guidelines, raters and blinding (model names
    hidden by default) work as in `campaign_create`.

    Items are shuffled with a seed of the campaign id. One transaction: a refusal
    (`DomainError` naming each field) writes nothing, pairs included. Researchers and
    admins only (`PermissionDenied`).
    """
    roles.require_researcher(user)
    name = (name or "").strip()
    rater_list = list(raters or [])
    problems = _option_problems(
        name=name,
        overlap=overlap,
        overlap_percent=overlap_percent,
        lock_ttl_minutes=lock_ttl_minutes,
        rater_quota=rater_quota,
        raters=rater_list,
    )
    if pair_mode not in CAMPAIGN_PAIR_MODES:
        problems.append(
            Problem(
                f"must be one of {', '.join(CAMPAIGN_PAIR_MODES)}", field="pair_mode"
            )
        )
    keys = list(dict.fromkeys(skill_keys or []))
    by_key = {s.key: s for s in Skill.objects.filter(rubric_id=dataset.rubric_id)}
    missing = [k for k in keys if k not in by_key]
    if missing:
        problems.append(
            Problem(
                f"not skills of the dataset's rubric: {', '.join(missing)}",
                field="skills",
            )
        )
    chosen = [by_key[k] for k in keys if k in by_key]
    categories = list(dict.fromkeys(categories or []))
    if categories and pair_mode != "existing":
        problems.append(
            Problem("categories select existing pairs only", field="categories")
        )
    if pair_mode == "existing":
        for param, value in (
            ("baseline_model", baseline_model),
            ("sample", sample),
        ):
            if value:
                problems.append(Problem("is not used with existing pairs", field=param))
        known = set(
            PreferencePair.objects.filter(dataset=dataset)
            .values_list("category", flat=True)
            .distinct()
        )
        unknown = [c for c in categories if c not in known]
        if unknown:
            problems.append(
                Problem(
                    f"not categories of the dataset's pairs: {', '.join(unknown)}",
                    field="categories",
                )
            )
        unknown_models = [m for m in (models or []) if m not in dataset_models(dataset)]
        if unknown_models:
            problems.append(
                Problem(
                    f"not in dataset {dataset.name!r}: {', '.join(unknown_models)}",
                    field="models",
                )
            )
    elif pair_mode in PAIR_MODES:
        problems += pair_problems(
            dataset=dataset,
            mode=pair_mode,
            baseline_model=baseline_model,
            models=sorted(set(models or [])),
            sample=sample,
            seed=seed,
        )
    if problems:
        raise DomainError("the campaign was not created", problems)

    with transaction.atomic():
        if pair_mode == "existing":
            qs = PreferencePair.objects.filter(dataset=dataset)
            if categories:
                qs = qs.filter(category__in=categories)
            if models:
                qs = qs.filter(
                    response_1__model_name__in=models, response_2__model_name__in=models
                )
            pairs = list(qs.order_by("pk").values_list("pk", "response_1_id"))
        else:
            try:
                made = pairs_create_from_dataset(
                    dataset=dataset,
                    mode=pair_mode,
                    baseline_model=baseline_model,
                    models=models,
                    sample=sample,
                    seed=seed,
                )
            except DomainError as exc:
                raise DomainError("the campaign was not created", exc.problems) from exc
            pairs = sorted((p.pk, p.response_1_id) for p in made.pairs)
        if not pairs:
            raise DomainError(
                "the campaign has no pairs to compare",
                [
                    Problem(
                        "no pair of responses matches this selection",
                        field="pair_mode",
                    )
                ],
            )
        campaign = Campaign.objects.create(
            name=name,
            kind=Campaign.Kind.PAIRWISE,
            dataset=dataset,
            models_included=sorted(set(models or [])),
            # Per-skill questions are the chosen skills (possibly none).
            skill_mode=Campaign.SkillMode.CHOSEN,
            overlap=overlap,
            overlap_percent=overlap_percent,
            show_reference=show_reference,
            show_model_names=show_model_names,
            lock_ttl_minutes=lock_ttl_minutes,
            rater_quota=rater_quota,
            guidelines=guidelines or "",
            created_by=user,
        )
        if chosen:
            campaign.chosen_skills.set(chosen)
        if rater_list:
            campaign.raters.set(rater_list)
        random.Random(campaign.pk).shuffle(pairs)
        items = []
        for position, (pair_id, response_id) in enumerate(pairs):
            target = (
                overlap
                if _in_overlap_sample(campaign.pk, pair_id, overlap_percent)
                else 1
            )
            items.append(
                CampaignItem(
                    campaign=campaign,
                    pair_id=pair_id,
                    response_id=response_id,
                    target=target,
                    open_slots=target,
                    position=position,
                )
            )
        CampaignItem.objects.bulk_create(items, batch_size=5000)
    if connection.vendor == "postgresql":
        # Fresh statistics, as in `campaign_create`: the next-pair query then walks
        # the partial index from the first request on.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE annotation_campaignitem")
    return campaign
