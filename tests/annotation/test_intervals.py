"""The Wilson interval of gold accuracy (annotation.intervals) against statsmodels'
`proportion_confint(method="wilson")`, the reference it replaces, on random counts
and on the edges: no successes, all successes, a single observation."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint

from annotation.intervals import wilson_interval

EDGES = [(0, 1), (1, 1), (0, 2), (1, 2), (2, 2), (0, 50), (50, 50), (1, 10_000),
         (9_999, 10_000), (0, 1_000_000), (500_000, 1_000_000)]  # fmt: skip


def random_cases(seed: int, k: int = 400):
    rng = np.random.default_rng(seed)
    nobs = rng.integers(1, 5_000, k)
    counts = (rng.random(k) * (nobs + 1)).astype(int).clip(0, nobs)
    return list(zip(counts.tolist(), nobs.tolist(), strict=True))


@pytest.mark.parametrize("alpha", [0.05, 0.01, 0.1, 0.3])
def test_wilson_is_statsmodels(alpha):
    for count, nobs in EDGES + random_cases(int(alpha * 100)):
        ours = wilson_interval(count, nobs, alpha=alpha)
        theirs = proportion_confint(count, nobs, alpha=alpha, method="wilson")
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-12,
                                   err_msg=f"{count}/{nobs}")  # fmt: skip
        q = count / nobs
        assert 0.0 <= ours[0] <= q + 1e-15 and q - 1e-15 <= ours[1] <= 1.0


def test_the_edges_touch_zero_and_one():
    # up to rounding, as statsmodels: center - dist of equal terms
    for nobs in (1, 7, 1_000_000):
        low, high = wilson_interval(0, nobs)
        assert low == pytest.approx(0.0, abs=1e-15) and high > 0.0
        low, high = wilson_interval(nobs, nobs)
        assert high == pytest.approx(1.0, abs=1e-15) and low < 1.0
    low, high = wilson_interval(1, 1)
    assert low == pytest.approx(1 / (1 + 1.959963984540054**2), abs=1e-12)


@pytest.mark.parametrize("count, nobs, name", [(0, 0, "nobs"), (3, 2, "count"),
                                               (-1, 4, "count")])  # fmt: skip
def test_bad_counts_name_the_parameter(count, nobs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        wilson_interval(count, nobs)
