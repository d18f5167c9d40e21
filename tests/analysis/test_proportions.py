"""The two-proportion z-test of drift (analysis.stats.proportions) against
statsmodels' `proportions_ztest`, the reference it replaces, on random counts and on
the edges (one rate 0 or 1, a single observation), for each alternative."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.proportion import proportions_ztest

from analysis.stats.proportions import two_proportion_z_test

EDGES = [(0, 1, 1, 1), (1, 1, 0, 1), (0, 5, 5, 5), (5, 5, 0, 9), (1, 1, 1, 2),
         (0, 30, 1, 30), (29, 30, 30, 30), (24, 30, 9, 30), (6, 9, 4, 9),
         (1, 100_000, 0, 1)]  # fmt: skip


def random_cases(seed: int, k: int = 400):
    rng = np.random.default_rng(seed)
    n = rng.integers(1, 3_000, (k, 2))
    x = (rng.random((k, 2)) * (n + 1)).astype(int).clip(0, n)
    return [(a, b, c, d) for (a, c), (b, d) in zip(x.tolist(), n.tolist(), strict=True)
            if 0 < a + c < b + d]  # fmt: skip


@pytest.mark.parametrize("alternative", ["two-sided", "larger", "smaller"])
def test_z_test_is_statsmodels(alternative):
    cases = EDGES + random_cases(len(alternative))
    assert len(cases) > 300
    for x1, n1, x2, n2 in cases:
        z, p = two_proportion_z_test(x1, n1, x2, n2, alternative=alternative)
        their_z, their_p = proportions_ztest([x1, x2], [n1, n2],
                                             alternative=alternative)  # fmt: skip
        np.testing.assert_allclose([z, p], [their_z, their_p], rtol=0, atol=1e-12,
                                   err_msg=f"{x1}/{n1} vs {x2}/{n2}")  # fmt: skip
        assert 0.0 <= p <= 1.0


def test_the_one_sided_p_values_split_the_two_sided_one():
    _, two = two_proportion_z_test(24, 30, 9, 30)
    _, larger = two_proportion_z_test(24, 30, 9, 30, alternative="larger")
    _, smaller = two_proportion_z_test(24, 30, 9, 30, alternative="smaller")
    assert larger == pytest.approx(two / 2, abs=1e-15)
    assert larger + smaller == pytest.approx(1.0, abs=1e-15)


@pytest.mark.parametrize(
    "args, kwargs, name",
    [((0, 5, 0, 5), {}, "x1"), ((5, 5, 9, 9), {}, "x1"), ((1, 0, 1, 3), {}, "n1"),
     ((1, 3, 1, 3), {"alternative": "less"}, "alternative")],
)  # fmt: skip
def test_an_undefined_test_names_the_parameter(args, kwargs, name):
    with pytest.raises(ValueError, match=f"^{name}:"):
        two_proportion_z_test(*args, **kwargs)
