"""Skill profiles: mean score per (source, model, row) with a bootstrap clustered by
instruction, the models' ranks and the probability of each pairwise order.

Pure numpy, no Django. Conventions:

* An *item* is one (response, criterion) value of one source (a judge run's score, or
  the mean of the raters' numeric scores). A cell's mean is over the items the source
  scored in it (FLASK's aggregation): every source has its own n.
* Rows: each criterion, each group of criteria (a FLASK ability or a rubric group)
  and overall. A pooled row is item-weighted: the sum of its criteria's values over
  the sum of their items. When its criteria are on different scales (``normalised``)
  every value is first mapped to 0..1 on its criterion's scale, (value - low) /
  (high - low); this is linear, so it is applied to sums: sum - n * low over span.
* The cluster bootstrap: a resample draws I instructions with replacement from the
  I instructions given (all of an instruction's responses, criteria and sources come
  along), so the models' means inside one resample are as correlated as the data
  make them. Resample b is the weight vector ``w[b] = bincount(idx[b], minlength=I)``
  with ``idx = analysis.stats.bootstrap.bootstrap_indices(I, B, seed)``: one matrix
  product (B, I) @ (I, S * M * C) of per-instruction sums and counts gives every
  resampled sum and count. A cell whose instructions were all left out of a resample
  is undefined there (NaN) and left out of its interval.
* Intervals are percentile 95% intervals (:func:`analysis.stats.results.
  percentile_intervals`). Ranks: 1 = highest mean, ties share their average rank,
  among the models with a mean (a tie as :func:`analysis.stats.ranks.tie_safe`: means
  equal up to float rounding). ``above[i, j]`` is the share of the resamples (where
  both are defined) in which model i's mean exceeds model j's, a tie counting half;
  so above[i, j] + above[j, i] = 1 and a model's mean resampled rank is
  1 + sum_j above[j, i].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from analysis.stats.bootstrap import bootstrap_indices, indices_to_weights
from analysis.stats.ranks import ranks_high_first, tie_safe
from analysis.stats.results import percentile_intervals

NOT_ENOUGH_MODELS = "not enough models: a ranking needs 2 models with a mean"


def instruction_totals(
    instruction: np.ndarray,
    model: np.ndarray,
    criterion: np.ndarray,
    values: np.ndarray,
    shape: tuple[int, int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """(sums, counts), each (I, M, C), of one source's item `values` by instruction,
    model and criterion index (`shape` = (I, M, C))."""
    n_i, n_m, n_c = shape
    flat = (
        np.asarray(instruction, np.int64) * n_m + np.asarray(model, np.int64)
    ) * n_c + np.asarray(criterion, np.int64)
    size = n_i * n_m * n_c
    sums = np.bincount(flat, weights=np.asarray(values, float), minlength=size)
    counts = np.bincount(flat, minlength=size).astype(float)
    return sums.reshape(shape), counts.reshape(shape)


def row_matrices(
    members: list[list[int]],
    normalised: list[bool],
    low: np.ndarray,
    span: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(A_sum, A_count_in_sum, A_count), each (C, R): a row's sum is ``sums @ A_sum +
    counts @ A_count_in_sum`` and its count ``counts @ A_count``, for criteria sums
    and counts (..., C). `members[r]`: the criteria of row r; `normalised[r]`: map
    its values to 0..1 with each criterion's `low` and `span` (high - low)."""
    n_c, n_r = len(low), len(members)
    a_sum, a_off, a_n = (np.zeros((n_c, n_r)) for _ in range(3))
    for r, (crit, norm) in enumerate(zip(members, normalised, strict=True)):
        crit = np.asarray(crit, np.int64)
        a_n[crit, r] = 1.0
        if norm:
            a_sum[crit, r] = 1.0 / span[crit]
            a_off[crit, r] = -low[crit] / span[crit]
        else:
            a_sum[crit, r] = 1.0
    return a_sum, a_off, a_n


def instruction_weights(n_instructions: int, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot, I) float counts of each instruction in each resample (module doc)."""
    if n_boot == 0 or n_instructions == 0:
        return np.zeros((n_boot, n_instructions))
    idx = bootstrap_indices(n_instructions, n_boot, seed)
    return indices_to_weights(idx, n_instructions).astype(float)


def order_probabilities(boot: np.ndarray) -> np.ndarray:
    """(..., M, M) share of the resamples with model i above model j (ties half, as
    :func:`analysis.stats.ranks.tie_safe`), over those where both are defined (NaN
    if none; the diagonal is NaN), from resampled means `boot` (B, ..., M)."""
    boot = tie_safe(boot)
    m = boot.shape[-1]
    out_shape = boot.shape[1:] + (m,)
    if boot.shape[0] == 0:
        return np.full(out_shape, np.nan)
    score = np.zeros(out_shape)
    both = np.zeros(out_shape)
    for row in boot:  # one resample at a time: memory of one (..., M, M)
        a, b = row[..., :, None], row[..., None, :]
        score += (a > b) + 0.5 * (a == b)
        both += np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(both > 0, score / np.maximum(both, 1), np.nan)
    p[..., np.arange(m), np.arange(m)] = np.nan
    return p


def cluster_boot(
    sums: np.ndarray,
    counts: np.ndarray,
    members: list[list[int]],
    normalised: list[bool],
    low: np.ndarray,
    span: np.ndarray,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """(B, S, R, M) resampled means (NaN where a cell has no item in a resample) of
    S sources from their (S, I, M, C) `sums` and `counts`: the weights of
    :func:`instruction_weights` (`seed`) in one matrix product for every source,
    model and criterion, then the rows (:func:`row_matrices`) in resample space."""
    sums, counts = np.asarray(sums, float), np.asarray(counts, float)
    n_s, n_i, n_m, n_c = sums.shape
    a_sum, a_off, a_n = row_matrices(members, normalised, low, span)
    w = instruction_weights(n_i, n_boot, seed)  # (B, I)
    # (I, 2 * S*M*C) columns: every source's sums, then its counts.
    cols = np.concatenate(
        [
            sums.transpose(1, 0, 2, 3).reshape(n_i, -1),
            counts.transpose(1, 0, 2, 3).reshape(n_i, -1),
        ],
        axis=1,
    )
    drawn = w @ cols
    half = n_s * n_m * n_c
    b_sums = drawn[:, :half].reshape(n_boot, n_s, n_m, n_c)
    b_counts = drawn[:, half:].reshape(n_boot, n_s, n_m, n_c)
    row_sums = b_sums @ a_sum + b_counts @ a_off
    row_counts = b_counts @ a_n
    with np.errstate(invalid="ignore", divide="ignore"):
        boot = np.where(
            row_counts > 0, row_sums / np.maximum(row_counts, 1), np.nan
        )  # (B, S, M, R)
    return boot.transpose(0, 1, 3, 2)


@dataclass(frozen=True)
class Profiles:
    """Every figure, indexed (source, row, model); ``above`` (S, R, M, M)."""

    mean: np.ndarray  # NaN = no item
    ci_low: np.ndarray  # NaN = no interval
    ci_high: np.ndarray
    n: np.ndarray  # items (int)
    n_instructions: np.ndarray  # instructions with at least one item (int)
    rank: np.ndarray  # NaN = unranked (no mean, or fewer than 2 models with one)
    rank_low: np.ndarray  # percentile interval of the resampled ranks
    rank_high: np.ndarray
    above: np.ndarray  # P(model i above model j), NaN when undefined
    n_boot: int
    n_clusters: int  # the instructions resampled (I)


def cluster_profiles(
    sums: np.ndarray,
    counts: np.ndarray,
    members: list[list[int]],
    normalised: list[bool],
    low: np.ndarray,
    span: np.ndarray,
    n_boot: int,
    seed: int,
) -> Profiles:
    """Cluster-bootstrap profiles of S sources from their (S, I, M, C) `sums` and
    `counts` (:func:`instruction_totals` per source, the same I instructions for
    all). Rows from `members` / `normalised` (:func:`row_matrices`). One draw of
    instruction weights (`seed`) serves every source, model and row."""
    sums, counts = np.asarray(sums, float), np.asarray(counts, float)
    n_s, n_i, n_m, n_c = sums.shape
    a_sum, a_off, a_n = row_matrices(members, normalised, low, span)

    row_n = counts @ a_n  # (S, I, M, R)
    n = row_n.sum(axis=1)  # (S, M, R)
    n_instr = (row_n > 0).sum(axis=1)
    s_tot = sums.sum(axis=1) @ a_sum + counts.sum(axis=1) @ a_off
    c_tot = counts.sum(axis=1) @ a_n
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(c_tot > 0, s_tot / np.maximum(c_tot, 1), np.nan)
    boot = cluster_boot(
        sums, counts, members, normalised, low, span, n_boot, seed
    )  # (B, S, R, M)
    mean = mean.transpose(0, 2, 1)  # (S, R, M)
    n, n_instr = n.transpose(0, 2, 1), n_instr.transpose(0, 2, 1)
    lo, hi = np.full(mean.shape, np.nan), np.full(mean.shape, np.nan)
    if n_boot:
        flat_lo, flat_hi, _ = percentile_intervals(boot.reshape(n_boot, -1))
        lo, hi = flat_lo.reshape(mean.shape), flat_hi.reshape(mean.shape)
    lo, hi = (
        np.where(np.isfinite(mean), lo, np.nan),
        np.where(np.isfinite(mean), hi, np.nan),
    )
    rankable = np.isfinite(mean).sum(axis=-1, keepdims=True) >= 2
    rank = np.where(rankable, ranks_high_first(mean), np.nan)
    r_lo, r_hi = np.full(mean.shape, np.nan), np.full(mean.shape, np.nan)
    above = np.full(mean.shape + (n_m,), np.nan)
    if n_boot:
        boot_rank = ranks_high_first(boot)  # (B, S, R, M)
        flat_lo, flat_hi, _ = percentile_intervals(boot_rank.reshape(n_boot, -1))
        r_lo = np.where(np.isnan(rank), np.nan, flat_lo.reshape(mean.shape))
        r_hi = np.where(np.isnan(rank), np.nan, flat_hi.reshape(mean.shape))
        above = order_probabilities(boot)
        defined = np.isfinite(mean)
        above = np.where(
            rankable[..., None] & defined[..., :, None] & defined[..., None, :],
            above,
            np.nan,
        )
    return Profiles(
        mean=mean,
        ci_low=lo,
        ci_high=hi,
        n=n.astype(np.int64),
        n_instructions=n_instr.astype(np.int64),
        rank=rank,
        rank_low=r_lo,
        rank_high=r_hi,
        above=above,
        n_boot=n_boot,
        n_clusters=n_i,
    )
