"""An imported placeholder judge (no base URL, no model; it only holds imported
results) is not offered "New run", and the run form shows no estimate for it but says
why (issue 37, defect 22)."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from django.urls import reverse

from judging.models import JudgeConfig
from tests.factories import dataset_with_responses

pytestmark = pytest.mark.django_db


@pytest.fixture
def placeholder():
    # What the import of pairwise verdicts creates (judging/services/verdicts.py).
    return JudgeConfig.objects.create(name="imported-judge", base_url="", model="")


@pytest.fixture
def runnable():
    return JudgeConfig.objects.create(
        name="real-judge", base_url="http://127.0.0.1:9/v1", model="m-1"
    )


def _new_run_links(html: str, config: JudgeConfig) -> list:
    soup = BeautifulSoup(html, "html.parser")
    href = f"{reverse('judging:run-new')}?config={config.pk}"
    return [a for a in soup.find_all("a") if a.get("href") == href]


def test_the_placeholders_page_offers_no_new_run_and_says_why(
    client_for, researcher, placeholder, runnable
):
    client = client_for(researcher)
    html = client.get(reverse("judging:judge-detail", args=[placeholder.pk]))
    html = html.content.decode()
    assert _new_run_links(html, placeholder) == []
    assert 'id="no-endpoint-note"' in html
    real = client.get(reverse("judging:judge-detail", args=[runnable.pk]))
    assert _new_run_links(real.content.decode(), runnable)
    listing = client.get(reverse("judging:judge-list")).content.decode()
    assert _new_run_links(listing, placeholder) == []
    assert _new_run_links(listing, runnable)


def test_the_run_form_shows_no_estimate_for_the_placeholder_and_says_why(
    client_for, researcher, placeholder, runnable
):
    dataset = dataset_with_responses()
    client = client_for(researcher)
    url = reverse("judging:run-new")
    page = client.get(url, {"config": placeholder.pk, "dataset": dataset.pk})
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="estimate-calls"' not in html
    assert 'id="estimate-no-endpoint"' in html and "has no endpoint" in html
    real = client.get(url, {"config": runnable.pk, "dataset": dataset.pk})
    assert 'id="estimate-calls"' in real.content.decode()
