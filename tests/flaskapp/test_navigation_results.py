"""The navigation names the result pages (issue 37, defect 15): leaderboards,
estimates, reliability, adjudication and report each have an entry; on their pages the
highlighted entry and the breadcrumb's first link are the same page; admins see
"Imports" before "API docs", which comes last."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from django.urls import reverse

from annotation.services.campaign_spec import CampaignSpec
from annotation.services.campaigns import campaign_create
from tests.factories import DatasetFactory, dataset_with_responses

pytestmark = pytest.mark.django_db

ENTRIES = {
    "Leaderboards": "analysis:leaderboard-choose",
    "Estimates": "analysis:estimates-choose",
    "Reliability": "analysis:reliability-choose",
    "Adjudication": "annotation:adjudication-home",
    "Report": "analysis:report-choose",
}


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
    for label, name in ENTRIES.items():
        assert (label, reverse(name)) in links
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
    pages = {
        reverse("analysis:leaderboard-profiles", args=[dataset.pk]): "Leaderboards",
        reverse("analysis:estimates", args=[dataset.pk]): "Estimates",
        reverse("analysis:reliability", args=[campaign.pk]): "Reliability",
        reverse("analysis:dataset-report", args=[dataset.pk]): "Report",
        reverse("annotation:adjudication-queue", args=[campaign.pk]): "Adjudication",
        reverse("analysis:leaderboard-choose"): "Leaderboards",
        reverse("analysis:estimates-choose"): "Estimates",
        reverse("analysis:reliability-choose"): "Reliability",
        reverse("analysis:report-choose"): "Report",
    }
    for url, label in pages.items():
        response = client.get(url)
        assert response.status_code == 200, url
        soup = BeautifulSoup(response.content, "html.parser")
        current = _nav(soup).find("a", attrs={"aria-current": "page"})
        assert current is not None and current.get_text() == label, url
        crumbs = soup.find(class_="breadcrumbs")
        if crumbs is not None:  # the entry's own page has none: it is the top
            assert crumbs.a["href"] == current["href"], url


def test_a_chooser_lists_the_workspaces_datasets_with_their_pages(
    client_for, researcher
):
    dataset = DatasetFactory(name="chooser-set")
    soup = BeautifulSoup(
        client_for(researcher).get(reverse("analysis:leaderboard-choose")).content,
        "html.parser",
    )
    hrefs = {a["href"] for a in soup.find(id="results-choose").find_all("a")}
    assert reverse("analysis:leaderboard-pairwise", args=[dataset.pk]) in hrefs
    assert reverse("analysis:leaderboard-profiles", args=[dataset.pk]) in hrefs
