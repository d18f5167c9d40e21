"""analysis.stats against scipy, krippendorff and sklearn on the same inputs (no DB)."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats as ss
from sklearn.metrics import cohen_kappa_score

from analysis import stats as st

REL = 1e-9
LABELS = [1, 2, 3, 4, 5]


def close(a, b, rel=REL, abs_=1e-12):
    return a == pytest.approx(b, rel=rel, abs=abs_)


def human_means(rng, n, max_raters=3):
    """Means of 1..max_raters integer scores: few distinct values, many ties."""
    k = rng.integers(1, max_raters + 1, n)
    scores = rng.integers(1, 6, (n, max_raters)).astype(float)
    scores[np.arange(max_raters)[None, :] >= k[:, None]] = np.nan
    return np.nanmean(scores, axis=1)


def ratings_matrix(rng, n_items, n_raters, p_missing=0.3, low=1, high=5):
    r = rng.integers(low, high + 1, (n_items, n_raters)).astype(float)
    r[rng.random(r.shape) < p_missing] = np.nan
    return r


# ---------------------------------------------------------------------------
# correlations
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_correlations_match_scipy_random_with_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 400))
    x = rng.integers(1, 6, n).astype(float)
    y = np.clip(x + rng.integers(-2, 3, n), 1, 5) * 0.5 + human_means(rng, n)
    assert close(st.spearman(x, y), ss.spearmanr(x, y)[0])
    assert close(st.kendall_tau_b(x, y), ss.kendalltau(x, y, variant="b")[0])
    assert close(st.pearson(x, y), ss.pearsonr(x, y)[0])


def test_correlations_hand_made_ties():
    x = [1, 1, 2, 2, 3, 3, 3, 5]
    y = [1.5, 1.5, 1.5, 3, 3, 4.5, 2, 5]
    assert close(st.spearman(x, y), ss.spearmanr(x, y)[0])
    assert close(st.kendall_tau_b(x, y), ss.kendalltau(x, y)[0])
    assert close(st.pearson(x, y), ss.pearsonr(x, y)[0])
    # perfect agreement and perfect inversion
    assert close(st.kendall_tau_b([1, 2, 3], [2, 4, 6]), 1.0)
    assert close(st.spearman([1, 2, 3], [3, 2, 1]), -1.0)


def test_correlations_drop_missing_pairs():
    x = np.array([1, 2, np.nan, 4, 5, 3, 2])
    y = np.array([2, 2, 3, np.nan, 5, 1, 4.5])
    keep = ~(np.isnan(x) | np.isnan(y))
    assert close(st.spearman(x, y), ss.spearmanr(x[keep], y[keep])[0])
    assert close(st.kendall_tau_b(x, y), ss.kendalltau(x[keep], y[keep])[0])
    assert close(st.pearson(x, y), ss.pearsonr(x[keep], y[keep])[0])


@pytest.mark.parametrize(
    "x, y",
    [
        ([3, 3, 3, 3], [1, 2, 3, 4]),  # constant judge
        ([1, 2, 3, 4], [2.5, 2.5, 2.5, 2.5]),  # constant human
        ([4], [2]),  # one item
        ([], []),  # none
    ],
)
def test_correlations_undefined_is_none(x, y):
    assert st.spearman(x, y) is None
    assert st.kendall_tau_b(x, y) is None
    assert st.pearson(x, y) is None


def test_two_items_defined():
    assert close(st.pearson([1, 2], [3, 5]), 1.0)
    assert close(st.kendall_tau_b([1, 2], [5, 3]), -1.0)


# ---------------------------------------------------------------------------
# quadratic-weighted kappa
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_qwk_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 300))
    a = rng.integers(1, 6, n)
    b = np.clip(a + rng.integers(-1, 2, n), 1, 5)
    ref = cohen_kappa_score(a, b, weights="quadratic", labels=LABELS)
    assert close(st.quadratic_kappa(a, b), ref)


def test_qwk_missing_categories_and_constant_side():
    a = [1, 1, 4, 4, 5]
    b = [1, 2, 4, 5, 5]
    ref = cohen_kappa_score(a, b, weights="quadratic", labels=LABELS)
    assert close(st.quadratic_kappa(a, b), ref)
    # one side constant: kappa is 0 (defined), as in sklearn
    a, b = [3, 3, 3, 3], [1, 2, 3, 4]
    ref = cohen_kappa_score(a, b, weights="quadratic", labels=LABELS)
    assert close(st.quadratic_kappa(a, b), ref)
    # both constant on the same value: undefined
    assert st.quadratic_kappa([2, 2, 2], [2, 2, 2]) is None
    assert st.quadratic_kappa([], []) is None


# ---------------------------------------------------------------------------
# Krippendorff's alpha
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("level", st.LEVELS)
@pytest.mark.parametrize("seed", range(6))
def test_alpha_matches_krippendorff(level, seed):
    rng = np.random.default_rng(seed)
    r = ratings_matrix(rng, int(rng.integers(5, 200)), int(rng.integers(2, 6)))
    ref = krippendorff.alpha(reliability_data=r.T, level_of_measurement=level)
    assert close(st.krippendorff_alpha(r, level), ref)


@pytest.mark.parametrize("level", st.LEVELS)
def test_alpha_hand_made_and_missing_values(level):
    # the Krippendorff (2011) example, with values 1..5 and missing data
    r = np.array(
        [
            [1, 1, np.nan, 1],
            [2, 2, 3, 2],
            [3, 3, 3, 3],
            [3, 3, 3, 3],
            [2, 2, 2, 2],
            [1, 2, 3, 4],
            [4, 4, 4, 4],
            [1, 1, 2, 1],
            [2, 2, 2, 2],
            [np.nan, 5, 5, 5],
            [np.nan, np.nan, 1, 1],
            [np.nan, np.nan, 3, np.nan],
        ]
    )
    ref = krippendorff.alpha(reliability_data=r.T, level_of_measurement=level)
    assert close(st.krippendorff_alpha(r, level), ref)
    # a value missing from the domain in between (no 3s) still matches
    r2 = np.where(r == 3, 4, r)
    ref2 = krippendorff.alpha(reliability_data=r2.T, level_of_measurement=level)
    assert close(st.krippendorff_alpha(r2, level), ref2)


@pytest.mark.parametrize("level", st.LEVELS)
def test_alpha_undefined(level):
    constant = np.full((5, 3), 4.0)
    assert st.krippendorff_alpha(constant, level) is None
    single = np.array([[1, np.nan], [np.nan, 3], [5, np.nan]])  # nothing pairable
    assert st.krippendorff_alpha(single, level) is None
    assert st.krippendorff_alpha(np.full((3, 2), np.nan), level) is None


@pytest.mark.parametrize("level", st.LEVELS)
def test_alpha_from_counts_bootstrap_equals_naive_loop(level):
    rng = np.random.default_rng(3)
    r = ratings_matrix(rng, 60, 3, p_missing=0.25)
    values, counts = st.ratings_to_counts(r, st.VALUES)
    idx = st.bootstrap_indices(len(r), 50, seed=11)
    w = st.indices_to_weights(idx, len(r))
    fast = st.alpha_from_counts(counts, level, weights=w)
    for b in range(50):
        ref = krippendorff.alpha(
            reliability_data=r[idx[b]].T,
            level_of_measurement=level,
            value_domain=st.VALUES,
        )
        assert close(fast[b], ref)


# ---------------------------------------------------------------------------
# pairwise agreement
# ---------------------------------------------------------------------------


def naive_pairwise(r):
    exact = within = pairs = 0
    for row in r:
        vals = row[~np.isnan(row)]
        for i in range(len(vals)):
            for j in range(i + 1, len(vals)):
                pairs += 1
                exact += vals[i] == vals[j]
                within += abs(vals[i] - vals[j]) <= 1
    return exact / pairs, within / pairs, pairs


@pytest.mark.parametrize("seed", range(4))
def test_pairwise_agreement_matches_loop(seed):
    rng = np.random.default_rng(seed)
    r = ratings_matrix(rng, 80, 4, p_missing=0.4)
    got = st.pairwise_agreement(r)
    exact, within, pairs = naive_pairwise(r)
    assert got["n_pairs"] == pairs
    assert close(got["exact"], exact)
    assert close(got["within1"], within)


def test_pairwise_agreement_no_pairs():
    got = st.pairwise_agreement(np.array([[1.0, np.nan], [np.nan, 2.0]]))
    assert got["exact"] is None and got["within1"] is None and got["n_pairs"] == 0


# ---------------------------------------------------------------------------
# bootstrap: reproducibility, equality with a naive per-resample loop
# ---------------------------------------------------------------------------


def test_bootstrap_weights_seeded_and_consistent():
    w1 = st.bootstrap_weights(30, 20, seed=5)
    w2 = st.bootstrap_weights(30, 20, seed=5)
    assert np.array_equal(w1, w2)
    assert not np.array_equal(w1, st.bootstrap_weights(30, 20, seed=6))
    assert (w1.sum(axis=1) == 30).all()
    idx = st.bootstrap_indices(30, 20, seed=5)
    for b in range(20):
        assert np.array_equal(w1[b], np.bincount(idx[b], minlength=30))


def paired_sample(rng, n):
    judge = rng.integers(1, 6, n).astype(float)
    hm = np.clip(np.round(judge + rng.normal(0, 1, n)), 1, 5)
    hm = np.clip(hm + human_means(rng, n, 2) - 3, 1, 5)
    hr = st.round_half_up(hm)
    return judge, hm, hr


def naive_judge_stats(j, hm, hr):
    return {
        "spearman": ss.spearmanr(j, hm)[0],
        "kendall": ss.kendalltau(j, hm)[0],
        "pearson": ss.pearsonr(j, hm)[0],
        "qwk": cohen_kappa_score(
            j.astype(int), hr.astype(int), weights="quadratic", labels=LABELS
        ),
        "exact": np.mean(j == hr),
        "within1": np.mean(np.abs(j - hr) <= 1),
        "leniency": np.mean(j - hm),
        "mae": np.mean(np.abs(j - hm)),
    }


def test_judge_vs_human_point_and_bootstrap_equal_naive_loop():
    rng = np.random.default_rng(21)
    n, n_boot = 120, 50
    j, hm, hr = paired_sample(rng, n)
    idx = st.bootstrap_indices(n, n_boot, seed=4)
    w = st.indices_to_weights(idx, n)
    res = st.judge_vs_human(j, hm, hr, item_weights=w)
    point = naive_judge_stats(j, hm, hr)
    loop = [naive_judge_stats(j[idx[b]], hm[idx[b]], hr[idx[b]]) for b in range(n_boot)]
    for name, ref in point.items():
        r = res[name]
        assert close(r.value, ref), name
        assert r.n == n
        reps = np.array([d[name] for d in loop])
        lo, hi = np.quantile(reps, [0.025, 0.975])
        assert close(r.ci_low, lo), name
        assert close(r.ci_high, hi), name
    conf = res["confusion"]
    assert conf.sum() == n
    for a in range(5):
        for b in range(5):
            assert conf[a, b] == np.sum((j == a + 1) & (hr == b + 1))
    # the vectorised per-resample values themselves (not only the quantiles)
    cells, inv = np.unique(np.stack([j, hm], 1), axis=0, return_inverse=True)
    cw = st.aggregate_weights(w, inv.ravel(), len(cells))
    raw = st.correlations_w(cw, cells[:, 0], cells[:, 1])
    for name in ("spearman", "kendall", "pearson"):
        assert np.allclose(raw[name], [d[name] for d in loop], rtol=REL, atol=1e-12)


def test_judge_vs_human_multinomial_seeded_and_ci_contains_point():
    rng = np.random.default_rng(8)
    j, hm, hr = paired_sample(rng, 5000)
    a = st.judge_vs_human(j, hm, hr, n_boot=300, seed=1)
    b = st.judge_vs_human(j, hm, hr, n_boot=300, seed=1)
    c = st.judge_vs_human(j, hm, hr, n_boot=300, seed=2)
    for name in ("spearman", "kendall", "pearson", "qwk", "exact", "mae"):
        assert a[name] == b[name]
        assert a[name].ci_low != c[name].ci_low
        assert a[name].ci_low < a[name].value < a[name].ci_high
        assert a[name].ci_high - a[name].ci_low < 0.1


def test_judge_vs_human_undefined_results():
    j = np.array([3.0, 3, 3, 3])
    hm = np.array([1.0, 2, 4.5, 5])
    res = st.judge_vs_human(j, hm, st.round_half_up(hm), n_boot=20)
    for name in ("spearman", "kendall", "pearson"):
        r = res[name]
        assert r.value is None and r.ci_low is None
        assert r.reason.startswith("not enough data")
        assert "not enough data" in r.display() and "n=4" in r.display()
    assert res["mae"].value is not None
    one = st.judge_vs_human([4.0], [4.0], [4.0], n_boot=20)
    assert one["pearson"].value is None and one["pearson"].n == 1
    assert one["exact"].value == 1.0


def test_result_never_nan_in_ci():
    # a tiny sample where many resamples are constant: those are excluded, counted
    j = np.array([1.0, 2, 3])
    hm = np.array([1.0, 2.5, 3])
    res = st.judge_vs_human(j, hm, st.round_half_up(hm), n_boot=200, seed=0)
    r = res["spearman"]
    assert r.value is not None and r.n_undefined > 0
    assert np.isfinite(r.ci_low) and np.isfinite(r.ci_high)


# ---------------------------------------------------------------------------
# model level
# ---------------------------------------------------------------------------


def test_model_rank_agreement_matches_scipy_with_ties():
    h = [3.1, 2.5, 4.0, 2.5, 3.9]
    j = [3.0, 2.0, 4.5, 2.2, 4.5]
    res = st.model_rank_agreement(h, j)
    assert close(res["spearman"].value, ss.spearmanr(h, j)[0])
    assert close(res["kendall"].value, ss.kendalltau(h, j)[0])
    assert res["spearman"].n == 5
    assert st.model_rank_agreement([3.0], [2.0])["spearman"].value is None
    tied = st.model_rank_agreement([3.0, 3.0, 3.0], [1.0, 2.0, 3.0])
    assert tied["kendall"].value is None
    assert tied["kendall"].reason.startswith("not enough data")


# ---------------------------------------------------------------------------
# the full report
# ---------------------------------------------------------------------------


def make_items(rng, n, n_models=4, max_raters=3):
    raters = rng.integers(1, max_raters + 1, n)
    truth = rng.integers(1, 6, n)
    r = np.clip(truth[:, None] + rng.integers(-1, 2, (n, max_raters)), 1, 5).astype(
        float
    )
    r[np.arange(max_raters)[None, :] >= raters[:, None]] = np.nan
    judge = np.clip(truth + rng.integers(-1, 2, n), 1, 5)
    model = rng.integers(0, n_models, n)
    _, counts = st.ratings_to_counts(r, st.VALUES)
    return r, judge, model, counts


def test_report_equals_libraries_point_and_naive_bootstrap():
    rng = np.random.default_rng(99)
    n, n_boot = 150, 50
    r, judge, model, counts = make_items(rng, n)
    items = st.GroupItems(counts, judge, model)
    idx = st.bootstrap_indices(n, n_boot, seed=3)
    rep = st.agreement_report(items, item_weights=st.indices_to_weights(idx, n))

    def naive(rr, jj, mm):
        hm = np.nanmean(rr, axis=1)
        hr = st.round_half_up(np.nanmedian(rr, axis=1))
        out = {f"h_{k}": v for k, v in naive_judge_stats(jj * 1.0, hm, hr).items()}
        with_j = np.column_stack([rr, jj])
        for level in st.LEVELS:
            kw = {"level_of_measurement": level, "value_domain": st.VALUES}
            a = krippendorff.alpha(reliability_data=rr.T, **kw)
            aj = krippendorff.alpha(reliability_data=with_j.T, **kw)
            out[f"alpha_{level}"] = a
            out[f"alpha_{level}_with_judge"] = aj
            out[f"alpha_{level}_gain"] = aj - a
        models = np.unique(model)
        h_m = [hm[mm == m].mean() for m in models]
        j_m = [jj[mm == m].mean() for m in models]
        out["m_spearman"] = ss.spearmanr(h_m, j_m)[0]
        out["m_kendall"] = ss.kendalltau(h_m, j_m)[0]
        return out

    point = naive(r, judge, model)
    loop = [naive(r[i], judge[i], model[i]) for i in idx]

    def got(name):
        if name.startswith("h_"):
            return rep.judge[name[2:]]
        if name.startswith("m_"):
            return rep.models[name[2:]]
        if name in ("alpha_ordinal", "alpha_interval"):
            return rep.human[name]
        return rep.judge[name]

    for name, ref in point.items():
        res = got(name)
        assert close(res.value, ref), name
        lo, hi = np.quantile([d[name] for d in loop], [0.025, 0.975])
        assert close(res.ci_low, lo), name
        assert close(res.ci_high, hi), name
    pw = st.pairwise_agreement(r)
    assert close(rep.human["exact"].value, pw["exact"])
    assert close(rep.human["within1"].value, pw["within1"])
    assert rep.human["exact"].n == pw["n_pairs"]
    assert rep.human["n_items_multi_rated"] == pw["n_items"]
    for entry in rep.models["models"]:
        sel = model == entry["model"]
        assert entry["n"] == sel.sum()
        assert close(entry["human_mean"].value, np.nanmean(r[sel], axis=1).mean())
        assert close(entry["judge_mean"].value, judge[sel].mean())


def test_report_counts_na_and_unpaired_items():
    rng = np.random.default_rng(5)
    r, judge, model, counts = make_items(rng, 40)
    judge = judge.copy()
    judge[:5] = 0  # judge gave N/A on 5 items
    counts = counts.copy()
    counts[5:8] = 0  # humans all said N/A on 3 items
    human_na = np.zeros(40, int)
    human_na[5:8] = 2
    judge_na = np.zeros(40, bool)
    judge_na[:5] = True
    rep = st.agreement_report(
        st.GroupItems(counts, judge, model, human_na, judge_na), n_boot=30
    )
    assert rep.counts["scored_by_both"] == 32
    assert rep.counts["judge_only"] == 3
    assert rep.counts["human_only"] == 5
    assert rep.counts["human_na"] == 6 and rep.counts["judge_na"] == 5
    assert rep.judge["pearson"].n == 32


def test_report_single_rater_everywhere_alpha_not_enough_data():
    rng = np.random.default_rng(6)
    _, judge, model, counts = make_items(rng, 50, max_raters=1)
    rep = st.agreement_report(st.GroupItems(counts, judge, model), n_boot=20)
    a = rep.human["alpha_ordinal"]
    assert a.value is None and a.n == 0 and a.reason.startswith("not enough data")
    assert rep.human["exact"].value is None
    # the judge makes every item pairable: alpha with judge is defined
    assert rep.judge["alpha_ordinal_with_judge"].value is not None
    assert rep.judge["alpha_ordinal_gain"].value is None


def test_agreement_table_levels_and_reproducible():
    rng = np.random.default_rng(12)
    skills = {}
    for s in ("a", "b", "c"):
        _, judge, model, counts = make_items(rng, 200)
        skills[s] = st.GroupItems(counts, judge, model)
    t1 = st.agreement_table(skills, {"logic": ["a", "b"]}, n_boot=100, seed=1)
    t2 = st.agreement_table(skills, {"logic": ["a", "b"]}, n_boot=100, seed=1)
    assert set(t1) == {"skill:a", "skill:b", "skill:c", "ability:logic", "overall"}
    assert t1["overall"].counts["items"] == 600
    assert t1["ability:logic"].judge["pearson"].n == 400
    assert t1["overall"].judge["kendall"] == t2["overall"].judge["kendall"]
    assert (
        t1["overall"].human["alpha_interval"] == t2["overall"].human["alpha_interval"]
    )
    # threads change nothing: every skill draws from its own seeded generator
    t3 = st.agreement_table(
        skills, {"logic": ["a", "b"]}, n_boot=100, seed=1, workers=3
    )
    for label in t1:
        assert t3[label].judge["spearman"] == t1[label].judge["spearman"]
        assert t3[label].human["alpha_ordinal"] == t1[label].human["alpha_ordinal"]
        assert t3[label].models["kendall"] == t1[label].models["kendall"]


@pytest.mark.parametrize("n_items", [3, 400])
def test_projected_draw_is_a_multinomial_bootstrap(n_items):
    rng = np.random.default_rng(31)
    _, judge, model, counts = make_items(rng, n_items, n_models=3)
    cells = st.group_cells(st.GroupItems(counts, judge, model))
    n, n_boot = int(cells.n.sum()), 4000
    proj = st.project(cells.key, cells.n, {}, n_boot, seed=2)
    again = st.project(cells.key, cells.n, {}, n_boot, seed=2)
    assert np.array_equal(proj.w, again.w)
    w = proj.w[1:]
    assert np.all(w.sum(axis=1) == n) and np.all(proj.m_n[1:].sum(axis=1) == n)
    assert np.array_equal(w, np.round(w)) and (w >= 0).all()
    # per-profile counts: mean n p and variance n p (1 - p), as for resampled items
    p = proj.w[0] / n
    assert np.allclose(w.mean(axis=0), n * p, atol=5 * np.sqrt(n * p / n_boot) + 1e-9)
    var = n * p * (1 - p)
    assert np.allclose(w.var(axis=0), var, rtol=0.15, atol=0.05)
    # the model sums are consistent with the profile weights
    p_hc = proj.prof[:, :5].astype(float)
    p_mean = (p_hc @ st.VALUES) / p_hc.sum(axis=1)
    assert np.allclose(proj.m_h.sum(axis=1), proj.w @ p_mean)
    assert np.allclose(proj.m_j.sum(axis=1), proj.w @ proj.prof[:, 5])


def test_table_pooled_points_equal_a_report_on_concatenated_items():
    rng = np.random.default_rng(13)
    skills = {}
    for s in ("a", "b"):
        _, judge, model, counts = make_items(rng, 300)
        skills[s] = st.GroupItems(counts, judge, model)
    table = st.agreement_table(skills, {"ab": ["a", "b"]}, n_boot=50, seed=0)
    direct = st.agreement_report(st.GroupItems.concat(list(skills.values())), n_boot=0)
    for part in ("human", "judge", "models"):
        for key, res in getattr(direct, part).items():
            if isinstance(res, st.Result):
                got = getattr(table["ability:ab"], part)[key]
                assert close(got.value, res.value), key
                assert got.ci_low is not None, key
    assert table["ability:ab"].counts == direct.counts
    assert table["overall"].counts == direct.counts


def test_empty_group_is_not_enough_data_everywhere():
    items = st.GroupItems(np.zeros((3, 5), int), np.array([4, 0, 2]))
    rep = st.agreement_report(items, n_boot=20)
    assert rep.counts["scored_by_both"] == 0 and rep.counts["judge_only"] == 2
    for part in (rep.human, rep.judge):
        for res in part.values():
            if isinstance(res, st.Result):
                assert res.value is None and res.n == 0
                assert res.reason.startswith("not enough data")


def test_group_means_match_numpy_and_scipy_bootstrap():
    from scipy import stats as sps

    from analysis.stats.bootstrap import group_means

    rng = np.random.default_rng(4)
    values = rng.integers(1, 6, 300).astype(float)
    groups = rng.integers(0, 3, 300)
    n, point, boot = group_means(values, groups, 4, 4000, np.random.default_rng(1))
    for g in range(3):
        x = values[groups == g]
        assert n[g] == len(x) and point[g] == pytest.approx(x.mean())
        assert np.std(boot[:, g]) == pytest.approx(x.std() / np.sqrt(len(x)), rel=0.1)
        ref = sps.bootstrap(
            (x,), np.mean, n_resamples=4000, method="percentile", random_state=2
        ).confidence_interval
        lo, hi = np.quantile(boot[:, g], [0.025, 0.975])
        assert lo == pytest.approx(ref.low, abs=0.06)
        assert hi == pytest.approx(ref.high, abs=0.06)
    assert n[3] == 0 and np.isnan(point[3]) and np.isnan(boot[:, 3]).all()
