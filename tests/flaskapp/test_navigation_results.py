"""The navigation reaches the result pages (issue 37, defect 15): its "Results" entry
opens a page with leaderboards, estimates, reliability, adjudication and reports of
every dataset and campaign; on those pages "Results" is highlighted and the
breadcrumb starts at it; admins see "Imports" before "API docs", which comes last."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from django.urls import reverse

from annotation.services.campaign_spec import CampaignSpec
from annotation.services.campaigns import campaign_create
from tests.factories import dataset_with_responses

pytestmark = pytest.mark.django_db


def _nav(soup):
    return soup.find("nav", attrs={"aria-label": "Main"})


@pytest.mark.parametrize("who", ["researcher", "admin_user"])
def test_every_result_page_has_an_entry_and_api_docs_come_last(
    request, client_for, who
):
    soup = BeautifulSoup(
        client_for(request.getfixturevalue(who)).get(reverse("home")).content,
        "html.parser",
    )
    links = [(a.get_text(), a["href"]) for a in _nav(soup).find_all("a")]
    assert ("Results", reverse("analysis:results")) in links
    labels = [label for label, _ in links]
    assert labels[-1] == "API docs"
    assert labels.index("Imports") < labels.index("API docs")


def test_the_highlighted_entry_and_the_breadcrumb_agree(client_for, researcher):
    dataset = dataset_with_responses()
    campaign = campaign_create(
        spec=CampaignSpec(name="crumbs", dataset=dataset, raters=[]),
        created_by=researcher,
    )
    client = client_for(researcher)
    pages = [
        reverse("analysis:leaderboard-profiles", args=[dataset.pk]),
        reverse("analysis:estimates", args=[dataset.pk]),
        reverse("analysis:reliability", args=[campaign.pk]),
        reverse("analysis:dataset-report", args=[dataset.pk]),
        reverse("annotation:adjudication-queue", args=[campaign.pk]),
        reverse("analysis:results"),
    ]
    for url in pages:
        response = client.get(url)
        assert response.status_code == 200, url
        soup = BeautifulSoup(response.content, "html.parser")
        current = _nav(soup).find("a", attrs={"aria-current": "page"})
        assert current is not None and current.get_text() == "Results", url
        crumbs = soup.find(class_="breadcrumbs")
        if crumbs is not None:  # the entry's own page has none: it is the top
            assert crumbs.a["href"] == current["href"], url


def test_results_lists_every_page_of_each_dataset_and_campaign(client_for, researcher):
    dataset = dataset_with_responses()
    campaign = campaign_create(
        spec=CampaignSpec(name="listed", dataset=dataset, raters=[]),
        created_by=researcher,
    )
    soup = BeautifulSoup(
        client_for(researcher).get(reverse("analysis:results")).content,
        "html.parser",
    )
    hrefs = {a["href"] for a in soup.find("main").find_all("a")}
    for name in (
        "analysis:leaderboard-pairwise",
        "analysis:leaderboard-profiles",
        "analysis:estimates",
        "analysis:estimates-win-rates",
        "analysis:dataset-report",
    ):
        assert reverse(name, args=[dataset.pk]) in hrefs, name
    assert reverse("analysis:reliability", args=[campaign.pk]) in hrefs
    assert reverse("annotation:adjudication-queue", args=[campaign.pk]) in hrefs
    assert reverse("annotation:adjudication-home") in hrefs
