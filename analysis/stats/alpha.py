"""Krippendorff's alpha (ordinal, interval) from coincidence matrices.

Equals the ``krippendorff`` package on the same ratings. Items rated by fewer than
two raters contribute nothing; alpha is undefined (NaN / None) with fewer than two
pairable values or no expected disagreement.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.results import finite_or_none
from analysis.stats.scale import VALUES

LEVELS = ("ordinal", "interval")


def item_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per-item coincidence matrices (n, V, V) from value counts (n, V).

    o_ck = (n_c n_k - [c == k] n_c) / (m - 1) for items with m >= 2 values, else 0.
    """
    c = np.asarray(counts, dtype=float)
    m = c.sum(axis=1)
    outer = c[:, :, None] * c[:, None, :]
    idx = np.arange(c.shape[1])
    outer[:, idx, idx] -= c
    scale = np.where(m >= 2, 1.0 / np.maximum(m - 1, 1), 0.0)
    return outer * scale[:, None, None]


def alpha_from_coincidence(
    o: np.ndarray, level: str = "ordinal", values: np.ndarray = VALUES
) -> np.ndarray:
    """Krippendorff's alpha from coincidence matrices (B, V, V); NaN if undefined."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    o = np.asarray(o, dtype=float)
    if o.ndim == 2:
        o = o[None]
    v = np.asarray(values, dtype=float)
    b, k = o.shape[0], o.shape[1]
    nv = o.sum(axis=2)  # (B, V)
    n = nv.sum(axis=1)
    flat = o.reshape(b, k * k)
    with np.errstate(invalid="ignore", divide="ignore"):
        if level == "interval":
            d = (v[:, None] - v[None, :]) ** 2
            observed = flat @ d.ravel()
            expected = np.einsum("bi,ij,bj->b", nv, d, nv) / (n - 1)
        else:
            cum = np.cumsum(nv, axis=1)
            g = (
                cum[:, None, :]
                - cum[:, :, None]
                + (nv[:, :, None] - nv[:, None, :]) / 2
            )
            d = (g * g).reshape(b, k * k)
            observed = np.einsum("bk,bk->b", flat, d)
            pairs = (nv[:, :, None] * nv[:, None, :]).reshape(b, k * k)
            expected = np.einsum("bk,bk->b", pairs, d) / (n - 1)
        a = 1.0 - observed / expected
    a[~(n >= 2) | ~(expected > 0) | ((nv > 0).sum(axis=1) < 2)] = np.nan
    return a


def alpha_from_counts(
    counts: np.ndarray,
    level: str = "ordinal",
    weights: np.ndarray | None = None,
    values: np.ndarray = VALUES,
) -> np.ndarray:
    """Alpha from per-item value counts (n, V), optionally per resample.

    weights: (B, n) item weights (e.g. from
    :func:`analysis.stats.bootstrap.bootstrap_weights`); returns (B,) alphas (NaN
    where undefined). Without weights returns a 0-d array.
    """
    per_item = item_coincidences(counts).reshape(len(counts), -1)
    if weights is None:
        return alpha_from_coincidence(
            per_item.sum(axis=0).reshape(1, *counts.shape[1:] * 2), level, values
        )[0]
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    v = counts.shape[1]
    return alpha_from_coincidence((w @ per_item).reshape(-1, v, v), level, values)


def ratings_to_counts(ratings: np.ndarray, values: np.ndarray | None = None):
    """items x raters (NaN = missing) -> (value domain, counts (items, V))."""
    r = np.asarray(ratings, dtype=float)
    if values is None:
        values = np.unique(r[~np.isnan(r)])
    values = np.asarray(values, dtype=float)
    counts = (r[:, :, None] == values[None, None, :]).sum(axis=1)
    return values, counts


def krippendorff_alpha(ratings: np.ndarray, level: str = "ordinal") -> float | None:
    """Krippendorff's alpha of an items x raters matrix (NaN = missing)."""
    values, counts = ratings_to_counts(ratings)
    if values.size < 2:
        return None
    return finite_or_none(alpha_from_counts(counts, level, values=values))
