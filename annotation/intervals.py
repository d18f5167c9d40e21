"""The Wilson score interval of a proportion: gold accuracy's interval (right / checked).

Pure module: no Django. It is statsmodels' ``proportion_confint(count, nobs, alpha,
method="wilson")`` (two-sided, clipped to [0, 1]) in a few lines, so the product does
not install statsmodels; tests/annotation/test_intervals.py checks it against
statsmodels to 1e-12.
"""

from __future__ import annotations

import math

from scipy.stats import norm


def wilson_interval(
    count: int, nobs: int, *, alpha: float = 0.05
) -> tuple[float, float]:
    """The two-sided (1 - alpha) Wilson score interval of count / nobs, as (low, high)
    clipped to [0, 1]. Requires nobs >= 1 and 0 <= count <= nobs (ValueError naming
    the parameter otherwise); count 0 gives low 0 and count nobs high 1, up to
    rounding (as statsmodels)."""
    if nobs < 1:
        raise ValueError(f"nobs: {nobs} observations; need at least 1")
    if not 0 <= count <= nobs:
        raise ValueError(f"count: {count} is not between 0 and nobs={nobs}")
    crit = float(norm.isf(alpha / 2.0))
    crit2 = crit**2
    q = count / nobs
    denom = 1 + crit2 / nobs
    center = (q + crit2 / (2 * nobs)) / denom
    dist = crit * math.sqrt(q * (1.0 - q) / nobs + crit2 / (4.0 * nobs**2)) / denom
    return min(max(center - dist, 0.0), 1.0), min(max(center + dist, 0.0), 1.0)
