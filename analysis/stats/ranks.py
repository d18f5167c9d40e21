"""Rank agreement of the evaluated models: do humans and the judge order them alike?

Each row of (B, M) holds one value per model (e.g. a model's mean score in one
resample); Spearman and Kendall tau-b compare the two rows' orders, ties allowed.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.correlations import midrank, pearson_w, tau_b
from analysis.stats.results import make_result


def _greater(x: np.ndarray) -> np.ndarray:
    """(B, M, M) float32 0/1: entry [b, i, j] is x[b, i] > x[b, j] (counts made from
    it are exact integers: float32 holds every count below 2**24)."""
    return (x[:, :, None] > x[:, None, :]).astype(np.float32)


def rank_correlations_rows(x: np.ndarray, y: np.ndarray) -> dict:
    """Spearman and Kendall tau-b between rows of x and y (B, M); NaN if undefined.

    Both come from the order relations of each row (``g[i, j]`` = value i above value
    j): a value's midrank is 1 + the values below it + half of the others tied with
    it (Spearman is Pearson's r of the midranks); Kendall tau-b counts concordant
    (``gx[i, j] gy[i, j]``) and discordant (``gx[i, j] gy[j, i]``) pairs, and pairs
    tied on each side (those in neither order).
    """
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    m = x.shape[1]
    bad = np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1) | (m < 2)
    gx, gy = _greater(x), _greater(y)
    ones = np.ones(m, np.float32)
    below_x, above_x = (gx @ ones).astype(float), (ones @ gx).astype(float)
    below_y, above_y = (gy @ ones).astype(float), (ones @ gy).astype(float)
    rx = midrank(below_x, m - below_x - above_x)
    ry = midrank(below_y, m - below_y - above_y)
    spear = pearson_w(np.ones_like(rx), rx, ry)
    concordant = np.einsum("bij,bij->b", gx, gy).astype(float)
    discordant = np.einsum("bij,bji->b", gx, gy).astype(float)
    pairs = m * (m - 1) / 2
    kend = tau_b(
        concordant - discordant,
        pairs,
        pairs - below_x.sum(axis=1),
        pairs - below_y.sum(axis=1),
    )
    spear[bad] = np.nan
    kend[bad] = np.nan
    return {"spearman": spear, "kendall": kend}


def model_rank_agreement(human_means_per_model, judge_means_per_model) -> dict:
    """Spearman / Kendall tau-b of the models' order under humans vs the judge."""
    h = np.asarray(human_means_per_model, dtype=float)
    j = np.asarray(judge_means_per_model, dtype=float)
    raw = rank_correlations_rows(h[None], j[None])
    why = "fewer than 2 models or all models tied"
    return {k: make_result(v[0], None, len(h), why) for k, v in raw.items()}
