"""Estimates from a sampling campaign, and what its design saves: pure numpy.

A sampling campaign (`judging.designs`) labels a Poisson sample of responses drawn
with known inclusion probabilities pi_i. The mean human score of a model on a
criterion over the campaign's N responses (a finite population: these responses,
not a distribution they were drawn from) is estimated by prediction-powered
inference with inverse-probability weights (`sampled_mean`): the judge's mean over
all N, corrected by the judge's error on the labelled ones weighted by 1/pi_i
(a Hajek mean of the residuals, i.e. a difference / GREG estimator with lam = 1).
Unbiased under the design up to the O(1/n) of any ratio estimator (checked by
simulation in ``tests/analysis/test_sampling.py``); its variance is the design's,
``sum_S (1 - pi_i) / pi_i^2 (r_i - r_bar)^2 / N^2``.

Why not `analysis.stats.ppi.ppi_mean` with weights: its variance is the i.i.d. one
of ``ppi_py`` (the judge's spread over the unlabelled items, plus a weighted spread
of the residuals not centred on their weighted mean), which answers a
superpopulation question and, with unequal weights, grows with the judge's bias and
hides the design's saving (its own docstring notes the tuned interval runs short).

`design_widths` measures a design by simulation: given the judge's scores, its
uncertainty and a model of the human labels' spread around the judge, it draws
labels, samples by each strategy at each budget and averages the intervals' widths.
`synthetic_population` is the synthetic setting of the benchmark and the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from analysis.stats.ppi import MeanEstimate, PPIInputError
from judging.designs import STRATEGIES, inclusion_probabilities


def _vector(x, name: str) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.ndim != 1 or not np.isfinite(a).all():
        raise PPIInputError(f"{name}: must be a list of finite numbers")
    return a


def sampled_mean(
    y, f_labelled, pi_labelled, f_all, *, alpha: float = 0.05, lam: float = 1.0
) -> MeanEstimate:
    """The prediction-powered, inverse-probability-weighted mean (module doc) of the
    human labels `y` of the labelled responses, given the judge's scores on them
    (`f_labelled`), their inclusion probabilities (`pi_labelled`, in (0, 1]) and the
    judge's scores on every response of the population (`f_all`, the labelled ones
    included). With fewer than 2 labels the standard error is infinite.

    Raises `analysis.stats.ppi.PPIInputError` naming the argument: no label,
    mismatched lengths, probabilities outside (0, 1], non-finite values. Pure."""
    y = _vector(y, "y")
    f = _vector(f_labelled, "f_labelled")
    pi = _vector(pi_labelled, "pi_labelled")
    f_all = _vector(f_all, "f_all")
    n, big_n = len(y), len(f_all)
    if n == 0:
        raise PPIInputError("y: no human label")
    if len(f) != n or len(pi) != n:
        raise PPIInputError(
            f"f_labelled, pi_labelled: {len(f)} and {len(pi)} values for {n} labels"
        )
    if ((pi <= 0) | (pi > 1)).any():
        raise PPIInputError("pi_labelled: probabilities must be in (0, 1]")
    if big_n < n:
        raise PPIInputError("f_all: fewer judge scores than labelled responses")
    w = 1 / pi
    r = y - lam * f
    r_bar = float((w * r).sum() / w.sum())
    value = lam * float(f_all.mean()) + r_bar
    if n < 2:
        se = float("inf")
    else:
        se = float(np.sqrt(((1 - pi) * w**2 * (r - r_bar) ** 2).sum()) / big_n)
    z = float(NormalDist().inv_cdf(1 - alpha / 2))
    return MeanEstimate(value, se, value - z * se, value + z * se, n)


@dataclass(frozen=True)
class DesignCurve:
    """Mean interval width (`widths[strategy][k]`) and mean number of labels drawn
    (`labels[strategy][k]`) at each of `budgets`, over `reps` simulated draws; the
    means of the estimates (`estimates`) and the truths (`truths`) show bias."""

    budgets: list[int]
    widths: dict[str, list[float]]
    labels: dict[str, list[float]]
    estimates: dict[str, list[float]]
    truths: list[float]
    reps: int


def design_widths(
    *,
    f,
    uncertainty,
    sigma,
    budgets: list[int],
    groups=None,
    reps: int = 100,
    seed: int = 0,
    alpha: float = 0.05,
    bias: float = 0.0,
    y=None,
) -> DesignCurve:
    """Simulate both strategies of `judging.designs` at each budget.

    `f`: the judge's score per response; `uncertainty`: its uncertainty (what the
    ``uncertainty`` strategy samples by); `sigma`: the spread of the human label
    around the judge per response. Each repetition draws human labels
    y = f + bias + N(0, sigma) (or uses the fixed labels `y` when given: a fixed
    population, only the sample varies), samples by each strategy and estimates each
    group's mean (`groups`: a group label per response, e.g. the model; one group
    when None) with `sampled_mean`; widths and estimates are averaged over groups
    and repetitions. A group with fewer than 2 labels in a draw is left out of that
    draw's average. Seeded: the same arguments give the same curve."""
    f = np.asarray(f, dtype=float)
    u = np.asarray(uncertainty, dtype=float)
    sigma = np.broadcast_to(np.asarray(sigma, dtype=float), f.shape)
    groups = np.zeros(f.size, dtype=int) if groups is None else np.asarray(groups)
    members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    rng = np.random.default_rng(seed)
    widths = {s: [] for s in STRATEGIES}
    labels = {s: [] for s in STRATEGIES}
    estimates = {s: [] for s in STRATEGIES}
    truths = []
    designs = {
        (s, b): inclusion_probabilities(u, b, strategy=s)
        for s in STRATEGIES
        for b in budgets
    }
    sums = {key: [0.0, 0.0, 0.0, 0] for key in designs}  # width, labels, est, count
    for _ in range(reps):
        labels_y = (
            f + bias + rng.normal(0.0, 1.0, f.size) * sigma
            if y is None
            else np.asarray(y, dtype=float)
        )
        truths.append(float(np.mean([labels_y[m].mean() for m in members])))
        for key, pi in designs.items():
            drawn = rng.random(f.size) < pi
            width, est, count = 0.0, 0.0, 0
            for m in members:
                hit = m[drawn[m]]
                if hit.size < 2:
                    continue
                e = sampled_mean(labels_y[hit], f[hit], pi[hit], f[m], alpha=alpha)
                width += e.high - e.low
                est += e.value
                count += 1
            total = sums[key]
            total[1] += drawn.sum()
            if count:
                total[0] += width / count
                total[2] += est / count
                total[3] += 1
    for (s, _), (w, n, e, k) in sums.items():
        widths[s].append(w / k if k else float("nan"))
        labels[s].append(n / reps)
        estimates[s].append(e / k if k else float("nan"))
    return DesignCurve(list(budgets), widths, labels, estimates, truths, reps)


def synthetic_population(
    n: int, *, seed: int = 0, informative: bool = True, hard_share: float = 0.2
):
    """A synthetic setting (labelled synthetic wherever shown): (f, uncertainty,
    sigma) for `n` responses. The judge's score f is uniform on [1, 5]; a
    `hard_share` of responses are hard (the judge's samples disagree: uncertainty
    1.2, the others 0.15). With `informative`, the human label's spread around the
    judge is that uncertainty; otherwise every response has the same spread (the
    mean), so the judge's uncertainty tells nothing."""
    rng = np.random.default_rng(seed)
    f = rng.uniform(1, 5, n)
    hard = rng.random(n) < hard_share
    u = np.where(hard, 1.2, 0.15)
    sigma = u if informative else np.full(n, u.mean())
    return f, u, sigma
