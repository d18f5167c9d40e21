"""One statistic with its count and bootstrap confidence interval.

Conventions shared by every module of :mod:`analysis.stats`:

* A statistic that is undefined (fewer than 2 items, no variance, ...) is a
  :class:`Result` with ``value=None`` and a ``reason`` starting with
  ``"not enough data"``. NaN marks undefined entries inside the array functions and
  never leaves a :class:`Result`.
* The array functions return one row per weight row: row 0 is the sample itself,
  rows 1.. are bootstrap resamples (:func:`result_from_rows` reads that layout).
* Confidence intervals are percentile intervals (2.5%, 97.5%) over the resamples in
  which the statistic is defined; ``n_undefined`` counts the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOT_ENOUGH = "not enough data"


@dataclass(frozen=True)
class Result:
    """One statistic: its value (None when undefined), item count and 95% CI."""

    value: float | None
    n: int
    ci_low: float | None = None
    ci_high: float | None = None
    reason: str = ""
    n_undefined: int = 0  # bootstrap resamples where the statistic was undefined

    @property
    def defined(self) -> bool:
        return self.value is not None

    def display(self, digits: int = 3) -> str:
        if self.value is None:
            return f"{self.reason or NOT_ENOUGH} (n={self.n})"
        text = f"{self.value:.{digits}f}"
        if self.ci_low is not None and self.ci_high is not None:
            text += f" [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}]"
        return f"{text} (n={self.n})"


def finite_or_none(x) -> float | None:
    """``x`` as a float, or None when it is NaN or infinite (undefined)."""
    x = float(x)
    return x if np.isfinite(x) else None


def make_result(
    point: float, boot: np.ndarray | None, n: int, why: str = "", alpha: float = 0.05
) -> Result:
    """Wrap a point estimate (NaN = undefined) and its bootstrap replicates."""
    value = finite_or_none(point)
    if value is None:
        reason = f"{NOT_ENOUGH}: {why}" if why else NOT_ENOUGH
        return Result(None, int(n), reason=reason)
    if boot is None or len(boot) == 0:
        return Result(value, int(n))
    boot = np.asarray(boot, dtype=float)
    ok = boot[np.isfinite(boot)]
    n_undefined = int(boot.size - ok.size)
    if ok.size == 0:
        return Result(value, int(n), n_undefined=n_undefined)
    lo, hi = np.quantile(ok, [alpha / 2, 1 - alpha / 2])
    return Result(value, int(n), float(lo), float(hi), n_undefined=n_undefined)


def result_from_rows(rows, n: int, why: str) -> Result:
    """Result of per-row values: row 0 the point estimate, rows 1.. the resamples."""
    rows = np.asarray(rows, dtype=float)
    return make_result(rows[0], rows[1:], n, why)


def ratio(num, den) -> np.ndarray:
    """num / den elementwise; NaN where den is not positive (nothing to divide by)."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def ratio_result(num, den, why: str) -> Result:
    """Result of num / den per row (row 0 = point estimate); n = den[0]."""
    den = np.asarray(den, dtype=float)
    return result_from_rows(ratio(num, den), int(round(den[0])), why)
