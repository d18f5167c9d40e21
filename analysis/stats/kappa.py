"""Cohen's kappa from confusion tables: unweighted (labels) and quadratic (scores).

Both take tables with a leading resample axis (B, L, L), rows = one rater's label,
columns = the other's, and return (B,) arrays with NaN where kappa is undefined.
They agree with ``sklearn.metrics.cohen_kappa_score`` (``weights=None`` /
``"quadratic"``). Unweighted kappa is written (p_o - p_e) / (1 - p_e), the quadratic
one 1 - observed / expected weighted disagreement. The two are equal in exact
arithmetic for 0/1 weights but round differently in the last bit, so one formula
for both would change figures already reported; each keeps its own.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.results import finite_or_none
from analysis.stats.scale import VALUES


def kappa_from_table(table: np.ndarray) -> np.ndarray:
    """Cohen's kappa from square confusion tables (..., L, L); NaN where undefined.

    kappa = (p_o - p_e) / (1 - p_e), p_o = trace / n, p_e = sum_k row_k col_k / n^2.
    Undefined with no comparisons or p_e = 1 (both sides the same single class).
    """
    t = np.asarray(table, dtype=float)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(t, axis1=-2, axis2=-1) / n
        pe = (t.sum(axis=-1) * t.sum(axis=-2)).sum(axis=-1) / n**2
        k = (po - pe) / (1 - pe)
    return np.where((n > 0) & (pe < 1 - 1e-12), k, np.nan)


def qwk_table(confusion: np.ndarray, values: np.ndarray = VALUES) -> np.ndarray:
    """Quadratic-weighted Cohen's kappa from confusion tables (B, V, V).

    Weights are (v_i - v_j)^2 on the category values; NaN when the expected
    disagreement is zero (both raters used one and the same category).
    """
    o = np.asarray(confusion, dtype=float)
    if o.ndim == 2:
        o = o[None]
    v = np.asarray(values, dtype=float)
    wmat = (v[:, None] - v[None, :]) ** 2
    n = o.sum(axis=(1, 2))
    rows = o.sum(axis=2)
    cols = o.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = rows[:, :, None] * cols[:, None, :] / n[:, None, None]
        num = (wmat * o).sum(axis=(1, 2))
        den = (wmat * expected).sum(axis=(1, 2))
        k = 1.0 - num / den
    k[~(den > 0)] = np.nan
    return k


def confusion_matrix(a, b, values: np.ndarray = VALUES) -> np.ndarray:
    """(V, V) counts: rows = a's value, columns = b's value."""
    v = np.asarray(values, dtype=float)
    ia = np.searchsorted(v, np.asarray(a, dtype=float))
    ib = np.searchsorted(v, np.asarray(b, dtype=float))
    return np.bincount(ia * v.size + ib, minlength=v.size**2).reshape(v.size, v.size)


def quadratic_kappa(a, b, values: np.ndarray = VALUES) -> float | None:
    """Quadratic-weighted kappa with weights on the scale values (default 1..5).

    Equals sklearn's cohen_kappa_score(a, b, weights="quadratic", labels=values).
    """
    if len(a) == 0:
        return None
    return finite_or_none(qwk_table(confusion_matrix(a, b, values)[None], values)[0])
