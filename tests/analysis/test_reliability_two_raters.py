"""The reliability page with two raters (issue 37, defect 30): it says why their rows
mirror each other (leave-one-out is symmetric), and a median active time of 0 s gives
no "less active time than 0 s" threshold."""

from __future__ import annotations

import pytest

from analysis.selectors.reliability import campaign_reliability
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

SKILLS = ["comprehension", "factuality", "readability"]


def _campaign(researcher, names, seconds):
    raters = [UserFactory(username=n, role="rater") for n in names]
    dataset = DatasetFactory()
    for _ in range(6):
        instruction = InstructionFactory(dataset=dataset, skill_keys=SKILLS)
        ResponseFactory(instruction=instruction, model_name="m")
    spec = CampaignSpec(
        name="pair", dataset=dataset, raters=raters,
        serving=ServingPolicy(overlap=len(raters)),
    )  # fmt: skip
    campaign = campaign_create(spec=spec, created_by=researcher)
    for i, user in enumerate(raters):
        while a := assignment_next(campaign=campaign, rater=user).assignment:
            scores = {
                s.key: 1 + (a.response_id + i + j) % 5
                for j, s in enumerate(assignment_skills(assignment=a))
            }
            rating_submit(
                assignment_id=a.pk, rater=user, scores=scores, active_seconds=seconds
            )
    return campaign


@pytest.mark.django_db
def test_two_raters_the_page_says_why_the_rows_mirror(researcher, client_for):
    campaign = _campaign(researcher, ["ann", "bob"], 20.0)
    report = campaign_reliability(campaign=campaign)
    ann, bob = sorted(report.raters, key=lambda r: r.username)
    assert ann.overall.qwk == bob.overall.qwk  # what the note explains
    html = client_for(researcher).get(f"/reliability/{campaign.pk}/").content.decode()
    assert 'id="two-raters-note"' in html
    assert "leave-one-out consensus is the other’s score" in html


@pytest.mark.django_db
def test_three_raters_no_note(researcher, client_for):
    campaign = _campaign(researcher, ["ann", "bob", "cat"], 20.0)
    html = client_for(researcher).get(f"/reliability/{campaign.pk}/").content.decode()
    assert 'id="two-raters-note"' not in html


@pytest.mark.django_db
def test_a_median_of_zero_seconds_gives_no_zero_threshold(researcher, client_for):
    campaign = _campaign(researcher, ["ann", "bob"], 0.0)
    report = campaign_reliability(campaign=campaign)
    assert report.speed_threshold is None
    assert all(r.fast == 0 for r in report.raters)
    html = client_for(researcher).get(f"/reliability/{campaign.pk}/").content.decode()
    assert "less active time than 0 s" not in html
    assert "none has a measured active time yet" in html
