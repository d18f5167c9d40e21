"""Agreement on paired scores: among human raters, and of a judge with the humans.

Scores are numeric values of one scale (``values``, default 1..5; callers drop
N/A). Judge statistics compare the judge score with the human mean (correlations,
leniency, MAE) and with the human median rounded half up (QWK, exact, within-1, the confusion table).
"""

from __future__ import annotations

import numpy as np

from analysis.stats.alpha import ratings_to_counts
from analysis.stats.bootstrap import (
    aggregate_weights,
    multinomial_cell_weights,
    value_codes,
)
from analysis.stats.correlations import correlations_table
from analysis.stats.kappa import qwk_table
from analysis.stats.results import ratio, result_from_rows
from analysis.stats.scale import VALUES

# ---------------------------------------------------------------------------
# Among raters: exact and within-1 over rater pairs
# ---------------------------------------------------------------------------


def rater_pairs(counts: np.ndarray, values: np.ndarray):
    """Per item: number of rater pairs, exact-agreeing pairs, within-1 pairs."""
    c = np.asarray(counts, dtype=float)
    m = c.sum(axis=1)
    pairs = m * (m - 1) / 2
    exact = (c * (c - 1) / 2).sum(axis=1)
    v = np.asarray(values, dtype=float)
    near = (np.abs(v[:, None] - v[None, :]) <= 1) & (v[:, None] < v[None, :])
    within = exact + np.einsum("ni,ij,nj->n", c, near.astype(float), c)
    return pairs, exact, within


def pairwise_agreement(ratings: np.ndarray) -> dict:
    """Exact and within-1 agreement pooled over all rater pairs within items.

    Returns {"exact", "within1": float | None, "n_pairs", "n_items": int}; the items
    counted are those with at least two ratings.
    """
    values, counts = ratings_to_counts(ratings)
    pairs, exact, within = rater_pairs(counts, values)
    total = pairs.sum()
    out = {"n_pairs": int(total), "n_items": int((pairs > 0).sum())}
    out["exact"] = float(exact.sum() / total) if total > 0 else None
    out["within1"] = float(within.sum() / total) if total > 0 else None
    return out


# ---------------------------------------------------------------------------
# Judge vs humans
# ---------------------------------------------------------------------------


def judge_vs_human(
    judge,
    human_mean,
    human_median_rounded,
    n_boot: int = 1000,
    seed: int = 0,
    item_weights: np.ndarray | None = None,
    values: np.ndarray = VALUES,
) -> dict:
    """Judge score vs the human mean / rounded human median, with bootstrap CIs.

    Scores are on the scale ``values`` (sorted; the confusion table is V x V).

    Items are resampled with replacement: by default a multinomial draw over the
    distinct (judge, mean, median) cells; pass ``item_weights`` (B, n), e.g. from
    :func:`analysis.stats.bootstrap.bootstrap_weights`, to use explicit resamples.
    """
    j = np.asarray(judge, dtype=float)
    hm = np.asarray(human_mean, dtype=float)
    hr = np.asarray(human_median_rounded, dtype=float)
    rows = np.stack([j, hm, hr], axis=1)
    cells, inv, counts = np.unique(
        rows, axis=0, return_inverse=True, return_counts=True
    )
    inv = inv.ravel()
    if item_weights is not None:
        boot = aggregate_weights(item_weights, inv, len(cells))
    elif n_boot > 0 and len(j) > 0:
        boot = multinomial_cell_weights(counts, n_boot, seed)
    else:
        boot = np.zeros((0, len(cells)))
    w = np.vstack([counts[None].astype(float), boot])
    raw = judge_stats_w(w, cells[:, 0], cells[:, 1], cells[:, 2], values)
    return judge_results(raw, len(j))


def judge_stats_w(w, judge, hmean, hround, values: np.ndarray = VALUES) -> dict:
    """All judge-vs-human statistics for cell weights w (B, K), NaN where undefined.

    Cells have a judge score, a human mean and a rounded human median (K,), on the
    scale ``values`` (V sorted values, default 1..5); the ``confusion`` table is row
    0's (V x V: rows the judge's value, columns the rounded median's, in scale order)
    and QWK weighs (v_i - v_j)^2 on the scale's values. Exact and within-1 compare
    values (within 1 point of the scale).
    """
    values = np.asarray(values, dtype=float)
    v = values.size
    judge = np.asarray(judge, dtype=float)
    jc = np.searchsorted(values, judge)
    rc = np.searchsorted(values, hround)
    # One pass over the cells: their weights summed per (judge value, human mean,
    # rounded median); the correlations' and the confusion tables are its margins.
    mv, mc = value_codes(np.asarray(hmean, dtype=float))
    pairs, pc = np.unique(mc * v + rc, return_inverse=True)
    fine = aggregate_weights(w, jc * pairs.size + pc.ravel(), v * pairs.size)
    fine = fine.reshape(-1, v, pairs.size)
    to_mean = np.zeros((pairs.size, mv.size))
    to_mean[np.arange(pairs.size), pairs // v] = 1.0
    to_round = np.zeros((pairs.size, v))
    to_round[np.arange(pairs.size), pairs % v] = 1.0
    joint = fine @ to_mean  # (B, judge value, human mean)
    conf = fine @ to_round  # (B, judge value, rounded median)
    out = correlations_table(joint, values, mv)
    out["qwk"] = qwk_table(conf, values)
    n = w.sum(axis=1)
    out["exact"] = ratio(w @ (judge == hround).astype(float), n)
    out["within1"] = ratio(w @ (np.abs(judge - hround) <= 1).astype(float), n)
    out["leniency"] = ratio(w @ (judge - hmean), n)
    out["mae"] = ratio(w @ np.abs(judge - hmean), n)
    out["confusion"] = conf[0].astype(int)
    out["n"] = n
    return out


JUDGE_WHY = {
    "pearson": "fewer than 2 items or a constant side",
    "spearman": "fewer than 2 items or a constant side",
    "kendall": "fewer than 2 items or a constant side",
    "qwk": "no expected disagreement (one shared category)",
    "exact": "no items",
    "within1": "no items",
    "leniency": "no items",
    "mae": "no items",
}


def judge_results(raw: dict, n: int) -> dict:
    """:func:`judge_stats_w` rows as Results (plus the confusion table)."""
    res = {k: result_from_rows(raw[k], n, why) for k, why in JUDGE_WHY.items()}
    res["confusion"] = raw["confusion"]
    return res
