"""Prediction-powered estimates: `analysis.stats.ppi` against `ppi_py` on the same
arrays, coverage and unbiasedness in simulation, the selector on stored scores, the
page and the API (roles, bad input)."""

from __future__ import annotations

import numpy as np
import ppi_py
import pytest
from django.urls import reverse

from analysis.selectors.agreement import AgreementError
from analysis.selectors.ppi import prediction_powered_means
from analysis.stats.ppi import PPIInputError, ppi_mean, ppi_win_rate
from tests.analysis.agreement_data import make_agreement_setup

TOL = 1e-10


def _arrays(seed: int, n: int = 60, big_n: int = 500):
    rng = np.random.default_rng(seed)
    y = rng.integers(1, 6, n).astype(float)
    f = np.clip(y + rng.integers(-1, 2, n) + 0.5, 1, 5)
    f_u = np.clip(rng.integers(1, 6, big_n) + 0.5, 1, 5)
    return y, f, f_u


def _lib(y, f, f_u, lam, w=None, w_u=None, alpha=0.05):
    point = ppi_py.ppi_mean_pointestimate(y, f, f_u, lam=lam, w=w, w_unlabeled=w_u)
    low, high = ppi_py.ppi_mean_ci(
        y, f, f_u, alpha=alpha, lam=lam, w=w, w_unlabeled=w_u
    )
    return float(np.squeeze(point)), float(np.squeeze(low)), float(np.squeeze(high))


@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ppi_mean_equals_ppi_py_on_the_same_arrays(seed, lam):
    y, f, f_u = _arrays(seed)
    r = ppi_mean(y, f, f_u, lam=lam)
    point, low, high = _lib(y, f, f_u, lam)
    assert abs(r.ppi.value - point) < TOL
    assert abs(r.ppi.low - low) < TOL and abs(r.ppi.high - high) < TOL
    assert r.tuned is (lam is None)
    assert 0 <= r.lam <= 1


def test_tuned_lambda_equals_ppi_py_and_classic_is_lambda_one():
    rng = np.random.default_rng(5)
    y = rng.normal(3, 1, 60)
    f, f_u = 0.5 * y + rng.normal(0, 0.6, 60), rng.normal(1.5, 0.8, 500)
    r = ppi_mean(y, f, f_u)
    # The point estimate is linear in lam, so equal points mean equal lams; ppi_py's tuned point estimate is the fixed-lam estimate at the same lam.
    assert abs(_lib(y, f, f_u, None)[0] - _lib(y, f, f_u, r.lam)[0]) < TOL
    assert abs(r.classic.value - _lib(y, f, f_u, 1.0)[0]) < TOL
    assert 0 < r.lam < 1  # a partly informative judge: neither extreme


def test_weighted_ppi_equals_ppi_py_and_only_weight_ratios_matter():
    y, f, f_u = _arrays(3)
    rng = np.random.default_rng(9)
    w, w_u = rng.uniform(0.2, 3, len(y)), rng.uniform(0.5, 2, len(f_u))
    for lam in (None, 1.0):
        r = ppi_mean(y, f, f_u, weights=w, weights_unlabelled=w_u, lam=lam)
        point, low, high = _lib(y, f, f_u, lam, w, w_u)
        assert abs(r.ppi.value - point) < TOL
        assert abs(r.ppi.low - low) < TOL and abs(r.ppi.high - high) < TOL
        scaled = ppi_mean(y, f, f_u, weights=w / 1000, weights_unlabelled=w_u, lam=lam)
        assert abs(scaled.ppi.value - r.ppi.value) < TOL


def test_humans_only_equals_the_classical_interval_and_alpha_is_honoured():
    y, f, f_u = _arrays(4)
    for alpha in (0.05, 0.1):
        r = ppi_mean(y, f, f_u, alpha=alpha)
        low, high = ppi_py.classical_mean_ci(y, alpha=alpha)
        assert abs(r.humans.low - low) < TOL and abs(r.humans.high - high) < TOL
        assert abs(r.humans.value - y.mean()) < TOL
        assert r.humans.n == len(y)
        point, low, high = _lib(y, f, f_u, None, alpha=alpha)
        assert abs(r.ppi.low - low) < TOL and abs(r.ppi.high - high) < TOL


def test_judge_only_is_the_judges_mean_and_says_its_interval_is_not_valid():
    y, f, f_u = _arrays(6)
    r = ppi_mean(y, f, f_u)
    assert abs(r.judge.value - np.concatenate([f, f_u]).mean()) < TOL
    assert r.judge.valid is False and r.ppi.valid and r.humans.valid
    assert r.judge.n == len(y) + len(f_u)


def test_effective_n_is_n_times_the_variance_ratio():
    y, f, f_u = _arrays(7)
    r = ppi_mean(y, f, f_u)
    assert r.effective_n == pytest.approx(len(y) * r.humans.se**2 / r.ppi.se**2)
    assert r.effective_n >= len(y) * 0.99  # tuned lam: never (much) worse


def test_win_rate_is_ppi_on_outcomes_and_refuses_other_values():
    rng = np.random.default_rng(11)
    y = rng.choice([0.0, 0.5, 1.0], 80)
    f = np.where(rng.uniform(size=80) < 0.7, y, rng.choice([0.0, 0.5, 1.0], 80))
    f_u = rng.choice([0.0, 0.5, 1.0], 600, p=[0.3, 0.2, 0.5])
    r = ppi_win_rate(y, f, f_u)
    point, low, high = _lib(y, f, f_u, None)
    assert abs(r.ppi.value - point) < TOL and abs(r.ppi.low - low) < TOL
    with pytest.raises(PPIInputError, match="f_labelled"):
        ppi_win_rate(y, f + 0.25, f_u)


@pytest.mark.parametrize(
    "args, name",
    [
        (([], [], [3.0, 4.0]), "y_labelled"),
        (([3.0, 4.0], [3.0], [3.0]), "f_labelled"),
        (([3.0, 4.0], [3.0, 4.0], []), "f_unlabelled"),
        (([3.0, np.nan], [3.0, 4.0], [3.0]), "y_labelled"),
    ],
)
def test_bad_arrays_are_refused_naming_the_argument(args, name):
    with pytest.raises(PPIInputError, match=f"^{name}:"):
        ppi_mean(*args)


def test_no_human_labelled_item_is_refused_naming_y_labelled():
    with pytest.raises(PPIInputError) as exc:
        ppi_mean(np.array([]), np.array([]), np.array([3.0, 4.0]))
    assert str(exc.value).startswith("y_labelled: no human-labelled item")


# ---------------------------------------------------------------------------
# Simulations (seeded: the figures are the same on every run)
# ---------------------------------------------------------------------------


def _cover(e, truth) -> bool:
    return e.low <= truth <= e.high


def test_coverage_ppi_95_percent_judge_only_far_below_for_a_biased_judge():
    """4,000 synthetic datasets: a true mean 3.2, human labels with noise, a judge
    that adds 0.6 and noise; 200 items labelled, 2,000 more scored by the judge only
    (binomial standard error of a 95% coverage over 4,000: 0.35 points)."""
    rng = np.random.default_rng(20240601)
    s, n, big_n, truth = 4000, 200, 2000, 3.2
    hits = {"ppi": 0, "classic": 0, "humans": 0, "judge": 0}
    eff = np.zeros(s)
    for k in range(s):
        y = truth + rng.normal(0, 1.0, n + big_n)
        f = y + 0.6 + rng.normal(0, 0.5, n + big_n)
        r = ppi_mean(y[:n], f[:n], f[n:])
        for name in hits:
            hits[name] += _cover(getattr(r, name), truth)
        eff[k] = r.effective_n
    coverage = {name: h / s for name, h in hits.items()}
    print(f"coverage over {s} datasets: {coverage}; mean effective n {eff.mean():.0f}")
    assert 0.94 <= coverage["ppi"] <= 0.96
    assert 0.94 <= coverage["classic"] <= 0.96
    assert coverage["judge"] < 0.5
    assert eff.mean() > 2 * n  # a correlated judge is worth more than its n


def test_coverage_without_judge_bias_keeps_judge_only_near_nominal():
    """The check above can fail: an unbiased judge's interval does cover."""
    rng = np.random.default_rng(7)
    s, n, big_n, truth = 1000, 80, 800, 3.2
    y = truth + rng.normal(0, 1.0, (s, n + big_n))
    f = y + rng.normal(0, 0.5, (s, n + big_n))
    judge = np.mean([_cover(ppi_mean(a[:n], b[:n], b[n:]).judge, truth)
                     for a, b in zip(y, f, strict=True)])  # fmt: skip
    assert judge > 0.9


def _ipw_population(seed: int, s: int = 2000, m: int = 1000):
    """Items with a covariate d: humans score 2 + 2d (+ noise, true mean 3), the
    judge errs by 0.5 - 0.8d, and items are labelled with probability 0.03 + 0.2d
    (the items a biased labelling would favour)."""
    rng = np.random.default_rng(seed)
    d = rng.uniform(0, 1, (s, m))
    y = 2 + 2 * d + rng.normal(0, 0.7, (s, m))
    f = y + 0.5 - 0.8 * d + rng.normal(0, 0.4, (s, m))
    pi = 0.03 + 0.2 * d
    labelled = rng.uniform(size=(s, m)) < pi
    return y, f, pi, labelled, 3.0


def test_inverse_probability_weights_remove_the_sampling_bias():
    y, f, pi, labelled, truth = _ipw_population(20240602)
    est = {"weighted": [], "tuned": [], "unweighted": []}
    covered = 0
    for k in range(len(y)):
        lab = labelled[k]
        w, w_u = 1 / pi[k, lab], 1 / (1 - pi[k, ~lab])
        args = (y[k, lab], f[k, lab], f[k, ~lab])
        r = ppi_mean(*args, weights=w, weights_unlabelled=w_u, lam=1.0)
        covered += _cover(r.ppi, truth)
        est["weighted"].append(r.ppi.value)
        est["tuned"].append(
            ppi_mean(*args, weights=w, weights_unlabelled=w_u).ppi.value
        )
        est["unweighted"].append(ppi_mean(*args, lam=1.0).ppi.value)
    bias = {k: np.mean(v) - truth for k, v in est.items()}
    sd = {k: np.std(v) for k, v in est.items()}
    print(f"IPW bias {bias}; sd {sd}; lam=1 coverage {covered / len(y)}")
    assert abs(bias["weighted"]) < 3 * sd["weighted"] / np.sqrt(len(y))
    assert abs(bias["tuned"]) < 0.25 * sd["tuned"]  # self-normalised: O(1/n)
    assert bias["unweighted"] > sd["unweighted"]  # what the weights undo
    # ppi_py's uncentred weighted variance: conservative here with lam = 1.
    assert covered / len(y) >= 0.94


# ---------------------------------------------------------------------------
# The selector on stored scores
# ---------------------------------------------------------------------------

KEYS = ("readability", "factuality")
N_INSTR, N_HUMAN = 12, 7


def _score(i: int, m: str, key: str) -> int:
    return 1 + (3 * i + (m == "beta") * 2 + (key == "factuality")) % 5


@pytest.fixture
def setup(researcher):
    human, judge = {}, {}
    for i in range(N_INSTR):
        for m in ("alpha", "beta"):
            for key in KEYS:
                base = _score(i, m, key)
                if i < N_HUMAN:
                    human[(i, m, key)] = [base, min(5, base + i % 2), "-"]
                judge[(i, m, key)] = min(5, base + (i % 3 != 0))  # a lenient judge
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=N_INSTR, name="ppi-set"
    )


def _expected(m: str, key: str):
    y = np.array(
        [(_score(i, m, key) + min(5, _score(i, m, key) + i % 2)) / 2
         for i in range(N_HUMAN)]
    )  # fmt: skip
    j = np.array([min(5, _score(i, m, key) + (i % 3 != 0)) for i in range(N_INSTR)])
    return y, j[:N_HUMAN].astype(float), j[N_HUMAN:].astype(float)


def test_selector_estimates_equal_ppi_py_on_the_stored_scores(setup):
    out = prediction_powered_means(
        dataset=setup.dataset, run_id=setup.runs[0].pk, campaign_ids=[setup.campaign.pk]
    )
    assert {c["key"] for c in out["criteria"]} == set(KEYS)
    for c in out["criteria"]:
        assert [r["model"] for r in c["models"]] == ["alpha", "beta"]
        for row in c["models"]:
            y, f, f_u = _expected(row["model"], c["key"])
            assert (row["n_labelled"], row["n_unlabelled"]) == (N_HUMAN, 5)
            point, low, high = _lib(y, f, f_u, None)
            assert abs(row["ppi"]["value"] - point) < TOL
            assert abs(row["ppi"]["ci"][0] - low) < TOL
            assert abs(row["ppi"]["ci"][1] - high) < TOL
            assert abs(row["humans"]["value"] - y.mean()) < TOL
            assert row["judge"]["value"] == pytest.approx(np.r_[f, f_u].mean())
            assert row["judge"]["valid"] is False
            assert row["classic"]["value"] == pytest.approx(_lib(y, f, f_u, 1.0)[0])


def test_selector_defaults_to_every_pointwise_campaign_and_filters_criterion(setup):
    out = prediction_powered_means(
        dataset=setup.dataset, run_id=setup.runs[0].pk, criterion="factuality"
    )
    assert [c["key"] for c in out["criteria"]] == ["factuality"]
    assert out["campaigns"] == [{"id": setup.campaign.pk, "name": setup.campaign.name}]


def test_selector_refuses_no_human_labelled_items_naming_campaign(researcher):
    judge = {(i, "alpha", "readability"): 3 for i in range(4)}
    empty = make_agreement_setup(
        researcher, human={}, judges=[judge], n_instructions=4, name="ppi-empty"
    )
    with pytest.raises(AgreementError, match="^campaign: no human-labelled items"):
        prediction_powered_means(
            dataset=empty.dataset,
            run_id=empty.runs[0].pk,
            campaign_ids=[empty.campaign.pk],
        )


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"run_id": 999_999}, "run"),
        ({"run_id": None}, "run"),
        ({"campaign_ids": [999_999]}, "campaign"),
        ({"criterion": "nope"}, "criterion"),
        ({"alpha": 1.5}, "alpha"),
    ],
)
def test_selector_refuses_bad_parameters_naming_them(setup, kwargs, field):
    args = {"dataset": setup.dataset, "run_id": setup.runs[0].pk, **kwargs}
    with pytest.raises(AgreementError, match=f"^{field}:"):
        prediction_powered_means(**args)


# ---------------------------------------------------------------------------
# Page and API
# ---------------------------------------------------------------------------


def _page(setup, **extra):
    query = {"run": setup.runs[0].pk, "campaign": setup.campaign.pk, **extra}
    return reverse("analysis:estimates", args=[setup.dataset.pk]), query


def test_page_shows_three_estimates_per_model_and_a_chart(
    setup, client_for, researcher
):
    url, query = _page(setup)
    resp = client_for(researcher).get(url, query)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "Humans only" in html and "Judge only (no valid CI)" in html
    assert "PPI++" in html and "Effective n" in html
    assert html.count("<svg") == len(KEYS)
    assert 'id="criterion-readability"' in html and "no valid CI" in html


def test_page_without_run_opens_on_the_newest_run_and_a_bad_one_is_named(
    setup, client_for, researcher
):
    # issue 37, defect 4: the page opened empty until "Show" was pressed
    client = client_for(researcher)
    url, _ = _page(setup)
    resp = client.get(url)
    html = resp.content.decode()
    assert resp.status_code == 200 and 'id="estimates-choose"' not in html
    assert 'id="criterion-readability"' in html and html.count("<svg") == len(KEYS)
    assert f'value="{setup.runs[0].pk}" selected' in html
    resp = client.get(url, {"run": 999_999})
    assert resp.status_code == 400 and "run:" in resp.content.decode()


def test_page_with_every_item_labelled_shows_the_humans_mean_and_how_to_do_better(
    client_for, researcher
):
    # issue 37, defect 4: no number at all when the judge had nothing to add
    human = {(i, "alpha", "readability"): [i % 5 + 1, 3] for i in range(6)}
    judge = {(i, "alpha", "readability"): 3 for i in range(6)}
    full = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=6,
        n_raters=2,
        name="ppi-full",
    )
    out = prediction_powered_means(dataset=full.dataset, run_id=full.runs[0].pk)
    row = out["criteria"][0]["models"][0]
    y = np.array([(i % 5 + 1 + 3) / 2 for i in range(6)])
    assert row["humans"]["value"] == pytest.approx(y.mean())
    assert row["humans"]["n"] == 6 and "ppi" not in row
    url = reverse("analysis:estimates", args=[full.dataset.pk])
    resp = client_for(researcher).get(url)
    html = resp.content.decode()
    assert resp.status_code == 200 and 'class="humans-only"' in html
    assert f"{y.mean():.2f} [" in html
    assert "have humans label a sample of the items" in html


def test_page_refuses_a_rater_and_sends_anonymous_to_login(setup, client_for, rater):
    url, query = _page(setup)
    assert client_for(rater).get(url, query).status_code == 403
    resp = client_for(None).get(url, query)
    assert resp.status_code == 302 and "login" in resp["Location"]


def test_api_returns_the_selectors_json(setup, api_client_for, researcher):
    url = reverse("analysis_api:estimates", args=[setup.dataset.pk])
    resp = api_client_for(researcher).get(
        url, {"run": setup.runs[0].pk, "campaign": setup.campaign.pk}
    )
    assert resp.status_code == 200
    body = resp.json()
    row = body["criteria"][0]["models"][0]
    assert set(row) >= {"humans", "judge", "ppi", "classic", "lam", "effective_n"}
    assert row["judge"]["valid"] is False


def test_api_refuses_roles_and_bad_input(setup, api_client_for, rater, researcher):
    url = reverse("analysis_api:estimates", args=[setup.dataset.pk])
    query = {"run": setup.runs[0].pk}
    assert api_client_for(rater).get(url, query).status_code == 403
    assert api_client_for(None).get(url, query).status_code == 401
    client = api_client_for(researcher)
    for params, field in (
        ({"run": 999_999}, "run"),
        ({"run": "x"}, "run"),
        ({}, "run"),
        ({**query, "campaign": 999_999}, "campaign"),
        ({**query, "lam": 2}, "lam"),
    ):
        resp = client.get(url, params)
        assert resp.status_code == 400, params
        assert resp.json()["problems"][0]["field"] == field, params


def test_api_no_human_labelled_items_names_campaign(researcher, api_client_for):
    judge = {(i, "alpha", "readability"): 3 for i in range(4)}
    empty = make_agreement_setup(
        researcher, human={}, judges=[judge], n_instructions=4, name="ppi-none"
    )
    url = reverse("analysis_api:estimates", args=[empty.dataset.pk])
    resp = api_client_for(researcher).get(
        url, {"run": empty.runs[0].pk, "campaign": empty.campaign.pk}
    )
    assert resp.status_code == 400
    problem = resp.json()["problems"][0]
    assert problem["field"] == "campaign" and "no human-labelled" in problem["message"]
