"""An experiment's figures: each run against the humans, and against the baseline.

Per run, per criterion and overall (criteria pooled, stratified by criterion, when
they share one scale): QWK, Spearman and exact agreement with the humans, with
bootstrap CIs, on the items the run and the humans scored numerically; the humans'
own agreement (the ceiling: Krippendorff's ordinal alpha and the raters' exact
agreement) on the items two or more raters scored; cost, tokens, mean latency and
parse failures of its calls. Each run against the baseline: the paired difference
of each statistic over the items both scored (:mod:`analysis.stats.paired`), and the
better run named only when the interval excludes 0.

The item set is a part of the dataset's development / test split: "dev" by default
when the dataset has a split ("all" without one), "test" only with the
`TestSplitLook` the caller logged first (judging.services.splits). Results are
cached under the inputs' fingerprint, like the agreement dashboard's.
"""

from __future__ import annotations

import numpy as np
from django.core.cache import cache
from django.db.models import Avg, Count, Q, Sum

from analysis import compare
from analysis.selectors.agreement.cache import (
    CACHE_SECONDS,
    cache_key,
    cached_result,
    gc_paused,
    inputs_fingerprint,
)
from analysis.selectors.agreement.inputs import (
    human_side,
    item_keys,
    judge_by_item,
    load_inputs,
)
from analysis.selectors.agreement.rows import result_dict
from analysis.selectors.agreement.sources import (
    AgreementError,
    agreement_defaults,
    check_resampling,
    run_label,
)
from analysis.stats.paired import PAIRED_STATS, paired_comparison
from analysis.stats.report import human_ceiling_table
from analysis.stats.scale import same_scale
from judging.models import Experiment, JudgeCall
from judging.selectors.runs import judge_run_counts
from judging.selectors.splits import eval_split_summary

PARTS = ("dev", "test", "all")
OVERALL = "overall"


def _part(experiment: Experiment, part: str | None, split, test_look) -> str:
    part = part or ("dev" if split else "all")
    if part not in PARTS:
        raise AgreementError(f"part: use one of {', '.join(PARTS)}, not {part[:20]!r}")
    if part != "all" and split is None:
        raise AgreementError(
            "part: the dataset has no development / test split; make one first"
        )
    if part == "test" and (test_look is None or test_look.split_id != split["id"]):
        raise AgreementError(
            "part: the test split is locked; evaluating on it is logged: use "
            "'Evaluate on the test split'"
        )
    return part


def _call_figures(run_ids: list[int]) -> dict[int, dict]:
    """Per run: cost, tokens, calls, failed calls, mean latency, parse failures
    (two grouped queries whatever the number of runs)."""
    counts = judge_run_counts(run_ids=run_ids)
    rows = (
        JudgeCall.objects.filter(run_id__in=run_ids)
        .values("run_id")
        .annotate(
            latency=Avg("latency_ms", filter=Q(cached=False)),
            parse_failures=Sum("parse_failures"),
            failed_parse=Count("pk", filter=Q(error_kind__startswith="parse")),
        )
        .order_by()
    )
    extra = {r["run_id"]: r for r in rows}
    out = {}
    for rid in run_ids:
        c, e = counts[rid], extra.get(rid, {})
        out[rid] = {
            "calls": c.total,
            "failed_calls": c.failed,
            "cached_calls": c.cached,
            "input_tokens": c.input_tokens,
            "output_tokens": c.output_tokens,
            "tokens": c.tokens,
            "cost": float(c.cost),
            "latency_ms_mean": (
                None if e.get("latency") is None else round(float(e["latency"]), 1)
            ),
            "parse_failures": int(e.get("parse_failures") or 0),
        }
    return out


def _groups(inp, n_sk: int, present) -> tuple[list[dict], dict[str, list[int]]]:
    """The rows (the criteria with scores, then overall when they share one scale)
    and the criterion indices of each."""
    keys = [k for i, k in enumerate(inp.skills.keys) if i in present]
    rows = [
        {
            "key": k,
            "name": inp.skills.names.get(k, k),
            "scale": f"{int(inp.skills.values[k][0])}-{int(inp.skills.values[k][-1])}",
        }
        for k in keys
    ]
    members = {k: [inp.skills.keys.index(k)] for k in keys}
    if len(keys) > 1 and same_scale([inp.skills.values[k] for k in keys]):
        rows.append({"key": OVERALL, "name": "Overall", "scale": rows[0]["scale"]})
        members[OVERALL] = [m[0] for m in members.values()]
    return rows, members


def _aligned(h_keys, h_counts, keys_a, codes_a, keys_b=None, codes_b=None):
    """Items the humans and run A (and run B) scored numerically: (keys, human
    counts, A's codes, B's codes)."""
    keep = np.intersect1d(h_keys[h_counts.sum(axis=1) > 0], keys_a[codes_a > 0])
    if keys_b is not None:
        keep = np.intersect1d(keep, keys_b[codes_b > 0])
    hc = h_counts[np.searchsorted(h_keys, keep)]
    a = codes_a[np.searchsorted(keys_a, keep)]
    b = codes_b[np.searchsorted(keys_b, keep)] if keys_b is not None else a
    return keep, hc, a, b


def _compare(inp, members, n_sk, h, a, b, n_boot, seed) -> dict:
    """Per row key: the paired comparison of A and B on the aligned items."""
    keys, hc, ja, jb = _aligned(*h, *a, *b) if b else _aligned(*h, *a)
    out = {}
    skill_of = keys % n_sk
    for row_key, wanted in members.items():
        sel = np.isin(skill_of, wanted)
        values = inp.skills.values[inp.skills.keys[wanted[0]]]
        v = len(values)
        out[row_key] = paired_comparison(
            hc[sel][:, :v], ja[sel], jb[sel], values, skill_of[sel], n_boot, seed
        )
    return out


def _ceiling(inp, members, h_keys, h_counts, n_sk, n_boot, seed) -> dict:
    skills, values = {}, {}
    for k in (k for k in members if k != OVERALL):
        i = inp.skills.keys.index(k)
        v = inp.skills.values[k]
        sel = (h_keys % n_sk == i) & (h_counts.sum(axis=1) >= 2)
        skills[k] = h_counts[sel][:, : len(v)]
        values[k] = v
    table = human_ceiling_table(skills, {}, n_boot, seed, values=values)
    out = {}
    for row_key in members:
        human = table.get(OVERALL if row_key == OVERALL else f"skill:{row_key}")
        if human is None:
            continue
        out[row_key] = {
            "n_items_multi_rated": human.get("n_items_multi_rated", 0),
            "alpha_ordinal": result_dict(human["alpha_ordinal"]),
            "exact": result_dict(human["exact"]),
        }
    return out


@gc_paused()
def experiment_figures(
    *,
    experiment: Experiment,
    part: str | None = None,
    test_look=None,
    n_boot: int = 1000,
    seed: int = 0,
    use_cache: bool = True,
) -> dict:
    """The experiment page's figures (module doc). Raises AgreementError naming
    the parameter (part, n_boot, seed). Queries: a fixed number whatever the runs
    (the split, the runs, the fingerprint, then the inputs and two call
    aggregates), only the first three when cached."""
    check_resampling(n_boot, seed)
    dataset = experiment.dataset
    split = eval_split_summary(dataset=dataset)
    part = _part(experiment, part, split, test_look)
    runs = list(experiment.runs.select_related("config").order_by("pk"))
    run_ids = [r.pk for r in runs]
    baseline = experiment.baseline_id if experiment.baseline_id in run_ids else None
    baseline = baseline or (run_ids[0] if run_ids else None)
    campaign_ids = (
        sorted(experiment.campaign_ids)
        or agreement_defaults(dataset=dataset).campaign_ids
    )
    params = {
        "experiment": experiment.pk,
        "runs": run_ids,
        "baseline": baseline,
        "campaigns": campaign_ids,
        "part": part,
        "n_boot": n_boot,
        "seed": seed,
    }
    key = None
    if use_cache:
        key = cache_key(
            {"experiment_v1": params},
            inputs_fingerprint(dataset, campaign_ids, run_ids),
        )
        hit = cached_result(key)
        if hit is not None:
            return {**hit, "split": split}
    slice_dim, slice_value = ("split", part) if part != "all" else ("", "")
    inp, part_label = load_inputs(
        dataset,
        campaign_ids,
        run_ids,
        slice_dim,
        slice_value,
        None,
        test_look,
        human_items_only=True,
    )
    key_fn, n_sk = item_keys(inp.skills)
    h_keys, h_counts, _ = human_side(inp)
    h = (h_keys, h_counts)
    judged = {rid: judge_by_item(inp.judge, rid, key_fn) for rid in run_ids}
    present = set((h_keys % n_sk).tolist())
    for keys, _ in judged.values():
        present |= set(np.unique(keys % n_sk).tolist())
    rows, members = _groups(inp, n_sk, present)
    calls = _call_figures(run_ids)
    out_runs = []
    for run in runs:
        entry = {
            "id": run.pk,
            "label": run_label(run),
            "status": run.status,
            "is_baseline": run.pk == baseline,
            **calls[run.pk],
        }
        own = _compare(inp, members, n_sk, h, judged[run.pk], None, n_boot, seed)
        entry["figures"] = {
            k: {"n": c["n"], **{s: result_dict(c["a"][s]) for s in PAIRED_STATS}}
            for k, c in own.items()
        }
        entry["vs_baseline"] = None
        if baseline and run.pk != baseline:
            pair = _compare(
                inp, members, n_sk, h, judged[run.pk], judged[baseline], n_boot, seed
            )
            entry["vs_baseline"] = {
                k: {
                    "n": c["n"],
                    "diff": {s: result_dict(c["diff"][s]) for s in PAIRED_STATS},
                    "excludes_zero": c["excludes_zero"],
                    "winner": {
                        s: {"a": "run", "b": "baseline"}.get(w)
                        for s, w in c["winner"].items()
                    },
                }
                for k, c in pair.items()
            }
        out_runs.append(entry)
    result = {
        "experiment": {"id": experiment.pk, "name": experiment.name},
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "part": part,
        "part_label": part_label if part != "all" else "all items",
        "baseline": baseline,
        "campaigns": campaign_ids,
        "n_boot": n_boot,
        "seed": seed,
        "rows": rows,
        "runs": out_runs,
        "ceiling": _ceiling(inp, members, h_keys, h_counts, n_sk, n_boot, seed),
        "stats": list(PAIRED_STATS),
    }
    if key is not None:
        cache.set(key, result, CACHE_SECONDS)
    return {**result, "split": split}


STAT_NAMES = {"qwk": "QWK", "spearman": "Spearman ρ", "exact": "exact agreement"}
# The ceiling each statistic is held against: the raters' own agreement of the same
# kind (exact agreement against exact agreement; the rank statistics against
# Krippendorff's ordinal alpha, as the agreement dashboard does).
CEILING_OF = {"qwk": "alpha_ordinal", "spearman": "alpha_ordinal", "exact": "exact"}
CEILING_NAMES = {"alpha_ordinal": "raters' α (ordinal)", "exact": "raters' exact"}


def experiment_comparison(figures: dict, stat: str = "qwk") -> dict:
    """The experiment page's "compare at a glance" (a pure function of
    :func:`experiment_figures`' result): the judges grid of `stat` (runs side by side,
    per criterion, the raters' ceiling first), per run other than the baseline its
    paired differences from the baseline with their intervals and the summary line
    (:func:`analysis.compare.difference_summary`), and the forest plot's groups.

    `stat` is one of PAIRED_STATS (anything else raises AgreementError naming
    `stat`)."""
    if stat not in PAIRED_STATS:
        raise AgreementError(
            f"stat: use one of {', '.join(PAIRED_STATS)}, not {stat[:20]!r}"
        )
    runs = figures["runs"]
    rows = figures["rows"]
    by_id = {r["id"]: r for r in runs}
    ceiling_key = CEILING_OF[stat]
    grid = compare.judges_grid(
        rows=[(r["key"], r["name"]) for r in rows],
        judges=[(r["id"], r["label"]) for r in runs],
        cell=lambda rid, key: (by_id[rid]["figures"].get(key) or {}).get(stat),
        ceiling=lambda key: (figures["ceiling"].get(key) or {}).get(ceiling_key),
        stat_name=STAT_NAMES[stat],
        ceiling_name=CEILING_NAMES[ceiling_key],
    )
    baseline = by_id.get(figures["baseline"])
    versus = []
    for run in runs:
        if run["vs_baseline"] is None:
            continue
        diffs = []
        for row in rows:
            vs = run["vs_baseline"].get(row["key"]) or {}
            d = vs.get("diff", {}).get(stat) or {}
            value, ci, n, reason = compare.stat_parts(d)
            low, high = ci or (None, None)
            diffs.append(
                {
                    "key": row["key"],
                    "name": row["name"],
                    "n": vs.get("n", 0),
                    "result": d,
                    "value": value,
                    "low": low,
                    "high": high,
                    "verdict": compare.verdict(low, high),
                }
            )
        # The summary counts criteria, not the pooled "overall" row.
        summary = compare.difference_summary(
            [(d["name"], d["low"], d["high"]) for d in diffs if d["key"] != OVERALL]
        )
        versus.append({"run": run, "diffs": diffs, "summary": summary})
    return {
        "stat": stat,
        "stat_name": STAT_NAMES[stat],
        "stats": [(s, STAT_NAMES[s]) for s in PAIRED_STATS],
        "grid": grid,
        "baseline": baseline,
        "versus": versus,
    }
