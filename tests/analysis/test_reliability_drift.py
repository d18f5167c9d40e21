"""Drift is flagged only when the fall in exact agreement from the first to the last
quarter is large and significant: a handful of items cannot flag it by chance. The
p-value is the two-proportion z-test (analysis.stats.proportions), checked here
against the formula."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from analysis.selectors.reliability import Quarter, RaterReliability, rater_flags


def rater(first: tuple[int, int], last: tuple[int, int]) -> RaterReliability:
    """Quarters with (right, scores) exact agreements in the first and last."""
    quarters = [Quarter(items=first[1] // 3, n=first[1], exact=first[0] / first[1],
                        severity=0.0)]  # fmt: skip
    quarters += [Quarter(items=10, n=30, exact=0.6, severity=0.0)] * 2
    quarters += [Quarter(items=last[1] // 3, n=last[1], exact=last[0] / last[1],
                         severity=0.0)]  # fmt: skip
    return RaterReliability(rater_id=1, username="r", items=40, quarters=quarters)


def z_test_p(x1, n1, x2, n2) -> float:
    p1, p2, pooled = x1 / n1, x2 / n2, (x1 + x2) / (n1 + n2)
    z = (p1 - p2) / math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    return 2 * norm.sf(abs(z))


def test_a_large_significant_fall_is_flagged_with_its_p_value():
    flags = rater_flags(rater((24, 30), (9, 30)))  # 0.80 -> 0.30 over 30 scores each
    (drift,) = [f for f in flags if "fell from" in f]
    assert "0.80 (first quarter) to 0.30" in drift
    assert f"p = {z_test_p(24, 30, 9, 30):.3f}" in drift


def test_the_same_fall_over_a_few_scores_is_not_flagged():
    # 0.67 -> 0.44 over 9 scores each (three items of three criteria): p ~ 0.35.
    assert z_test_p(6, 9, 4, 9) > 0.3
    assert not [f for f in rater_flags(rater((6, 9), (4, 9))) if "fell" in f]


@pytest.mark.parametrize("first, last", [((30, 30), (30, 30)), ((0, 30), (0, 30))])
def test_no_fall_no_flag(first, last):
    assert not [f for f in rater_flags(rater(first, last)) if "fell" in f]
