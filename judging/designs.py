"""Sampling designs for choosing which responses humans label: pure numpy, no Django.

A design gives each of N responses an inclusion probability pi_i in (0, 1] with
sum(pi) = budget, then draws a Poisson sample: response i is in it independently
with probability pi_i (seeded, so the same seed draws the same sample). The
probabilities are known exactly, which is what inverse-probability weighting
(`analysis.stats.sampling.ipw_ppi_mean`) needs to stay unbiased; the sample's size
is random, with mean `budget`.

Strategies:

* ``uniform``: pi_i = budget / N.
* ``uncertainty``: pi_i proportional to the judge's uncertainty u_i about response
  i (`judging.services.sampling.response_uncertainty`), with a floor of
  ``FLOOR`` x mean(u) so that every response keeps pi_i > 0 (a response the judge is
  sure about can still be drawn, so no part of the data is left out of the
  estimate), and capped at 1 (the excess goes to the others). Sampling in
  proportion to the residual's spread is what minimises the variance of the
  weighted estimate at a given budget; the judge's uncertainty is its proxy.
"""

from __future__ import annotations

import numpy as np

STRATEGIES = {
    "uncertainty": "judge uncertainty",
    "uniform": "uniform",
}
# The least a response's weight in the `uncertainty` design may be, as a share of the
# mean uncertainty.
FLOOR = 0.1


def inclusion_probabilities(
    uncertainty, budget: float, *, strategy: str = "uncertainty", floor: float = FLOOR
) -> np.ndarray:
    """Inclusion probabilities for `budget` expected draws among len(uncertainty)
    responses: every one in (0, 1], summing to min(budget, N).

    `uncertainty` (>= 0, finite) is ignored by the ``uniform`` strategy; an all-zero
    uncertainty gives the uniform design. Raises ValueError for an unknown strategy,
    a budget outside 1..N or a bad uncertainty."""
    u = np.asarray(uncertainty, dtype=float)
    n = u.size
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}")
    if n == 0 or not 1 <= budget <= n:
        raise ValueError(f"budget must be between 1 and {n}")
    if strategy == "uniform" or not np.any(u > 0):
        return np.full(n, budget / n)
    if not np.all(np.isfinite(u)) or np.any(u < 0):
        raise ValueError("uncertainty must be finite and >= 0")
    weight = np.maximum(u, floor * u.mean())
    pi = np.zeros(n)
    capped = np.zeros(n, dtype=bool)
    # Cap at 1 and share the excess out among the rest, until nothing exceeds 1
    # (at most N rounds; usually one or two).
    for _ in range(n):
        left = budget - capped.sum()
        free = ~capped
        pi[free] = left * weight[free] / weight[free].sum()
        pi[capped] = 1.0
        over = free & (pi >= 1.0)
        if not over.any():
            break
        capped |= over
    return np.clip(pi, np.finfo(float).tiny, 1.0)


def poisson_sample(pi, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(indices drawn, in a seeded random serving order; the uniform draws) of a
    Poisson sample with inclusion probabilities `pi`: i is drawn when U_i < pi_i.

    The serving order is a random permutation independent of pi, so any prefix of
    it is a simple random subsample of the sample: labelling the first m of n drawn
    responses is a design with probabilities pi_i * m / n (`scaled_probabilities`)."""
    rng = np.random.default_rng(seed)
    pi = np.asarray(pi, dtype=float)
    draws = rng.random(pi.size)
    chosen = np.flatnonzero(draws < pi)
    return chosen[rng.permutation(chosen.size)], draws


def scaled_probabilities(pi, labelled: int, sampled: int) -> np.ndarray:
    """The inclusion probabilities of the responses labelled so far, when `labelled`
    of the `sampled` ones are (taken in the random serving order): pi x m / n."""
    pi = np.asarray(pi, dtype=float)
    if sampled <= 0 or labelled >= sampled:
        return pi
    return pi * (labelled / sampled)
