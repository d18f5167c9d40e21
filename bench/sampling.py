"""Benchmark: CI width against human labels spent, uncertainty vs uniform sampling.

    .venv/bin/python bench/sampling.py [--n 2000] [--reps 200] [--seed 0]

SYNTHETIC data (`analysis.stats.sampling.synthetic_population`): N responses, the
judge's score uniform on 1-5, 20% hard responses on which its samples disagree
(uncertainty 1.2, the rest 0.15), human labels = judge + 0.3 + noise. Two
settings: the judge's uncertainty *informs* (the noise's spread is that
uncertainty) and it does *not* (every response the same spread). For each budget,
the mean 95% interval width of the prediction-powered IPW estimate over `reps`
seeded draws per design, the labels actually drawn, and the estimates' mean bias.
Pure numpy: no database."""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from analysis.stats.sampling import design_widths, synthetic_population

    budgets = [25, 50, 100, 200, 400]
    print(f"SYNTHETIC data: N={args.n}, {args.reps} draws per point, seed {args.seed}")
    for informative in (True, False):
        f, u, sigma = synthetic_population(
            args.n, seed=args.seed, informative=informative
        )
        start = time.perf_counter()
        curve = design_widths(f=f, uncertainty=u, sigma=sigma, budgets=budgets,
                              reps=args.reps, seed=args.seed + 1, bias=0.3)  # fmt: skip
        truth = sum(curve.truths) / len(curve.truths)
        label = "informs" if informative else "does NOT inform"
        print(f"\njudge uncertainty {label} ({time.perf_counter() - start:.1f} s)")
        print(f"{'budget':>7} {'labels unc':>10} {'width unc':>10} {'labels uni':>10} "
              f"{'width uni':>10} {'saving':>7} {'bias unc':>9} {'bias uni':>9}")  # fmt: skip
        for k, b in enumerate(budgets):
            wu, wf = curve.widths["uncertainty"][k], curve.widths["uniform"][k]
            print(
                f"{b:>7} {curve.labels['uncertainty'][k]:>10.1f} {wu:>10.3f} "
                f"{curve.labels['uniform'][k]:>10.1f} {wf:>10.3f} "
                f"{1 - wu / wf:>6.0%} "
                f"{curve.estimates['uncertainty'][k] - truth:>+9.4f} "
                f"{curve.estimates['uniform'][k] - truth:>+9.4f}"
            )


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    os.environ.setdefault("FLASK_DEV", "1")
    import django

    django.setup()
    main()
