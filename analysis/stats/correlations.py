"""Pearson, Spearman and Kendall tau-b over weighted cells, checked against scipy.

The vectorised ``*_w`` functions take weights w (B, K) of K cells with values x, y
(K,): cell k stands for w[b, k] identical items in resample b. They return (B,)
arrays with NaN where the statistic is undefined (fewer than 2 items or a constant
side). Ties get midranks (the average of the ranks they span), as in
``scipy.stats.rankdata``; Spearman's rho is Pearson's r on those midranks.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.bootstrap import aggregate_weights, value_codes
from analysis.stats.results import finite_or_none

# ---------------------------------------------------------------------------
# Midranks
# ---------------------------------------------------------------------------


def midrank(below, tied):
    """The 1-based midrank of a value with ``below`` smaller and ``tied`` equal ones.

    ``tied`` counts the value itself: a value alone (tied = 1) has rank below + 1.
    """
    return below + (tied + 1.0) / 2.0


def midranks(table: np.ndarray, axis: int = -1) -> np.ndarray:
    """Midranks of sorted distinct values from their weighted counts along ``axis``."""
    cum = np.cumsum(table, axis=axis)
    return midrank(cum - table, table)


def midranks_w(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Midranks (B, K) of cells with values x (K,) under weights w (B, K).

    Equal to the ranks of the data where cell k appears w[b, k] times.
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    values, codes = value_codes(x)
    return midranks(aggregate_weights(w, codes, values.size))[:, codes]


# ---------------------------------------------------------------------------
# Pearson and Spearman
# ---------------------------------------------------------------------------


def r_from_moments(n, sxy, sxx, syy, tol=0.0) -> np.ndarray:
    """Pearson r from centred moments, clipped to [-1, 1].

    ``sxy``, ``sxx``, ``syy``: (scaled) centred sums of products and squares; NaN
    where n < 2 or a side's sum of squares is not above ``tol`` (a constant side;
    callers working from raw sums pass the rounding error they tolerate).
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
    return np.where((n >= 2) & (sxx > tol) & (syy > tol), r, np.nan)


def pearson_w(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Weighted Pearson r per resample; x, y: (K,) or (B, K). NaN when undefined.

    Undefinedness (a constant side) must be decided by the caller from value tables;
    here a zero variance also gives NaN.
    """
    w = np.atleast_2d(w)
    s = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (w * x).sum(axis=1) / s
        my = (w * y).sum(axis=1) / s
        dx = x - mx[:, None]
        dy = y - my[:, None]
        sxy = (w * dx * dy).sum(axis=1)
        sxx = (w * dx * dx).sum(axis=1)
        syy = (w * dy * dy).sum(axis=1)
    return r_from_moments(s, sxy, sxx, syy)


def pearson_from_sums(n, sx, sy, sxx, syy, sxy) -> np.ndarray:
    """Pearson r from weighted sums (arrays); NaN with n < 2 or a constant side.

    Callers centre x and y first (on the sample means), which keeps the differences
    below well-conditioned; a side counts as constant when n * sxx - sx^2 is within
    1e-9 * n^2 of zero.
    """
    return r_from_moments(
        n, n * sxy - sx * sy, n * sxx - sx * sx, n * syy - sy * sy, 1e-9 * n * n
    )


def spearman_w(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho per row of cell weights w (B, K); NaN with <2 items or a constant side."""
    w = np.atleast_2d(np.asarray(w, dtype=float))
    return pearson_w(w, midranks_w(w, x), midranks_w(w, y))


def _rank_moments(t: np.ndarray):
    """Midranks (V, B) of values with weights t (V, B), totals and sums of squares."""
    mid = midranks(t, axis=0)
    n = t.sum(axis=0)
    sxx = (t * mid * mid).sum(axis=0) - n * ((n + 1) / 2) ** 2
    return mid, n, sxx


def spearman_sorted_w(w: np.ndarray, x_codes: np.ndarray, y_codes_list) -> list:
    """Spearman rho of x with each y, per row of cell weights w (B, K); NaN if undefined.

    Fast path of :func:`spearman_w` for cells sorted by ``x_codes`` (non-decreasing
    ints), cost O(B x K) without a per-row sort. Uses that midranks average (N + 1) / 2
    and sum_k w_k r_x(k) r_y(k) = sum_v r_y(v) * sum_{k: y_k = v} w_k r_x(k). Works on
    the transposed (K, B) weights so every group sum adds contiguous rows.
    """
    wt = np.ascontiguousarray(np.atleast_2d(np.asarray(w, dtype=float)).T)
    x_codes = np.asarray(x_codes)
    if x_codes.size == 0:
        return [np.full(wt.shape[1], np.nan) for _ in y_codes_list]
    if (np.diff(x_codes) < 0).any():
        raise ValueError("cells must be sorted by x")
    starts = np.flatnonzero(np.r_[True, x_codes[1:] != x_codes[:-1]])
    sizes = np.diff(np.r_[starts, x_codes.size])
    mid_x, n, sxx = _rank_moments(np.add.reduceat(wt, starts, axis=0))
    wr = wt * np.repeat(mid_x, sizes, axis=0)
    mean = (n + 1) / 2
    # a constant side has sum of squares 0 up to rounding (values ~ N^3)
    tol = 1e-9 * np.maximum(n, 1) ** 3
    out = []
    for yc in y_codes_list:
        yc = np.asarray(yc)
        perm = np.argsort(yc, kind="stable")
        ys = yc[perm]
        ystarts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
        mid_y, _, syy = _rank_moments(np.add.reduceat(wt[perm], ystarts, axis=0))
        sxy = (np.add.reduceat(wr[perm], ystarts, axis=0) * mid_y).sum(axis=0)
        sxy -= n * mean * mean
        out.append(r_from_moments(n, sxy, sxx, syy, tol))
    return out


# ---------------------------------------------------------------------------
# Kendall tau-b
# ---------------------------------------------------------------------------


def tau_b(score, pairs, x_ties, y_ties) -> np.ndarray:
    """Kendall's tau-b = S / sqrt((n0 - n1)(n0 - n2)), clipped to [-1, 1].

    ``score`` S = concordant - discordant pairs, ``pairs`` n0 = all pairs, ``x_ties``
    n1 / ``y_ties`` n2 = pairs tied on x / on y. NaN when a side has no untied pair.
    """
    dx = pairs - x_ties
    dy = pairs - y_ties
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = score / np.sqrt(dx * dy)
    return np.clip(np.where((dx > 0) & (dy > 0), tau, np.nan), -1.0, 1.0)


def kendall_tau_b_table(table: np.ndarray) -> np.ndarray:
    """Kendall tau-b from contingency tables (B, Vx, Vy) (rows, cols sorted).

    Concordant pairs: each cell times the mass below and to the right of it
    (``Ux @ t @ Gy``, Ux / Gy the strict "later row" / "later column" indicators);
    discordant: below and to the left. With integer weights every sum is exact.
    """
    t = np.asarray(table, dtype=float)
    if t.ndim == 2:
        t = t[None]
    b, vx, vy = t.shape
    later_rows = t if vx == 0 else np.triu(np.ones((vx, vx)), 1) @ t
    above = later_rows @ np.tril(np.ones((vy, vy)), -1)  # later row, later column
    below = later_rows @ np.triu(np.ones((vy, vy)), 1)  # later row, earlier column
    flat = t.reshape(b, -1)
    con = np.einsum("bk,bk->b", flat, above.reshape(b, -1))
    dis = np.einsum("bk,bk->b", flat, below.reshape(b, -1))
    n = flat.sum(axis=1)
    rows = t.sum(axis=2)
    cols = t.sum(axis=1)
    xtie = (rows * (rows - 1) / 2).sum(axis=1)
    ytie = (cols * (cols - 1) / 2).sum(axis=1)
    return tau_b(con - dis, n * (n - 1) / 2, xtie, ytie)


# ---------------------------------------------------------------------------
# All three at once, and scalar wrappers on raw vectors
# ---------------------------------------------------------------------------


def correlations_w(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict:
    """Pearson, Spearman and Kendall tau-b per resample from weighted cells.

    w: (B, K) weights of K cells, x, y: (K,) cell values. Returns arrays of shape (B,)
    with NaN where undefined (fewer than 2 items or a constant side). The cells are
    first summed into the (x value, y value) contingency table of each resample
    (:func:`correlations_table`): every statistic depends on the data only through it.
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    xv, xc = value_codes(np.asarray(x, dtype=float))
    yv, yc = value_codes(np.asarray(y, dtype=float))
    joint = aggregate_weights(w, xc * yv.size + yc, xv.size * yv.size)
    return correlations_table(joint.reshape(-1, xv.size, yv.size), xv, yv)


def _pearson_table(t, tx, ty, n, a, b) -> np.ndarray:
    """Pearson r per resample of a contingency table t (B, X, Y) with margins tx
    (B, X), ty (B, Y), totals n (B,) and row / column values a, b ((X,) / (Y,) or
    per resample (B, X) / (B, Y)); centred on each resample's means (two passes)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = a - ((tx * a).sum(axis=1) / n)[:, None]
        dy = b - ((ty * b).sum(axis=1) / n)[:, None]
        sxy = np.einsum("bij,bi,bj->b", t, dx, dy)
        sxx = (tx * dx * dx).sum(axis=1)
        syy = (ty * dy * dy).sum(axis=1)
    return r_from_moments(n, sxy, sxx, syy)


def correlations_table(table: np.ndarray, xv: np.ndarray, yv: np.ndarray) -> dict:
    """Pearson, Spearman and Kendall tau-b per resample of contingency tables.

    table: (B, X, Y) weights of each (x value, y value) pair; xv (X,), yv (Y,): the
    sorted distinct values of its rows and columns. Spearman's rho is Pearson's r on
    the midranks of each resample's margins; Kendall's tau-b comes from
    :func:`kendall_tau_b_table`. NaN where undefined (fewer than 2 items or a side
    with one value). Cost O(B x X x Y), whatever the number of items.
    """
    t = np.asarray(table, dtype=float)
    tx = t.sum(axis=2)
    ty = t.sum(axis=1)
    n = tx.sum(axis=1)
    bad = (n < 2) | ((tx > 0).sum(axis=1) < 2) | ((ty > 0).sum(axis=1) < 2)
    xv = np.asarray(xv, dtype=float)
    yv = np.asarray(yv, dtype=float)
    pear = _pearson_table(t, tx, ty, n, xv, yv)
    spear = _pearson_table(t, tx, ty, n, midranks(tx), midranks(ty))
    kend = kendall_tau_b_table(t)
    for arr in (pear, spear, kend):
        arr[bad] = np.nan
    return {"pearson": pear, "spearman": spear, "kendall": kend}


def _paired_point(x, y):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if x.size == 0:
        return None
    # collapse identical (x, y) pairs into weighted cells
    pairs, counts = np.unique(np.stack([x, y], axis=1), axis=0, return_counts=True)
    return correlations_w(counts[None].astype(float), pairs[:, 0], pairs[:, 1])


def spearman(x, y) -> float | None:
    """Spearman's rho of the pairs without NaN: the Pearson correlation of their
    average ranks (scipy's `rankdata`), None when undefined (fewer than two pairs,
    a constant side). The same value as the weighted-cells path of `pearson` /
    `kendall_tau_b` without building the cells: O(n log n) for any n."""
    from scipy.stats import rankdata

    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if x.size < 2:
        return None
    rx, ry = rankdata(x) - (x.size + 1) / 2, rankdata(y) - (x.size + 1) / 2
    denom = np.sqrt((rx @ rx) * (ry @ ry))
    return finite_or_none(float(rx @ ry / denom)) if denom > 0 else None


def kendall_tau_b(x, y) -> float | None:
    r = _paired_point(x, y)
    return None if r is None else finite_or_none(r["kendall"][0])


def pearson(x, y) -> float | None:
    r = _paired_point(x, y)
    return None if r is None else finite_or_none(r["pearson"][0])
