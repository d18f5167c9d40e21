"""Two judge runs against the same human labels: the paired difference, with a paired
bootstrap CI.

Both runs are scored on exactly the same items (scored numerically by the humans and
by both runs); a resample draws items, and so both runs' scores of each item,
together. The difference of a statistic is run A's minus run B's on each resample,
so what the two runs share (the items' difficulty, the humans' noise) cancels, and
the interval is much narrower than two separate intervals would suggest. Items are
resampled within each stratum (criterion), as in :mod:`analysis.stats.report`.

A difference "excludes zero" when its 95% percentile interval lies wholly above or
below 0; only then is one run called the better (``winner``): "a", "b" or None.
Statistics (of :func:`analysis.stats.agreement.judge_stats_w`): ``qwk`` against the
rounded human median, ``spearman`` against the human mean, ``exact`` agreement with
the rounded median. Undefined values and CIs: :mod:`analysis.stats.results`.
"""

from __future__ import annotations

import numpy as np

from analysis import statistics
from analysis.stats.agreement import judge_stats_w
from analysis.stats.bootstrap import aggregate_weights, multinomial_chunks, row_codes
from analysis.stats.results import result_from_rows
from analysis.stats.scale import mean_from_counts, median_from_counts, round_half_up

PAIRED_STATS = ("qwk", "spearman", "exact")


def paired_weights(
    key: np.ndarray,
    cell_n: np.ndarray,
    stratum: np.ndarray,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """(n_boot + 1, K): row 0 the cells' counts, rows 1.. multinomial resamples of
    each stratum's items over its cells (:func:`multinomial_chunks`)."""
    w = np.zeros((n_boot + 1, len(cell_n)))
    w[0] = cell_n
    rng = np.random.default_rng(seed)
    for s in np.unique(stratum):
        cols = np.flatnonzero(stratum == s)
        order, blocks = multinomial_chunks(cell_n[cols], n_boot, rng)
        start = 1
        for block in blocks:
            w[start : start + block.shape[1], cols[order]] = block.T
            start += block.shape[1]
    return w


def paired_comparison(
    human_counts: np.ndarray,
    judge_a: np.ndarray,
    judge_b: np.ndarray,
    values: np.ndarray,
    strata: np.ndarray | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    item_weights: np.ndarray | None = None,
) -> dict:
    """Run A against run B on the same items, both against the humans.

    `human_counts` (n, V): the humans' numeric scores of each item per value of the
    scale `values` (V sorted); `judge_a`, `judge_b` (n,): each run's score as a code
    1..V (no N/A: the caller keeps items both runs scored numerically); `strata`
    (n,): the resampling stratum (criterion) of each item. `item_weights` (B, n)
    replaces the random draw with explicit resamples (e.g. from
    :func:`analysis.stats.bootstrap.bootstrap_weights`).

    Returns {"n", "a": {stat: Result}, "b": {...}, "diff": {stat: Result of A - B},
    "excludes_zero": {stat: bool}, "winner": {stat: "a" | "b" | None}}.
    """
    values = np.asarray(values, dtype=float)
    v = values.size
    hc = np.asarray(human_counts, dtype=np.int64).reshape(-1, v)
    ja = np.asarray(judge_a, dtype=np.int64)
    jb = np.asarray(judge_b, dtype=np.int64)
    n = len(ja)
    if len(jb) != n or len(hc) != n:
        raise ValueError(
            "human_counts, judge_a and judge_b must describe the same items"
        )
    if n and (hc.sum(axis=1) == 0).any():
        raise ValueError("every item needs a numeric human score")
    if n and (np.minimum(ja, jb).min() < 1 or np.maximum(ja, jb).max() > v):
        raise ValueError(f"judge scores must be codes 1..{v}")
    strata = np.zeros(n, np.int64) if strata is None else np.asarray(strata, np.int64)
    key = np.column_stack([strata, hc, ja, jb]) if n else np.zeros((0, v + 3), np.int64)
    _, first, inv, cell_n = np.unique(
        row_codes(list(key.T)) if n else np.zeros(0, np.int64),
        return_index=True,
        return_inverse=True,
        return_counts=True,
    )
    cells = key[first]
    if item_weights is not None:
        boot = aggregate_weights(item_weights, inv.ravel(), len(cells))
        w = np.vstack([cell_n[None].astype(float), boot])
    else:
        w = paired_weights(cells, cell_n, cells[:, 0], n_boot, seed)
    if not len(cells):  # no items: one empty cell keeps every shape (all undefined)
        cells = np.zeros((1, v + 3), np.int64)
        cells[0, 1] = cells[0, v + 1] = cells[0, v + 2] = 1
        w = np.zeros((w.shape[0], 1))
    counts = cells[:, 1 : v + 1].astype(float)
    mean = mean_from_counts(counts, values)
    rounded = round_half_up(median_from_counts(counts, values))
    raw = {"a": judge_stats_w(w, values[cells[:, v + 1] - 1], mean, rounded, values)}
    same = np.array_equal(cells[:, v + 1], cells[:, v + 2])  # a run with itself
    raw["b"] = (
        raw["a"]
        if same
        else judge_stats_w(w, values[cells[:, v + 2] - 1], mean, rounded, values)
    )
    out: dict = {"n": n, "a": {}, "b": {}, "diff": {}, "excludes_zero": {}}
    out["winner"] = {}
    for stat in PAIRED_STATS:
        why = statistics.get(stat).undefined_when
        for side in ("a", "b"):
            out[side][stat] = result_from_rows(raw[side][stat], n, why)
        diff = result_from_rows(raw["a"][stat] - raw["b"][stat], n, why)
        out["diff"][stat] = diff
        excludes = (
            diff.ci_low is not None
            and diff.ci_high is not None
            and (diff.ci_low > 0 or diff.ci_high < 0)
        )
        out["excludes_zero"][stat] = bool(excludes)
        out["winner"][stat] = ("a" if diff.ci_low > 0 else "b") if excludes else None
    return out
