"""The paired comparison of two judge runs (analysis.stats.paired): against a hand
computed case, and against an explicit resampling loop on the same indices with
scikit-learn's QWK and scipy's Spearman."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from analysis.stats.bootstrap import bootstrap_indices, indices_to_weights
from analysis.stats.paired import paired_comparison
from analysis.stats.scale import VALUES, round_half_up


def one_rater(scores, v=5):
    counts = np.zeros((len(scores), v), np.int64)
    counts[np.arange(len(scores)), np.asarray(scores) - 1] = 1
    return counts


def test_a_hand_computed_difference_of_exact_agreement():
    humans = one_rater([1, 2, 3, 4])
    a = np.array([1, 2, 3, 5])  # 3 of 4 exact
    b = np.array([2, 2, 4, 5])  # 1 of 4 exact
    # One explicit resample: items 0, 0, 1, 3 -> A exact 3/4, B exact 1/4.
    weights = np.array([[2, 1, 0, 1]])
    got = paired_comparison(humans, a, b, VALUES, item_weights=weights)
    assert got["n"] == 4
    assert got["a"]["exact"].value == 0.75 and got["b"]["exact"].value == 0.25
    assert got["diff"]["exact"].value == pytest.approx(0.5)
    assert got["diff"]["exact"].ci_low == pytest.approx(0.5)  # the one resample
    assert got["winner"]["exact"] == "a" and got["excludes_zero"]["exact"]


def test_the_paired_bootstrap_equals_an_explicit_loop_on_the_same_indices():
    rng = np.random.default_rng(3)
    n, n_boot = 120, 200
    truth = rng.integers(1, 6, n)
    raters = np.clip(truth[:, None] + rng.integers(-1, 2, (n, 3)), 1, 5)
    humans = np.stack([np.bincount(r - 1, minlength=5) for r in raters])
    a = np.clip(truth + rng.integers(-1, 2, n), 1, 5)
    b = np.clip(truth + rng.integers(-2, 3, n), 1, 5)
    idx = bootstrap_indices(n, n_boot, seed=9)
    got = paired_comparison(
        humans, a, b, VALUES, item_weights=indices_to_weights(idx, n)
    )
    mean = raters.mean(axis=1)
    median = round_half_up(np.median(raters, axis=1)).astype(int)
    labels = [1, 2, 3, 4, 5]

    def stats(rows):
        out = {}
        for name, j in (("a", a[rows]), ("b", b[rows])):
            out[name] = {
                "qwk": cohen_kappa_score(
                    j, median[rows], weights="quadratic", labels=labels
                ),
                "spearman": sps.spearmanr(j, mean[rows]).statistic,
                "exact": float(np.mean(j == median[rows])),
            }
        return out

    point = stats(np.arange(n))
    loop = [stats(rows) for rows in idx]
    for stat in ("qwk", "spearman", "exact"):
        assert got["a"][stat].value == pytest.approx(point["a"][stat], abs=1e-12)
        assert got["b"][stat].value == pytest.approx(point["b"][stat], abs=1e-12)
        diffs = np.array([r["a"][stat] - r["b"][stat] for r in loop])
        lo, hi = np.quantile(diffs, [0.025, 0.975])
        assert got["diff"][stat].value == pytest.approx(
            point["a"][stat] - point["b"][stat], abs=1e-12
        )
        assert got["diff"][stat].ci_low == pytest.approx(lo, abs=1e-12)
        assert got["diff"][stat].ci_high == pytest.approx(hi, abs=1e-12)
        assert got["winner"][stat] == (
            ("a" if lo > 0 else "b") if (lo > 0 or hi < 0) else None
        )


def test_the_paired_interval_is_narrower_than_the_unpaired_one():
    rng = np.random.default_rng(4)
    n = 600
    truth = rng.integers(1, 6, n)
    humans = one_rater(truth)
    noise = rng.integers(-1, 2, n)
    a = np.clip(truth + noise, 1, 5)
    b = np.clip(truth + noise + (rng.random(n) < 0.1), 1, 5)  # A with a few slips
    got = paired_comparison(humans, a, b, VALUES, n_boot=1000, seed=1)
    width = got["diff"]["exact"].ci_high - got["diff"]["exact"].ci_low
    wa = got["a"]["exact"].ci_high - got["a"]["exact"].ci_low
    wb = got["b"]["exact"].ci_high - got["b"]["exact"].ci_low
    assert width < np.sqrt(wa**2 + wb**2) / 2
    # Drawn again with the same seed: the same figures; strata keep their sizes.
    again = paired_comparison(humans, a, b, VALUES, n_boot=1000, seed=1)
    assert again["diff"]["exact"] == got["diff"]["exact"]


def test_bad_items_are_refused():
    humans = one_rater([1, 2])
    with pytest.raises(ValueError, match="same items"):
        paired_comparison(humans, np.array([1, 2]), np.array([1]), VALUES)
    with pytest.raises(ValueError, match="codes 1..5"):
        paired_comparison(humans, np.array([1, 6]), np.array([1, 2]), VALUES)
    with pytest.raises(ValueError, match="numeric human score"):
        paired_comparison(
            np.zeros((2, 5), np.int64), np.array([1, 2]), np.array([1, 2]), VALUES
        )


def test_no_items_gives_undefined_figures():
    got = paired_comparison(
        np.zeros((0, 5), np.int64), np.zeros(0, int), np.zeros(0, int), VALUES
    )
    assert got["n"] == 0
    assert all(got["diff"][s].value is None for s in ("qwk", "spearman", "exact"))
    assert got["winner"] == {"qwk": None, "spearman": None, "exact": None}
