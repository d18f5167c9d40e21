"""The arithmetic of derived runs: a panel's combined score, its fitted weights, and
an isotonic calibration. Pure (numpy, scipy); no database.

Conventions (those of the agreement figures, `analysis.selectors.agreement`):

* A run's score of an item (a response and a criterion) is the median of its
  numeric samples, rounded half up (2.5 -> 3: `round_half_up`, the rule of
  `analysis.stats.scale.round_half_up`, which judging may not import); N/A samples
  are skipped, an item whose samples are all N/A is N/A. A categorical criterion's
  samples have no median: their most common label, ties to the earliest sample.
* Every combined or calibrated value is rounded half up and kept on the criterion's
  scale (``low..high``).
* The mode of ordinal values breaks ties toward their median (`mode_toward_median`):
  of the most common values, the one nearest the (unrounded) median; of two equally
  near, the higher (as rounding half up would).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

MEAN, MEDIAN, MAJORITY, WEIGHTED = "mean", "median", "majority", "weighted"
METHODS = (MEAN, MEDIAN, MAJORITY, WEIGHTED)
# The methods that need numbers: a categorical criterion's codes are no quantity.
ORDINAL_ONLY = (MEAN, MEDIAN, WEIGHTED)


def round_half_up(x) -> np.ndarray:
    """x rounded half up (2.5 -> 3, -0.5 -> 0), elementwise."""
    return np.floor(np.asarray(x, dtype=float) + 0.5)


def to_scale(x: float, low: int, high: int) -> int:
    """`x` rounded half up and clipped to ``low..high``."""
    return int(min(max(round_half_up(x), low), high))


def median_of(values: Sequence[float]) -> float:
    """The median of `values` (at least one), unrounded."""
    return float(np.median(np.asarray(values, dtype=float)))


def mode_toward_median(values: Sequence[int]) -> int:
    """The most common of `values` (at least one); ties broken toward their median
    (module doc)."""
    counts = Counter(int(v) for v in values)
    top = max(counts.values())
    tied = [v for v, n in counts.items() if n == top]
    if len(tied) == 1:
        return tied[0]
    med = median_of(values)
    return min(tied, key=lambda v: (abs(v - med), -v))


def first_mode(values: Sequence[int]) -> int:
    """The most common of `values` (labels, at least one); ties broken toward the
    one that comes first in `values`."""
    counts = Counter(int(v) for v in values)
    top = max(counts.values())
    return next(int(v) for v in values if counts[int(v)] == top)


def run_item_value(samples: Sequence[int | None], *, ordinal: bool) -> int | None:
    """A run's score of one item from its samples in sample order (None = N/A):
    the median rounded half up (ordinal) or the first most common label
    (categorical); None when every sample is N/A."""
    numeric = [int(s) for s in samples if s is not None]
    if not numeric:
        return None
    if ordinal:
        return int(round_half_up(median_of(numeric)))
    return first_mode(numeric)


def combine(
    values: Sequence[int],
    *,
    method: str,
    low: int,
    high: int,
    ordinal: bool = True,
    weights: Sequence[float] | None = None,
) -> int | None:
    """The panel's score of one item from its runs' scores `values` (in the order
    of the panel's runs; N/A and missing already left out, at least one).

    mean / median: rounded half up to the scale. majority: `mode_toward_median`
    (ordinal) or `first_mode` (categorical: ties to the first listed run's label).
    weighted: `weights` are those of the same runs (the panel's weights of the
    runs that scored the item); their weighted mean, the weights renormalised over
    these runs; None when they weigh nothing (the item is left out)."""
    if method == MAJORITY:
        return mode_toward_median(values) if ordinal else first_mode(values)
    if method == MEAN:
        return to_scale(float(np.mean(np.asarray(values, dtype=float))), low, high)
    if method == MEDIAN:
        return to_scale(median_of(values), low, high)
    if method == WEIGHTED:
        w = np.asarray(weights, dtype=float)
        if w.sum() <= 0:
            return None
        v = np.asarray(values, dtype=float)
        return to_scale(float(w @ v / w.sum()), low, high)
    raise ValueError(f"unknown method {method!r}")


def fit_weights(scores: np.ndarray, target: np.ndarray) -> np.ndarray | None:
    """Non-negative weights summing to 1 of the columns of `scores` (items x runs)
    that best fit `target` (items) by least squares: `scipy.optimize.nnls`, then
    divided by their sum. None when every weight is 0 (nothing to normalise)."""
    from scipy.optimize import nnls

    w, _ = nnls(np.asarray(scores, dtype=float), np.asarray(target, dtype=float))
    total = float(w.sum())
    if total <= 0:
        return None
    return w / total


def fit_isotonic(
    scores: np.ndarray, target: np.ndarray, *, low: int, high: int
) -> dict[int, float]:
    """The isotonic (non-decreasing) fit of `target` on `scores`, at each value of
    the scale ``low..high``: what `sklearn.isotonic.IsotonicRegression` with
    ``out_of_bounds="clip"``, ``y_min=low`` and ``y_max=high`` predicts (checked
    against it in tests/judging/test_derived.py). {judge score: fitted value}."""
    from scipy.optimize import isotonic_regression

    scores = np.asarray(scores, dtype=float)
    levels, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    # as scikit-learn: one point per distinct score (the targets' mean, weighted by
    # their number), the pool-adjacent-violators fit bounded to the scale, then
    # linear between the scores seen and flat beyond them
    means = np.bincount(inverse.ravel(), np.asarray(target, dtype=float)) / counts
    fitted = np.clip(isotonic_regression(means, weights=counts).x, low, high)
    points = np.arange(low, high + 1, dtype=float)
    return {
        int(v): float(f)
        for v, f in zip(points, np.interp(points, levels, fitted), strict=True)
    }
