"""The rater's home shows their own progress (issue 37, defect 27): "2 of 6 done, about
N min left" with a progress bar, the time from the rater's own median active time in
the campaign, else the campaign's."""

from __future__ import annotations

import math

import pytest
from bs4 import BeautifulSoup

from annotation.selectors import assignment_skills
from annotation.services.campaign_spec import CampaignSpec, ServingPolicy
from annotation.services.campaigns import campaign_create
from annotation.services.rating import assignment_next, rating_submit
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = pytest.mark.django_db
SKILLS = ["comprehension", "factuality"]


@pytest.fixture
def campaign(researcher):
    dataset = DatasetFactory()
    for _ in range(6):
        instruction = InstructionFactory(dataset=dataset, skill_keys=SKILLS)
        ResponseFactory(instruction=instruction, model_name="m")
    raters = [UserFactory(username=n, role="rater") for n in ("ann", "bob")]
    spec = CampaignSpec(
        name="progress", dataset=dataset, raters=raters,
        serving=ServingPolicy(overlap=2),
    )  # fmt: skip
    return campaign_create(spec=spec, created_by=researcher)


def rate(campaign, user, seconds: list[float]) -> None:
    for s in seconds:
        a = assignment_next(campaign=campaign, rater=user).assignment
        scores = {k.key: 3 for k in assignment_skills(assignment=a)}
        rating_submit(assignment_id=a.pk, rater=user, scores=scores, active_seconds=s)


def the_card(client, campaign):
    soup = BeautifulSoup(client.get("/rate/").content, "html.parser")
    return soup.select_one(f'[data-campaign-id="{campaign.pk}"]')


def test_done_of_total_and_time_left_at_the_raters_own_median(campaign, client_for):
    ann = campaign.raters.get(username="ann")
    rate(campaign, ann, [30.0, 90.0])  # median 60 s, 4 items left
    card = the_card(client_for(ann), campaign)
    text = card.select_one("[data-progress-text]").get_text()
    assert text == "2 of 6 done, about 4 min left"
    bar = card.find("progress")
    assert (bar["value"], bar["max"]) == ("2", "6")
    assert "your median of 60 s" in card.select_one("[data-time-basis]").get_text()


def test_before_a_timed_item_the_campaigns_median(campaign, client_for):
    ann, bob = (campaign.raters.get(username=n) for n in ("ann", "bob"))
    rate(campaign, ann, [100.0, 100.0, 100.0])
    card = the_card(client_for(bob), campaign)
    text = card.select_one("[data-progress-text]").get_text()
    assert text == f"0 of 6 done, about {math.ceil(6 * 100 / 60)} min left"
    assert "campaign’s median of 100 s" in card.get_text()


def test_no_time_measured_no_estimate(campaign, client_for):
    bob = campaign.raters.get(username="bob")
    card = the_card(client_for(bob), campaign)
    assert card.select_one("[data-progress-text]").get_text() == "0 of 6 done"
    assert card.select_one("[data-time-basis]") is None
