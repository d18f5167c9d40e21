"""Pairwise leaderboards: Bradley-Terry ratings from votes, pure numpy.

Input: vote groups
------------------
Parallel arrays, one entry per group of identical votes (one vote per entry is fine):
``model_1`` / ``model_2`` (indices into ``models``, the model of response 1 / 2),
``outcome`` (codes of :func:`analysis.stats.pairwise.encode_labels`: 0 = response 1
won, 1 = response 2 won, 2 = tie), ``count`` (votes in the group) and, for length
control, ``length_1`` / ``length_2`` (the responses' lengths, e.g. characters). A vote
between two responses of the same model says nothing about the ranking: it is left
out (``self_votes``).

Conventions
-----------
* Model: P(i beats j) = sigmoid(theta_i - theta_j). **Ties count as half a win to
  each side** (not the Davidson extension): a vote's outcome for its first model is
  y = 1, 0 or 1/2 and its log-likelihood ``y log p + (1 - y) log(1 - p)``; on counts,
  the (i, j) "wins" are wins plus half the ties. Same estimate as choix on the data
  where every vote is written twice (a win as two wins, a tie as one win each way).
* Fit: Newton's method on the cells, all resamples at once, maximising the
  log-likelihood minus ``PRIOR * ||theta||^2`` (choix's ``opt_pairwise`` penalty at
  its default strength 1e-6, i.e. the maximum-likelihood estimate to ~1e-6). The
  prior only matters when a model won, or lost, every one of its votes: the ML
  rating is then infinite and the prior keeps it finite; such models are listed in
  ``unbounded`` so nobody reads that rating as a number.
* Ratings: ``400 / ln 10 * theta + 1000`` with theta centred, so the mean rating is
  exactly 1000 and 400 points are odds of 10 to 1 (the Elo / Chatbot Arena scale).
* Rank: 1 + the number of models rated strictly higher. ``p_above[i, j]``: the share
  of bootstrap resamples where model i is rated above model j. Ratings equal up to
  float rounding are equal (:func:`analysis.stats.ranks.tie_safe`): two models with
  the same record against the same opponents share a rank.
* Win rate ``win_rate[i, j]``: (wins of i over j + ties / 2) / votes between them,
  NaN when they never met. Empirical, not the model's prediction.
* Bootstrap: votes resampled with replacement (each resample has as many votes as
  the data); votes collapse into cells (i, j, outcome[, length bin]) and a resample
  is an exact multinomial draw over them
  (:func:`analysis.stats.bootstrap.multinomial_chunks`, generator
  ``numpy.random.default_rng(seed)``); 95% percentile intervals.
* Length control (as the Chatbot Arena's style control): the same logistic model
  with a covariate, ``eta = theta_i - theta_j + beta * d``, d = the normalised length
  difference ``(len_1 - len_2) / (len_1 + len_2)`` (0 when both are empty) rounded to
  1 / ``LENGTH_BINS`` (so votes collapse into cells) and divided by its root mean
  square over the votes (``length_sd``: the standard deviation of the differences
  taken both ways round, so it does not depend on which response is first):
  ``beta`` is the log-odds that the response longer by one such unit wins, and the
  length-controlled ratings are the thetas at equal length.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from analysis.stats.bootstrap import multinomial_chunks, row_codes
from analysis.stats.ranks import rank_correlations_rows, tie_safe
from analysis.stats.results import Result, make_result, percentile_intervals

SCALE = 400.0 / np.log(10.0)
CENTRE = 1000.0
PRIOR = 1e-6
LENGTH_BINS = 50  # d rounded to multiples of 1 / LENGTH_BINS
MAX_ITER = 200
TOL = 1e-10


@dataclass
class Cells:
    """Votes collapsed: cell c compares models a[c] < b[c]; y[c] = 1, 0 or 1/2 is
    the outcome for a; x[c] the standardised length difference (a minus b); count[c]
    its votes. Cells are sorted by (a, b): ``pair_start`` indexes the first cell of
    each of the ``pair_a`` / ``pair_b`` pairs (for ``np.add.reduceat``)."""

    a: np.ndarray
    b: np.ndarray
    y: np.ndarray
    x: np.ndarray
    count: np.ndarray
    pair_a: np.ndarray
    pair_b: np.ndarray
    pair_start: np.ndarray
    n_models: int
    length_sd: float | None = None

    @property
    def n_votes(self) -> int:
        return int(self.count.sum())


def _int_array(name: str, values, n: int | None = None) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or (n is not None and arr.shape[0] != n):
        want = f"one entry per vote group ({n})" if n is not None else "a 1-d array"
        raise ValueError(f"{name} must have {want}, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must hold integers")
    return arr.astype(np.int64)


def vote_cells(
    models,
    model_1,
    model_2,
    outcome,
    count=None,
    length_1=None,
    length_2=None,
) -> tuple[Cells, int]:
    """Vote groups (module doc) -> (cells, votes between two responses of one model).

    Raises ValueError naming the parameter: ``models`` (fewer than 2 models, or a
    model without a vote), ``votes`` (none between two different models),
    ``model_1`` / ``model_2`` / ``outcome`` / ``count`` / ``length_*`` (malformed).
    """
    models = list(models)
    k = len(models)
    if k < 2:
        names = ", ".join(repr(str(m)) for m in models) or "none"
        raise ValueError(
            f"models: a leaderboard needs at least 2 models, got {k} ({names})"
        )
    m1 = _int_array("model_1", model_1)
    n = m1.size
    m2 = _int_array("model_2", model_2, n)
    out = _int_array("outcome", outcome, n)
    cnt = np.ones(n, np.int64) if count is None else _int_array("count", count, n)
    for name, arr in (("model_1", m1), ("model_2", m2)):
        if arr.size and (arr.min() < 0 or arr.max() >= k):
            raise ValueError(f"{name}: model indices must be from 0 to {k - 1}")
    if out.size and (out.min() < 0 or out.max() > 2):
        raise ValueError("outcome: codes must be 0 (1 won), 1 (2 won) or 2 (tie)")
    if cnt.size and cnt.min() < 0:
        raise ValueError("count: vote counts must not be negative")
    with_length = length_1 is not None or length_2 is not None
    if with_length:
        l1 = np.asarray(length_1, dtype=float)
        l2 = np.asarray(length_2, dtype=float)
        if l1.shape != (n,) or l2.shape != (n,):
            raise ValueError("length_1, length_2 must have one entry per vote group")
        if not (np.isfinite(l1).all() and np.isfinite(l2).all()) or (
            n and min(l1.min(), l2.min()) < 0
        ):
            raise ValueError("length_1, length_2 must be finite, non-negative lengths")
    self_votes = int(cnt[m1 == m2].sum())
    keep = (m1 != m2) & (cnt > 0)
    if not keep.any():
        raise ValueError("votes: no vote between two different models")
    m1, m2, out, cnt = m1[keep], m2[keep], out[keep], cnt[keep]
    flip = m1 > m2
    a, b = np.where(flip, m2, m1), np.where(flip, m1, m2)
    # outcome for a: 0 = a won, 1 = b won, 2 = tie
    out = np.where(flip & (out < 2), 1 - out, out)
    bins = np.zeros(a.size, np.int64)
    if with_length:
        l1, l2 = l1[keep], l2[keep]
        tot = l1 + l2
        d = np.where(tot > 0, (l1 - l2) / np.where(tot > 0, tot, 1.0), 0.0)
        d = np.where(flip, -d, d)
        bins = np.rint(d * LENGTH_BINS).astype(np.int64) + LENGTH_BINS
    codes = row_codes([a, b, bins, out])  # a (pair, bin)'s outcomes side by side
    uniq, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    counts = np.bincount(inv.ravel(), weights=cnt, minlength=uniq.size)
    a, b, out, bins = a[first], b[first], out[first], bins[first]
    y = np.array([1.0, 0.0, 0.5])[out]
    x = np.zeros(a.size)
    sd = None
    if with_length:
        raw = (bins - LENGTH_BINS) / LENGTH_BINS
        # The root mean square: the same whichever response of a vote is first.
        sd = float(np.sqrt(counts @ raw**2 / counts.sum()))
        if sd <= 0:
            raise ValueError(
                "length_control: every vote compares responses of equal length; "
                "there is nothing to control for"
            )
        x = raw / sd
    seen = np.bincount(a, weights=counts, minlength=k) + np.bincount(
        b, weights=counts, minlength=k
    )
    if (missing := np.flatnonzero(seen == 0)).size:
        raise ValueError(
            f"models: {str(models[missing[0]])!r} has no vote against another model"
        )
    pair_code = a * k + b
    starts = np.r_[0, np.flatnonzero(np.diff(pair_code)) + 1].astype(np.int64)
    cells = Cells(
        a, b, y, x, counts.astype(np.int64), a[starts], b[starts], starts, k, sd
    )
    return cells, self_votes


def fit(cells: Cells, weights: np.ndarray, length: bool = False):
    """Penalised ML Bradley-Terry fit for each row of ``weights`` (B, cells): the
    counts of the cells in one resample. Returns (theta (B, K) centred, beta (B,)
    the length coefficient, 0 without ``length``). Newton's method, all rows at
    once; rows stop moving when their step is below ``TOL``."""
    w = np.atleast_2d(np.asarray(weights, dtype=float))
    n_rows = w.shape[0]
    k = cells.n_models
    # The likelihood only sees, per (pair, length bin), the votes and the sum of y:
    # Newton runs on those groups (a third of the cells or fewer).
    key = (cells.a * k + cells.b) * (2 * LENGTH_BINS + 1) + np.rint(
        cells.x * (cells.length_sd or 1.0) * LENGTH_BINS
    ).astype(np.int64)
    group_start = np.r_[0, np.flatnonzero(np.diff(key)) + 1]
    ga, gb = cells.a[group_start], cells.b[group_start]
    x = cells.x[group_start]
    wy = np.add.reduceat(w * cells.y, group_start, axis=1)
    w = np.add.reduceat(w, group_start, axis=1)
    gpair = ga * k + gb
    pair_start = np.r_[0, np.flatnonzero(np.diff(gpair)) + 1]
    p_count = pair_start.size
    e = np.zeros((p_count, k))
    e[np.arange(p_count), ga[pair_start]] = 1.0
    e[np.arange(p_count), gb[pair_start]] = -1.0
    dim = k + int(length)
    theta = np.zeros((n_rows, dim))
    ones = np.zeros(dim)
    ones[:k] = 1.0
    null = np.outer(ones, ones) / k  # fixes the direction theta + c (no likelihood)
    eye = 2 * PRIOR * np.eye(dim)
    active = np.arange(n_rows)
    for _ in range(MAX_ITER):
        th = theta[active]
        eta = th[:, ga] - th[:, gb]
        if length:
            eta = eta + th[:, k : k + 1] * x
        p = 1.0 / (1.0 + np.exp(-eta))
        wa = w[active]
        r = wy[active] - wa * p
        q = wa * p * (1.0 - p)
        r_pair = np.add.reduceat(r, pair_start, axis=1)
        q_pair = np.add.reduceat(q, pair_start, axis=1)
        grad = np.zeros((active.size, dim))
        grad[:, :k] = r_pair @ e
        hess = np.zeros((active.size, dim, dim))
        hess[:, :k, :k] = np.einsum("bp,pi,pj->bij", q_pair, e, e)
        if length:
            grad[:, k] = r @ x
            hx = np.add.reduceat(q * x, pair_start, axis=1) @ e
            hess[:, :k, k] = hx
            hess[:, k, :k] = hx
            hess[:, k, k] = q @ (x * x)
        grad -= 2 * PRIOR * th
        step = np.linalg.solve(hess + eye + null, grad[:, :, None])[:, :, 0]
        # A bounded step keeps Newton safe far from the optimum (separated data).
        big = np.abs(step).max(axis=1, keepdims=True)
        step = step * np.minimum(1.0, 3.0 / np.maximum(big, 1e-300))
        theta[active] = th + step
        active = active[big[:, 0] > TOL]
        if not active.size:
            break
    theta[:, :k] -= theta[:, :k].mean(axis=1, keepdims=True)
    beta = theta[:, k] if length else np.zeros(n_rows)
    return theta[:, :k], beta


def ratings(theta: np.ndarray) -> np.ndarray:
    """Centred thetas on the Elo-like scale (mean 1000, 400 points = 10:1 odds)."""
    return SCALE * np.asarray(theta) + CENTRE


def resample_blocks(
    cells: Cells, n_boot: int, seed: int, max_entries: int = 2_000_000
) -> Iterator[np.ndarray]:
    """The bootstrap's cell counts, in blocks of resamples: (b, cells) float arrays,
    cells in ``cells`` order, n_boot rows in all (module doc). Equal seeds give
    equal resamples."""
    rng = np.random.default_rng(seed)
    order, blocks = multinomial_chunks(cells.count, n_boot, rng, max_entries)
    for block in blocks:
        w = np.empty((block.shape[1], cells.count.size))
        w[:, order] = block.T
        yield w


def ranks_of(theta: np.ndarray) -> np.ndarray:
    """(B, K) ranks: 1 + the number of models with a strictly higher theta (ties as
    :func:`analysis.stats.ranks.tie_safe`: thetas equal up to float rounding)."""
    theta = tie_safe(np.atleast_2d(theta))
    return 1 + (theta[:, None, :] > theta[:, :, None]).sum(axis=2)


@dataclass
class Leaderboard:
    """A fitted leaderboard (module doc). Arrays are per model, in ``models`` order;
    ``theta_rows`` (B + 1, K): row 0 the data, rows 1.. the resamples."""

    models: list[str]
    theta_rows: np.ndarray
    rating: list[Result]
    rank: np.ndarray
    rank_ci: np.ndarray  # (K, 2)
    p_above: np.ndarray  # (K, K)
    wins: np.ndarray
    losses: np.ndarray
    ties: np.ndarray
    win_rate: np.ndarray  # (K, K) NaN where never compared
    votes_between: np.ndarray  # (K, K)
    n_votes: int
    self_votes: int
    unbounded: list[int]
    n_boot: int
    seed: int
    length: dict | None = field(default=None)


def _tallies(cells: Cells):
    k = cells.n_models
    c = cells.count.astype(float)
    won_a, won_b, tie = (cells.y == 1) * c, (cells.y == 0) * c, (cells.y == 0.5) * c
    wins = np.bincount(cells.a, won_a, k) + np.bincount(cells.b, won_b, k)
    losses = np.bincount(cells.a, won_b, k) + np.bincount(cells.b, won_a, k)
    ties = np.bincount(cells.a, tie, k) + np.bincount(cells.b, tie, k)
    score = np.zeros((k, k))  # wins of row over column, ties as halves
    np.add.at(score, (cells.a, cells.b), won_a + tie / 2)
    np.add.at(score, (cells.b, cells.a), won_b + tie / 2)
    between = score + score.T
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(between > 0, score / np.where(between > 0, between, 1), np.nan)
    return wins, losses, ties, rate, between


def win_rate_matrix(cells: Cells) -> tuple[np.ndarray, np.ndarray]:
    """(win rate (K, K), votes between each two models (K, K)); module doc."""
    _, _, _, rate, between = _tallies(cells)
    return rate, between


def _rows(cells: Cells, n_boot: int, seed: int, length: bool):
    """theta rows (B + 1, K) and beta rows (B + 1,) of the data and its resamples."""
    thetas, betas = [], []
    t0, b0 = fit(cells, cells.count[None, :], length)
    thetas.append(t0)
    betas.append(b0)
    for w in resample_blocks(cells, n_boot, seed):
        t, b = fit(cells, w, length)
        thetas.append(t)
        betas.append(b)
    return np.vstack(thetas), np.concatenate(betas)


def _results(values: np.ndarray, n: int) -> list[Result]:
    lo, hi, undefined = percentile_intervals(values[1:])
    out = []
    for j in range(values.shape[1]):
        has_ci = values.shape[0] > 1 and np.isfinite(lo[j])
        out.append(
            Result(
                float(values[0, j]),
                n,
                float(lo[j]) if has_ci else None,
                float(hi[j]) if has_ci else None,
                n_undefined=int(undefined[j]) if values.shape[0] > 1 else 0,
            )
        )
    return out


def _rank_summary(theta_rows: np.ndarray):
    r = ranks_of(theta_rows)
    rank = r[0]
    if theta_rows.shape[0] > 1:
        lo, hi = np.quantile(r[1:], [0.025, 0.975], axis=0)
        boot = tie_safe(theta_rows[1:])
        p_above = (boot[:, :, None] > boot[:, None, :]).mean(axis=0)
    else:
        lo = hi = rank.astype(float)
        data = tie_safe(theta_rows[0])
        p_above = (data[:, None] > data[None, :]).astype(float)
    return rank, np.column_stack([lo, hi]), p_above


def pairwise_leaderboard(
    models,
    model_1,
    model_2,
    outcome,
    count=None,
    *,
    length_1=None,
    length_2=None,
    length_control: bool = False,
    n_boot: int = 1000,
    seed: int = 0,
) -> Leaderboard:
    """Bradley-Terry leaderboard of vote groups (module doc), with bootstrap CIs.

    ``length_control`` needs ``length_1`` / ``length_2`` and adds ``length``:
    {"beta": Result, "length_sd": SD of the normalised difference, "rating": [Result],
    "rank", "rank_ci", "theta_rows"}. Raises ValueError naming the bad parameter."""
    if length_control and (length_1 is None or length_2 is None):
        raise ValueError("length_control: needs the responses' lengths")
    cells, self_votes = vote_cells(
        models,
        model_1,
        model_2,
        outcome,
        count,
        length_1 if length_control else None,
        length_2 if length_control else None,
    )
    # The plain fit's cells ignore length: collapse them again without it.
    plain = cells
    if length_control:
        plain, _ = vote_cells(
            models,
            cells.a,
            cells.b,
            np.select([cells.y == 1, cells.y == 0], [0, 1], 2),
            cells.count,
        )
    n = plain.n_votes
    theta_rows, _ = _rows(plain, n_boot, seed, False)
    rank, rank_ci, p_above = _rank_summary(theta_rows)
    wins, losses, ties, rate, between = _tallies(plain)
    unbounded = [
        int(i) for i in np.flatnonzero((wins + ties == 0) | (losses + ties == 0))
    ]
    board = Leaderboard(
        models=[str(m) for m in models],
        theta_rows=theta_rows,
        rating=_results(ratings(theta_rows), n),
        rank=rank,
        rank_ci=rank_ci,
        p_above=p_above,
        wins=wins,
        losses=losses,
        ties=ties,
        win_rate=rate,
        votes_between=between,
        n_votes=n,
        self_votes=self_votes,
        unbounded=unbounded,
        n_boot=n_boot,
        seed=seed,
    )
    if length_control:
        lc_theta, beta = _rows(cells, n_boot, seed, True)
        lc_rank, lc_rank_ci, _ = _rank_summary(lc_theta)
        board.length = {
            "beta": make_result(beta[0], beta[1:], n),
            "length_sd": cells.length_sd,
            "rating": _results(ratings(lc_theta), n),
            "rank": lc_rank,
            "rank_ci": lc_rank_ci,
            "theta_rows": lc_theta,
        }
    return board


def rank_agreement(board_a: Leaderboard, board_b: Leaderboard) -> dict:
    """Spearman and Kendall tau-b between two leaderboards' ratings over the models
    both rank, with percentile CIs pairing resample b of one with resample b of the
    other (independent votes, so independent resamples: give the boards different
    seeds). {"models": [...], "spearman": Result, "kendall": Result}; undefined
    (value None) with fewer than 3 common models or unequal resample counts."""
    common = [m for m in board_a.models if m in set(board_b.models)]
    ia = [board_a.models.index(m) for m in common]
    ib = [board_b.models.index(m) for m in common]
    why = "fewer than 3 models ranked by both"
    if len(common) < 3:
        return {
            "models": common,
            "spearman": make_result(np.nan, None, len(common), why),
            "kendall": make_result(np.nan, None, len(common), why),
        }
    xa, xb = board_a.theta_rows[:, ia], board_b.theta_rows[:, ib]
    if xa.shape[0] != xb.shape[0]:
        xa, xb = xa[:1], xb[:1]
    raw = rank_correlations_rows(xa, xb)
    return {
        "models": common,
        **{
            k: make_result(v[0], v[1:], len(common), "all models tied")
            for k, v in raw.items()
        },
    }
