"""The leave-one-out consensus of the other raters, on arrays (`analysis.selectors.
reliability` compares each rater with it through `analysis.stats.kappa.
quadratic_kappa` and `analysis.stats.correlations.spearman`; the tests compare these
with an explicit loop on the same inputs)."""

from __future__ import annotations

import numpy as np


def leave_one_out(groups: np.ndarray, x: np.ndarray):
    """(consensus, has): per score, the mean of the other scores of its group, and
    whether there is any other score."""
    counts = np.bincount(groups)
    sums = np.bincount(groups, weights=x)
    n = counts[groups]
    has = n >= 2
    consensus = np.zeros(len(x))
    consensus[has] = (sums[groups][has] - x[has]) / (n[has] - 1)
    return consensus, has


def leave_one_out_mode(groups: np.ndarray, x: np.ndarray, k: int):
    """(consensus, has) for label codes 0..k-1: the others' most frequent label (the
    lowest code on a tie)."""
    g = np.unique(groups, return_inverse=True)[1]
    table = np.zeros((g.max() + 1 if len(g) else 0, k), np.int64)
    np.add.at(table, (g, x.astype(np.int64)), 1)
    others = table[g].copy()
    others[np.arange(len(x)), x.astype(np.int64)] -= 1
    has = others.sum(1) > 0
    return others.argmax(1).astype(float), has


def round_half_up(v: np.ndarray) -> np.ndarray:
    return np.floor(v + 0.5)
