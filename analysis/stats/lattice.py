"""Bootstrap sums drawn from their exact distribution, for values on a lattice.

A bootstrap resample of a group's n items sums n independent draws from the group's
empirical distribution. When every value is ``origin + k * step`` for small integers
k (scores on an integer scale, means of a few raters' scores, medians of judge
samples), that sum is ``n * origin + step * S`` with S the sum of n draws of k, and
S's distribution is the n-fold convolution of k's: computed here with one FFT per
group and sampled by inverting its CDF. The draws have the bootstrap's distribution
(up to floating-point rounding, below 1e-12 in probability), at a cost that grows
with the lattice's width and not with the items or the distinct values.

The FFT is circular: it is taken over a window of the support that holds all but
``TAIL`` of the probability (Hoeffding's bound for a sum of bounded draws), and the
rest folds onto the window, so the window's probabilities err by at most ``TAIL``.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import scipy.fft as sfft

# Probability a window may leave out (Hoeffding); below a double's resolution near 1.
TAIL = 1e-17
# The widest lattice a value set may need (offsets of the distinct values), and
# the largest common denominator tried when the values are fractions.
MAX_WIDTH, MAX_DENOMINATOR = 4096, 720
# Costs in ns (measured): one FFT point times log2 of the FFT's size (the forward and
# inverse transforms and the powering), and one sampled sum (its CDF search).
FFT_POINT_COST, SAMPLE_COST = 3.0, 40.0


def value_lattice(vals) -> tuple[float, np.ndarray] | None:
    """(step, offsets): the sorted distinct values ``vals`` as ``vals[0] + offsets *
    step`` with non-negative integer offsets (their gcd 1), or None when the values
    are not such fractions (denominator at most MAX_DENOMINATOR) or span more than
    MAX_WIDTH steps."""
    vals = np.asarray(vals, dtype=float)
    if vals.size == 0 or not np.isfinite(vals).all():
        return None
    diffs = vals - vals[0]
    if vals.size == 1:
        return 1.0, np.zeros(1, np.int64)
    q = 1
    for d in diffs[1:]:
        frac = Fraction(float(d)).limit_denominator(MAX_DENOMINATOR)
        q = math.lcm(q, frac.denominator)
        if q > MAX_DENOMINATOR:
            return None
    ints = np.round(diffs * q)
    if np.abs(ints / q - diffs).max() > 1e-9 * max(1.0, float(np.abs(vals).max())):
        return None
    ints = ints.astype(np.int64)
    g = int(np.gcd.reduce(ints[1:]))
    ints //= g
    if ints[-1] > MAX_WIDTH:
        return None
    return g / q, ints


def window(n: int, mean: float, width: int) -> tuple[int, int]:
    """(lo, size): the window of the sum of ``n`` draws on 0..``width`` with mean
    ``mean`` per draw, holding all but TAIL of its probability (Hoeffding:
    P(|S - n mean| >= t) <= 2 exp(-2 t^2 / (n width^2)))."""
    full = n * width + 1
    t = width * math.sqrt(n * math.log(2 / TAIL) / 2)
    size = min(full, int(2 * t) + 3)
    lo = max(0, min(int(math.floor(n * mean - t)) - 1, full - size))
    return lo, size


def lattice_cost(sizes: np.ndarray, width: int, n_boot: int) -> float:
    """The estimated cost (ns) of :func:`lattice_sum_draws` for non-empty groups of
    these sizes on a lattice of this width; to choose among exact methods."""
    total = 0.0
    for n in np.asarray(sizes, np.int64):
        size = window(int(n), width / 2, width)[1]
        total += size * max(math.log2(size), 1.0) * FFT_POINT_COST
    return total + n_boot * len(sizes) * SAMPLE_COST


def _power(f: np.ndarray, n: int) -> np.ndarray:
    """``f ** n`` for complex ``f`` by repeated squaring (relative error about
    ``n`` ulps, where the transcendental power costs ten times more)."""
    out = np.ones_like(f)
    base = f.copy()
    while n:
        if n & 1:
            out *= base
        n >>= 1
        if n:
            base *= base
    return out


def sum_distribution(pmf: np.ndarray, n: int) -> tuple[int, np.ndarray]:
    """(lo, probs): the distribution of the sum of ``n`` independent draws from
    ``pmf`` over 0..len(pmf) - 1, as P(S = lo + j) = probs[j] (a window holding all
    but TAIL of it; probs are non-negative)."""
    pmf = np.asarray(pmf, dtype=float)
    width = pmf.size - 1
    if n == 0 or width == 0:
        return 0, np.ones(1)
    mean = float(pmf @ np.arange(pmf.size))
    lo, size = window(n, mean, width)
    nfft = sfft.next_fast_len(size, real=True)
    folded = np.zeros(nfft)
    np.add.at(folded, np.arange(pmf.size) % nfft, pmf)
    dist = sfft.irfft(_power(sfft.rfft(folded), n), nfft)
    # index i holds the sums congruent to i modulo nfft: the window's start first.
    probs = np.roll(dist, -(lo % nfft))[:size]
    return lo, np.clip(probs, 0.0, None)


def lattice_sum_draws(
    counts: np.ndarray, offsets: np.ndarray, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """(n_boot, G) resampled sums of the lattice offsets, per group.

    ``counts``: (G, V) items of each group at each distinct value, whose lattice
    offsets are ``offsets`` (V,). Column g is n_boot draws of the sum of
    ``counts[g].sum()`` items drawn with replacement from group g.
    """
    counts = np.asarray(counts, dtype=np.int64)
    offsets = np.asarray(offsets, dtype=np.int64)
    width = int(offsets.max()) if offsets.size else 0
    out = np.zeros((n_boot, counts.shape[0]))
    u = rng.random((n_boot, counts.shape[0]))
    for g, row in enumerate(counts):
        n = int(row.sum())
        if n == 0:
            continue
        pmf = np.zeros(width + 1)
        np.add.at(pmf, offsets, row / n)
        lo, probs = sum_distribution(pmf, n)
        cdf = np.cumsum(probs)
        j = np.searchsorted(cdf, u[:, g] * cdf[-1], side="right")
        out[:, g] = lo + np.minimum(j, probs.size - 1)
    return out
