"""The dataset page separates its downloads from its pages (issue 37, defect 16): two
labelled groups, every download (a link with `download`) in the one, none in the other."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup

from tests.factories import DatasetFactory


@pytest.mark.django_db
def test_downloads_and_pages_are_two_labelled_groups(researcher, client_for):
    dataset = DatasetFactory()
    response = client_for(researcher).get(f"/datasets/{dataset.pk}/")
    assert response.status_code == 200
    soup = BeautifulSoup(response.content, "html.parser")
    pages = soup.find(id="dataset-pages")
    downloads = soup.find(id="dataset-downloads")
    assert pages.name == "nav" and downloads.get("role") == "group"
    assert soup.find(id=pages["aria-labelledby"]).get_text() == "Pages of this dataset"
    assert soup.find(id=downloads["aria-labelledby"]).get_text() == "Downloads"
    files = downloads.find_all("a")
    assert {a.get_text() for a in files} >= {"Scores (CSV)", "Training data (JSONL)"}
    assert all(a.has_attr("download") for a in files)
    links = pages.find_all("a")
    assert {"Agreement", "Report", "Gold items"} <= {a.get_text() for a in links}
    assert not any(a.has_attr("download") for a in links)
    # No download is left outside its group.
    everywhere = [a for a in soup.find_all("a", download=True)]
    assert all(downloads in a.parents for a in everywhere)
