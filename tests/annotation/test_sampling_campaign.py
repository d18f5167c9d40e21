"""A sampling campaign in the annotation app: the plan handed over as plain data is
stored as it is, served in its order with its reasons, and bad plans are refused."""

from __future__ import annotations

import pytest

from annotation.models import Campaign, CampaignItem, Skill
from annotation.services.rating import assignment_next, rating_submit
from annotation.services.sampling import sampling_campaign_create
from flaskapp.errors import DomainError
from tests.analysis.agreement_data import make_dataset

pytestmark = pytest.mark.django_db

SAMPLING = {"strategy": "uncertainty", "why": "judge uncertainty", "seed": 1,
            "run": 7, "budget": 2, "population": 6, "sampled": 2}  # fmt: skip


def test_the_plan_is_stored_and_served_in_its_order(researcher, rater):
    dataset, responses = make_dataset("plain-plan", 3, ("a", "b"))
    chosen = [(responses[(2, "b")].pk, 0.031), (responses[(0, "a")].pk, 0.5)]
    campaign = sampling_campaign_create(
        name="s", dataset=dataset, user=researcher, sample=chosen, sampling=SAMPLING
    )
    items = CampaignItem.objects.filter(campaign=campaign).order_by("position")
    assert [(i.response_id, i.sampling_probability) for i in items] == chosen
    assert campaign.sampling == SAMPLING
    campaign.raters.add(rater)
    first = assignment_next(campaign=campaign, rater=rater).assignment
    assert first.response_id == chosen[0][0]
    assert first.reason == "sampled: p=0.031 (judge uncertainty)"


def test_a_partly_rated_sampled_item_says_so(researcher, rater, other_rater):
    dataset, responses = make_dataset("plain-overlap", 2, ("a",))
    chosen = [(responses[(0, "a")].pk, 0.25)]
    key = Skill.objects.filter(rubric=dataset.rubric, kind="ordinal").first().key
    campaign = sampling_campaign_create(
        name="s", dataset=dataset, user=researcher, sample=chosen, skill=key,
        sampling=SAMPLING, overlap=2, raters=[rater, other_rater],
    )  # fmt: skip
    a = assignment_next(campaign=campaign, rater=rater).assignment
    rating_submit(assignment_id=a.pk, rater=rater, scores={key: 3})
    b = assignment_next(campaign=campaign, rater=other_rater).assignment
    assert b.reason == "sampled: p=0.25 (judge uncertainty); 1 of 2 rated"


@pytest.mark.parametrize(
    "sample",
    [
        [],
        [("x", 0.5)],
        [(None, 0.5)],
        "own:0",
        "own:1.5",
        "own:nan",
        "twice",
        "foreign",
    ],
)
def test_a_bad_plan_is_refused_naming_sample_and_nothing_is_written(researcher, sample):
    dataset, responses = make_dataset("plain-bad", 2, ("a",))
    other, foreign = make_dataset("plain-other", 1, ("a",))
    own = responses[(0, "a")].pk
    if sample == "twice":
        sample = [(own, 0.5), (own, 0.5)]
    elif sample == "foreign":
        sample = [(foreign[(0, "a")].pk, 0.5)]
    elif isinstance(sample, str):
        sample = [(own, float(sample.split(":")[1]))]
    with pytest.raises(DomainError) as exc:
        sampling_campaign_create(
            name="s", dataset=dataset, user=researcher, sample=sample,
            sampling=SAMPLING,
        )  # fmt: skip
    assert "sample" in {p.field for p in exc.value.problems}
    assert not Campaign.objects.exists()


def test_a_plan_without_its_description_is_refused(researcher):
    dataset, responses = make_dataset("plain-desc", 1, ("a",))
    with pytest.raises(DomainError) as exc:
        sampling_campaign_create(
            name="s", dataset=dataset, user=researcher,
            sample=[(responses[(0, "a")].pk, 0.5)], sampling={"strategy": "x"},
        )  # fmt: skip
    assert [p.field for p in exc.value.problems] == ["sampling"]


def test_a_rater_cannot_create_one(rater):
    from django.core.exceptions import PermissionDenied

    dataset, responses = make_dataset("plain-role", 1, ("a",))
    with pytest.raises(PermissionDenied):
        sampling_campaign_create(
            name="s", dataset=dataset, user=rater,
            sample=[(responses[(0, "a")].pk, 0.5)], sampling=SAMPLING,
        )  # fmt: skip
