"""The agreement dashboard, its CSV and its API slice a dataset by its own taxonomy:
its domains and difficulty levels under their labels, and its facets (issue 35)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute, agreement_slice_values
from tests.analysis.support_scores import support_with_scores

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(researcher, tmp_path):
    return support_with_scores(researcher, tmp_path)


def test_slice_values_are_the_dataset_own_with_their_labels(support):
    dataset, _, _ = support

    values = agreement_slice_values(dataset=dataset)

    assert [(v["value"], v["label"]) for v in values["domain"]] == [
        ("billing", "billing"), ("shipping", "shipping"), ("account", "Account access"),
    ]  # fmt: skip
    assert [(v["value"], v["label"], v["n_responses"]) for v in values["difficulty"]] == [
        ("1", "routine", 4), ("2", "tricky", 4), ("3", "escalation", 2),
        ("unknown", "unknown", 2),
    ]  # fmt: skip
    assert [(v["value"], v["n_responses"]) for v in values["facet.channel"]] == [
        ("email", 6), ("chat", 4), ("phone", 2),
    ]  # fmt: skip
    assert [v["value"] for v in values["facet.language"]] == ["de", "en", "fr"]


def test_api_slices_by_a_facet(support, researcher, api_client_for):
    dataset, campaign, run = support
    client = api_client_for(researcher)
    base = reverse("analysis_api:agreement", args=[dataset.pk])
    query = f"?campaign={campaign.pk}&run={run.pk}&n_boot=0"

    resp = client.get(base + query + "&slice=facet.channel:email")

    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert body["slice"]["label"] == "channel email"
    want = agreement_compute(
        dataset=dataset, campaign_ids=[campaign.pk], run_ids=[run.pk], n_boot=0,
        slice_dim="facet.channel", slice_value="email",
    )  # fmt: skip
    assert body["rows"] == want.to_dict()["rows"]
    everything = client.get(base + query).json()
    assert _overall_n(body) < _overall_n(everything)

    slices = client.get(
        reverse("analysis_api:agreement-slices", args=[dataset.pk])
    ).json()
    assert "facet.channel" in slices and "facet.language" in slices


def test_api_slice_by_a_level_shows_its_label(support, researcher, api_client_for):
    dataset, campaign, run = support
    resp = api_client_for(researcher).get(
        reverse("analysis_api:agreement", args=[dataset.pk])
        + f"?campaign={campaign.pk}&run={run.pk}&n_boot=0&slice=difficulty:3"
    )

    assert resp.status_code == 200, resp.content
    assert resp.json()["slice"]["label"] == "difficulty 3 (escalation)"


@pytest.mark.parametrize(
    "slice_, expected",
    [
        ("facet.region:north", "no facet 'region'"),
        ("difficulty:5", "difficulty must be one of 1, 2, 3 or 'unknown'"),
        ("domain:math", "unknown domain 'math'"),
    ],
)
def test_api_refuses_a_slice_the_dataset_does_not_declare(
    support, researcher, api_client_for, slice_, expected
):
    dataset, campaign, run = support
    resp = api_client_for(researcher).get(
        reverse("analysis_api:agreement", args=[dataset.pk])
        + f"?campaign={campaign.pk}&run={run.pk}&n_boot=0&slice={slice_}"
    )

    assert resp.status_code == 400
    assert expected in str(resp.json())


def test_dashboard_offers_the_facets_and_labels_and_slices_by_them(
    support, researcher, client_for
):
    dataset, campaign, run = support
    client = client_for(researcher)
    url = reverse("analysis:agreement", args=[dataset.pk])

    page = client.get(url).content.decode()
    assert 'data-slice-dim="facet.channel"' in page
    assert "Account access" in page and "escalation" in page

    sliced = client.get(
        url, {"campaign": campaign.pk, "run": run.pk, "slice": "facet.channel:chat"}
    )
    assert sliced.status_code == 200
    assert "channel chat" in sliced.content.decode()

    fragment = client.get(
        url,
        {"campaign": campaign.pk, "run": run.pk, "slice": "facet.language:fr"},
        headers={"HX-Request": "true", "HX-Target": "agreement-results"},
    )
    assert fragment.status_code == 200
    assert "language fr" in fragment.content.decode()
    assert "<html" not in fragment.content.decode()

    bad = client.get(url, {"slice": "facet.channel:fax"})
    assert bad.status_code == 400
    assert "channel “fax” does not occur in this dataset" in bad.content.decode()


def test_dashboard_csv_counts_only_the_facet_slice(support, researcher, client_for):
    dataset, campaign, run = support
    client = client_for(researcher)
    url = reverse("analysis:agreement-csv", args=[dataset.pk, "table"])
    params = {"campaign": campaign.pk, "run": run.pk, "n_boot": 0}

    whole = _csv_items(client.get(url, params))
    phone = _csv_items(client.get(url, {**params, "slice": "facet.channel:phone"}))

    assert phone and whole and max(phone) < max(whole)


def _overall_n(body: dict) -> int:
    overall = next(r for r in body["rows"] if r["key"] == "overall")
    return overall["human"]["n_items"]


def _csv_items(resp) -> list[int]:
    assert resp.status_code == 200, resp.content
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    column = next(c for c in rows[0] if c.startswith("n"))
    return [int(r[column]) for r in rows if r[column].isdigit()]


def test_leaderboard_profiles_offer_the_dataset_own_slices_and_its_facets(
    support, researcher, client_for, api_client_for
):
    dataset, campaign, run = support
    url = reverse("analysis:leaderboard-profiles", args=[dataset.pk])
    client = client_for(researcher)

    page = client.get(url, {"campaign": campaign.pk, "run": run.pk, "n_boot": 0})

    text = page.content.decode()
    assert page.status_code == 200
    assert 'data-slice-dim="facet.channel"' in text
    assert 'data-slice="facet.language:fr"' in text
    assert 'data-slice="domain:account"' in text and "Account access" in text
    assert 'data-slice="difficulty:3"' in text and "escalation" in text
    # No instruction of this dataset is in FLASK-Hard: that slice is not offered.
    assert 'data-slice-dim="hard"' not in text
    query = {"campaign": campaign.pk, "run": run.pk, "n_boot": 0}
    sliced = client.get(url, {**query, "slice": "facet.channel:chat"})
    assert sliced.status_code == 200
    assert "channel chat" in sliced.content.decode()
    api = api_client_for(researcher).get(
        reverse("analysis_api:leaderboard-profiles", args=[dataset.pk]),
        {**query, "slice": "facet.channel:fax"},
    )
    assert api.status_code == 400
    assert "fax" in json.dumps(api.json())
