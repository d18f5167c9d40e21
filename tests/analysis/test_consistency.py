"""Self-consistency of a run with several samples: the figures against sklearn and
scipy on the same arrays, the slices, the API and the page."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from analysis.selectors.agreement import AgreementError
from analysis.selectors.consistency import self_consistency
from analysis.stats.consistency import item_medians, item_modes, sample_spread
from judging.services.splits import eval_split_create
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db

SKILLS = ("comprehension", "factuality")
MODELS = ("alpha", "beta")
N = 10
S = 3


def _tables(seed: int = 1):
    rng = np.random.default_rng(seed)
    human, judge = {}, {}
    for i in range(N):
        for m in MODELS:
            for k in SKILLS:
                hs = [int(v) for v in rng.integers(1, 6, 3)]
                human[(i, m, k)] = hs
                centre = int(np.clip(round(np.mean(hs)), 1, 5))
                samples = [
                    int(np.clip(centre + rng.integers(-1, 2), 1, 5)) for _ in range(S)
                ]
                if (i, m) == (1, "beta"):
                    samples[2] = None  # one N/A sample
                if (i, m) == (2, "alpha"):
                    samples[0] = None  # sample 0 N/A: the item is left out
                judge[(i, m, k)] = samples
    return human, judge


@pytest.fixture
def setup(researcher):
    human, judge = _tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=N,
        models=MODELS,
        name="consistency",
    )
    s.human, s.judge = human, judge
    return s


def _mode(values) -> int:
    uniq, counts = np.unique(values, return_counts=True)
    tied = uniq[counts == counts.max()]
    dist = np.abs(tied - np.median(values))
    return int(tied[dist == dist.min()].max())


def _expected(s, key):
    first, med, mode, hmean, hround, spread = [], [], [], [], [], []
    for (i, m, k), hs in sorted(s.human.items()):
        if k != key:
            continue
        samples = s.judge[(i, m, k)]
        numeric = [v for v in samples if v is not None]
        if len(numeric) >= 2:
            spread.append(numeric)
        if samples[0] is None:
            continue
        first.append(samples[0])
        med.append(int(np.floor(np.median(numeric) + 0.5)))
        mode.append(_mode(numeric))
        hmean.append(np.mean(hs))
        hround.append(int(np.floor(np.median(hs) + 0.5)))
    return first, med, mode, hmean, hround, spread


def test_figures_match_sklearn_and_scipy(setup):
    result = self_consistency(dataset=setup.dataset, run_id=setup.runs[0].pk)
    rows = {r["key"]: r for r in result["rows"]}
    assert set(rows) == set(SKILLS)
    assert result["run"]["samples"] == S
    for key in SKILLS:
        row = rows[key]
        first, med, mode, hmean, hround, spread = _expected(setup, key)
        assert row["n_items"] == len(first) == 2 * N - 1
        for name, judge in (("first", first), ("median", med), ("mode", mode)):
            got = row["readings"][name]
            qwk = cohen_kappa_score(
                judge, hround, weights="quadratic", labels=[1, 2, 3, 4, 5]
            )
            assert got["qwk"] == pytest.approx(qwk, abs=1e-9)
            assert got["spearman"] == pytest.approx(
                spearmanr(judge, hmean)[0], abs=1e-9
            )
        var = [np.var(v) for v in spread]
        assert row["spread"]["n_items"] == len(spread) == 2 * N
        assert row["spread"]["mean_variance"] == pytest.approx(np.mean(var))
        assert row["spread"]["median_variance"] == pytest.approx(np.median(var))
        differ = np.mean([max(v) != min(v) for v in spread])
        assert row["spread"]["share_disagreeing"] == pytest.approx(differ)


def test_pure_readings():
    nan = np.nan
    s = np.array([[1, 2, 2], [2, 4, nan], [nan, nan, nan], [5, 1, 1]], float)
    np.testing.assert_array_equal(item_medians(s), [2, 3, nan, 1])
    np.testing.assert_array_equal(item_modes(s), [2, 4, nan, 1])
    spread = sample_spread(s)
    assert spread["n_items"] == 3
    assert spread["mean_variance"] == pytest.approx(
        np.mean([np.var([1, 2, 2]), np.var([2, 4]), np.var([5, 1, 1])])
    )
    assert spread["share_disagreeing"] == 1.0
    assert sample_spread(np.zeros((0, 1)))["mean_variance"] is None


def test_split_slices(setup, researcher):
    eval_split_create(dataset=setup.dataset, user=researcher, test_fraction=0.4, seed=2)
    dev = self_consistency(
        dataset=setup.dataset,
        run_id=setup.runs[0].pk,
        slice_dim="split",
        slice_value="dev",
    )
    whole = self_consistency(dataset=setup.dataset, run_id=setup.runs[0].pk)
    assert 0 < dev["rows"][0]["n_items"] < whole["rows"][0]["n_items"]
    with pytest.raises(AgreementError, match="test split is locked"):
        self_consistency(
            dataset=setup.dataset,
            run_id=setup.runs[0].pk,
            slice_dim="split",
            slice_value="test",
        )


def test_unknown_campaign_is_refused(setup):
    with pytest.raises(AgreementError, match="campaign"):
        self_consistency(
            dataset=setup.dataset, run_id=setup.runs[0].pk, campaign_ids=[999999]
        )


def test_api(setup, researcher, api_client_for):
    client = api_client_for(researcher)
    run = setup.runs[0]
    res = client.get(f"/api/runs/{run.pk}/consistency/")
    assert res.status_code == 200
    assert {r["key"] for r in res.json()["rows"]} == set(SKILLS)
    bad = client.get(f"/api/runs/{run.pk}/consistency/", {"campaign": 999999})
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "campaign"
    sliced = client.get(f"/api/runs/{run.pk}/consistency/", {"slice": "split:dev"})
    assert sliced.status_code == 400  # no split yet
    assert client.get("/api/runs/999999/consistency/").status_code == 404


def test_page(setup, researcher, client_for):
    run = setup.runs[0]
    res = client_for(researcher).get(f"/runs/{run.pk}/consistency/")
    assert res.status_code == 200
    text = res.content.decode()
    assert 'id="consistency-table"' in text and 'data-criterion="factuality"' in text
    bad = client_for(researcher).get(f"/runs/{run.pk}/consistency/?slice=split:test")
    assert bad.status_code == 400 and "locked" in bad.content.decode()


@pytest.mark.parametrize("who", ["rater", "anonymous"])
def test_refused_for_raters_and_anonymous(
    setup, rater, who, api_client_for, client_for
):
    user = rater if who == "rater" else None
    run = setup.runs[0]
    api = api_client_for(user).get(f"/api/runs/{run.pk}/consistency/")
    page = client_for(user).get(f"/runs/{run.pk}/consistency/")
    if user:
        assert api.status_code == 403 and page.status_code == 403
    else:
        assert api.status_code in (401, 403)
        assert page.status_code == 302 and "/login/" in page["Location"]
