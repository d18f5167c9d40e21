"""The pointwise rating paths refuse pairwise campaigns and pairwise assignments
(they have their own service and pages), on the ORM and the raw-SQL paths alike."""

from __future__ import annotations

import pytest
from django.http import Http404
from django.urls import reverse

from annotation.models import Assignment, CampaignItem
from annotation.selectors import rating as selectors_rating
from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.pairwise import pairwise_next
from annotation.services.rating import assignment_next, rating_submit
from tests.analysis.agreement_data import make_dataset
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def pairwise(researcher):
    dataset, _ = make_dataset("guard-set", 2, ("alpha", "beta"))
    rater = UserFactory(username="guard-rater", role="rater")
    campaign = campaign_create(
        spec=CampaignSpec(
            name="pairs", dataset=dataset, raters=[rater], pairs=PairPolicy()
        ),
        created_by=researcher,
    )
    return campaign, rater


def test_pointwise_service_and_selectors_refuse_a_pairwise_campaign(pairwise):
    campaign, rater = pairwise
    served = assignment_next(campaign=campaign, rater=rater)
    assert served.assignment is None and "pairwise" in served.message
    assert not Assignment.objects.filter(campaign=campaign).exists()
    items = CampaignItem.objects.filter(campaign=campaign)
    assert all(i.reserved == 0 and i.submitted == 0 for i in items)  # no slot used
    for with_dataset in (True, False):
        with pytest.raises(Http404):
            selectors_rating.campaign_get_for_rater(
                user=rater, campaign_id=campaign.pk, with_dataset=with_dataset
            )


def test_a_pairwise_assignment_cannot_be_submitted_as_pointwise(
    pairwise, api_client_for
):
    campaign, rater = pairwise
    a = pairwise_next(campaign=campaign, rater=rater).assignment
    assert a is not None and a.pair_id
    with pytest.raises(Http404):
        rating_submit(assignment_id=a.pk, rater=rater, scores={"readability": 3})
    with pytest.raises(Http404):
        selectors_rating.assignment_get_for_rater(user=rater, assignment_id=a.pk)
    client = api_client_for(rater)
    assert (
        client.post(
            reverse("annotation_api:assignment-next", args=[campaign.pk])
        ).status_code
        == 404
    )
    resp = client.post(
        reverse("annotation_api:rating-submit", args=[a.pk]),
        {"scores": {"readability": 3}},
        format="json",
    )
    assert resp.status_code == 404
    a.refresh_from_db()
    assert a.status == Assignment.Status.SERVED and not a.scores.exists()


def test_pointwise_pages_refuse_a_pairwise_campaign(pairwise, client_for):
    campaign, rater = pairwise
    page = client_for(rater).get(reverse("annotation:rate-next", args=[campaign.pk]))
    assert page.status_code == 404
