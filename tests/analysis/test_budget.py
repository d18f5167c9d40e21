"""The bootstrap budget of one web request (analysis.selectors.budget, issue 34):
n_boot x the scores resampled; above it a 400 naming `n_boot` and the largest value
allowed for the selection, on the dashboard, its CSV, the API and the profiles."""

from __future__ import annotations

import pytest
from django.test import override_settings

from analysis.selectors.budget import boot_cells
from annotation.models import HumanScore
from judging.models import JudgeScore
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(researcher):
    human = {(i, m, "readability"): [1 + i % 5, 1 + (i + 1) % 5] for i in range(6)
             for m in ("a", "b")}  # fmt: skip
    judge = {(i, m, "readability"): 1 + i % 5 for i in range(6) for m in ("a", "b")}
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=6, models=("a", "b"),
        n_raters=2, name="budget-set",
    )  # fmt: skip


def test_the_cells_are_the_judge_and_human_scores_of_the_selection(setup):
    cells = boot_cells(dataset=setup.dataset)  # the defaults
    assert cells == JudgeScore.objects.count() + HumanScore.objects.count() == 36
    assert boot_cells(dataset=setup.dataset, run_ids=[setup.runs[0].pk],
                      campaign_ids=[setup.campaign.pk]) == 36  # fmt: skip


def test_a_request_counts_the_cells_once_per_dataset_object(
    setup, django_assert_num_queries
):
    """The budget check and the inline-or-job choice of one request ask twice; the
    second answer is the first's. A new object (the next request) counts again."""
    from annotation.models import Dataset

    dataset = Dataset.objects.get(pk=setup.dataset.pk)
    first = boot_cells(dataset=dataset, run_ids=[setup.runs[0].pk])
    with django_assert_num_queries(0):
        assert boot_cells(dataset=dataset, run_ids=[setup.runs[0].pk]) == first
    JudgeScore.objects.filter(run=setup.runs[0]).delete()
    assert boot_cells(dataset=Dataset.objects.get(pk=dataset.pk),
                      run_ids=[setup.runs[0].pk]) == first - 12  # fmt: skip


@override_settings(BOOT_BUDGET=36 * 100)
def test_above_the_budget_the_request_is_a_400_naming_the_largest_n_boot(
    setup, researcher, client_for, api_client_for
):
    api = api_client_for(researcher)
    url = f"/api/datasets/{setup.dataset.pk}/agreement/"
    refused = api.get(url, {"n_boot": 101})
    assert refused.status_code == 400
    (problem,) = refused.json()["problems"]
    assert problem["field"] == "n_boot"
    assert "the largest allowed for this selection is 100" in problem["message"]
    assert api.get(url, {"n_boot": 100}).status_code == 200
    profiles = api.get(f"/api/datasets/{setup.dataset.pk}/leaderboard/profiles/",
                       {"n_boot": 101})  # fmt: skip
    assert profiles.status_code == 400
    assert profiles.json()["problems"][0]["field"] == "n_boot"
    client = client_for(researcher)
    page = client.get(f"/agreement/{setup.dataset.pk}/", {"n_boot": 101})
    assert page.status_code == 400
    assert "the largest allowed for this selection is 100" in page.content.decode()
    csv = client.get(f"/agreement/{setup.dataset.pk}/table.csv", {"n_boot": 101})
    assert csv.status_code == 400 and b"n_boot" in csv.content
    page = client.get(f"/leaderboard/{setup.dataset.pk}/profiles/", {"n_boot": 101})
    assert page.status_code == 400
    assert (
        client.get(f"/agreement/{setup.dataset.pk}/", {"n_boot": 100}).status_code
        == 200
    )


@override_settings(BOOT_BUDGET=36 * 100)
def test_a_default_n_boot_above_the_budget_shrinks_to_the_largest_allowed(
    setup, researcher, client_for, api_client_for
):
    api = api_client_for(researcher)
    body = api.get(f"/api/datasets/{setup.dataset.pk}/agreement/").json()
    assert body["n_boot"] == 100
    page = client_for(researcher).get(f"/agreement/{setup.dataset.pk}/")
    assert page.status_code == 200
    assert 'step="1" value="100"' in page.content.decode()


def test_the_default_budget_refuses_issue_34s_n_boot_on_200_000_scores():
    from flaskapp.bounds import boot_largest

    assert 100 <= boot_largest(200_000) < 10_000
