"""Agreement statistics for human and judge scores: pure numpy, no Django.

Everything here works on small tables instead of raw score lists. Scores are discrete
(integers 1-5 for one rater, means of a few raters for the human mean), so an item
(a scored (response, skill) pair) is fully described by its *profile*: the counts of
human scores per value 1..5, the judge score and (optionally) the evaluated model.
A few thousand items collapse into a few hundred profiles, every statistic is a
function of the profile weights, and a bootstrap resample of items is a multinomial
reweighting of those profiles. The statistics are computed for all resamples at
once with array operations over a leading resample axis ``B``.

Conventions

* N/A is not a score. Callers pass only numeric scores (1..5); N/A counts are
  reported separately by :func:`agreement_report`.
* A statistic that is undefined (fewer than 2 items, no variance, ...) is returned as
  ``None`` (scalar functions) or as a :class:`Result` with ``value=None`` and a
  ``reason`` starting with ``"not enough data"``. The vectorised ``*_w`` helpers use
  NaN internally for undefined resamples; NaN never leaves a :class:`Result`.
* Bootstrap confidence intervals are percentile intervals (2.5%, 97.5%) over the
  resamples in which the statistic is defined; ``n_undefined`` counts the others.
  Items ((response, skill) pairs) are resampled with replacement; in
  :func:`agreement_table` within each skill, and the ability / overall resamples are
  the unions of their skills' resamples (stratified by skill).

Entry points: :func:`agreement_table` (per skill, per ability, overall),
:func:`agreement_report` (one group), :func:`judge_vs_human` (paired vectors),
:func:`krippendorff_alpha`, :func:`alpha_from_counts`, :func:`pairwise_agreement`,
:func:`spearman`, :func:`kendall_tau_b`, :func:`pearson`, :func:`quadratic_kappa`,
:func:`model_rank_agreement`, :func:`bootstrap_weights`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

VALUES = np.arange(1, 6, dtype=float)  # the score scale, 1..5
LEVELS = ("ordinal", "interval")
NOT_ENOUGH = "not enough data"


# ---------------------------------------------------------------------------
# Result
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    """One statistic: its value (None when undefined), item count and 95% CI."""

    value: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str = ""
    n_undefined: int = 0  # bootstrap resamples where the statistic was undefined

    @property
    def defined(self) -> bool:
        return self.value is not None

    def display(self, digits: int = 3) -> str:
        if self.value is None:
            return f"{self.reason or NOT_ENOUGH} (n={self.n})"
        text = f"{self.value:.{digits}f}"
        if self.ci_low is not None and self.ci_high is not None:
            text += f" [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}]"
        return f"{text} (n={self.n})"


def _finite(x) -> float | None:
    x = float(x)
    return x if np.isfinite(x) else None


def make_result(
    point: float, boot: np.ndarray | None, n: int, why: str = "", alpha: float = 0.05
) -> Result:
    """Wrap a point estimate (NaN = undefined) and its bootstrap replicates."""
    value = _finite(point)
    if value is None:
        reason = f"{NOT_ENOUGH}: {why}" if why else NOT_ENOUGH
        return Result(None, int(n), reason=reason)
    if boot is None or len(boot) == 0:
        return Result(value, int(n))
    boot = np.asarray(boot, dtype=float)
    ok = boot[np.isfinite(boot)]
    n_undefined = int(boot.size - ok.size)
    if ok.size == 0:
        return Result(value, int(n), n_undefined=n_undefined)
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    return Result(value, int(n), float(lo), float(hi), n_undefined=n_undefined)


# ---------------------------------------------------------------------------
# Bootstrap weights
# ---------------------------------------------------------------------------


def bootstrap_indices(n_items: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n_items) item indices drawn with replacement (for naive loops)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n_items, size=(n_boot, n_items))


def bootstrap_weights(n_items: int, n_boot: int, seed: int = 0) -> np.ndarray:
    """(n_boot, n_items) resample counts: row b = how often each item is drawn.

    Equal to ``np.bincount(bootstrap_indices(...)[b], minlength=n_items)``.
    """
    idx = bootstrap_indices(n_items, n_boot, seed)
    return indices_to_weights(idx, n_items)


def indices_to_weights(idx: np.ndarray, n_items: int) -> np.ndarray:
    idx = np.asarray(idx)
    n_boot = idx.shape[0]
    flat = (np.arange(n_boot)[:, None] * n_items + idx).ravel()
    return np.bincount(flat, minlength=n_boot * n_items).reshape(n_boot, n_items)


def aggregate_weights(item_weights: np.ndarray, cell: np.ndarray, n_cells: int):
    """Item weights (B, n) -> cell weights (B, n_cells) by summing items per cell."""
    item_weights = np.atleast_2d(np.asarray(item_weights, dtype=float))
    order = np.argsort(cell, kind="stable")
    sorted_cell = cell[order]
    starts = np.flatnonzero(np.r_[True, sorted_cell[1:] != sorted_cell[:-1]])
    sums = np.add.reduceat(item_weights[:, order], starts, axis=1)
    out = np.zeros((item_weights.shape[0], n_cells))
    out[:, sorted_cell[starts]] = sums
    return out


def multinomial_cell_weights(
    cell_counts: np.ndarray, n_boot: int, seed: int = 0
) -> np.ndarray:
    """Bootstrap of items as a multinomial draw over cells: (n_boot, n_cells).

    Resampling n items with replacement and counting them per cell has exactly this
    distribution; drawing it per cell costs O(n_cells) instead of O(n_items).
    """
    cell_counts = np.asarray(cell_counts, dtype=float)
    n = int(cell_counts.sum())
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, cell_counts / n, size=n_boot).astype(float)


# ---------------------------------------------------------------------------
# Vectorised primitives over weights w: (B, K) on K cells
# ---------------------------------------------------------------------------


def _codes(x: np.ndarray):
    """Sorted distinct values and the code of each element."""
    values, codes = np.unique(np.asarray(x, dtype=float), return_inverse=True)
    return values, codes.ravel()


def _value_table(w: np.ndarray, codes: np.ndarray, n_values: int) -> np.ndarray:
    """(B, V): weight per distinct value."""
    onehot = np.zeros((codes.size, n_values))
    onehot[np.arange(codes.size), codes] = 1.0
    return w @ onehot


def _midranks(table: np.ndarray) -> np.ndarray:
    """Midranks (1-based, ties averaged) of each value from its (B, V) counts."""
    cum = np.cumsum(table, axis=1)
    return cum - table + (table + 1.0) / 2.0


def pearson_w(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Weighted Pearson r per resample; x, y: (K,) or (B, K). NaN when undefined.

    Undefinedness (a constant side) must be decided by the caller from value tables;
    here a zero variance also gives NaN.
    """
    w = np.atleast_2d(w)
    s = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = (w * x).sum(axis=1) / s
        my = (w * y).sum(axis=1) / s
        dx = x - mx[:, None]
        dy = y - my[:, None]
        sxy = (w * dx * dy).sum(axis=1)
        sxx = (w * dx * dx).sum(axis=1)
        syy = (w * dy * dy).sum(axis=1)
        r = sxy / np.sqrt(sxx * syy)
    r = np.clip(r, -1.0, 1.0)
    r[(s < 2) | ~(sxx > 0) | ~(syy > 0)] = np.nan
    return r


def _paired_tables(w, x, y):
    xv, xc = _codes(x)
    yv, yc = _codes(y)
    tx = _value_table(w, xc, xv.size)
    ty = _value_table(w, yc, yv.size)
    return xv, xc, yv, yc, tx, ty


def _undefined_mask(w, tx, ty):
    n = w.sum(axis=1)
    return (n < 2) | ((tx > 0).sum(axis=1) < 2) | ((ty > 0).sum(axis=1) < 2)


def correlations_w(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> dict:
    """Pearson, Spearman and Kendall tau-b per resample from weighted cells.

    w: (B, K) weights of K cells, x, y: (K,) cell values. Returns arrays of shape (B,)
    with NaN where undefined (fewer than 2 items or a constant side).
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    xv, xc, yv, yc, tx, ty = _paired_tables(w, x, y)
    bad = _undefined_mask(w, tx, ty)
    pear = pearson_w(w, x, y)
    # Spearman: Pearson on midranks, ranks computed from the weighted marginals
    rx = _midranks(tx)[:, xc]
    ry = _midranks(ty)[:, yc]
    spear = pearson_w(w, rx, ry)
    # Kendall tau-b from the joint (B, Vx, Vy) table
    joint_code = xc * yv.size + yc
    joint = _value_table(w, joint_code, xv.size * yv.size).reshape(-1, xv.size, yv.size)
    kend = kendall_tau_b_table(joint)
    for arr in (pear, spear, kend):
        arr[bad] = np.nan
    return {"pearson": pear, "spearman": spear, "kendall": kend}


def kendall_tau_b_table(table: np.ndarray) -> np.ndarray:
    """Kendall tau-b from contingency tables (B, Vx, Vy) (rows, cols sorted)."""
    t = np.asarray(table, dtype=float)
    if t.ndim == 2:
        t = t[None]
    b, vx, vy = t.shape
    # S[i, j] = sum of t[i', j'] with i' > i and j' > j
    rev = t[:, ::-1, ::-1].cumsum(axis=1).cumsum(axis=2)[:, ::-1, ::-1]
    above = np.zeros_like(t)
    above[:, :-1, :-1] = rev[:, 1:, 1:]
    # D[i, j] = sum of t[i', j'] with i' > i and j' < j
    mixed = t[:, ::-1, :].cumsum(axis=1)[:, ::-1, :].cumsum(axis=2)
    below = np.zeros_like(t)
    below[:, :-1, 1:] = mixed[:, 1:, :-1]
    con = (t * above).sum(axis=(1, 2))
    dis = (t * below).sum(axis=(1, 2))
    n = t.sum(axis=(1, 2))
    rows = t.sum(axis=2)
    cols = t.sum(axis=1)
    tot = n * (n - 1) / 2
    xtie = (rows * (rows - 1) / 2).sum(axis=1)
    ytie = (cols * (cols - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (con - dis) / np.sqrt((tot - xtie) * (tot - ytie))
    tau[~((tot - xtie) > 0) | ~((tot - ytie) > 0)] = np.nan
    return np.clip(tau, -1.0, 1.0)


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


# ---------------------------------------------------------------------------
# Krippendorff's alpha via coincidence matrices
# ---------------------------------------------------------------------------


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
    nv = o.sum(axis=2)  # (B, V)
    n = nv.sum(axis=1)
    if level == "interval":
        d = np.broadcast_to((v[:, None] - v[None, :]) ** 2, o.shape)
    else:
        cum = np.cumsum(nv, axis=1)
        g = cum[:, None, :] - cum[:, :, None] + (nv[:, :, None] - nv[:, None, :]) / 2
        d = g**2
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = (o * d).sum(axis=(1, 2))
        expected = (nv[:, :, None] * nv[:, None, :] * d).sum(axis=(1, 2)) / (n - 1)
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

    weights: (B, n) item weights (e.g. :func:`bootstrap_weights`); returns (B,) alphas
    (NaN where undefined). Without weights returns a 0-d array.
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
    return _finite(alpha_from_counts(counts, level, values=values))


# ---------------------------------------------------------------------------
# Pairwise agreement between raters
# ---------------------------------------------------------------------------


def _pair_vectors(counts: np.ndarray, values: np.ndarray):
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
    pairs, exact, within = _pair_vectors(counts, values)
    total = pairs.sum()
    out = {"n_pairs": int(total), "n_items": int((pairs > 0).sum())}
    out["exact"] = float(exact.sum() / total) if total > 0 else None
    out["within1"] = float(within.sum() / total) if total > 0 else None
    return out


# ---------------------------------------------------------------------------
# Scalar convenience wrappers (point estimates on raw vectors)
# ---------------------------------------------------------------------------


def _paired_point(x, y):
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    if x.size == 0:
        return None
    # collapse identical (x, y) pairs into weighted cells
    pairs, counts = np.unique(np.stack([x, y], axis=1), axis=0, return_counts=True)
    return correlations_w(counts[None].astype(float), pairs[:, 0], pairs[:, 1])


def spearman(x, y) -> float | None:
    r = _paired_point(x, y)
    return None if r is None else _finite(r["spearman"][0])


def kendall_tau_b(x, y) -> float | None:
    r = _paired_point(x, y)
    return None if r is None else _finite(r["kendall"][0])


def pearson(x, y) -> float | None:
    r = _paired_point(x, y)
    return None if r is None else _finite(r["pearson"][0])


def confusion_matrix(a, b, values: np.ndarray = VALUES) -> np.ndarray:
    """(V, V) counts: rows = a's value, columns = b's value."""
    v = np.asarray(values, dtype=float)
    ia = np.searchsorted(v, np.asarray(a, dtype=float))
    ib = np.searchsorted(v, np.asarray(b, dtype=float))
    return np.bincount(ia * v.size + ib, minlength=v.size**2).reshape(v.size, v.size)


def quadratic_kappa(a, b, values: np.ndarray = VALUES) -> float | None:
    """Quadratic-weighted kappa with weights on the 1..5 scale values.

    Equals sklearn's cohen_kappa_score(a, b, weights="quadratic", labels=values).
    """
    if len(a) == 0:
        return None
    return _finite(qwk_table(confusion_matrix(a, b, values)[None], values)[0])


# ---------------------------------------------------------------------------
# Judge vs humans, on paired vectors
# ---------------------------------------------------------------------------


def judge_vs_human(
    judge,
    human_mean,
    human_median_rounded,
    n_boot: int = 1000,
    seed: int = 0,
    item_weights: np.ndarray | None = None,
) -> dict:
    """Judge score vs the human mean / rounded human median, with bootstrap CIs.

    Items are resampled with replacement: by default a multinomial draw over the
    distinct (judge, mean, median) cells; pass ``item_weights`` (B, n), e.g. from
    :func:`bootstrap_weights`, to use explicit resamples instead.
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
    raw = _judge_stats_w(w, cells[:, 0], cells[:, 1], cells[:, 2])
    return _judge_results(raw, len(j))


def _judge_stats_w(w, judge, hmean, hround) -> dict:
    """All judge-vs-human statistics for cell weights w (B, K)."""
    out = correlations_w(w, judge, hmean)
    jc = np.searchsorted(VALUES, judge)
    rc = np.searchsorted(VALUES, hround)
    conf = _value_table(w, jc * 5 + rc, 25).reshape(-1, 5, 5)
    out["qwk"] = qwk_table(conf)
    n = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["exact"] = (w @ (judge == hround).astype(float)) / n
        out["within1"] = (w @ (np.abs(judge - hround) <= 1).astype(float)) / n
        out["leniency"] = (w @ (judge - hmean)) / n
        out["mae"] = (w @ np.abs(judge - hmean)) / n
    out["confusion"] = conf[0].astype(int)
    out["n"] = n
    return out


_JUDGE_WHY = {
    "pearson": "fewer than 2 items or a constant side",
    "spearman": "fewer than 2 items or a constant side",
    "kendall": "fewer than 2 items or a constant side",
    "qwk": "no expected disagreement (one shared category)",
    "exact": "no items",
    "within1": "no items",
    "leniency": "no items",
    "mae": "no items",
}


def _judge_results(raw: dict, n: int) -> dict:
    res = {
        k: make_result(raw[k][0], raw[k][1:], n, why) for k, why in _JUDGE_WHY.items()
    }
    res["confusion"] = raw["confusion"]
    return res


# ---------------------------------------------------------------------------
# Model level
# ---------------------------------------------------------------------------


def _rank_rows(x: np.ndarray) -> np.ndarray:
    """Midranks along the last axis of (B, M)."""
    less = (x[:, None, :] < x[:, :, None]).sum(axis=2)
    equal = (x[:, None, :] == x[:, :, None]).sum(axis=2)
    return less + (equal + 1) / 2


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
    tot = m * (m - 1) / 2
    tx = (sx == 0).sum(axis=(1, 2)) - m  # ordered pairs, minus the diagonal
    ty = (sy == 0).sum(axis=(1, 2)) - m
    with np.errstate(invalid="ignore", divide="ignore"):
        kend = s / np.sqrt((tot - tx / 2) * (tot - ty / 2))
    kend[~((tot - tx / 2) > 0) | ~((tot - ty / 2) > 0)] = np.nan
    kend = np.clip(kend, -1, 1)
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


# ---------------------------------------------------------------------------
# The full report for one group of items (a skill, an ability or everything)
# ---------------------------------------------------------------------------


@dataclass
class GroupItems:
    """Items of one skill: human score counts per value 1..5, judge score, model.

    human_counts: (n, 5) ints, numeric human scores only; judge: (n,) 1..5 or 0 when
    the judge gave no numeric score; model: (n,) int codes; human_na: (n,) N/A counts
    from humans; judge_na: (n,) bool, the judge answered N/A.
    """

    human_counts: np.ndarray
    judge: np.ndarray
    model: np.ndarray | None = None
    human_na: np.ndarray | None = None
    judge_na: np.ndarray | None = None

    @staticmethod
    def concat(groups: list[GroupItems]) -> GroupItems:
        def cat(name, default):
            parts = []
            for g in groups:
                v = getattr(g, name)
                parts.append(default(len(g.judge)) if v is None else np.asarray(v))
            return np.concatenate(parts)

        return GroupItems(
            np.concatenate([np.asarray(g.human_counts) for g in groups]),
            np.concatenate([np.asarray(g.judge) for g in groups]),
            cat("model", lambda n: np.zeros(n, int)),
            cat("human_na", lambda n: np.zeros(n, int)),
            cat("judge_na", lambda n: np.zeros(n, bool)),
        )


@dataclass
class Report:
    """One group's statistics (values are :class:`Result` unless noted).

    counts: items, scored_by_both, human_only, judge_only, human_scores, human_na,
        judge_na (ints; only items scored numerically by both sides are used).
    human: n_items, n_items_multi_rated (ints); alpha_ordinal, alpha_interval
        (Krippendorff, all human raters, missing allowed); exact, within1 (pooled
        over all human rater pairs within an item; n = number of pairs).
    judge: pearson, spearman, kendall (tau-b) of judge vs human mean; qwk, exact,
        within1 vs the human median rounded half up; leniency = mean(judge - human
        mean), mae; confusion (5x5 ndarray, rows judge 1-5, columns rounded median
        1-5); alpha_{level}_with_judge (humans + judge as one more rater) and
        alpha_{level}_gain (with judge minus humans alone, same resamples).
    models: models = list of {model, n, human_mean, judge_mean} (means over items of
        the item's human mean / judge score); spearman, kendall of the models' order.
    """

    counts: dict
    human: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)


def _profile_medians(hc: np.ndarray) -> np.ndarray:
    """Median of each profile's human scores, from its counts (K, 5)."""
    m = hc.sum(axis=1)
    cum = np.cumsum(hc, axis=1)
    lo_rank = (m - 1) // 2  # 0-based order statistics
    hi_rank = m // 2
    lo = VALUES[(cum <= lo_rank[:, None]).sum(axis=1)]
    hi = VALUES[(cum <= hi_rank[:, None]).sum(axis=1)]
    return (lo + hi) / 2


def round_half_up(x) -> np.ndarray:
    """The rounding used for the human median (2.5 -> 3, 3.5 -> 4)."""
    return np.floor(np.asarray(x, dtype=float) + 0.5)


@dataclass
class Cells:
    """A group's used items collapsed into (model, human counts, judge) cells."""

    key: np.ndarray  # (K, 7): model, counts of 1..5, judge
    n: np.ndarray  # (K,) items per cell
    inv: np.ndarray  # (n_used,) cell of each used item
    counts: dict  # item / N/A bookkeeping


def _cell_codes(key: np.ndarray) -> np.ndarray:
    """One int64 code per row of a non-negative int matrix (mixed radix)."""
    code = np.zeros(len(key), dtype=np.int64)
    for col in key.T:
        radix = int(col.max()) + 1 if len(col) else 1
        code = code * radix + col
    return code


def group_cells(items: GroupItems) -> Cells:
    """Keep items scored by both sides; collapse them into cells; count the rest."""
    hc_all = np.asarray(items.human_counts, dtype=np.int64)
    judge_all = np.asarray(items.judge, dtype=np.int64)
    n_all = len(judge_all)
    model_all = (
        np.zeros(n_all, np.int64)
        if items.model is None
        else np.asarray(items.model, dtype=np.int64)
    )
    if hc_all.ndim != 2 or hc_all.shape[1] != 5 or (hc_all < 0).any():
        raise ValueError("human_counts must be (n, 5) non-negative counts of 1..5")
    if ((judge_all < 0) | (judge_all > 5)).any():
        raise ValueError("judge must be 1..5, or 0 for no numeric score")
    if (model_all < 0).any():
        raise ValueError("model codes must be non-negative integers")
    has_h = hc_all.sum(axis=1) > 0
    has_j = judge_all > 0
    both = has_h & has_j
    counts = {
        "items": n_all,
        "scored_by_both": int(both.sum()),
        "human_only": int((has_h & ~has_j).sum()),
        "judge_only": int((~has_h & has_j).sum()),
        "human_scores": int(hc_all[both].sum()),
        "human_na": int(0 if items.human_na is None else np.sum(items.human_na)),
        "judge_na": int(0 if items.judge_na is None else np.sum(items.judge_na)),
    }
    key = np.column_stack([model_all, hc_all, judge_all])[both]
    _, first, inv, cell_n = np.unique(
        _cell_codes(key), return_index=True, return_inverse=True, return_counts=True
    )
    return Cells(key[first], cell_n, inv.ravel(), counts)


@dataclass
class Projected:
    """A group's resample weights, reduced to what the statistics need.

    prof: (P, 6) distinct (human counts of 1..5, judge) profiles; w: (B+1, P) weight
    of each profile, row 0 = the sample itself, rows 1.. = bootstrap resamples;
    models: (M,) model codes; m_n, m_h, m_j: (B+1, M) per model item count, sum of
    human means and sum of judge scores.
    """

    prof: np.ndarray
    w: np.ndarray
    models: np.ndarray
    m_n: np.ndarray
    m_h: np.ndarray
    m_j: np.ndarray
    counts: dict


def _cell_layout(key: np.ndarray):
    """Profile and model index of each cell, plus its human mean and judge score."""
    _, pfirst, pinv = np.unique(
        _cell_codes(key[:, 1:]), return_index=True, return_inverse=True
    )
    models, minv = np.unique(key[:, 0], return_inverse=True)
    hc = key[:, 1:6].astype(float)
    mean = (hc @ VALUES) / np.maximum(hc.sum(axis=1), 1)
    return key[pfirst, 1:], pinv.ravel(), models, minv.ravel(), mean, key[:, 6] * 1.0


def _project_dense(cw, pinv, n_prof, minv, n_models, mean, judge):
    """Cell weights (B, K) -> profile weights (B, P) and per-model sums (B, M) x 3."""
    k = len(pinv)
    q = np.zeros((k, n_prof + 3 * n_models))
    r = np.arange(k)
    q[r, pinv] = 1.0
    q[r, n_prof + minv] = 1.0
    q[r, n_prof + n_models + minv] = mean
    q[r, n_prof + 2 * n_models + minv] = judge
    out = np.atleast_2d(cw) @ q
    m = n_models
    return (
        out[:, :n_prof],
        out[:, n_prof : n_prof + m],
        out[:, n_prof + m : n_prof + 2 * m],
        out[:, n_prof + 2 * m :],
    )


def project(
    key: np.ndarray,
    cell_n: np.ndarray,
    counts: dict,
    n_boot: int = 1000,
    seed: int = 0,
    boot: np.ndarray | None = None,
    small: int = 2,
) -> Projected:
    """Draw (or take) bootstrap weights of cells and project them (see Projected).

    Without ``boot`` the resamples are drawn exactly as a multinomial(n, cell_n / n)
    over cells without ever forming the (B, K) cell matrix: cells holding at most
    ``small`` items are drawn item by item (the number of draws falling on them is
    binomial; then one random integer per draw), the larger cells through numpy's
    multinomial (one binomial per cell); both are accumulated straight into the
    profile and model tables.
    """
    prof, pinv, models, minv, mean, judge = _cell_layout(key)
    n_p, n_m = len(prof), len(models)
    point = _project_dense(cell_n[None] * 1.0, pinv, n_p, minv, n_m, mean, judge)
    if boot is not None:
        parts = _project_dense(boot, pinv, n_p, minv, n_m, mean, judge)
    else:
        parts = _draw_projected(
            cell_n, n_boot, seed, small, pinv, n_p, minv, n_m, mean, judge
        )
    w, mn, mh, mj = (np.vstack([a, b]) for a, b in zip(point, parts, strict=True))
    return Projected(prof, w, models, mn, mh, mj, counts)


def _draw_projected(cell_n, n_boot, seed, small, pinv, n_p, minv, n_m, mean, judge):
    cell_n = np.asarray(cell_n, dtype=np.int64)
    n = int(cell_n.sum())
    rng = np.random.default_rng(seed)
    w = np.zeros((n_boot, n_p))
    mn = np.zeros((n_boot, n_m))
    mh = np.zeros((n_boot, n_m))
    mj = np.zeros((n_boot, n_m))
    if n == 0 or n_boot == 0:
        return w, mn, mh, mj
    is_small = cell_n <= small
    small_cells = np.flatnonzero(is_small)
    big_cells = np.flatnonzero(~is_small)
    s = int(cell_n[small_cells].sum())
    m = rng.binomial(n, s / n, size=n_boot) if s < n else np.full(n_boot, n)
    if s > 0:
        item_cell = np.repeat(small_cells, cell_n[small_cells]).astype(np.int32)
        picks = item_cell[rng.integers(0, s, size=int(m.sum()), dtype=np.int32)]
        rows = np.repeat(np.arange(n_boot, dtype=np.int64), m)
        w += np.bincount(rows * n_p + pinv[picks], minlength=n_boot * n_p).reshape(
            n_boot, n_p
        )
        mrow = rows * n_m + minv[picks]
        size = n_boot * n_m
        mn += np.bincount(mrow, minlength=size).reshape(n_boot, n_m)
        mh += np.bincount(mrow, weights=mean[picks], minlength=size).reshape(
            n_boot, n_m
        )
        mj += np.bincount(mrow, weights=judge[picks], minlength=size).reshape(
            n_boot, n_m
        )
    if len(big_cells):
        draws = rng.multinomial(n - m, cell_n[big_cells] / (n - s)).astype(float)
        bw, bn, bh, bj = _project_dense(
            draws,
            pinv[big_cells],
            n_p,
            minv[big_cells],
            n_m,
            mean[big_cells],
            judge[big_cells],
        )
        w += bw
        mn += bn
        mh += bh
        mj += bj
    return w, mn, mh, mj


def agreement_report(
    items: GroupItems,
    n_boot: int = 1000,
    seed: int = 0,
    item_weights: np.ndarray | None = None,
) -> Report:
    """Every statistic of the issue for one group of items, with bootstrap CIs.

    Only items scored numerically by the judge and at least one human are used.
    The bootstrap resamples those items (all statistics share the same resamples, so
    e.g. the alpha gain from adding the judge has a valid CI); ``item_weights``
    (B, n_used) replaces the random draw with explicit resamples.
    """
    cells = group_cells(items)
    boot = None
    if item_weights is not None:
        boot = aggregate_weights(item_weights, cells.inv, len(cells.n))
    proj = project(cells.key, cells.n, cells.counts, n_boot, seed, boot=boot)
    return report_from_projection(proj)


def report_from_projection(proj: Projected) -> Report:
    """All statistics of one group from its projected resample weights."""
    rep = Report(proj.counts)
    w = proj.w
    prof = proj.prof
    if len(prof) == 0:  # no items: one empty profile keeps every shape non-empty
        prof = np.array([[1, 0, 0, 0, 0, 1]])
        w = np.zeros((w.shape[0], 1))
    n = int(round(w[0].sum()))
    p_hc = prof[:, :5].astype(float)
    p_judge = prof[:, 5].astype(float)
    m = p_hc.sum(axis=1)
    p_mean = (p_hc @ VALUES) / np.maximum(m, 1)
    p_round = round_half_up(_profile_medians(p_hc))

    # human-human
    n_multi = int(round(w[0] @ (m >= 2)))
    co_h = item_coincidences(p_hc).reshape(len(prof), 25)
    o_h = (w @ co_h).reshape(-1, 5, 5)
    pairs, exact, within = _pair_vectors(p_hc, VALUES)
    with np.errstate(invalid="ignore", divide="ignore"):
        ex = (w @ exact) / (w @ pairs)
        wi = (w @ within) / (w @ pairs)
    why_alpha = "needs items with 2+ human scores and 2+ distinct values"
    n_pairs = int(round(w[0] @ pairs))
    rep.human["n_items"] = n
    rep.human["n_items_multi_rated"] = n_multi
    alphas = {}
    for level in LEVELS:
        alphas[level] = alpha_from_coincidence(o_h, level)
        rep.human[f"alpha_{level}"] = make_result(
            alphas[level][0], alphas[level][1:], n_multi, why_alpha
        )
    rep.human["exact"] = make_result(ex[0], ex[1:], n_pairs, "no rater pairs")
    rep.human["within1"] = make_result(wi[0], wi[1:], n_pairs, "no rater pairs")

    # judge vs humans
    raw = _judge_stats_w(w, p_judge, p_mean, p_round)
    rep.judge.update(_judge_results(raw, n))
    # judge as one more rater
    with_j = p_hc.copy()
    with_j[np.arange(len(prof)), np.searchsorted(VALUES, p_judge)] += 1
    o_hj = (w @ item_coincidences(with_j).reshape(len(prof), 25)).reshape(-1, 5, 5)
    for level in LEVELS:
        a = alpha_from_coincidence(o_hj, level)
        rep.judge[f"alpha_{level}_with_judge"] = make_result(a[0], a[1:], n, why_alpha)
        gain = a - alphas[level]
        rep.judge[f"alpha_{level}_gain"] = make_result(
            gain[0], gain[1:], n, "alpha undefined with or without the judge"
        )

    # model level: per-model means and rank agreement
    models = proj.models
    n_m = proj.m_n
    with np.errstate(invalid="ignore", divide="ignore"):
        h_m = proj.m_h / n_m
        j_m = proj.m_j / n_m
    rc = rank_correlations_rows(h_m, j_m)
    rep.models["models"] = [
        {
            "model": int(mod),
            "n": int(round(n_m[0, i])),
            "human_mean": make_result(h_m[0, i], h_m[1:, i], int(round(n_m[0, i]))),
            "judge_mean": make_result(j_m[0, i], j_m[1:, i], int(round(n_m[0, i]))),
        }
        for i, mod in enumerate(models)
    ]
    why = "fewer than 2 models or all models tied"
    for k in ("spearman", "kendall"):
        rep.models[k] = make_result(rc[k][0], rc[k][1:], len(models), why)
    return rep


def agreement_table(
    skills: dict[str, GroupItems],
    abilities: dict[str, list[str]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    workers: int = 1,
) -> dict[str, Report]:
    """Reports per skill, per primary ability (its skills pooled) and overall.

    Items are resampled within each skill; an ability's or the overall resample is
    the union of its skills' resamples (a bootstrap stratified by skill, which keeps
    each skill's item count fixed, as in the evaluation design). The draws are made
    once per skill and reused, so pooled groups cost no extra random numbers.
    ``workers`` > 1 computes groups in that many threads (numpy releases the GIL in
    the heavy loops); the result is identical, since each skill has its own seed.
    """
    names = list(skills)

    def skill_part(i: int):
        cells = group_cells(skills[names[i]])
        proj = project(cells.key, cells.n, cells.counts, n_boot, seed + i)
        return proj, report_from_projection(proj)

    groups = [(f"ability:{a}", ks) for a, ks in (abilities or {}).items()]
    groups.append(("overall", names))

    def pooled_part(group):
        label, keys = group
        parts = [projected[s] for s in keys if s in projected]
        return label, report_from_projection(pool_projections(parts, n_boot))

    out: dict[str, Report] = {}
    projected: dict[str, Projected] = {}
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(skill_part, range(len(names))))
            for name, (proj, rep) in zip(names, done, strict=True):
                projected[name] = proj
                out[f"skill:{name}"] = rep
            pooled = list(pool.map(pooled_part, groups))
    else:
        for i, name in enumerate(names):
            projected[name], out[f"skill:{name}"] = skill_part(i)
        pooled = [pooled_part(g) for g in groups]
    for label, rep in pooled:
        out[label] = rep
    return out


def pool_projections(parts: list[Projected], n_boot: int) -> Projected:
    """The union of several groups' items (and of their resamples)."""
    if not parts:
        z = np.zeros((n_boot + 1, 0))
        return Projected(
            np.zeros((0, 6), np.int64), z, np.zeros(0, np.int64), z, z, z, {}
        )
    profs = np.concatenate([p.prof for p in parts])
    _, first, pinv = np.unique(
        _cell_codes(profs), return_index=True, return_inverse=True
    )
    pinv = pinv.ravel()
    models = np.unique(np.concatenate([p.models for p in parts]))
    w = np.zeros((parts[0].w.shape[0], len(first)))
    mn, mh, mj = (np.zeros((w.shape[0], len(models))) for _ in range(3))
    counts: dict = {}
    start = 0
    for p in parts:
        code = pinv[start : start + len(p.prof)]  # distinct within one part
        start += len(p.prof)
        w[:, code] += p.w
        mcode = np.searchsorted(models, p.models)
        mn[:, mcode] += p.m_n
        mh[:, mcode] += p.m_h
        mj[:, mcode] += p.m_j
        for key, v in p.counts.items():
            counts[key] = counts.get(key, 0) + v
    return Projected(profs[first], w, models, mn, mh, mj, counts)
