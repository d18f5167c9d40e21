"""Agreement on paired scores: among human raters, and of a judge with the humans.

Scores are numeric values of one scale (``values``, default 1..5; callers drop
N/A). Judge statistics compare the judge score with the human mean (correlations,
leniency, MAE) and with the human median rounded half up (QWK, exact, within-1, the confusion table).
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from analysis import statistics
from analysis.stats.alpha import (
    alpha_from_coincidence,
    item_coincidences,
    ratings_to_counts,
)
from analysis.stats.bootstrap import (
    aggregate_weights,
    multinomial_cell_weights,
    value_codes,
)
from analysis.stats.correlations import correlations_table
from analysis.stats.kappa import qwk_table
from analysis.stats.results import ratio, result_from_rows
from analysis.stats.scale import VALUES

# ---------------------------------------------------------------------------
# Among raters: exact and within-1 over rater pairs
# ---------------------------------------------------------------------------


def rater_pairs(counts: np.ndarray, values: np.ndarray):
    """Per item: number of rater pairs, exact-agreeing pairs, within-1 pairs."""
    c = np.asarray(counts, dtype=float)
    m = c.sum(axis=1)
    pairs = m * (m - 1) / 2
    exact = (c * (c - 1) / 2).sum(axis=1)
    v = np.asarray(values, dtype=float)
    near = (np.abs(v[:, None] - v[None, :]) <= 1) & (v[:, None] < v[None, :])
    within = exact + np.einsum("ni,ij,nj->n", c, near.astype(float), c)
    return pairs, exact, within


def pairwise_agreement(ratings: np.ndarray) -> dict:
    """Exact and within-1 agreement pooled over all rater pairs within items.

    Returns {"exact", "within1": float | None, "n_pairs", "n_items": int}; the items
    counted are those with at least two ratings.
    """
    values, counts = ratings_to_counts(ratings)
    pairs, exact, within = rater_pairs(counts, values)
    total = pairs.sum()
    out = {"n_pairs": int(total), "n_items": int((pairs > 0).sum())}
    out["exact"] = float(exact.sum() / total) if total > 0 else None
    out["within1"] = float(within.sum() / total) if total > 0 else None
    return out


# ---------------------------------------------------------------------------
# Judge vs humans
# ---------------------------------------------------------------------------


def judge_vs_human(
    judge,
    human_mean,
    human_median_rounded,
    n_boot: int = 1000,
    seed: int = 0,
    item_weights: np.ndarray | None = None,
    values: np.ndarray = VALUES,
) -> dict:
    """Judge score vs the human mean / rounded human median, with bootstrap CIs.

    Scores are on the scale ``values`` (sorted; the confusion table is V x V).

    Items are resampled with replacement: by default a multinomial draw over the
    distinct (judge, mean, median) cells; pass ``item_weights`` (B, n), e.g. from
    :func:`analysis.stats.bootstrap.bootstrap_weights`, to use explicit resamples.
    """
    j = np.asarray(judge, dtype=float)
    hm = np.asarray(human_mean, dtype=float)
    hr = np.asarray(human_median_rounded, dtype=float)
    rows = np.stack([j, hm, hr], axis=1)
    cells, inv, counts = np.unique(
        rows, axis=0, return_inverse=True, return_counts=True
    )
    inv = inv.ravel()
    if item_weights is not None:
        boot = aggregate_weights(item_weights, inv, len(cells))
    elif n_boot > 0 and len(j) > 0:
        boot = multinomial_cell_weights(counts, n_boot, seed)
    else:
        boot = np.zeros((0, len(cells)))
    w = np.vstack([counts[None].astype(float), boot])
    raw = judge_stats_w(w, cells[:, 0], cells[:, 1], cells[:, 2], values)
    return judge_results(raw, len(j))


class Tables:
    """What a group's agreement statistics are functions of (the argument of every
    ``compute`` of :data:`analysis.statistics.REGISTRY`).

    ``w`` (B, K): weights of K cells, row 0 the sample itself, rows 1.. bootstrap
    resamples. Per cell: ``judge`` score, human mean ``hmean`` and rounded human
    median ``hround`` on the scale ``values`` (V sorted values); with ``counts``
    (K, V: human scores per value) and ``judge_code`` (K,: the judge's value code
    1..V) the raters' statistics too (``alpha``, ``pair_share``,
    ``alpha_with_judge``). Every table is computed once, when first asked for.
    """

    def __init__(
        self,
        w,
        judge,
        hmean,
        hround,
        values: np.ndarray = VALUES,
        counts: np.ndarray | None = None,
        judge_code: np.ndarray | None = None,
    ) -> None:
        self.w = w
        self.scale = values  # as given: the raters' tables read it so
        self.values = np.asarray(values, dtype=float)
        self.judge = np.asarray(judge, dtype=float)
        self.hmean = hmean
        self.hround = hround
        self.counts = counts
        self.judge_code = judge_code
        self._coincidence: dict[bool, np.ndarray] = {}
        self._alpha_rows: dict[tuple[str, bool], np.ndarray] = {}

    @cached_property
    def n(self) -> np.ndarray:
        """Items per weight row."""
        return self.w.sum(axis=1)

    @cached_property
    def _tables(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # One pass over the cells: their weights summed per (judge value, human mean,
        # rounded median); the correlations' and the confusion tables are its margins.
        values, v = self.values, self.values.size
        jc = np.searchsorted(values, self.judge)
        rc = np.searchsorted(values, self.hround)
        mv, mc = value_codes(np.asarray(self.hmean, dtype=float))
        pairs, pc = np.unique(mc * v + rc, return_inverse=True)
        fine = aggregate_weights(self.w, jc * pairs.size + pc.ravel(), v * pairs.size)
        fine = fine.reshape(-1, v, pairs.size)
        to_mean = np.zeros((pairs.size, mv.size))
        to_mean[np.arange(pairs.size), pairs // v] = 1.0
        to_round = np.zeros((pairs.size, v))
        to_round[np.arange(pairs.size), pairs % v] = 1.0
        return fine @ to_mean, fine @ to_round, mv

    @property
    def confusion(self) -> np.ndarray:
        """(B, V, V) weights: rows the judge's value, columns the rounded median's."""
        return self._tables[1]

    @cached_property
    def correlations(self) -> dict:
        """Pearson, Spearman, Kendall tau-b of the judge vs the human mean."""
        joint, _, mv = self._tables
        return correlations_table(joint, self.values, mv)

    @cached_property
    def qwk(self) -> np.ndarray:
        """Quadratic-weighted kappa of the judge vs the rounded human median."""
        return qwk_table(self.confusion, self.values)

    def share(self, hits) -> np.ndarray:
        """Weighted share of the items where `hits` (K,) is true."""
        return ratio(self.w @ np.asarray(hits).astype(float), self.n)

    def mean_of(self, x) -> np.ndarray:
        """Weighted mean of `x` (K,) over the items."""
        return ratio(self.w @ x, self.n)

    # --- the raters' side (needs `counts`) ----------------------------------------

    @cached_property
    def _pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return rater_pairs(self.counts, self.scale)

    @cached_property
    def _weighted_pairs(self) -> np.ndarray:
        return self.w @ self._pairs[0]

    def pair_share(self, which: str) -> np.ndarray:
        """Share of rater pairs within items giving the same score (``"exact"``) or
        scores at most one point apart (``"within1"``)."""
        _, exact, within = self._pairs
        agreeing = exact if which == "exact" else within
        return ratio(self.w @ agreeing, self._weighted_pairs)

    def _coincidences(self, with_judge: bool) -> np.ndarray:
        """(B, V, V) coincidence matrices of the raters (and the judge as one more
        rater), once each: both alpha levels read them."""
        if with_judge not in self._coincidence:
            counts = self.counts
            if with_judge:
                counts = np.array(self.counts, dtype=float)
                counts[np.arange(len(counts)), np.asarray(self.judge_code) - 1] += 1
            v = self.values.size
            co = item_coincidences(counts).reshape(len(counts), v * v)
            self._coincidence[with_judge] = (self.w @ co).reshape(-1, v, v)
        return self._coincidence[with_judge]

    def alpha(self, level: str) -> np.ndarray:
        """Krippendorff's alpha of the raters (`level`: ordinal or interval)."""
        return self._alphas(level, False)

    def alpha_with_judge(self, level: str) -> np.ndarray:
        """Krippendorff's alpha with the judge as one more rater."""
        return self._alphas(level, True)

    def _alphas(self, level: str, with_judge: bool) -> np.ndarray:
        if (level, with_judge) not in self._alpha_rows:
            o = self._coincidences(with_judge)
            self._alpha_rows[level, with_judge] = alpha_from_coincidence(
                o, level, self.scale
            )
        return self._alpha_rows[level, with_judge]

    def count(self, name: str) -> int:
        """The n of a statistic's result (``Statistic.count``), from row 0."""
        w0 = self.w[0]
        if name == "items":
            return int(round(w0.sum()))
        if name == "multi_rated":
            return int(round(w0 @ (self.counts.sum(axis=1) >= 2)))
        return int(round(w0 @ self._pairs[0]))


def judge_stats_w(w, judge, hmean, hround, values: np.ndarray = VALUES) -> dict:
    """The judge-vs-human statistics computed from pairs
    (:func:`analysis.statistics.from_pairs`) for cell weights w (B, K), NaN where
    undefined.

    Cells have a judge score, a human mean and a rounded human median (K,), on the
    scale ``values`` (V sorted values, default 1..5); the ``confusion`` table is row
    0's (V x V: rows the judge's value, columns the rounded median's, in scale order)
    and QWK weighs (v_i - v_j)^2 on the scale's values. Exact and within-1 compare
    values (within 1 point of the scale).
    """
    t = Tables(w, judge, hmean, hround, values)
    out = {s.key: s.compute(t) for s in statistics.from_pairs()}
    out["confusion"] = t.confusion[0].astype(int)
    out["n"] = t.n
    return out


def judge_results(raw: dict, n: int) -> dict:
    """:func:`judge_stats_w` rows as Results (plus the confusion table)."""
    res = {
        s.key: result_from_rows(raw[s.key], n, s.undefined_when)
        for s in statistics.from_pairs()
    }
    res["confusion"] = raw["confusion"]
    return res
