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


def percentile_intervals(
    boot: np.ndarray, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Percentile intervals of many statistics at once: boot (B, G) -> lo, hi (G,)
    and n_undefined (G,).

    Column g's interval is exactly ``np.quantile`` of its finite entries (what
    :func:`make_result` computes one statistic at a time; NaN where none is
    finite): the columns are sorted once, undefined entries last, and each quantile
    is numpy's default ("linear") interpolation between two order statistics,
    written out with numpy's own arithmetic (``_lerp``) so that every bit agrees
    (tests/analysis/test_stats_intervals.py).
    """
    boot = np.asarray(boot, dtype=float)
    n_boot, g = boot.shape
    finite = np.isfinite(boot)
    k = finite.sum(axis=0)
    lo, hi = np.full(g, np.nan), np.full(g, np.nan)
    cols = np.flatnonzero(k > 0)
    if not cols.size:
        return lo, hi, n_boot - k
    ordered = np.sort(np.where(finite[:, cols], boot[:, cols], np.inf), axis=0)
    last = k[cols] - 1
    qs = np.array([alpha / 2, 1 - alpha / 2])
    virtual = last[None, :] * qs[:, None]  # (2, C): numpy's (n - 1) * q
    prev = np.floor(virtual)
    above = virtual >= last[None, :]
    prev = np.where(above, last[None, :], prev).astype(np.intp)
    nxt = np.where(above, prev, prev + 1)
    gamma = virtual - prev
    col = np.arange(cols.size)[None, :]
    a, b = ordered[prev, col], ordered[nxt, col]
    diff = b - a
    out = a + diff * gamma
    out = np.where(gamma >= 0.5, b - diff * (1 - gamma), out)
    lo[cols], hi[cols] = out[0], out[1]
    return lo, hi, n_boot - k


def results_from_columns(
    rows: np.ndarray, ns, whys, alpha: float = 0.05
) -> list[Result]:
    """:func:`result_from_rows` of every column of rows (B + 1, G) at once: column g
    with count ``ns[g]`` and reason ``whys[g]`` (a string: the same for all). Equal
    to calling it per column, with the intervals of :func:`percentile_intervals`."""
    rows = np.asarray(rows, dtype=float).reshape(np.shape(rows)[0], -1)
    g = rows.shape[1]
    whys = [whys] * g if isinstance(whys, str) else list(whys)
    boot = rows[1:]
    lo, hi, undefined = percentile_intervals(boot, alpha)
    out = []
    for j in range(g):
        value = finite_or_none(rows[0, j])
        n = int(ns[j])
        if value is None:
            why = whys[j]
            out.append(
                Result(None, n, reason=f"{NOT_ENOUGH}: {why}" if why else NOT_ENOUGH)
            )
        elif not boot.shape[0]:
            out.append(Result(value, n))
        elif np.isnan(lo[j]):
            out.append(Result(value, n, n_undefined=int(undefined[j])))
        else:
            out.append(
                Result(
                    value, n, float(lo[j]), float(hi[j]), n_undefined=int(undefined[j])
                )
            )
    return out


class ResultBatch:
    """Statistics gathered one by one and turned into Results together (one interval
    computation for all: :func:`results_from_columns`).

    ``add(target, key, rows, n, why)`` asks for ``target[key] = result_from_rows(rows,
    n, why)``; :meth:`resolve` makes the assignments. All rows have the same length.
    """

    def __init__(self) -> None:
        self._targets: list[tuple[dict, str]] = []
        self._rows: list[np.ndarray] = []
        self._ns: list[int] = []
        self._whys: list[str] = []

    def add(self, target: dict, key: str, rows, n: int, why: str = "") -> None:
        self._targets.append((target, key))
        self._rows.append(np.asarray(rows, dtype=float))
        self._ns.append(int(n))
        self._whys.append(why)

    def resolve(self) -> None:
        if not self._rows:
            return
        results = results_from_columns(
            np.column_stack(self._rows), self._ns, self._whys
        )
        for (target, key), res in zip(self._targets, results, strict=True):
            target[key] = res
        self.__init__()


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
