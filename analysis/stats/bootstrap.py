"""The bootstrap: items resampled with replacement, as weights over collapsed cells.

Items with equal values (a *cell*) are interchangeable for every statistic here, so a
resample of n items is fully described by how often each cell is drawn: a
multinomial(n, cell counts / n) vector. Weight matrices are (B, K): one row per
resample, one column per cell (or per item). Every draw takes a seed or a
``numpy.random.Generator``; equal seeds give equal resamples.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array
from scipy.special import gammaln

from analysis.stats.lattice import lattice_cost, lattice_sum_draws, value_lattice

# Cells of at most this many items are drawn item by item in the meta-evaluation
# (see draw_cells); the agreement report uses its own threshold (report.project).
SMALL_CELL = 12


# ---------------------------------------------------------------------------
# Item resamples as weights
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
    """Resampled indices (B, n) -> (B, n_items) counts of each item per resample."""
    idx = np.asarray(idx)
    n_boot = idx.shape[0]
    flat = (np.arange(n_boot)[:, None] * n_items + idx).ravel()
    return np.bincount(flat, minlength=n_boot * n_items).reshape(n_boot, n_items)


def aggregate_weights(item_weights: np.ndarray, cell: np.ndarray, n_cells: int):
    """Item weights (B, n) -> cell weights (B, n_cells) by summing items per cell.

    ``cell``: (n,) the cell (0 .. n_cells - 1) of each item. Also gives a value table
    (the weight of each distinct value) when ``cell`` holds value codes. One sparse
    product (an item's column lands in its cell's).
    """
    item_weights = np.atleast_2d(np.asarray(item_weights, dtype=float))
    cell = np.asarray(cell, dtype=np.int64)
    if cell.size == 0:
        return np.zeros((item_weights.shape[0], n_cells))
    onehot = csr_array(
        (np.ones(cell.size), (np.arange(cell.size), cell)), shape=(cell.size, n_cells)
    )
    return np.ascontiguousarray(item_weights @ onehot)


# ---------------------------------------------------------------------------
# Collapsing items into cells
# ---------------------------------------------------------------------------


def value_codes(x) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct values of ``x`` and the (int64) code of each element."""
    values, codes = np.unique(np.asarray(x, dtype=float), return_inverse=True)
    return values, codes.ravel().astype(np.int64)


def row_codes(cols: Sequence[np.ndarray]) -> np.ndarray:
    """One int64 code per row of non-negative int columns, ordered like the rows.

    Mixed radix, first column most significant; so ``np.unique`` of the codes sorts
    rows lexicographically. Too many combinations for one int64 falls back to the
    rank of each row among the distinct rows (same order).
    """
    cols = [np.asarray(c, dtype=np.int64) for c in cols]
    n = len(cols[0]) if cols else 0
    code = np.zeros(n, dtype=np.int64)
    total = 1
    for col in cols:
        radix = int(col.max()) + 1 if n else 1
        total *= radix
        if total >= 2**62:
            _, inv = np.unique(np.column_stack(cols), axis=0, return_inverse=True)
            return inv.ravel().astype(np.int64)
        code = code * radix + col
    return code


# ---------------------------------------------------------------------------
# Exact multinomial draws over cells
# ---------------------------------------------------------------------------


def multinomial_cell_weights(
    cell_counts: np.ndarray, n_boot: int, seed: int = 0
) -> np.ndarray:
    """Bootstrap of items as a multinomial draw over cells: (n_boot, n_cells).

    Resampling n items with replacement and counting them per cell has exactly this
    distribution; drawing it per cell costs O(n_cells) instead of O(n_items). For
    many cells of one or two items :func:`draw_cells` is faster.
    """
    cell_counts = np.asarray(cell_counts, dtype=float)
    n = int(cell_counts.sum())
    rng = np.random.default_rng(seed)
    return rng.multinomial(n, cell_counts / n, size=n_boot).astype(float)


@dataclass
class CellDraws:
    """n_boot resamples over cells, the small cells kept as individual draws.

    The count of cell k in resample b is the number of ``picks`` equal to k among
    resample b's draws, plus ``big_counts[b]`` at the column of k in ``big``.
    """

    per_resample: np.ndarray  # (n_boot,) draws landing on small cells
    picks: np.ndarray  # (per_resample.sum(),) int32 cell of each, resample by resample
    big: np.ndarray  # (k_big,) the other cells
    big_counts: np.ndarray  # (n_boot, k_big) float counts of those

    def rows(self) -> np.ndarray:
        """The resample of each pick."""
        n_boot = self.per_resample.size
        return np.repeat(np.arange(n_boot, dtype=np.int64), self.per_resample)

    def dense(self, n_cells: int) -> np.ndarray:
        """(n_boot, n_cells) counts, one bincount per resample (no B * K index)."""
        m = self.per_resample
        out = np.zeros((m.size, n_cells))
        ends = np.cumsum(m)
        for b in range(m.size):
            out[b] += np.bincount(
                self.picks[ends[b] - m[b] : ends[b]], minlength=n_cells
            )
        out[:, self.big] += self.big_counts
        return out


def draw_cells(counts: np.ndarray, n_boot: int, rng, small: int) -> CellDraws:
    """Exact multinomial(n, counts / n) draws over cells, n = counts.sum().

    Cells of at most ``small`` items are drawn item by item (how many of the n draws
    land on them is binomial; each such draw picks one of their items uniformly), the
    others through numpy's multinomial. Same distribution as drawing n item indices;
    ``small`` only trades the cost of the two parts (and changes the random stream).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if n == 0 or n_boot == 0:
        return CellDraws(
            np.zeros(n_boot, np.int64),
            np.zeros(0, np.int32),
            np.zeros(0, np.int64),
            np.zeros((n_boot, 0)),
        )
    is_small = counts <= small
    small_cells = np.flatnonzero(is_small)
    big_cells = np.flatnonzero(~is_small)
    s = int(counts[small_cells].sum())
    m = rng.binomial(n, s / n, size=n_boot) if 0 < s < n else np.full(n_boot, s)
    picks = np.zeros(0, np.int32)
    if s > 0:
        item_cell = np.repeat(small_cells, counts[small_cells]).astype(np.int32)
        picks = item_cell[rng.integers(0, s, size=int(m.sum()), dtype=np.int32)]
    big_counts = np.zeros((n_boot, 0))
    if big_cells.size:
        big_counts = rng.multinomial(n - m, counts[big_cells] / (n - s)).astype(float)
    return CellDraws(m, picks, big_cells, big_counts)


# Poisson draws of a cell are made by comparing uniforms with its CDF, one pass per
# value, up to the value whose upper tail is below this; the few uniforms beyond it
# are looked up in the whole CDF (a binary search, slower per draw).
PASS_TAIL, MAX_PASSES = 1e-3, 24


def _poisson_cdfs(lams: np.ndarray) -> list[np.ndarray]:
    """The CDF of Poisson(lam) for each lam, up to where it is 1 in doubles."""
    out = []
    for lam in lams:
        if lam <= 0:
            out.append(np.ones(1))  # always 0
            continue
        k = np.arange(int(lam + 15 * np.sqrt(lam) + 30) + 1, dtype=float)
        out.append(np.cumsum(np.exp(k * np.log(lam) - lam - gammaln(k + 1))))
    return out


def _invert(u: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    """Poisson draws from uniforms: the number of CDF values at or below each u."""
    passes = int(np.searchsorted(cdf, 1 - PASS_TAIL))
    if passes > MAX_PASSES:
        return np.searchsorted(cdf, u, side="right").astype(np.int32)
    x = np.zeros(u.shape, np.int8)
    for c in cdf[:passes]:
        x += u >= c
    x = x.astype(np.int32)
    far = u >= cdf[passes]  # beyond the passes (rare): the whole CDF
    if far.any():
        x[far] = np.searchsorted(cdf, u[far], side="right")
    return x


def multinomial_chunks(
    counts: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    max_entries: int = 2_000_000,
) -> tuple[np.ndarray, Iterator[np.ndarray]]:
    """Exact multinomial(n, counts / n) draws over cells, n = counts.sum(), as
    dense blocks: (order, blocks), each block (K, b) int32: column j is a
    resample's counts of the cells ``counts[order]``; at most ``max_entries``
    entries a block, n_boot columns in all.

    A resample's count of cell k is a Poisson(mu * counts[k] / n) draw (by inverting
    its CDF: uniforms against a table per distinct cell size), mu = n - 3 sqrt(n),
    then items drawn uniformly one by one until the resample holds n; a resample
    whose Poisson total exceeds n is drawn again. Given its total t <= n, the Poisson
    part is multinomial(t), and adding a multinomial(n - t) gives a multinomial(n):
    exactly the bootstrap's distribution (up to the rounding of the Poisson CDF in
    doubles), at about K + 3 sqrt(n) draws a resample however the items spread over
    the cells.
    """
    counts = np.asarray(counts, dtype=np.int64)
    k = counts.size
    n = int(counts.sum())
    order = np.argsort(counts, kind="stable")
    sorted_counts = counts[order]
    sizes, starts = np.unique(sorted_counts, return_index=True)
    ends = np.r_[starts[1:], k].astype(np.int64)
    mu = max(n - 3.0 * np.sqrt(n), 0.0)
    cdfs = _poisson_cdfs(sizes * (mu / n) if n else sizes * 0.0)
    item_cell = np.repeat(np.arange(k, dtype=np.int64), sorted_counts)

    def poisson(cols: int) -> np.ndarray:
        u = rng.random((k, cols))  # a size's cells are contiguous rows
        x = np.empty((k, cols), np.int32)
        for cdf, a, b in zip(cdfs, starts, ends, strict=True):
            x[a:b] = _invert(u[a:b], cdf)
        return x

    def blocks() -> Iterator[np.ndarray]:
        step = max(1, max_entries // max(k, 1))
        for start in range(0, n_boot, step):
            cols = min(step, n_boot - start)
            if n == 0 or k == 0:
                yield np.zeros((k, cols), np.int32)
                continue
            x = poisson(cols)
            total = x.sum(axis=0)
            over = np.flatnonzero(total > n)
            while over.size:
                x[:, over] = poisson(over.size)
                total[over] = x[:, over].sum(axis=0)
                over = over[total[over] > n]
            missing = n - total
            col = np.repeat(np.arange(cols, dtype=np.int64), missing)
            cell = item_cell[rng.integers(0, n, size=col.size)]
            x += np.bincount(cell * cols + col, minlength=k * cols).reshape(k, cols)
            yield x

    return order, blocks()


def draw_cell_counts(
    counts: np.ndarray, n_boot: int, rng, small: int = SMALL_CELL
) -> np.ndarray:
    """(n_boot, K) bootstrap counts of K cells (:func:`draw_cells`, made dense)."""
    return draw_cells(counts, n_boot, rng, small).dense(np.asarray(counts).size)


def draw_cell_count_chunks(
    counts: np.ndarray, n_boot: int, seed: int, chunk: int = 100
) -> Iterator[np.ndarray]:
    """:func:`draw_cell_counts` in blocks of at most ``chunk`` resamples (bounded memory).

    One generator for all blocks: the resamples equal one call with all of them.
    """
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, chunk):
        yield draw_cell_counts(counts, min(chunk, n_boot - start), rng)


@dataclass
class ResampledCells:
    """Items collapsed into cells; w[0] = cell counts, w[1:] = bootstrap counts."""

    first: np.ndarray  # (K,) an item of each cell
    stratum: np.ndarray  # (K,)
    w: np.ndarray  # (B + 1, K)


def resample_cells(key_cols, n_boot: int, seed: int, strata=None) -> ResampledCells:
    """Collapse items with equal key into cells and draw bootstrap cell counts.

    Items are resampled with replacement within each stratum (``strata``: (n,) ints).
    Cells come out sorted by their key (first column most significant). ``n_boot=0``
    gives the cells and their counts only (for :func:`draw_cell_count_chunks`).
    """
    n = len(key_cols[0])
    strata = np.zeros(n, np.int64) if strata is None else np.asarray(strata, np.int64)
    _, first, cnt = np.unique(
        row_codes([strata, *key_cols]), return_index=True, return_counts=True
    )
    stratum = strata[first]
    w = np.zeros((n_boot + 1, first.size))
    w[0] = cnt
    rng = np.random.default_rng(seed)
    for s in np.unique(stratum):
        cols = np.flatnonzero(stratum == s)
        w[1:, cols] = draw_cell_counts(cnt[cols], n_boot, rng)
    return ResampledCells(first, stratum, w)


def group_sums(
    values, groups, n_groups: int, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum of `values` per group, with bootstrap replicates.

    Items are resampled with replacement within each group. Returns (n (G,) items,
    sums (G,), boot (n_boot, G) resampled sums). Three exact ways draw the
    resamples, the cheapest for the input chosen by :func:`sum_method` (the same
    distribution; only the random stream differs):

    * ``lattice``: values on a lattice (integer scores, means of a few raters): each
      group's resampled sum drawn from its exact distribution
      (:mod:`analysis.stats.lattice`), whatever the items or the distinct values;
    * ``chain``: a multinomial draw of each group's n items over its distinct
      values, one binomial per value for all resamples and groups at once (the chain
      rule of the multinomial): (distinct values) x n_boot x groups;
    * ``items``: the items drawn one by one (:class:`GroupDraws`).
    """
    vals, codes = value_codes(values)
    groups = np.asarray(groups, dtype=np.int64)
    counts = np.zeros((n_groups, len(vals)), np.int64)
    np.add.at(counts, (groups, codes), 1)
    n = counts.sum(axis=1)
    sums = counts @ vals if len(vals) else np.zeros(n_groups)
    boot = np.zeros((n_boot, n_groups))
    if n_boot == 0 or not len(vals):
        return n, sums, boot
    live = np.flatnonzero(n > 0)  # empty groups stay 0 and cost nothing
    lattice = value_lattice(vals)
    method = sum_method(n[live], len(vals), n_boot, lattice)
    if method == "lattice":
        step, offsets = lattice
        drawn = lattice_sum_draws(counts[live], offsets, n_boot, rng)
        boot[:, live] = n[live] * vals[0] + step * drawn
    elif method == "items":
        boot[:, live] = GroupDraws(groups, n_groups, n_boot, rng).boot(vals[codes])
    else:
        boot[:, live] = _chain_sums(counts[live], vals, n_boot, rng)
    return n, sums, boot


def _chain_sums(c: np.ndarray, vals: np.ndarray, n_boot: int, rng) -> np.ndarray:
    """(n_boot, G) resampled sums of groups with counts ``c`` (G, V) at ``vals``:
    the multinomial over values drawn as a chain of binomials."""
    n = c.sum(axis=1)
    remaining = np.broadcast_to(n, (n_boot, len(n))).copy()
    left = n.astype(float)  # items of the group not yet given a value
    part = np.zeros((n_boot, len(n)))
    for k in range(len(vals) - 1):
        if not c[:, k].any():
            continue
        q = np.where(left > 0, c[:, k] / np.maximum(left, 1), 0.0)
        x = rng.binomial(remaining, np.clip(q, 0.0, 1.0))
        part += x * vals[k]
        remaining -= x
        left -= c[:, k]
    return part + remaining * vals[-1]


# Costs (ns per draw, measured) of an item index and of one binomial; with
# analysis.stats.lattice's, they only choose among exact ways of drawing group_sums.
DRAW_COST, BINOMIAL_COST = 15, 24


def sum_method(sizes: np.ndarray, n_values: int, n_boot: int, lattice=None) -> str:
    """The cheapest exact way ("lattice", "chain" or "items") for
    :func:`group_sums` to draw resampled sums of non-empty groups of these sizes
    over `n_values` distinct values (``lattice``: :func:`value_lattice`'s result,
    None when the values are on none)."""
    sizes = np.asarray(sizes)
    costs = {
        "chain": len(sizes) * (n_values - 1) * n_boot * BINOMIAL_COST,
        "items": int(sizes.sum()) * n_boot * DRAW_COST,
    }
    if lattice is not None:
        costs["lattice"] = lattice_cost(sizes, int(lattice[1][-1]), n_boot)
    return min(costs, key=costs.get)


class GroupDraws:
    """Bootstrap resamples of items within groups, drawn once, for any values.

    Each of the `n_boot` resamples draws, for every group, as many of its items as it
    holds, uniformly with replacement. :meth:`boot` sums any per-item values over
    those draws, so several sources that scored the same items can share one
    resample (a paired bootstrap). Memory: n_boot x items int32.
    """

    def __init__(self, groups, n_groups: int, n_boot: int, rng) -> None:
        groups = np.asarray(groups, dtype=np.int64)
        self.order = np.argsort(groups, kind="stable")
        self.n = np.bincount(groups, minlength=n_groups)
        self.live = np.flatnonzero(self.n > 0)
        sizes = self.n[self.live]
        self.starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        size_of = np.repeat(sizes, sizes)  # each item position: its group's size
        start_of = np.repeat(self.starts, sizes).astype(np.int32)
        self.picks = np.empty((n_boot, size_of.size), np.int32)
        for size in np.unique(sizes):  # one draw per group size (a scalar bound)
            cols = np.flatnonzero(size_of == size)
            drawn = rng.integers(0, size, size=(n_boot, cols.size), dtype=np.int32)
            self.picks[:, cols] = drawn + start_of[cols]

    def boot(self, values) -> np.ndarray:
        """(n_boot, live groups) resampled sums of `values` (one per item, in the
        order of the `groups` given)."""
        if not self.picks.shape[1]:
            return np.zeros((self.picks.shape[0], 0))
        ordered = np.asarray(values, dtype=float)[self.order]
        return np.add.reduceat(ordered[self.picks], self.starts, axis=1)


def group_means(
    values, groups, n_groups: int, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean of `values` per group with bootstrap replicates (:func:`group_sums`):
    (n (G,), means (G,) NaN for an empty group, boot (n_boot, G))."""
    n, sums, boot = group_sums(values, groups, n_groups, n_boot, rng)
    with np.errstate(invalid="ignore", divide="ignore"):
        point = np.where(n > 0, sums / np.maximum(n, 1), np.nan)
        boot = np.where(n > 0, boot / np.maximum(n, 1), np.nan)
    return n, point, boot
