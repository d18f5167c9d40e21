"""Rank agreement of the evaluated models: do humans and the judge order them alike?

Each row of (B, M) holds one value per model (e.g. a model's mean score in one
resample); Spearman and Kendall tau-b compare the two rows' orders, ties allowed.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.correlations import midrank, pearson_w, tau_b
from analysis.stats.results import make_result


def _rank_rows(x: np.ndarray) -> np.ndarray:
    """Midranks along the last axis of (B, M)."""
    less = (x[:, None, :] < x[:, :, None]).sum(axis=2)
    equal = (x[:, None, :] == x[:, :, None]).sum(axis=2)
    return midrank(less, equal)


def rank_correlations_rows(x: np.ndarray, y: np.ndarray) -> dict:
    """Spearman and Kendall tau-b between rows of x and y (B, M); NaN if undefined."""
    x = np.atleast_2d(np.asarray(x, dtype=float))
    y = np.atleast_2d(np.asarray(y, dtype=float))
    bad = np.isnan(x).any(axis=1) | np.isnan(y).any(axis=1) | (x.shape[1] < 2)
    rx, ry = _rank_rows(x), _rank_rows(y)
    w = np.ones_like(rx)
    spear = pearson_w(w, rx, ry)
    sx = np.sign(x[:, :, None] - x[:, None, :])
    sy = np.sign(y[:, :, None] - y[:, None, :])
    s = (sx * sy).sum(axis=(1, 2)) / 2
    m = x.shape[1]
    tx = (sx == 0).sum(axis=(1, 2)) - m  # ordered pairs, minus the diagonal
    ty = (sy == 0).sum(axis=(1, 2)) - m
    kend = tau_b(s, m * (m - 1) / 2, tx / 2, ty / 2)
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
