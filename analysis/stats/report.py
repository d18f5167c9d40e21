"""The agreement table: every statistic per skill, per ability and overall.

Scores are discrete (integers of the skill's scale for one rater, means of a few
raters for the human mean), so an item (a scored (response, skill) pair) is fully
described by its *profile*: the counts of human scores per value of the scale (V
values; FLASK's 1..5 by default, :mod:`analysis.stats.scale`), the judge score and
(optionally) the evaluated model. A few thousand items collapse into a few hundred
profiles, every statistic is a function of the profile weights, and a bootstrap
resample of items is a multinomial reweighting of those profiles. The statistics
are computed for all resamples at once over a leading resample axis ``B``.

Conventions: N/A is not a score (callers pass numeric scores only; N/A counts are
reported in ``Report.counts``); only items scored numerically by the judge and at
least one human are used. Items are resampled with replacement; in
:func:`agreement_table` within each skill, and the ability / overall resamples are
the unions of their skills' resamples (stratified by skill). Undefined statistics
and CIs: :mod:`analysis.stats.results`.

Pooling (abilities, overall) is defined only over skills on one and the same scale:
:func:`agreement_table` leaves out a pooled group whose skills' scales differ (the
caller says why), and :func:`pool_projections` refuses to mix scales.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_array

from analysis import statistics
from analysis.stats.agreement import Tables
from analysis.stats.bootstrap import aggregate_weights, multinomial_chunks, row_codes
from analysis.stats.ranks import rank_correlations_rows
from analysis.stats.results import ResultBatch, ratio
from analysis.stats.scale import (
    VALUES,
    mean_from_counts,
    median_from_counts,
    round_half_up,
    same_scale,
)


@dataclass
class GroupItems:
    """Items of one skill: human score counts per value, judge score code, model.

    values: the skill's scale (V sorted values; None = 1..5); human_counts: (n, V)
    ints, column c = numeric human scores equal to values[c]; judge: (n,) the judge
    score's code 1..V (code c = values[c - 1]; on 1..5 the score itself) or 0 when
    the judge gave no numeric score; model: (n,) int codes; human_na: (n,) N/A counts
    from humans; judge_na: (n,) bool, the judge answered N/A; judge_na_samples: (n,)
    N/A samples of an item whose score is the median of its other, numeric samples.
    """

    human_counts: np.ndarray
    judge: np.ndarray
    model: np.ndarray | None = None
    human_na: np.ndarray | None = None
    judge_na: np.ndarray | None = None
    judge_na_samples: np.ndarray | None = None
    values: np.ndarray | None = None

    @property
    def scale(self) -> np.ndarray:
        """The scale's values (``VALUES`` when none was given)."""
        return VALUES if self.values is None else np.asarray(self.values, float)

    @staticmethod
    def concat(groups: list[GroupItems]) -> GroupItems:
        """The union of groups on one scale (ValueError if their scales differ)."""
        if not same_scale([g.scale for g in groups]):
            raise ValueError("cannot pool skills on different scales")

        def cat(name, default):
            parts = []
            for g in groups:
                v = getattr(g, name)
                parts.append(default(len(g.judge)) if v is None else np.asarray(v))
            return np.concatenate(parts)

        return GroupItems(
            np.concatenate([np.asarray(g.human_counts) for g in groups]),
            np.concatenate([np.asarray(g.judge) for g in groups]),
            cat("model", lambda n: np.zeros(n, int)),
            cat("human_na", lambda n: np.zeros(n, int)),
            cat("judge_na", lambda n: np.zeros(n, bool)),
            cat("judge_na_samples", lambda n: np.zeros(n, int)),
            groups[0].values if groups else None,
        )


# The keys of Report.counts (group_cells), zero for a group without items.
COUNT_KEYS = (
    "items",
    "scored_by_both",
    "human_only",
    "judge_only",
    "human_scores",
    "human_na",
    "judge_na",
    "judge_na_samples",
)


@dataclass
class Report:
    """One group's statistics (values are :class:`Result` unless noted): ``human``
    and ``judge`` hold the statistics of :data:`analysis.statistics.REGISTRY` of
    their side, in its order (today's entries below).

    counts: items, scored_by_both, human_only, judge_only, human_scores, human_na,
        judge_na (items), judge_na_samples (N/A samples inside items the judge also
        scored numerically; left out of the item's median) (ints; only items scored
        numerically by both sides are used).
    human: n_items, n_items_multi_rated (ints); alpha_ordinal, alpha_interval
        (Krippendorff, all human raters, missing allowed); exact, within1 (pooled
        over all human rater pairs within an item; n = number of pairs).
    judge: pearson, spearman, kendall (tau-b) of judge vs human mean; qwk, exact,
        within1 vs the human median rounded half up; leniency = mean(judge - human
        mean), mae; confusion (V x V ndarray, rows the judge's value, columns the
        rounded median's, in scale order); alpha_{level}_with_judge (humans + judge as one more rater) and
        alpha_{level}_gain (with judge minus humans alone, same resamples).
    models: models = list of {model, n, human_mean, judge_mean} (means over items of
        the item's human mean / judge score); spearman, kendall of the models' order.
    values: the scale the figures are on.
    """

    counts: dict
    human: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    models: dict = field(default_factory=dict)
    values: np.ndarray = field(default_factory=lambda: VALUES)


@dataclass
class Cells:
    """A group's used items collapsed into (model, human counts, judge) cells."""

    key: np.ndarray  # (K, V + 2): model, counts of each value, judge code
    n: np.ndarray  # (K,) items per cell
    inv: np.ndarray  # (n_used,) cell of each used item
    counts: dict  # item / N/A bookkeeping
    values: np.ndarray = field(default_factory=lambda: VALUES)


def group_cells(items: GroupItems) -> Cells:
    """Keep items scored by both sides; collapse them into cells; count the rest."""
    hc_all = np.asarray(items.human_counts, dtype=np.int64)
    judge_all = np.asarray(items.judge, dtype=np.int64)
    n_all = len(judge_all)
    model_all = (
        np.zeros(n_all, np.int64)
        if items.model is None
        else np.asarray(items.model, dtype=np.int64)
    )
    values = items.scale
    v = values.size
    if hc_all.ndim != 2 or hc_all.shape[1] != v or (hc_all < 0).any():
        raise ValueError(
            f"human_counts must be (n, {v}) non-negative counts of the scale's values"
        )
    if ((judge_all < 0) | (judge_all > v)).any():
        raise ValueError(f"judge must be a code 1..{v}, or 0 for no numeric score")
    if (model_all < 0).any():
        raise ValueError("model codes must be non-negative integers")
    has_h = hc_all.sum(axis=1) > 0
    has_j = judge_all > 0
    both = has_h & has_j
    counts = {
        "items": n_all,
        "scored_by_both": int(both.sum()),
        "human_only": int((has_h & ~has_j).sum()),
        "judge_only": int((~has_h & has_j).sum()),
        "human_scores": int(hc_all[both].sum()),
        "human_na": int(0 if items.human_na is None else np.sum(items.human_na)),
        "judge_na": int(0 if items.judge_na is None else np.sum(items.judge_na)),
        "judge_na_samples": int(
            0 if items.judge_na_samples is None else np.sum(items.judge_na_samples)
        ),
    }
    key = np.column_stack([model_all, hc_all, judge_all])[both]
    _, first, inv, cell_n = np.unique(
        row_codes(key.T), return_index=True, return_inverse=True, return_counts=True
    )
    return Cells(key[first], cell_n, inv.ravel(), counts, values)


@dataclass
class Projected:
    """A group's resample weights, reduced to what the statistics need.

    prof: (P, V + 1) distinct (human counts of each value, judge code) profiles; w:
    (B+1, P) weight of each profile, row 0 = the sample itself, rows 1.. = bootstrap
    resamples; models: (M,) model codes; m_n, m_h, m_j: (B+1, M) per model item
    count, sum of human means and sum of judge scores; values: the scale (V,).
    """

    prof: np.ndarray
    w: np.ndarray
    models: np.ndarray
    m_n: np.ndarray
    m_h: np.ndarray
    m_j: np.ndarray
    counts: dict
    values: np.ndarray = field(default_factory=lambda: VALUES)


def _judge_values(codes: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Judge codes 1..V as scale values (floats); on 1..5 the codes themselves."""
    if values is VALUES:
        return codes * 1.0
    return values[np.asarray(codes, np.int64) - 1]


def _cell_layout(key: np.ndarray, values: np.ndarray = VALUES):
    """Profile and model index of each cell, plus its human mean and judge score."""
    _, pfirst, pinv = np.unique(
        row_codes(key[:, 1:].T), return_index=True, return_inverse=True
    )
    models, minv = np.unique(key[:, 0], return_inverse=True)
    v = values.size
    mean = mean_from_counts(key[:, 1 : v + 1].astype(float), values)
    judge = _judge_values(key[:, v + 1], values)
    return key[pfirst, 1:], pinv.ravel(), models, minv.ravel(), mean, judge


def _projection(pinv, n_prof, minv, n_models, mean, judge):
    """The sparse (P + 3M, K) matrix taking cell weights to profile weights and the
    per-model item count, sum of human means and sum of judge scores."""
    k = len(pinv)
    cols = np.tile(np.arange(k), 4)
    rows = np.concatenate(
        [pinv, n_prof + minv, n_prof + n_models + minv, n_prof + 2 * n_models + minv]
    )
    vals = np.concatenate([np.ones(2 * k), mean, judge])
    return csr_array((vals, (rows, cols)), shape=(n_prof + 3 * n_models, k))


def _split(out: np.ndarray, n_prof: int, n_models: int):
    """(B, P + 3M) projected weights -> (w, m_n, m_h, m_j)."""
    m = n_models
    return (
        out[:, :n_prof],
        out[:, n_prof : n_prof + m],
        out[:, n_prof + m : n_prof + 2 * m],
        out[:, n_prof + 2 * m :],
    )


def project(
    key: np.ndarray,
    cell_n: np.ndarray,
    counts: dict,
    n_boot: int = 1000,
    seed: int = 0,
    boot: np.ndarray | None = None,
    values: np.ndarray = VALUES,
) -> Projected:
    """Draw (or take) bootstrap weights of cells and project them (see Projected).

    Without ``boot`` the resamples are drawn exactly as a multinomial(n, cell_n / n)
    over cells (:func:`analysis.stats.bootstrap.multinomial_chunks`), block by block
    of resamples, each block projected straight into the profile and model tables.
    ``values``: the scale of the key's counts (default 1..5).
    """
    prof, pinv, models, minv, mean, judge = _cell_layout(key, values)
    n_p, n_m = len(prof), len(models)
    q = _projection(pinv, n_p, minv, n_m, mean, judge)
    cell_n = np.asarray(cell_n)
    if boot is not None:
        drawn = (q @ np.atleast_2d(boot).T.astype(float)).T
    else:
        order, blocks = multinomial_chunks(cell_n, n_boot, np.random.default_rng(seed))
        qo = q[:, order]
        parts = [(qo @ block).T for block in blocks]
        drawn = np.vstack(parts) if parts else np.zeros((0, q.shape[0]))
    out = np.vstack([q @ cell_n.astype(float), drawn])
    w, mn, mh, mj = _split(out, n_p, n_m)
    return Projected(prof, w, models, mn, mh, mj, counts, values)


def agreement_report(
    items: GroupItems,
    n_boot: int = 1000,
    seed: int = 0,
    item_weights: np.ndarray | None = None,
) -> Report:
    """Every statistic of the issue for one group of items, with bootstrap CIs.

    Only items scored numerically by the judge and at least one human are used.
    The bootstrap resamples those items (all statistics share the same resamples, so
    e.g. the alpha gain from adding the judge has a valid CI); ``item_weights``
    (B, n_used) replaces the random draw with explicit resamples.
    """
    cells = group_cells(items)
    boot = None
    if item_weights is not None:
        boot = aggregate_weights(item_weights, cells.inv, len(cells.n))
    proj = project(
        cells.key, cells.n, cells.counts, n_boot, seed, boot=boot, values=cells.values
    )
    return report_from_projection(proj)


def report_from_projection(proj: Projected, human_only: bool = False) -> Report:
    """All statistics of one group from its projected resample weights.

    ``human_only``: the inter-rater statistics (``Report.human``) alone, for a
    human ceiling (``judge`` and ``models`` stay empty). The percentile intervals of
    all statistics are computed together (:class:`ResultBatch`).
    """
    values = proj.values
    v = values.size
    rep = Report(proj.counts, values=values)
    batch = ResultBatch()
    w = proj.w
    prof = proj.prof
    if len(prof) == 0:  # no items: one empty profile keeps every shape non-empty
        prof = np.zeros((1, v + 1), np.int64)
        prof[0, 0] = prof[0, v] = 1
        w = np.zeros((w.shape[0], 1))
    p_hc = prof[:, :v].astype(float)
    p_code = prof[:, v].astype(np.int64)
    p_judge = _judge_values(prof[:, v].astype(float), values)
    p_mean = mean_from_counts(p_hc, values)
    p_round = round_half_up(median_from_counts(p_hc, values))
    t = Tables(w, p_judge, p_mean, p_round, values, counts=p_hc, judge_code=p_code)
    n = t.count("items")

    # Every statistic of the registry, on its side: among the raters, then (unless
    # `human_only`) the judge against them.
    rep.human["n_items"] = n
    rep.human["n_items_multi_rated"] = t.count("multi_rated")
    sides = [("raters", rep.human)] + ([] if human_only else [("judge", rep.judge)])
    for side, target in sides:
        for s in statistics.of_side(side):
            batch.add(target, s.key, s.compute(t), t.count(s.count), s.undefined_when)
    if human_only:
        batch.resolve()
        return rep
    rep.judge["confusion"] = t.confusion[0].astype(int)

    # model level: per-model means and rank agreement
    models = proj.models
    n_m = proj.m_n
    h_m = ratio(proj.m_h, n_m)
    j_m = ratio(proj.m_j, n_m)
    rc = rank_correlations_rows(h_m, j_m)
    rep.models["models"] = []
    for i, mod in enumerate(models):
        count = int(round(n_m[0, i]))
        entry = {"model": int(mod), "n": count}
        batch.add(entry, "human_mean", h_m[:, i], count)
        batch.add(entry, "judge_mean", j_m[:, i], count)
        rep.models["models"].append(entry)
    why = "fewer than 2 models or all models tied"
    for k in ("spearman", "kendall"):
        batch.add(rep.models, k, rc[k], len(models), why)
    batch.resolve()
    return rep


def agreement_table(
    skills: dict[str, GroupItems],
    abilities: dict[str, list[str]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    workers: int = 1,
    human_only: bool = False,
) -> dict[str, Report]:
    """Reports per skill, per primary ability (its skills pooled) and overall.

    Items are resampled within each skill; an ability's or the overall resample is
    the union of its skills' resamples (a bootstrap stratified by skill, which keeps
    each skill's item count fixed, as in the evaluation design). The draws are made
    once per skill and reused, so pooled groups cost no extra random numbers.
    ``workers`` > 1 computes groups in that many threads (numpy releases the GIL in
    the heavy loops); the result is identical, since each skill has its own seed.

    Each skill is on its own scale (``GroupItems.values``); an ability or the overall
    whose skills are not all on one scale is left out of the result (no pooled
    figure mixes scales; :func:`mixed_scale_groups` names them).
    """
    names = list(skills)

    def skill_part(i: int):
        cells = group_cells(skills[names[i]])
        proj = project(
            cells.key, cells.n, cells.counts, n_boot, seed + i, values=cells.values
        )
        return proj, report_from_projection(proj, human_only)

    groups = [(f"ability:{a}", ks) for a, ks in (abilities or {}).items()]
    groups.append(("overall", names))
    mixed = mixed_scale_groups(skills, dict(groups))
    groups = [g for g in groups if g[0] not in mixed]

    def pooled_part(group):
        label, keys = group
        parts = [projected[s] for s in keys if s in projected]
        pooled = pool_projections(parts, n_boot)
        return label, report_from_projection(pooled, human_only)

    out: dict[str, Report] = {}
    projected: dict[str, Projected] = {}
    if workers > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(skill_part, range(len(names))))
            for name, (proj, rep) in zip(names, done, strict=True):
                projected[name] = proj
                out[f"skill:{name}"] = rep
            pooled = list(pool.map(pooled_part, groups))
    else:
        for i, name in enumerate(names):
            projected[name], out[f"skill:{name}"] = skill_part(i)
        pooled = [pooled_part(g) for g in groups]
    for label, rep in pooled:
        out[label] = rep
    return out


def mixed_scale_groups(
    skills: dict[str, GroupItems], groups: dict[str, list[str]]
) -> dict[str, list[str]]:
    """Pooled group label -> the scale labels ("0-4", "1-10") of its skills, for the
    groups whose skills (those present in `skills`) are on different scales."""
    out = {}
    for label, keys in groups.items():
        scales = [skills[k].scale for k in keys if k in skills]
        if not same_scale(scales):
            seen = dict.fromkeys(f"{int(v[0])}-{int(v[-1])}" for v in scales)
            out[label] = list(seen)
    return out


def human_ceiling_table(
    skills: dict[str, np.ndarray],
    abilities: dict[str, list[str]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    workers: int = 1,
    values: dict[str, np.ndarray] | None = None,
) -> dict[str, dict]:
    """Inter-rater statistics alone (``Report.human``) per skill, ability and overall.

    `skills` maps a skill key to the human score counts (n, V) of the items the
    ceiling stands on, on the scale ``values[key]`` (default 1..5) (the caller chooses and documents the item set; items with
    fewer than 2 scores add nothing to alpha or to the rater pairs). Resampling as
    in :func:`agreement_table` (within each skill, pooled groups stratified by skill),
    so the ceiling has CIs of the same kind; it depends on nothing but `skills` (and
    their scales). Pooled groups mixing scales are left out, as there.
    """
    values = values or {}
    groups = {}
    for key, c in skills.items():
        v = values.get(key)
        size = 5 if v is None else len(v)
        groups[key] = GroupItems(
            np.asarray(c, np.int64).reshape(-1, size),
            # A placeholder judge "scores" every item, so every item is kept; only
            # the human statistics are read from the reports.
            np.ones(len(c), np.int64),
            values=v,
        )
    kept = {a: [k for k in ks if k in groups] for a, ks in (abilities or {}).items()}
    table = agreement_table(
        groups,
        {a: ks for a, ks in kept.items() if ks},
        n_boot,
        seed,
        workers,
        human_only=True,
    )
    return {label: rep.human for label, rep in table.items()}


def pool_projections(parts: list[Projected], n_boot: int) -> Projected:
    """The union of several groups' items (and of their resamples), all on one scale
    (ValueError otherwise)."""
    if not same_scale([p.values for p in parts]):
        raise ValueError("cannot pool skills on different scales")
    if not parts:
        z = np.zeros((n_boot + 1, 0))
        return Projected(
            np.zeros((0, 6), np.int64),
            z,
            np.zeros(0, np.int64),
            z,
            z,
            z,
            dict.fromkeys(COUNT_KEYS, 0),
        )
    profs = np.concatenate([p.prof for p in parts])
    _, first, pinv = np.unique(
        row_codes(profs.T), return_index=True, return_inverse=True
    )
    pinv = pinv.ravel()
    models = np.unique(np.concatenate([p.models for p in parts]))
    w = np.zeros((parts[0].w.shape[0], len(first)))
    mn, mh, mj = (np.zeros((w.shape[0], len(models))) for _ in range(3))
    counts: dict = dict.fromkeys(COUNT_KEYS, 0)
    start = 0
    for p in parts:
        code = pinv[start : start + len(p.prof)]  # distinct within one part
        start += len(p.prof)
        w[:, code] += p.w
        mcode = np.searchsorted(models, p.models)
        mn[:, mcode] += p.m_n
        mh[:, mcode] += p.m_h
        mj[:, mcode] += p.m_j
        for key, v in p.counts.items():
            counts[key] = counts.get(key, 0) + v
    return Projected(profs[first], w, models, mn, mh, mj, counts, parts[0].values)
