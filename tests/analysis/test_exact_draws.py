"""The exact draws behind the bootstrap: lattice sums and Poisson-completed
multinomials (analysis.stats.lattice, analysis.stats.bootstrap.multinomial_chunks).

Each is checked against the computation it stands for on the same inputs: the
n-fold convolution by numpy, the multinomial's moments and numpy's own multinomial,
and the percentile interval of scipy's bootstrap.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from analysis.stats.bootstrap import (
    _chain_sums,
    group_sums,
    multinomial_chunks,
    sum_method,
    value_codes,
)
from analysis.stats.lattice import TAIL, sum_distribution, value_lattice


@pytest.mark.parametrize("width,n", [(1, 1), (4, 1), (4, 7), (9, 40), (54, 300)])
def test_sum_distribution_is_the_n_fold_convolution(width, n):
    rng = np.random.default_rng(width * 100 + n)
    pmf = rng.random(width + 1)
    pmf[width // 2] = 0.0  # a value nobody gave
    pmf /= pmf.sum()
    want = np.array([1.0])
    for _ in range(n):
        want = np.convolve(want, pmf)
    lo, probs = sum_distribution(pmf, n)
    got = np.zeros_like(want)
    got[lo : lo + probs.size] = probs
    assert np.abs(got - want).max() < 1e-15
    # The window leaves out at most TAIL of the probability.
    assert want[:lo].sum() + want[lo + probs.size :].sum() <= TAIL
    assert (probs >= 0).all()


def test_value_lattice_finds_the_step_of_scores_and_rater_means():
    assert value_lattice(np.array([2.0])) == (1.0, pytest.approx([0]))
    step, offsets = value_lattice(np.array([0.0, 1.0, 2.0, 4.0]))
    assert step == 1.0 and offsets.tolist() == [0, 1, 2, 4]
    step, offsets = value_lattice(np.array([1.0, 4 / 3, 1.5, 5 / 3, 2.0, 10.0]))
    assert step == pytest.approx(1 / 6) and offsets.tolist() == [0, 2, 3, 4, 6, 54]
    step, offsets = value_lattice(np.array([-2.0, 0.0, 6.0]))  # gcd of the offsets
    assert step == 2.0 and offsets.tolist() == [0, 1, 4]
    assert value_lattice(np.array([0.1, 0.2, np.pi])) is None
    assert value_lattice(np.array([0.0, 1e-4, 1.0])) is None  # too fine a step
    assert value_lattice(np.array([0.0, 1.0, 10_000.0])) is None  # too wide
    assert value_lattice(np.array([1.0, np.nan])) is None


def test_lattice_sums_have_the_bootstrap_distribution():
    rng = np.random.default_rng(5)
    n_groups, size = 6, 120
    groups = np.repeat(np.arange(n_groups), size)
    # Means of 1 or 3 raters on 1..10: a lattice of sixths.
    single = rng.integers(1, 11, groups.size).astype(float)
    triple = rng.integers(3, 31, groups.size) / 3
    values = np.where(rng.random(groups.size) < 0.3, triple, single)
    vals, codes = value_codes(values)
    lattice = value_lattice(vals)
    assert lattice is not None
    assert sum_method(np.full(n_groups, size), len(vals), 4000, lattice) == "lattice"
    n, sums, boot = group_sums(values, groups, n_groups, 4000, rng)
    counts = np.zeros((n_groups, len(vals)), np.int64)
    np.add.at(counts, (groups, codes), 1)
    chain = _chain_sums(counts, vals, 4000, np.random.default_rng(6))
    for g in range(n_groups):
        x = values[groups == g]
        assert n[g] == size and sums[g] == pytest.approx(x.sum())
        # Every resample is a sum of `size` of the group's own values...
        steps = (boot[:, g] - size * vals[0]) / lattice[0]
        assert np.allclose(steps, np.round(steps), atol=1e-6)
        assert x.min() * size - 1e-9 <= boot[:, g].min()
        assert boot[:, g].max() <= x.max() * size + 1e-9
        # ... with the bootstrap's mean and variance (n times the values' variance)
        sd = np.sqrt(size * x.var())
        assert boot[:, g].mean() == pytest.approx(x.sum(), abs=4 * sd / np.sqrt(4000))
        assert boot[:, g].std() == pytest.approx(sd, rel=0.06)
        # ... and the same distribution as the binomial chain's (two-sample KS).
        assert sps.ks_2samp(boot[:, g], chain[:, g]).pvalue > 1e-3
        ref = sps.bootstrap(
            (x,), np.mean, n_resamples=4000, method="percentile", random_state=1
        ).confidence_interval
        lo, hi = np.quantile(boot[:, g] / size, [0.025, 0.975])
        assert lo == pytest.approx(ref.low, abs=0.12)
        assert hi == pytest.approx(ref.high, abs=0.12)


def _draw(counts, n_boot, seed, **kwargs):
    order, blocks = multinomial_chunks(
        counts, n_boot, np.random.default_rng(seed), **kwargs
    )
    parts = list(blocks)
    drawn = np.hstack(parts).T if parts else np.zeros((0, len(counts)))
    out = np.empty_like(drawn)
    out[:, order] = drawn
    return out, parts


def test_multinomial_chunks_draw_the_multinomial_of_the_cells():
    rng = np.random.default_rng(8)
    # One- and two-item cells beside bigger ones, as on a wide scale.
    counts = np.concatenate(
        [rng.choice([1, 2], 300, p=[0.8, 0.2]), rng.integers(3, 15, 80), [400, 90]]
    )
    rng.shuffle(counts)
    n, n_boot = int(counts.sum()), 20_000
    got, parts = _draw(counts, n_boot, 1, max_entries=400_000)
    assert all(p.size <= 400_000 for p in parts) and len(parts) > 1
    assert (got.sum(axis=1) == n).all() and (got >= 0).all()
    p = counts / n
    assert np.allclose(got.mean(axis=0), n * p, atol=5 * np.sqrt(n * p / n_boot))
    assert np.allclose(got.var(axis=0), n * p * (1 - p), rtol=0.1, atol=0.02)
    ref = np.random.default_rng(2).multinomial(n, p, size=n_boot)
    big = np.argsort(counts)[-2:]
    cov = np.cov(got[:, big[0]], got[:, big[1]])[0, 1]
    assert cov == pytest.approx(-n * p[big[0]] * p[big[1]], rel=0.1)
    # Each cell's count has the binomial marginal of numpy's multinomial.
    for k in (int(np.argmin(counts)), int(big[0])):
        assert sps.ks_2samp(got[:, k], ref[:, k]).pvalue > 1e-3
    # A sum over many small cells (where the completion draws land most).
    small = counts <= 2
    s_got, s_ref = got[:, small].sum(axis=1), ref[:, small].sum(axis=1)
    assert s_got.var() == pytest.approx(
        n * p[small].sum() * (1 - p[small].sum()), rel=0.1
    )
    assert sps.ks_2samp(s_got, s_ref).pvalue > 1e-3
    # Seeded: equal seeds give equal resamples, block sizes do not matter to n.
    again, _ = _draw(counts, n_boot, 1, max_entries=400_000)
    assert np.array_equal(got, again)


@pytest.mark.parametrize("counts", [[1], [2, 1], [3, 0, 4], []])
def test_multinomial_chunks_of_tiny_inputs(counts):
    counts = np.array(counts, dtype=np.int64)
    got, _ = _draw(counts, 500, 3)
    assert got.shape == (500, counts.size)
    assert (got.sum(axis=1) == counts.sum()).all()
    assert (got[:, counts == 0] == 0).all()
