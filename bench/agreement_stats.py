"""Agreement statistics speed: the full table with bootstrap CIs vs library calls.

    .venv/bin/python bench/agreement_stats.py [--boot 1000] [--items-per-skill 8333]

Synthesizes FLASK-shaped data: 12 skills in 4 primary abilities, ~8,333 (response,
skill) items per skill, 10 evaluated models, 0-3 human raters per item (mean 1.0, so
~100,000 human scores) and one judge score per item (~100,000), with some N/A on
both sides. Then times

  table   analysis.stats.agreement_table (best of --repeat runs): every statistic per skill, per ability and
          overall, each with --boot bootstrap resamples (target: well under 3 s);
  floor   the same point statistics once per group, straight from scipy,
          krippendorff and sklearn (no bootstrap);
  naive   the library calls once per resample: 10 resamples timed, x boot/10.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import stats as st  # noqa: E402

ABILITIES = {
    "logical_thinking": ["robustness", "correctness", "efficiency"],
    "background_knowledge": ["factuality", "commonsense"],
    "problem_handling": [
        "comprehension",
        "insightfulness",
        "completeness",
        "metacognition",
    ],
    "user_alignment": ["conciseness", "readability", "harmlessness"],
}
MAX_RATERS = 3


def synthesize(items_per_skill: int, n_models: int, seed: int):
    """Per skill: ratings (n, 3) with NaN, judge (n,) with 0 = N/A, model (n,)."""
    rng = np.random.default_rng(seed)
    data = {}
    for skills in ABILITIES.values():
        for skill in skills:
            n = items_per_skill
            model = rng.integers(0, n_models, n)
            quality = np.clip(2.8 + model * 0.05 + rng.normal(0, 1.0, n), 1, 5)
            raters = rng.choice(4, size=n, p=[0.3, 0.5, 0.1, 0.1])  # mean 1.0
            r = np.clip(
                np.round(quality[:, None] + rng.normal(0, 0.7, (n, MAX_RATERS))), 1, 5
            )
            r[np.arange(MAX_RATERS)[None, :] >= raters[:, None]] = np.nan
            human_na = np.zeros(n, int)
            na = (rng.random(n) < 0.03) & (raters > 0)
            human_na[na] = raters[na]
            r[na] = np.nan  # humans said N/A: no numeric score
            judge = np.clip(np.round(quality + 0.3 + rng.normal(0, 0.8, n)), 1, 5)
            judge_na = rng.random(n) < 0.03
            judge = np.where(judge_na, 0, judge).astype(int)
            data[skill] = (r, judge, model, human_na, judge_na)
    return data


def to_items(data):
    out = {}
    for skill, (r, judge, model, human_na, judge_na) in data.items():
        _, counts = st.ratings_to_counts(r, st.VALUES)
        out[skill] = st.GroupItems(counts, judge, model, human_na, judge_na)
    return out


def groups_raw(data):
    """(name, ratings, judge, model) for every skill, ability and overall."""
    out = [(f"skill:{s}", *data[s][:3]) for s in data]
    for ability, skills in ABILITIES.items():
        parts = [data[s] for s in skills]
        out.append(
            (
                f"ability:{ability}",
                *(np.concatenate(p) for p in zip(*parts, strict=True)),
            )
        )
    parts = list(data.values())
    out.append(("overall", *(np.concatenate(p) for p in zip(*parts, strict=True))))
    return [(name, r, j, m) for name, r, j, m, *_ in out]


def library_point_stats(r, judge, model, values=None):
    """The point statistics straight from the libraries (the floor)."""
    import krippendorff
    from scipy import stats as ss
    from sklearn.metrics import cohen_kappa_score

    domain = st.VALUES if values is None else np.asarray(values, float)
    both = (judge > 0) & (~np.isnan(r)).any(axis=1)
    r, j, m = r[both], judge[both].astype(float), model[both]
    hm = np.nanmean(r, axis=1)
    hr = st.round_half_up(np.nanmedian(r, axis=1))
    out = {
        "spearman": ss.spearmanr(j, hm)[0],
        "kendall": ss.kendalltau(j, hm)[0],
        "pearson": ss.pearsonr(j, hm)[0],
        "qwk": cohen_kappa_score(
            j.astype(int), hr.astype(int), weights="quadratic", labels=list(domain)
        ),
        "exact": np.mean(j == hr),
        "within1": np.mean(np.abs(j - hr) <= 1),
        "leniency": np.mean(j - hm),
        "mae": np.mean(np.abs(j - hm)),
    }
    with_j = np.column_stack([r, j])
    for level in st.LEVELS:
        kw = {"level_of_measurement": level, "value_domain": domain}
        out[f"alpha_{level}"] = krippendorff.alpha(reliability_data=r.T, **kw)
        out[f"alpha_{level}_with_judge"] = krippendorff.alpha(
            reliability_data=with_j.T, **kw
        )
    models = np.unique(m)
    h_m = [hm[m == k].mean() for k in models]
    j_m = [j[m == k].mean() for k in models]
    out["model_spearman"] = ss.spearmanr(h_m, j_m)[0]
    out["model_kendall"] = ss.kendalltau(h_m, j_m)[0]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--items-per-skill", type=int, default=8333)
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="table runs; best is kept")
    args = ap.parse_args()

    data = synthesize(args.items_per_skill, args.models, args.seed)
    n_human = sum(int((~np.isnan(d[0])).sum()) for d in data.values())
    n_judge = sum(int((d[1] > 0).sum()) for d in data.values())
    print(
        f"data: {len(data)} skills, {args.items_per_skill} items/skill, "
        f"{n_human} human scores, {n_judge} judge scores, {args.models} models"
    )

    t0 = time.perf_counter()
    items = to_items(data)
    t_prep = time.perf_counter() - t0
    agreement_table_warm = st.agreement_table(items, ABILITIES, n_boot=10, seed=1)
    del agreement_table_warm
    runs = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        table = st.agreement_table(items, ABILITIES, n_boot=args.boot, seed=args.seed)
        runs.append(time.perf_counter() - t0)
    t_table = min(runs)

    groups = groups_raw(data)
    library_point_stats(*groups[0][1:])  # warm imports
    t0 = time.perf_counter()
    floor = {name: library_point_stats(r, j, m) for name, r, j, m in groups}
    t_floor = time.perf_counter() - t0

    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    for _, r, j, m in groups:
        for _ in range(10):
            idx = rng.integers(0, len(j), len(j))
            library_point_stats(r[idx], j[idx], m[idx])
    t_naive10 = time.perf_counter() - t0
    t_naive = t_naive10 * args.boot / 10

    # the fast table's point values must be the libraries' values
    worst = 0.0
    for name, ref in floor.items():
        rep = table[name]
        got = {
            **{k: rep.judge[k].value for k in ("spearman", "kendall", "pearson")},
            **{k: rep.judge[k].value for k in ("qwk", "exact", "within1")},
            "leniency": rep.judge["leniency"].value,
            "mae": rep.judge["mae"].value,
            "model_spearman": rep.models["spearman"].value,
            "model_kendall": rep.models["kendall"].value,
        }
        for level in st.LEVELS:
            got[f"alpha_{level}"] = rep.human[f"alpha_{level}"].value
            got[f"alpha_{level}_with_judge"] = rep.judge[
                f"alpha_{level}_with_judge"
            ].value
        for k, v in ref.items():
            worst = max(worst, abs(got[k] - v) / max(abs(v), 1e-12))

    print(f"groups: {len(table)} (12 skills + 4 abilities + overall)")
    print(f"prep (ratings -> counts)       {t_prep:8.3f} s")
    print(
        f"table, {args.boot} bootstrap resamples {t_table:8.3f} s "
        f"(best of {args.repeat}: {', '.join(f'{t:.3f}' for t in runs)})"
    )
    print(f"floor, library point stats once {t_floor:8.3f} s")
    print(f"ratio table / floor            {t_table / t_floor:8.2f} x")
    print(
        f"naive library loop, {args.boot} resamples ~{t_naive:8.1f} s "
        f"(10 timed: {t_naive10:.2f} s; table is {t_naive / t_table:.0f}x faster)"
    )
    print(f"max relative difference of point values vs libraries: {worst:.1e}")
    print()
    for name in ("skill:correctness", "ability:logical_thinking", "overall"):
        rep = table[name]
        print(f"== {name}  {rep.counts}")
        for k in ("alpha_ordinal", "alpha_interval", "exact", "within1"):
            print(f"  human {k:26s} {rep.human[k].display()}")
        for k, v in rep.judge.items():
            if isinstance(v, st.Result):
                print(f"  judge {k:26s} {v.display()}")
        for k in ("spearman", "kendall"):
            print(f"  model rank {k:21s} {rep.models[k].display()}")
    print("confusion (overall; rows judge 1-5, cols rounded human median 1-5):")
    print(table["overall"].judge["confusion"])


if __name__ == "__main__":
    main()
