"""Meta-evaluation report speed: analysis.stats.metaeval_report over 100,000 verdicts.

    .venv/bin/python bench/metaeval_report.py [--pairs 50000] [--boot 1000] [--repeat 5]
                                             [--items 10000]

Synthesizes one pairwise judge run: --pairs pairs x 2 orders (100,000 verdicts by
default) in 8 categories (two reward-model style sections), 1 human vote on most pairs
and 2-5 votes on 20% of them, ~3% error verdicts, some ties, an order bias and a length
bias, response lengths and own-family flags. Times the pure computation (encoding the
string arrays, every figure overall / per category / per section, the order, length and
self-preference probes, all with --boot bootstrap resamples) and prints the median of
--repeat runs (target: well under 1 s). Then times the two pointwise probes (length
and halo) once over --items responses, for scale.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import stats as me  # noqa: E402

CATEGORIES = [f"cat{i}" for i in range(8)]
SECTIONS = {"chat": CATEGORIES[:4], "reasoning": CATEGORIES[4:]}
LABELS = np.array(["1", "2", "tie", ""], dtype=object)


def synthesize(n_pairs: int, seed: int = 0) -> me.PairwiseData:
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, size=n_pairs, p=[0.45, 0.45, 0.10])  # 0 "1", 1 "2", 2 tie
    length_1 = rng.integers(50, 2000, n_pairs)
    length_2 = rng.integers(50, 2000, n_pairs)

    def judge(first_code: int) -> np.ndarray:
        correct = rng.random(n_pairs) < 0.7
        noise = rng.choice(3, size=n_pairs, p=[0.4, 0.4, 0.2])
        v = np.where(correct, truth, noise)
        v = np.where(rng.random(n_pairs) < 0.08, first_code, v)  # order bias
        longer = np.where(length_1 > length_2, 0, 1)
        v = np.where(rng.random(n_pairs) < 0.05, longer, v)  # length bias
        v = np.where(rng.random(n_pairs) < 0.03, 3, v)  # errors
        return LABELS[v]

    ab, ba = judge(0), judge(1)  # ab shows "1" first, ba shows "2" first
    n_votes = np.where(rng.random(n_pairs) < 0.2, rng.integers(2, 6, n_pairs), 1)
    vote_idx = np.repeat(np.arange(n_pairs), n_votes)
    agree = rng.random(vote_idx.size) < 0.75
    votes = np.where(agree, truth[vote_idx], rng.choice(3, size=vote_idx.size))
    pair_id = np.arange(n_pairs) * 7 + 3  # database ids, not 0..n-1
    return me.PairwiseData(
        pair_id=pair_id,
        verdict_ab=ab,
        verdict_ba=ba,
        vote_pair=pair_id[vote_idx],
        vote_label=LABELS[votes],
        category=np.array(CATEGORIES)[rng.integers(0, len(CATEGORIES), n_pairs)],
        length_1=length_1,
        length_2=length_2,
        own_1=rng.random(n_pairs) < 0.1,
        own_2=rng.random(n_pairs) < 0.1,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pairs", type=int, default=50_000)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--items", type=int, default=10_000, help="pointwise responses")
    args = ap.parse_args()
    data = synthesize(args.pairs)
    n_votes = len(data.vote_label)
    print(
        f"{args.pairs} pairs x 2 orders = {2 * args.pairs} verdicts, "
        f"{n_votes} human votes, {len(CATEGORIES)} categories, {args.boot} resamples"
    )
    times = []
    for i in range(args.repeat):
        t0 = time.perf_counter()
        rep = me.metaeval_report(data, SECTIONS, n_boot=args.boot, seed=i)
        times.append(time.perf_counter() - t0)
    print("runs (s): " + ", ".join(f"{t:.3f}" for t in times))
    print(f"median: {statistics.median(times):.3f} s")
    # pointwise probes, for scale: --items responses, 12 skills, 3 scored per response
    rng = np.random.default_rng(1)
    n = args.items
    judge = rng.integers(1, 6, n).astype(float)
    human = np.round(rng.normal(3, 1, n) * 3) / 3
    length = rng.integers(20, 3000, n)
    t0 = time.perf_counter()
    me.pointwise_length_probe(judge, human, length, n_boot=args.boot)
    t1 = time.perf_counter()
    js = rng.integers(1, 6, (n, 12)).astype(float)
    hs = np.round(js + rng.normal(0, 1, (n, 12)), 1)
    unscored = np.argsort(rng.random((n, 12)), axis=1) >= 3
    js[unscored] = np.nan
    hs[unscored] = np.nan
    t2 = time.perf_counter()
    me.halo_probe(js, hs, n_boot=args.boot)
    t3 = time.perf_counter()
    print(
        f"pointwise probes over {n} responses: length {t1 - t0:.3f} s, "
        f"halo (12 skills, 3 scored each) {t3 - t2:.3f} s"
    )
    o = rep["overall"]
    for k in ("accuracy_ab", "accuracy_ba", "consistency", "kappa", "human_loo"):
        print(f"  {k:<14} {o[k].display()}")
    for k, p in rep["probes"].items():
        print(f"  probe {k:<16} {p.value.display()} (baseline {p.baseline})")


if __name__ == "__main__":
    main()
