"""Generated ratings never make the default human reference when people's exist, and
the pages say which reference they use (issue 37, defects 17 and 21): the agreement
defaults, the dashboard's "Human reference" line, the pointwise probes page (which
opens with figures for the defaults) and the pairwise leaderboard's vote counts."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from django.contrib.auth.models import Group
from django.urls import reverse

from analysis.selectors.agreement import agreement_defaults
from analysis.selectors.leaderboard import vote_origins
from annotation.models import Campaign
from annotation.services.campaign_spec import CampaignSpec, ServingPolicy
from annotation.services.campaigns import campaign_create
from flaskapp import roles
from tests.analysis.agreement_data import make_agreement_setup
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_campaigns(researcher):
    human = {(i, "alpha", "readability"): [1 + i % 5, 1 + i % 5, "-"] for i in range(6)}
    judge = {k: v[0] for k, v in human.items()}
    s = make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, models=("alpha",),
        name="real-default",
    )  # fmt: skip
    bot = UserFactory(username="bot-rater", role="rater")
    bot.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    generated = campaign_create(
        spec=CampaignSpec(
            name="generated examples", dataset=s.dataset,
            skill_mode=Campaign.SkillMode.ALL, raters=[bot],
            serving=ServingPolicy(overlap=1),
        ),
        created_by=researcher,
    )  # fmt: skip
    return s, generated


def test_the_default_takes_campaigns_with_real_ratings_only(two_campaigns):
    s, generated = two_campaigns
    defaults = agreement_defaults(dataset=s.dataset)
    assert defaults.campaign_ids == [s.campaign.pk]
    assert defaults.left_out == [generated.pk] and not defaults.generated_only
    # Before any person has rated, every campaign, and the default says so.
    synthetic = Group.objects.get(name=roles.SYNTHETIC)
    for rater in s.raters:
        rater.groups.add(synthetic)
    defaults = agreement_defaults(dataset=s.dataset)
    assert defaults.campaign_ids == sorted([s.campaign.pk, generated.pk])
    assert defaults.generated_only


def test_the_dashboard_names_its_human_reference_visibly(
    two_campaigns, researcher, client_for
):
    s, generated = two_campaigns
    url = reverse("analysis:agreement", args=[s.dataset.pk])
    soup = BeautifulSoup(client_for(researcher).get(url).content, "html.parser")
    line = soup.find(id="human-reference")
    assert line.find_parent("details") is None  # not inside "What is compared"
    text = " ".join(line.get_text().split())
    assert "real-default campaign real ratings" in text
    assert "Left out by default: generated examples (no real ratings)" in text


def test_the_probes_page_opens_with_figures_for_the_real_campaign(
    two_campaigns, researcher, client_for
):
    s, generated = two_campaigns
    url = reverse("analysis:metaeval-probes", args=[s.dataset.pk])
    page = client_for(researcher).get(url)
    assert page.status_code == 200
    soup = BeautifulSoup(page.content, "html.parser")
    assert soup.find(id="pointwise-probes") is not None
    assert soup.find(id="probes-defaults") is not None
    chosen = soup.select_one('select[name="campaign"] option[selected]')
    assert chosen["value"] == str(s.campaign.pk)
    option = soup.select_one(f'select[name="campaign"] option[value="{generated.pk}"]')
    assert "generated" in option.get_text()


def test_vote_origins_split_real_generated_and_imported(two_campaigns):
    s, _ = two_campaigns
    # No votes yet: every origin is zero (the counts come from one query).
    assert vote_origins(s.dataset) == {"real": 0, "generated": 0, "imported": 0}
