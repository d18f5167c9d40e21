"""Ranks of the evaluated models, and their rank agreement: do humans and the judge
order them alike?

Each row of (B, M) holds one value per model (e.g. a model's mean score in one
resample); Spearman and Kendall tau-b compare the two rows' orders, ties allowed.

Ties: a model's mean or rating is a float sum, and one exact total reached in two
summation orders can differ in its last bit (1 + 4/3 + 4/3 and 1 + 1 + 5/3 are both
11/3, but not as floats). Every ranking or system-level correlation of models therefore
compares values through :func:`tie_safe`, the one tie rule: values of a row closer than
``TIE_RTOL`` times the row's largest magnitude (at least 1) are one tie.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.correlations import midrank, pearson_w, tau_b
from analysis.stats.results import make_result

# Relative tolerance of a tie (module doc). A float sum of n terms errs by at most about
# n * 1.1e-16 (relative), below this up to millions of scores. Two different means
# closer than this (possible only with very many items: means over ~10^5 items each
# can differ by 1e-10) count as tied: no interval resolves such a difference.
TIE_RTOL = 1e-9


def tie_safe(values) -> np.ndarray:
    """A float copy of ``values`` in which every tie of a row (the last axis) holds
    one value, so that ``==``, ``<`` and ``>`` see the ties.

    The values of a row are sorted; a gap of at most ``TIE_RTOL`` times the row's
    largest finite magnitude (at least 1) joins two neighbours in one tie (so a tie
    can chain), and each tie takes its smallest value. NaN and infinities stay as
    they are and tie with nothing. Idempotent; distinct values further apart than
    the tolerance keep their order.
    """
    x = np.array(values, dtype=float)
    if x.ndim == 0 or x.shape[-1] < 2:
        return x
    finite = np.isfinite(x)
    scale = np.maximum(np.where(finite, np.abs(x), 0.0).max(axis=-1, keepdims=True), 1)
    order = np.argsort(x, axis=-1)  # NaN last; the order within a tie is immaterial
    s = np.take_along_axis(x, order, axis=-1)
    with np.errstate(invalid="ignore"):  # inf - inf
        joins = np.diff(s, axis=-1) <= TIE_RTOL * scale
    starts = np.concatenate([np.ones(s.shape[:-1] + (1,), bool), ~joins], axis=-1)
    first = np.maximum.accumulate(np.where(starts, np.arange(s.shape[-1]), 0), axis=-1)
    out = np.empty_like(x)
    np.put_along_axis(out, order, np.take_along_axis(s, first, axis=-1), axis=-1)
    return out


def ranks_high_first(values) -> np.ndarray:
    """Ranks along the last axis: 1 = the highest value, a tie (:func:`tie_safe`)
    shares the average of the ranks it spans; NaN entries are unranked (NaN)."""
    x = tie_safe(values)
    above = (x[..., None, :] > x[..., :, None]).sum(axis=-1)
    tied = (x[..., None, :] == x[..., :, None]).sum(axis=-1)  # self included
    return np.where(np.isfinite(x), 1.0 + above + (tied - 1) / 2.0, np.nan)


def _greater(x: np.ndarray) -> np.ndarray:
    """(B, M, M) float32 0/1: entry [b, i, j] is x[b, i] > x[b, j] (counts made from
    it are exact integers: float32 holds every count below 2**24)."""
    return (x[:, :, None] > x[:, None, :]).astype(np.float32)


def rank_correlations_rows(x: np.ndarray, y: np.ndarray) -> dict:
    """Spearman and Kendall tau-b between rows of x and y (B, M); NaN if undefined.

    Values of a row are compared through :func:`tie_safe`. Both come from the order
    relations of each row (``g[i, j]`` = value i above value j): a value's midrank
    is 1 + the values below it + half of the others tied with it (Spearman is
    Pearson's r of the midranks); Kendall tau-b counts concordant (``gx[i, j]
    gy[i, j]``) and discordant (``gx[i, j] gy[j, i]``) pairs, and pairs tied on
    each side (those in neither order).
    """
    x = tie_safe(np.atleast_2d(np.asarray(x, dtype=float)))
    y = tie_safe(np.atleast_2d(np.asarray(y, dtype=float)))
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
