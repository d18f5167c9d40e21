"""Where a rater finds their work: the home page and /rate/ list the same campaigns
(`selectors.rater_campaign_rows`), pairwise ones as pairwise with their own links, and
researchers' lists tell the two kinds apart with progress in each kind's unit."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from annotation.models import Campaign
from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create, campaign_set_status
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory


def page_text(response) -> str:
    body = response.content.decode()
    body = re.sub(r"<(script|style)\b.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", body))).strip()


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def dataset(db):
    dataset = DatasetFactory()
    for i in range(3):
        instruction = InstructionFactory(dataset=dataset, text=f"Question {i}")
        for model in ("model-alpha", "model-beta"):
            ResponseFactory(instruction=instruction, model_name=model)
    return dataset


@pytest.fixture
def campaigns(researcher, rater, other_rater, dataset):
    """A pointwise campaign (6 responses) and a pairwise one (3 pairs, overlap 2)."""
    pointwise = campaign_create(
        spec=CampaignSpec(name="Score study", dataset=dataset, raters=[rater]),
        created_by=researcher,
    )
    pairwise = campaign_create(
        spec=CampaignSpec(
            name="Pair study",
            dataset=dataset,
            raters=[rater, other_rater],
            serving=ServingPolicy(overlap=2),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    return pointwise, pairwise


def test_home_shows_the_raters_work_as_rate_does(client_for, rater, campaigns):
    pointwise, pairwise = campaigns
    client = client_for(rater)
    home = client.get(reverse("home"))
    text = page_text(home)
    assert "No rating work for you yet" not in text
    assert "Your rating work" in text
    for response in (home, client.get(reverse("annotation:rate-home"))):
        body = response.content.decode()
        assert reverse("annotation:rate-next", args=[pointwise.pk]) in body
        assert reverse("annotation:rate-history", args=[pointwise.pk]) in body
        assert reverse("annotation:pairwise-next", args=[pairwise.pk]) in body
        assert reverse("annotation:pairwise-history", args=[pairwise.pk]) in body
        # A pairwise campaign never gets the pointwise links (its history was a 404).
        for name in ("annotation:rate-history", "annotation:rate-next"):
            assert f'href="{reverse(name, args=[pairwise.pk])}"' not in body
        # The rater's own work left: 3 pairs (not the campaign's 6 open slots).
        assert "3 comparisons still open to you" in page_text(response)
        assert "Pairwise comparison" in page_text(response)
    assert (
        client.get(
            reverse("annotation:pairwise-history", args=[pairwise.pk])
        ).status_code
        == 200
    )


def test_home_of_a_rater_without_campaigns_says_so(client_for, other_rater, db):
    text = page_text(client_for(other_rater).get(reverse("home")))
    assert "No rating work for you yet" in text


def test_researchers_campaign_list_tells_pairwise_apart_in_votes(
    client_for, researcher, campaigns
):
    pointwise, pairwise = campaigns
    response = client_for(researcher).get(reverse("annotation:campaign-list"))
    body = response.content.decode()
    text = page_text(response)
    assert reverse("annotation:campaign-detail", args=[pointwise.pk]) in body
    assert reverse("annotation:pairwise-campaign-detail", args=[pairwise.pk]) in body
    assert f'"{reverse("annotation:campaign-detail", args=[pairwise.pk])}"' not in body
    assert "Pair study Pairwise comparison" in text
    assert "0 of 6 votes on 3 pairs" in text
    assert "0 of 6 ratings" in text


def test_the_pointwise_page_of_a_pairwise_campaign_sends_to_its_own_page(
    client_for, researcher, campaigns
):
    _, pairwise = campaigns
    client = client_for(researcher)
    response = client.get(reverse("annotation:campaign-detail", args=[pairwise.pk]))
    url = reverse("annotation:pairwise-campaign-detail", args=[pairwise.pk])
    assert response.status_code == 302 and response.url == url
    text = page_text(client.get(url))
    assert "0 / 6 votes submitted" in text and "0 / 3 pairs done" in text


@pytest.mark.parametrize("kind", ["pointwise", "pairwise"])
def test_a_paused_campaign_offers_no_start_and_its_page_says_paused(
    client_for, researcher, rater, campaigns, kind
):
    campaign = campaigns[0] if kind == "pointwise" else campaigns[1]
    campaign_set_status(
        campaign=campaign, status=Campaign.Status.PAUSED, user=researcher
    )
    client = client_for(rater)
    work = (
        reverse("annotation:rate-next", args=[campaign.pk])
        if kind == "pointwise"
        else reverse("annotation:pairwise-next", args=[campaign.pk])
    )
    for page in (reverse("home"), reverse("annotation:rate-home")):
        response = client.get(page)
        card = (
            response.content.decode()
            .split(f'data-campaign-id="{campaign.pk}"', 1)[1]
            .split("</li>", 1)[0]
        )
        assert "Paused" in card
        assert f'href="{work}"' not in card  # no Start / Continue, no link to rate
        assert "Start" not in card
    response = client.get(work)
    assert response.status_code == 200
    assert "paused" in page_text(response).lower()
