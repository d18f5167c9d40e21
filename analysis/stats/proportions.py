"""The two-proportion z-test with pooled variance: the reliability report's drift test.

Pure numpy/scipy. It is statsmodels' ``proportions_ztest([x1, x2], [n1, n2])`` (no
hypothesised difference, pooled proportion in the variance) in a few lines, so the
product does not install statsmodels; tests/analysis/test_proportions.py checks it
against statsmodels to 1e-12.
"""

from __future__ import annotations

import math

from scipy.stats import norm

ALTERNATIVES = ("two-sided", "larger", "smaller")


def two_proportion_z_test(
    x1: int, n1: int, x2: int, n2: int, *, alternative: str = "two-sided"
) -> tuple[float, float]:
    """(z, p) of the test that x1 / n1 and x2 / n2 are equal, with the pooled
    proportion (x1 + x2) / (n1 + n2) in the variance; `alternative` "larger" tests
    x1 / n1 > x2 / n2, "smaller" the reverse. Requires n1, n2 >= 1 and a pooled
    proportion strictly between 0 and 1 (the test is undefined otherwise: ValueError
    naming the parameter, where statsmodels returns NaN)."""
    if alternative not in ALTERNATIVES:
        raise ValueError(f"alternative: {alternative!r} is not one of {ALTERNATIVES}")
    if n1 < 1 or n2 < 1:
        raise ValueError(f"n1: need at least one observation in each ({n1}, {n2})")
    pooled = (x1 + x2) / (n1 + n2)
    if not 0.0 < pooled < 1.0:
        raise ValueError(f"x1: pooled proportion {pooled}: the test is undefined")
    std = math.sqrt(pooled * (1 - pooled) * (1.0 / n1 + 1.0 / n2))
    z = (x1 / n1 - x2 / n2) / std
    if alternative == "two-sided":
        p = 2 * norm.sf(abs(z))
    elif alternative == "larger":
        p = norm.sf(z)
    else:
        p = norm.cdf(z)
    return z, float(p)
