"""FLASK skill profiles for the leaderboard: per model, per criterion, per group and
overall, from the humans and from each judge run side by side.

Each source is averaged over every item it scored numerically (FLASK's own
aggregation: each source has its own n); the humans' value of an item is the mean of
its raters' numeric scores, a run's its score (the median of its samples), both read
by the agreement loaders (:mod:`analysis.selectors.agreement.inputs`, so excluded
raters, categorical criteria and a run's own few-shot examples are left out the same
way). Intervals, ranks and the probability of each pairwise order come from one
bootstrap clustered by instruction, shared by every source
(:mod:`analysis.stats.profiles`: the contract of the numbers).

Slices are the agreement dashboard's (``domain:math``, ``difficulty:3``,
``hard:hard``, ...). Results are cached under the inputs' fingerprint
(:mod:`analysis.selectors.agreement.cache`): a new score changes the key.
"""

from __future__ import annotations

import numpy as np
from django.core.cache import cache

from analysis.selectors.agreement.cache import (
    CACHE_SECONDS,
    cache_key,
    cached_responses,
    cached_result,
    dataset_fingerprint,
    gc_paused,
    inputs_fingerprint,
)
from analysis.selectors.agreement.inputs import (
    Responses,
    fetch,
    human_side,
    item_keys,
    judge_by_item,
    load_inputs,
    quoted_table,
)
from analysis.selectors.agreement.profiles import item_values, row_skills
from analysis.selectors.agreement.rows import rows_skeleton
from analysis.selectors.agreement.sources import (
    DEFAULTS_RULE,
    AgreementError,
    agreement_defaults,
    check_resampling,
    run_label,
)
from analysis.stats.profiles import (
    NOT_ENOUGH_MODELS,
    cluster_profiles,
    instruction_totals,
)
from annotation.models import Campaign, Dataset, Instruction, Response
from judging.models import JudgeRun

PROFILES_VERSION = "skill-profiles-v1"
HUMANS = "humans"
AGGREGATION = "all items each source scored (FLASK's aggregation)"
CLUSTERING = (
    "bootstrap clustered by instruction: each resample draws the instructions with "
    "replacement, all of an instruction's responses, criteria and sources together, "
    "one draw shared by every source"
)
NO_SCORE = "no score from this source for this model"
NORMALISED = (
    "criteria on different scales: each value is normalised to 0..1 on its "
    "criterion's scale ((value - low) / (high - low)) before the mean"
)


def response_instructions(dataset: Dataset, responses: Responses) -> np.ndarray:
    """The instruction id of each response of `responses` (aligned with its ids; one
    query)."""
    rows = fetch(
        f"SELECT r.id, r.instruction_id FROM {quoted_table(Response)} r "
        f"JOIN {quoted_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s ORDER BY r.id",
        [dataset.pk],
    )
    table = np.array(rows, dtype=np.int64).reshape(-1, 2)
    out = np.zeros(len(responses.ids), np.int64)
    if len(table):
        pos = np.searchsorted(table[:, 0], responses.ids)
        pos = np.minimum(pos, len(table) - 1)
        out = np.where(table[pos, 0] == responses.ids, table[pos, 1], 0)
    return out


def _cached_instructions(dataset, responses, fingerprint) -> np.ndarray:
    """:func:`response_instructions`, cached like the responses themselves (until a
    response or instruction of the dataset changes)."""
    key = cache_key(
        {"response_instructions": dataset.pk}, dataset_fingerprint(fingerprint)
    )
    out = cache.get(key)
    if out is None or len(out) != len(responses.ids):
        out = response_instructions(dataset, responses)
        cache.set(key, out, CACHE_SECONDS)
    return out


def _sources(dataset, campaign_ids, run_ids) -> tuple[list, list, dict]:
    """(campaign ids, run ids, defaulted) checked against `dataset`: None takes the
    agreement defaults (:data:`DEFAULTS_RULE`). Raises AgreementError naming the
    parameter. Up to four queries."""
    defaulted = {"campaigns": campaign_ids is None, "runs": run_ids is None}
    if campaign_ids is None or run_ids is None:
        defaults = agreement_defaults(dataset=dataset)
        campaign_ids = defaults.campaign_ids if campaign_ids is None else campaign_ids
        run_ids = defaults.run_ids if run_ids is None else run_ids
    campaign_ids = sorted({int(c) for c in campaign_ids})
    run_ids = list(dict.fromkeys(int(r) for r in run_ids))
    found = set(
        Campaign.objects.filter(pk__in=campaign_ids, dataset=dataset).values_list(
            "pk", flat=True
        )
    )
    if missing := [c for c in campaign_ids if c not in found]:
        raise AgreementError(
            f"campaign: {', '.join(map(str, missing))} not found in dataset "
            f"{dataset.name!r}"
        )
    if missing := sorted(
        set(run_ids)
        - set(
            JudgeRun.objects.filter(pk__in=run_ids, dataset=dataset).values_list(
                "pk", flat=True
            )
        )
    ):
        raise AgreementError(
            f"run: {', '.join(map(str, missing))} not found in dataset {dataset.name!r}"
        )
    return campaign_ids, run_ids, defaulted


def _num(x) -> float | None:
    return float(x) if np.isfinite(x) else None


@gc_paused()  # the result is many small, lasting objects (cache.gc_paused)
def skill_profiles(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    slice_dim: str = "",
    slice_value: str = "",
    n_boot: int = 1000,
    seed: int = 0,
    use_cache: bool = True,
) -> dict:
    """The skill profiles of every model of `dataset` in the slice, as JSON.

    Sources: the humans of `campaign_ids` (one source for all campaigns; none when
    the list is empty) and each run of `run_ids`; None for either takes the
    agreement defaults (``result["defaults"]``). Shape::

        {"dataset", "slice": {"dim", "value", "label"}, "n_boot", "seed",
         "aggregation", "bootstrap": {"method", "instructions"}, "defaults",
         "campaigns": [{"id", "name"}], "runs": [{"id", "label"}],
         "sources": [{"key": "humans" | "run:<id>", "label", "kind"}],
         "models": [name, ...],   # the models with a score in the slice
         "rows": [{"key", "level", "label", "skill", "ability", "scale",
                   "values_scale": "1-5" | "normalised", "note",
                   "sources": {source key: {
                       "models": [{"model", "mean", "ci", "n", "n_instructions",
                                   "rank", "rank_ci", "reason"}, ...],
                       "ranking": "" | NOT_ENOUGH_MODELS,
                       "above": [[P(model i above model j) | None]]}}}]}

    A model without a score from a source has ``mean`` None with a reason; a
    ranking needs 2 models with a mean (else ``ranking`` says "not enough models" and
    ranks are None). Raises AgreementError naming a bad parameter (n_boot, seed,
    campaign, run, slice). Queries: a fixed number whatever the data size (sources
    up to 4, the fingerprint 1; when not cached, responses and their instructions
    unless cached, skills, human and judge scores, few-shot examples, labels).
    Read only; writes the cache.
    """
    check_resampling(n_boot, seed)
    campaign_ids, run_ids, defaulted = _sources(dataset, campaign_ids, run_ids)
    params = {
        "profiles": PROFILES_VERSION,
        "dataset": dataset.pk,
        "campaigns": campaign_ids,
        "runs": run_ids,
        "slice": [slice_dim, slice_value],
        "n_boot": n_boot,
        "seed": seed,
        "defaulted": defaulted,
    }
    key = responses = instructions = None
    if use_cache:
        fingerprint = inputs_fingerprint(dataset, campaign_ids, run_ids)
        key = cache_key(params, fingerprint)
        hit = cached_result(key)
        if hit is not None:
            return hit
        responses = cached_responses(dataset, fingerprint)
        instructions = _cached_instructions(dataset, responses, fingerprint)
    inp, slice_label = load_inputs(
        dataset, campaign_ids, run_ids, slice_dim, slice_value, responses
    )
    if instructions is None:
        instructions = response_instructions(dataset, inp.resp)
    key_fn, n_sk = item_keys(inp.skills)
    h_keys, h_counts, _ = human_side(inp)
    ref, judged = item_values(
        inp,
        (h_keys, h_counts),
        {rid: judge_by_item(inp.judge, rid, key_fn) for rid in run_ids},
    )
    runs = {
        r.pk: r
        for r in JudgeRun.objects.filter(pk__in=run_ids).select_related("config")
    }
    sources = [({"key": f"run:{rid}", "label": run_label(runs[rid]), "kind": "judge"},
                judged[rid]) for rid in run_ids]  # fmt: skip
    if campaign_ids:
        label = "Humans (mean of the raters per item)"
        sources.insert(0, ({"key": HUMANS, "label": label, "kind": "humans"}, ref))
    result = _profiles_result(inp, instructions, sources, n_sk, n_boot, seed)
    result.update(
        {
            "dataset": {"id": dataset.pk, "name": dataset.name},
            "slice": {"dim": slice_dim, "value": slice_value, "label": slice_label},
            "n_boot": n_boot,
            "seed": seed,
            "aggregation": AGGREGATION,
            "defaults": {**defaulted, "rule": DEFAULTS_RULE},
            "campaigns": [
                {"id": c.pk, "name": c.name}
                for c in Campaign.objects.filter(pk__in=campaign_ids).order_by("pk")
            ],
            "runs": [{"id": rid, "label": run_label(runs[rid])} for rid in run_ids],
        }
    )
    if key is not None:
        cache.set(key, result, CACHE_SECONDS)
    return result


def _profiles_result(inp, instructions, sources, n_sk, n_boot, seed) -> dict:
    """The figures of :func:`skill_profiles` from each source's (item keys, values)."""
    resp = inp.resp
    located = []
    for _, (keys, vals) in sources:
        pos = resp.index(keys // n_sk)
        located.append((pos, keys % n_sk, vals))
    every = np.concatenate([p for p, _, _ in located]) if located else np.zeros(0, int)
    instr_ids, model_ids = np.unique(instructions[every]), np.unique(resp.model[every])
    present = {
        inp.skills.keys[c] for _, crit, _ in located for c in np.unique(crit).tolist()
    }
    skeleton = rows_skeleton(inp.skills, present)
    rows = [
        {
            "key": r.key,
            "level": r.level,
            "skill": r.skill,
            "label": r.label,
            "ability": r.ability,
            "scale": r.scale.to_dict(),
        }
        for r in skeleton
    ]
    models = [resp.model_names[m] for m in model_ids]
    base = {
        "aggregation": AGGREGATION,
        "bootstrap": {"method": CLUSTERING, "instructions": int(len(instr_ids))},
        "sources": [s for s, _ in sources],
        "models": models,
    }
    if not len(every):
        for row in rows:
            row.update(values_scale="", note="no score in this slice", sources={})
        return {**base, "rows": rows}
    shape = (len(instr_ids), len(model_ids), max(len(inp.skills.keys), 1))
    sums, counts = zip(
        *(
            instruction_totals(
                np.searchsorted(instr_ids, instructions[pos]),
                np.searchsorted(model_ids, resp.model[pos]),
                crit,
                vals,
                shape,
            )
            for pos, crit, vals in located
        ),
        strict=True,
    )
    members = row_skills(skeleton, inp.skills.keys)
    mixed = [r.scale.mixed for r in skeleton]
    values = [inp.skills.values[k] for k in inp.skills.keys] or [np.arange(1.0, 6.0)]
    low = np.array([v[0] for v in values], float)
    span = np.array([max(v[-1] - v[0], 1.0) for v in values], float)
    prof = cluster_profiles(
        np.stack(sums), np.stack(counts), members, mixed, low, span, n_boot, seed
    )
    for r, row in enumerate(rows):
        row["values_scale"] = "normalised" if mixed[r] else skeleton[r].scale.label
        row["note"] = NORMALISED if mixed[r] else ""
        row["sources"] = {
            source["key"]: _source_row(prof, s, r, models)
            for s, (source, _) in enumerate(sources)
        }
    return {**base, "rows": rows}


def _source_row(prof, s: int, r: int, models: list[str]) -> dict:
    """One source's figures on one row (JSON)."""
    entries = []
    for m, name in enumerate(models):
        mean = _num(prof.mean[s, r, m])
        lo, hi = _num(prof.ci_low[s, r, m]), _num(prof.ci_high[s, r, m])
        rank = _num(prof.rank[s, r, m])
        r_lo, r_hi = _num(prof.rank_low[s, r, m]), _num(prof.rank_high[s, r, m])
        entries.append(
            {
                "model": name,
                "mean": mean,
                "ci": [lo, hi] if lo is not None and hi is not None else None,
                "n": int(prof.n[s, r, m]),
                "n_instructions": int(prof.n_instructions[s, r, m]),
                "rank": rank,
                "rank_ci": [r_lo, r_hi]
                if r_lo is not None and r_hi is not None
                else None,
                "reason": "" if mean is not None else NO_SCORE,
            }
        )
    ranked = any(e["rank"] is not None for e in entries)
    return {
        "models": entries,
        "ranking": "" if ranked else NOT_ENOUGH_MODELS,
        "above": [[_num(p) for p in line] for line in prof.above[s, r]],
    }
