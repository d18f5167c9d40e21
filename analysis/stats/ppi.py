"""Prediction-powered inference for a mean (PPI and PPI++), pure numpy.

The question: what is a model's mean *human* score on a criterion, when humans
labelled n items and the judge scored those n and N more? Three answers:

* **humans only** - the mean of the n human labels, with its CLT interval;
* **judge only** - the judge's mean over all n + N items. Biased by whatever bias
  the judge has; its interval (``naive``) is the judge's own sampling error, **not a
  confidence interval for the human mean**, and is given only to show that;
* **prediction-powered** - ``theta = lam * mean(f_unlabelled) + mean(y - lam * f)``
  (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered
  Inference", arXiv:2311.01453): the judge's mean, corrected by its mean error on
  the human-labelled items (the *rectifier*). Unbiased for any judge and any lam;
  ``lam = 1`` is classic PPI (Angelopoulos et al. 2023, Science), ``lam = 0`` the
  humans-only mean, and the power-tuned lam (PPI++) minimises the variance
  estimate, clipped to [0, 1], so PPI++ is never (asymptotically) worse than the
  humans alone.

Conventions, those of ``ppi_py`` 0.2.3 (``ppi_mean_pointestimate``,
``ppi_mean_ci``, ``classical_mean_ci``) to 1e-10, checked in
``tests/analysis/test_ppi.py`` on the same arrays:

* ``f_unlabelled`` holds the judge's scores on the items **without** a human label;
  the labelled and unlabelled items are two independent samples of one population
  (``ppi_py``'s ``Yhat_unlabeled``; N = ``len(f_unlabelled)`` in lam's ``1 + n/N``).
  Passing every item, the labelled ones included, would count them twice.
* Standard deviations are population ones (``ddof=0``); the variance of the
  judge's scores in lam's denominator is the sample one (``ddof=1``) over the n + N
  judge scores; the tuned lam is computed around the lam = 1 estimate.
* Variance: ``var(lam f_unlabelled) / N + var(y - lam f) / n`` (the two samples are
  independent); the interval is ``theta +- z_{1-alpha/2} se`` (normal, two-sided).
* Weights (items sampled with unequal probabilities): ``weights`` on the labelled
  items, ``weights_unlabelled`` on the others, each normalised to mean 1 (as
  ``ppi_py`` does), so only their ratios matter: ``w_i = 1 / (N pi_i)`` and
  ``1 / pi_i`` give the same answer. With inclusion probabilities pi_i, give the
  labelled items ``1 / pi_i`` and the unlabelled ones ``1 / (1 - pi_i)``: each set
  is then reweighted to the population (self-normalised, Hajek), which the
  simulation test checks is unbiased. Uniform sampling needs neither.
  ``ppi_py``'s weighted standard deviation is that of ``w * z``, not centred on the
  weighted mean, and lam is tuned on it: with strongly unequal weights the tuned
  interval runs short (the test's design: 92-93% for a nominal 95%; lam = 1 stays
  at about 95%). Pass ``lam=1`` when the inclusion probabilities vary a lot.

The **effective number of human labels** is ``n * var(humans only) / var(PPI)``:
how many human labels alone would give the PPI interval's width.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.stats import norm


class PPIInputError(ValueError):
    """Arrays PPI cannot use; the message names the argument."""


@dataclass(frozen=True)
class MeanEstimate:
    """A mean with its standard error and two-sided (1 - alpha) interval.

    `valid` is False for an interval that is not a confidence interval for the
    human mean (the judge-only one); `n` is the number of scores it averages."""

    value: float
    se: float
    low: float
    high: float
    n: int
    valid: bool = True

    def as_dict(self) -> dict:
        """JSON-ready: value, ci [low, high], se, n, valid."""
        return {
            "value": self.value,
            "ci": [self.low, self.high],
            "se": self.se,
            "n": self.n,
            "valid": self.valid,
        }


@dataclass(frozen=True)
class PPIResult:
    """The three estimates of one mean, side by side (module doc).

    ppi: the prediction-powered estimate with `lam` (tuned unless given);
    classic: the same with lam = 1; humans: humans only; judge: judge only (its
    interval is not valid for the human mean); effective_n: module doc (inf when the
    PPI variance is 0, nan when both are 0)."""

    ppi: MeanEstimate
    classic: MeanEstimate
    humans: MeanEstimate
    judge: MeanEstimate
    lam: float
    tuned: bool
    effective_n: float
    n_labelled: int
    n_unlabelled: int

    def as_dict(self) -> dict:
        return {
            "ppi": self.ppi.as_dict(),
            "classic": self.classic.as_dict(),
            "humans": self.humans.as_dict(),
            "judge": self.judge.as_dict(),
            "lam": self.lam,
            "tuned": self.tuned,
            "effective_n": self.effective_n,
            "n_labelled": self.n_labelled,
            "n_unlabelled": self.n_unlabelled,
        }


def _vector(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1:
        raise PPIInputError(f"{name}: must be one-dimensional, not shape {a.shape}")
    if not np.isfinite(a).all():
        raise PPIInputError(f"{name}: every value must be a finite number")
    return a


def _weights(w, n: int, name: str) -> np.ndarray:
    """Weights normalised to mean 1 (ppi_py's `construct_weight_vector`)."""
    if w is None:
        return np.ones(n)
    a = _vector(w, name)
    if len(a) != n:
        raise PPIInputError(f"{name}: {len(a)} weights for {n} items")
    if (a <= 0).any():
        raise PPIInputError(f"{name}: every weight must be positive")
    return a / a.sum() * n


def tuned_lambda(y, f, f_u, w, w_u) -> float:
    """PPI++'s variance-minimising lam for a mean, clipped to [0, 1].

    ``cov(w(y - t), w(f - t)) / ((1 + n/N) var([w(f - t), w_u(f_u - t)]))``, t the
    lam = 1 estimate (ppi_py's `_calc_lam_glm` with the identity Hessian). Weights
    already normalised. 0 when the judge's scores do not vary."""
    n, big_n = len(y), len(f_u)
    t = (w_u * f_u).mean() + (w * (y - f)).mean()
    g, gh, ghu = w * (y - t), w * (f - t), w_u * (f_u - t)
    cov = 2 * ((g - g.mean()) * (gh - gh.mean())).sum() / n
    var = np.var(np.concatenate([gh, ghu]), ddof=1)
    if not var > 0:
        return 0.0
    return float(np.clip(cov / (2 * (1 + n / big_n) * var), 0.0, 1.0))


@lru_cache(maxsize=16)
def _z(alpha: float) -> float:
    return float(norm.ppf(1 - alpha / 2))


def _interval(value: float, se: float, n: int, alpha: float, valid=True):
    z = _z(alpha)
    value, se = float(value), float(se)
    return MeanEstimate(value, se, value - z * se, value + z * se, n, valid)


def ppi_mean(
    y_labelled,
    f_labelled,
    f_unlabelled,
    weights=None,
    alpha: float = 0.05,
    lam: float | None = None,
    weights_unlabelled=None,
) -> PPIResult:
    """The humans-only, judge-only and prediction-powered means (module doc).

    y_labelled: the human label of each labelled item (e.g. the raters' mean);
    f_labelled: the judge's score on the same items, in the same order;
    f_unlabelled: the judge's scores on the items without a human label (N >= 1);
    weights / weights_unlabelled: optional positive weights (module doc);
    lam: None tunes it (PPI++), a number fixes it (1 = classic PPI).

    Raises PPIInputError naming the argument: no labelled item (`y_labelled`),
    mismatched lengths, non-finite values, no unlabelled item, alpha outside (0, 1).
    Pure: no I/O, no randomness.
    """
    y = _vector(y_labelled, "y_labelled")
    f = _vector(f_labelled, "f_labelled")
    f_u = _vector(f_unlabelled, "f_unlabelled")
    n, big_n = len(y), len(f_u)
    if n == 0:
        raise PPIInputError(
            "y_labelled: no human-labelled item; PPI needs at least one"
        )
    if len(f) != n:
        raise PPIInputError(
            f"f_labelled: {len(f)} judge scores for {n} human-labelled items"
        )
    if big_n == 0:
        raise PPIInputError(
            "f_unlabelled: no item without a human label; with every item labelled "
            "the humans-only mean is the answer"
        )
    if not 0 < alpha < 1:
        raise PPIInputError(f"alpha: must be between 0 and 1, not {alpha}")
    w = _weights(weights, n, "weights")
    w_u = _weights(weights_unlabelled, big_n, "weights_unlabelled")
    tuned = lam is None
    if tuned:
        lam = tuned_lambda(y, f, f_u, w, w_u)
    lam = float(lam)

    def estimate(lam_: float) -> MeanEstimate:
        value = (w_u * lam_ * f_u).mean() + (w * (y - lam_ * f)).mean()
        var = (w_u * lam_ * f_u).std() ** 2 / big_n + (
            w * (y - lam_ * f)
        ).std() ** 2 / n
        return _interval(value, np.sqrt(var), n + big_n, alpha)

    ppi, classic = estimate(lam), estimate(1.0)
    humans = humans_mean(y, alpha=alpha, weights=w)
    f_all = np.concatenate([f, f_u])
    judge = _interval(
        f_all.mean(), f_all.std() / np.sqrt(len(f_all)), len(f_all), alpha, False
    )
    return PPIResult(
        ppi=ppi,
        classic=classic,
        humans=humans,
        judge=judge,
        lam=lam,
        tuned=tuned,
        effective_n=effective_labels(n, humans.se, ppi.se),
        n_labelled=n,
        n_unlabelled=big_n,
    )


def humans_mean(y_labelled, alpha: float = 0.05, weights=None) -> MeanEstimate:
    """The humans-only mean of the labels with its CLT interval: ppi_py's
    `classical_mean_ci` (the lam = 0 estimate). The answer when every item has a
    human label. Raises PPIInputError naming `y_labelled` when it is empty. Pure."""
    y = _vector(y_labelled, "y_labelled")
    n = len(y)
    if n == 0:
        raise PPIInputError("y_labelled: no human-labelled item")
    w = _weights(weights, n, "weights")
    return _interval((w * y).mean(), (w * y).std() / np.sqrt(n), n, alpha)


def effective_labels(n: int, se_humans: float, se_ppi: float) -> float:
    """``n * var(humans only) / var(PPI)``: the human labels the judge is worth
    together with the n it was corrected on (inf for a zero PPI variance, nan when
    both are zero)."""
    if se_ppi == 0:
        return float("nan") if se_humans == 0 else float("inf")
    return float(n * se_humans**2 / se_ppi**2)


# Outcomes of a pairwise comparison, from the first model's side.
WIN, TIE, LOSS = 1.0, 0.5, 0.0


def ppi_win_rate(y_labelled, f_labelled, f_unlabelled, **kwargs) -> PPIResult:
    """The first model's win rate over the second: :func:`ppi_mean` on the outcome
    of each pair from the first model's side, 1 (win), 0.5 (tie), 0 (loss), or the
    mean of several (the votes of several raters on a pair, a judge's verdicts in
    both orders): the human outcome (`y_labelled`) and the judge's (`f_*`). Raises
    PPIInputError also for an outcome outside [0, 1]."""
    for name, x in (
        ("y_labelled", y_labelled),
        ("f_labelled", f_labelled),
        ("f_unlabelled", f_unlabelled),
    ):
        a = np.asarray(x, dtype=float)
        if not ((a >= LOSS) & (a <= WIN)).all():
            raise PPIInputError(f"{name}: outcomes must lie between 0 and 1")
    return ppi_mean(y_labelled, f_labelled, f_unlabelled, **kwargs)
