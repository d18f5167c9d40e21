"""Self-consistency of a judge that scored each item several times: pure numpy.

`samples` is an (n items, S samples) float array of one criterion's scores, NaN where
a sample is missing or N/A. Conventions:

* the median of an item's samples is rounded half up (`scale.round_half_up`), as the
  agreement figures take a run's score; its mode breaks ties toward the median
  (`judging.panels.mode_toward_median`, the panel's majority rule);
* agreement with the humans follows the agreement figures: quadratic-weighted kappa
  against the humans' median rounded half up, Spearman against their mean
  (`kappa.quadratic_kappa`, `correlations.spearman`);
* the three ways of reading the samples (sample 0 alone, the median, the mode) are
  compared on the same items: those the humans scored and sample 0 scored;
* the spread is the population variance (ddof 0) of each item's numeric samples,
  over the items with at least two of them; an item "disagrees" when its samples
  are not all equal.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.correlations import spearman
from analysis.stats.kappa import quadratic_kappa
from analysis.stats.results import finite_or_none
from analysis.stats.scale import round_half_up
from judging.panels import mode_toward_median

READINGS = ("first", "median", "mode")
READING_LABELS = {
    "first": "sample 0 alone",
    "median": "median of the samples",
    "mode": "mode of the samples",
}


def item_medians(samples: np.ndarray) -> np.ndarray:
    """(n,) each row's median of its numeric samples, rounded half up; NaN if none."""
    s = np.asarray(samples, dtype=float)
    out = np.full(len(s), np.nan)
    has = ~np.isnan(s).all(axis=1) if s.size else np.zeros(len(s), bool)
    if has.any():
        out[has] = round_half_up(np.nanmedian(s[has], axis=1))
    return out


def item_modes(samples: np.ndarray) -> np.ndarray:
    """(n,) each row's mode of its numeric samples, ties toward the median; NaN if
    none."""
    s = np.asarray(samples, dtype=float)
    out = np.full(len(s), np.nan)
    for i, row in enumerate(s):
        numeric = row[~np.isnan(row)]
        if numeric.size:
            out[i] = mode_toward_median(numeric.astype(int).tolist())
    return out


def sample_spread(samples: np.ndarray) -> dict:
    """The spread of the samples over the items with two or more numeric ones:
    {"n_items", "mean_variance", "median_variance", "share_disagreeing"} (None
    where there is no such item)."""
    s = np.asarray(samples, dtype=float)
    if s.ndim != 2 or not s.size:
        s = np.zeros((0, 1))
    multi = (~np.isnan(s)).sum(axis=1) >= 2
    rows = s[multi]
    if not len(rows):
        return {
            "n_items": 0,
            "mean_variance": None,
            "median_variance": None,
            "share_disagreeing": None,
        }
    var = np.nanvar(rows, axis=1)
    differ = np.nanmax(rows, axis=1) != np.nanmin(rows, axis=1)
    return {
        "n_items": int(len(rows)),
        "mean_variance": finite_or_none(float(var.mean())),
        "median_variance": finite_or_none(float(np.median(var))),
        "share_disagreeing": finite_or_none(float(differ.mean())),
    }


def consistency_figures(
    samples: np.ndarray,
    human_mean: np.ndarray,
    human_median: np.ndarray,
    values: np.ndarray,
) -> dict:
    """Agreement with the humans of each reading of the samples, and their spread.

    `human_mean` / `human_median` (n,): the humans' mean and rounded median per
    item, NaN where they gave no numeric score; `values`: the scale's values.
    Returns {"n_items", "readings": {reading: {"qwk", "spearman"}}, "spread"}."""
    s = np.asarray(samples, dtype=float)
    hm = np.asarray(human_mean, dtype=float)
    hr = np.asarray(human_median, dtype=float)
    if s.ndim != 2:
        s = s.reshape(len(hm), -1)
    keep = ~np.isnan(hm) & (~np.isnan(s[:, 0]) if s.shape[1] else False)
    readings = {
        "first": s[keep, 0] if s.shape[1] else np.zeros(0),
        "median": item_medians(s[keep]),
        "mode": item_modes(s[keep]),
    }
    return {
        "n_items": int(keep.sum()),
        "n_samples": int(s.shape[1]),
        "readings": {
            name: {
                "qwk": quadratic_kappa(judge, hr[keep], values),
                "spearman": spearman(judge, hm[keep]),
            }
            for name, judge in readings.items()
        },
        "spread": sample_spread(s),
    }
