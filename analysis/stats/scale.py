"""Score scales as value arrays, and the human median rule.

A criterion's scale is the sorted array of its integer values (``values``); FLASK's
is ``VALUES`` = 1..5, the default of every function that takes one. Where items hold
"counts", column c counts the scores equal to ``values[c]``; where an engine array
holds a score *code*, code c (1..V) stands for ``values[c - 1]`` and 0 for "no
numeric score" (so on 1..5 a code is the score itself). N/A is not a score.

Several human scores of an item are summarised by their median; when a single
category is needed (QWK, exact agreement) the median is rounded half up, so 2.5
becomes 3 and 3.5 becomes 4 (a whole-number shift of the scale commutes with it).
"""

from __future__ import annotations

import numpy as np

VALUES = np.arange(1, 6, dtype=float)  # the FLASK score scale, 1..5


def scale_values(low: int, high: int) -> np.ndarray:
    """The values low..high of an integer ordinal scale (``VALUES`` for 1..5)."""
    if (low, high) == (1, 5):
        return VALUES
    return np.arange(low, high + 1, dtype=float)


def same_scale(scales) -> bool:
    """Whether all value arrays in `scales` are one and the same scale (True if
    there are none): only such groups of criteria are pooled."""
    scales = [np.asarray(v, dtype=float) for v in scales]
    return all(np.array_equal(scales[0], v) for v in scales[1:])


def round_half_up(x) -> np.ndarray:
    """The rounding used for the human median (2.5 -> 3, 3.5 -> 4)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5)


def mean_from_counts(counts: np.ndarray, values: np.ndarray = VALUES) -> np.ndarray:
    """Mean of each row's scores, given as counts of ``values`` per row (K, V); 0 if
    none."""
    return (counts @ values) / np.maximum(counts.sum(axis=1), 1)


def median_from_counts(counts: np.ndarray, values: np.ndarray = VALUES) -> np.ndarray:
    """Median of each row's scores, given as counts of ``values`` per row (K, V).

    Every row must hold at least one score; the median of an even number of scores
    is the mean of the two middle ones.
    """
    values = np.asarray(values, dtype=float)
    m = counts.sum(axis=1)
    cum = np.cumsum(counts, axis=1)
    lo_rank = (m - 1) // 2  # 0-based order statistics
    hi_rank = m // 2
    lo = values[(cum <= lo_rank[:, None]).sum(axis=1)]
    hi = values[(cum <= hi_rank[:, None]).sum(axis=1)]
    return (lo + hi) / 2
