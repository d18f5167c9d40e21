"""Issue 37's defects of the researchers' forms and pages (view tests; each fails if
its defect comes back)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Dataset
from tests.factories import DatasetFactory
from tests.rubric_samples import TEN_POINT, dataset_on

pytestmark = pytest.mark.django_db


def _campaign_form(client, dataset: Dataset) -> str:
    url = reverse("annotation:campaign-new") + f"?dataset={dataset.pk}"
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_campaign_form_says_agreement_needs_two_raters_per_response(
    client_for, researcher
):
    # defect 25: k = 1 by default without a word that agreement needs k >= 2
    html = _campaign_form(client_for(researcher), DatasetFactory())
    assert "needs k ≥ 2" in html and 'aria-describedby="overlap-help"' in html


def test_campaign_form_speaks_of_criteria_on_a_custom_rubric(client_for, researcher):
    # defect 25: "Skills to score ... (FLASK default)" on a custom-rubric dataset
    client = client_for(researcher)
    custom = _campaign_form(client, dataset_on(TEN_POINT))
    assert "FLASK default" not in custom and "Criteria to score" in custom
    assert "Each instruction&#x27;s own criteria" in custom
    flask = _campaign_form(client, DatasetFactory())
    assert "Skills to score" in flask and "FLASK default" in flask
