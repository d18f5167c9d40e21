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

from django.contrib.auth.models import User

from annotation.models import Campaign, Dataset
from annotation.services.campaign_spec import (
    CampaignSpec,
    DisplayPolicy,
    SamplingPolicy,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create


def sampling_campaign_create(  # noqa: PLR0913 - keyword-only fields of the sampling form, mapped onto one CampaignSpec
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
    `DomainError` naming the field for bad input (the plan's checks are
    `campaign_spec.SamplingPolicy.problems`); then nothing is written. Not
    idempotent: each call creates a campaign."""
    spec = CampaignSpec(
        name=name,
        dataset=dataset,
        models=tuple(models or ()),
        skill_mode=(
            Campaign.SkillMode.CHOSEN if skill else Campaign.SkillMode.INSTRUCTION
        ),
        skills=(skill,) if skill else (),
        raters=tuple(raters or ()),
        serving=ServingPolicy(overlap=overlap, lock_ttl_minutes=lock_ttl_minutes),
        display=DisplayPolicy(guidelines=guidelines),
        sampling=SamplingPolicy(sample=tuple(sample or ()), plan=sampling),
    )
    return campaign_create(spec=spec, created_by=user)
