"""The score scale 1..5 and the human median rule.

Scores are integers 1..5 (N/A is not a score). Several human scores of an item are
summarised by their median; when a single category is needed (QWK, exact agreement)
the median is rounded half up, so 2.5 becomes 3 and 3.5 becomes 4.
"""

from __future__ import annotations

import numpy as np

VALUES = np.arange(1, 6, dtype=float)  # the score scale, 1..5


def round_half_up(x) -> np.ndarray:
    """The rounding used for the human median (2.5 -> 3, 3.5 -> 4)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5)


def mean_from_counts(counts: np.ndarray) -> np.ndarray:
    """Mean of each row's scores, given as counts of 1..5 per row (K, 5); 0 if none."""
    return (counts @ VALUES) / np.maximum(counts.sum(axis=1), 1)


def median_from_counts(counts: np.ndarray) -> np.ndarray:
    """Median of each row's scores, given as counts of 1..5 per row (K, 5).

    Every row must hold at least one score; the median of an even number of scores
    is the mean of the two middle ones.
    """
    m = counts.sum(axis=1)
    cum = np.cumsum(counts, axis=1)
    lo_rank = (m - 1) // 2  # 0-based order statistics
    hi_rank = m // 2
    lo = VALUES[(cum <= lo_rank[:, None]).sum(axis=1)]
    hi = VALUES[(cum <= hi_rank[:, None]).sum(axis=1)]
    return (lo + hi) / 2
