"""Issue 37's defects of the researchers' forms and pages (view tests; each fails if
its defect comes back)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.models import Dataset
from annotation.services.campaign_spec import CampaignSpec
from annotation.services.campaigns import campaign_create
from judging.models import JudgeRun
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory
from tests.rubric_samples import TEN_POINT, dataset_on

pytestmark = pytest.mark.django_db


def _rated_dataset() -> Dataset:
    dataset = DatasetFactory()
    ResponseFactory(instruction=InstructionFactory(dataset=dataset))
    return dataset


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


def test_campaign_page_links_its_dataset_agreement_exports_and_history(
    client_for, researcher
):
    # defect 8: the campaign page linked to none of them
    dataset = _rated_dataset()
    campaign = campaign_create(
        spec=CampaignSpec(name="Linked campaign", dataset=dataset),
        created_by=researcher,
    )
    url = reverse("annotation:campaign-detail", args=[campaign.pk])
    html = client_for(researcher).get(url).content.decode()
    assert reverse("annotation:dataset-detail", args=[dataset.pk]) in html
    agreement = reverse("analysis:agreement", args=[dataset.pk])
    assert f"{agreement}?campaign={campaign.pk}" in html
    assert reverse("annotation:adjudication-history", args=[campaign.pk]) in html
    export = reverse("analysis_api:dataset-export", args=[dataset.pk])
    assert f"{export}?format=csv&amp;campaign={campaign.pk}" in html


def test_dataset_page_lists_its_campaigns_and_judge_runs(client_for, researcher):
    # defect 8: the dataset page listed neither
    dataset = _rated_dataset()
    empty = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[dataset.pk])
    )
    assert "No campaign rates this dataset yet" in empty.content.decode()
    campaign = campaign_create(
        spec=CampaignSpec(name="Listed campaign", dataset=dataset),
        created_by=researcher,
    )
    run = JudgeRun.objects.create(
        dataset=dataset,
        name="listed judge",
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
    )
    html = (
        client_for(researcher)
        .get(reverse("annotation:dataset-detail", args=[dataset.pk]))
        .content.decode()
    )
    campaigns = html.split('id="dataset-campaign-list"', 1)[1].split("</ul>", 1)[0]
    assert "Listed campaign" in campaigns
    assert reverse("annotation:campaign-detail", args=[campaign.pk]) in campaigns
    runs = html.split('id="dataset-run-list"', 1)[1].split("</ul>", 1)[0]
    assert "listed judge" in runs
    assert reverse("judging:run-detail", args=[run.pk]) in runs
