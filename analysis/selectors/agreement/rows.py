"""The agreement table's rows (shape: :func:`agreement_compute`), built as the typed
objects of :mod:`analysis.selectors.agreement.result`."""

from __future__ import annotations

import numpy as np

from analysis import statistics
from analysis.selectors.agreement.inputs import Inputs, Skills, item_keys
from analysis.selectors.agreement.result import (
    Ceiling,
    Flag,
    JudgeCell,
    ModelMean,
    ModelMeans,
    Row,
    RowScale,
    ScatterPoint,
    Stat,
)
from analysis.stats.report import GroupItems, Report, human_ceiling_table
from analysis.stats.results import Result
from analysis.stats.scale import same_scale
from annotation.models import Ability


def result_dict(r: Result) -> dict:
    """A statistic as JSON: value (None when undefined), n, 95% CI, reason."""
    return Stat.from_result(r).to_dict()


def _stats(results: dict, side: str) -> dict[str, Stat]:
    """The registry's statistics of `side` found in `results` (Results), in order."""
    return {
        k: Stat.from_result(results[k]) for k in statistics.keys(side) if k in results
    }


def _undefined(side: str, reason: str) -> dict[str, Stat]:
    return {k: Stat.undefined(reason) for k in statistics.keys(side)}


def _raters(rep: Report) -> Ceiling:
    h = rep.human
    return Ceiling(
        n_items=int(h.get("n_items", 0)),
        n_items_multi_rated=int(h.get("n_items_multi_rated", 0)),
        scores=int(rep.counts.get("human_scores", 0)),
        na=int(rep.counts.get("human_na", 0)),
        stats=_stats(h, "raters"),
    )


def _flag(rep: Report) -> Flag:
    """Below the human ceiling: adding the judge as one more rater lowers alpha."""
    gain = rep.judge.get("alpha_ordinal_gain")
    if gain is None or gain.value is None:
        return Flag(reason="not enough data to compare with the human ceiling")
    below = gain.value < 0
    significant = below and gain.ci_high is not None and gain.ci_high < 0
    if not below:
        reason = "the judge agrees with humans as well as humans agree with each other"
    elif significant:
        reason = "the judge lowers inter-rater alpha (95% CI of the change below 0)"
    else:
        reason = "the judge lowers inter-rater alpha (CI includes 0)"
    return Flag(below, significant, reason)


def _scatter(items: GroupItems) -> tuple[ScatterPoint, ...]:
    """Distinct (human mean, judge score) points with their item counts."""
    hc = np.asarray(items.human_counts, dtype=np.int64)
    judge = np.asarray(items.judge, dtype=np.int64)
    m = hc.sum(axis=1)
    ok = (m > 0) & (judge > 0)
    if not ok.any():
        return ()
    # A human mean is a fraction total/m; code (total, m, judge) exactly as integers
    # (in score codes 1..V; value = code + the scale's lowest value - 1).
    v = hc.shape[1]
    shift = int(items.scale[0]) - 1
    total = hc[ok] @ np.arange(1, v + 1)
    radix = int(m.max()) + 1
    jr = max(8, v + 1)
    code = (total * radix + m[ok]) * jr + judge[ok]
    uniq, counts = np.unique(code, return_counts=True)
    t, rest = np.divmod(uniq, radix * jr)
    mm, j = np.divmod(rest, jr)
    pts = sorted(
        (round(float(a) / float(b) + shift, 4), int(c) + shift, int(n))
        for a, b, c, n in zip(t, mm, j, counts, strict=True)
    )
    merged: dict[tuple[float, int], int] = {}
    for mean, score, n in pts:  # 2/4 and 1/2 are the same mean
        merged[(mean, score)] = merged.get((mean, score), 0) + n
    return tuple(ScatterPoint(mean, score, n) for (mean, score), n in merged.items())


NO_ITEMS = "no items"
NO_SHARED_ITEMS = "no items: the judge and the reference share no scored item here"


def judge_cell(rep: Report, items: GroupItems | None, names: list[str]) -> JudgeCell:
    """One run's statistics on one row (model codes named from `names`). A row
    without items says "no items" as every statistic's reason (and the flag's);
    one whose items are not shared says why no statistic is defined."""
    j = rep.judge
    cell = JudgeCell(
        counts={k: int(v) for k, v in rep.counts.items()},
        stats=_stats(j, "judge"),
        confusion=tuple(
            tuple(line)
            for line in np.asarray(
                j.get("confusion", np.zeros((rep.values.size, rep.values.size)))
            )
            .astype(int)
            .tolist()
        ),
        flag=_flag(rep),
        human=_raters(rep),
        models=ModelMeans(
            tuple(
                ModelMean(
                    names[m["model"]] if m["model"] < len(names) else "",
                    m["n"],
                    Stat.from_result(m["human_mean"]),
                    Stat.from_result(m["judge_mean"]),
                )
                for m in rep.models.get("models", [])
            ),
            *(
                Stat.from_result(rep.models[k]) if k in rep.models else None
                for k in ("spearman", "kendall")
            ),
        ),
        scatter=_scatter(items) if items is not None else (),
    )
    if not cell.scored_by_both:
        return cell.explained(NO_ITEMS if not cell.items else NO_SHARED_ITEMS)
    return cell


def abilities_present(skills: Skills, present: set[str]) -> dict[str, list[str]]:
    """Ability (or rubric group) label -> its skill keys that have items, in table
    order; criteria in no group are under "" (they get no pooled row)."""
    labels = dict(Ability.choices)
    out: dict[str, list[str]] = {}
    for key in skills.keys:
        if key in present:
            out.setdefault(
                labels.get(skills.ability[key], skills.ability[key]), []
            ).append(key)
    return out


def row_scale(values_list: list[np.ndarray]) -> RowScale:
    """A row's scale: its values, low, high and label ("1-5") for criteria on one
    scale (1..5 when there are none), or ``mixed`` with the labels of the scales
    ("0-4, 1-10") for criteria on different scales."""
    if not values_list:
        values_list = [np.arange(1, 6)]
    if same_scale(values_list):
        v = tuple(int(x) for x in values_list[0])
        return RowScale(False, f"{v[0]}-{v[-1]}", v, v[0], v[-1])
    labels = tuple(dict.fromkeys(f"{int(v[0])}-{int(v[-1])}" for v in values_list))
    return RowScale(True, ", ".join(labels), scales=labels)


# Why a pooled row over criteria on different scales has no agreement figures.
MIXED_SCALES = (
    "no pooled figure: its criteria are on different scales ({scales}); agreement "
    "is pooled only over criteria sharing one scale, see each criterion's row"
)


def mixed_scale_note(row: Row) -> str:
    """The row's note when it pools criteria on different scales, else ""."""
    if row.scale is None or not row.scale.mixed:
        return ""
    return MIXED_SCALES.format(scales=row.scale.label)


def rows_skeleton(skills: Skills, present: set[str]) -> list[Row]:
    """The table's rows without figures: each ability's skills, the ability, overall.

    Every row carries its ``scale`` (:func:`row_scale`): the criterion's scale, or
    for an ability / overall that of its criteria (``mixed`` when they differ); its
    ceiling is :func:`empty_ceiling` and it has no run's cell yet."""
    rows = []
    groups = abilities_present(skills, present)
    for ability, keys in groups.items():
        for key in keys:
            rows.append(
                Row(
                    key=f"skill:{key}",
                    level="skill",
                    skill=key,
                    label=skills.names[key],
                    ability=ability,
                    scale=row_scale([skills.values[key]]),
                    human=empty_ceiling(),
                )
            )
        if not ability:
            continue
        rows.append(
            Row(
                key=f"ability:{ability}",
                level="ability",
                skill=None,
                label=ability,
                ability=ability,
                scale=row_scale([skills.values[k] for k in keys]),
                human=empty_ceiling(),
            )
        )
    every = [k for keys in groups.values() for k in keys]
    rows.append(
        Row(
            key="overall",
            level="overall",
            skill=None,
            label="Overall",
            ability=None,
            scale=row_scale([skills.values[k] for k in every]),
            human=empty_ceiling(),
        )
    )
    return rows


# The items the human ceiling stands on (one figure per campaign selection and slice).
CEILING_ITEMS = (
    "every item (response, skill) of the slice with 2 or more numeric scores from the "
    "reference raters, whatever the judges scored"
)


def ceiling_rows(
    inp: Inputs,
    side: tuple[np.ndarray, np.ndarray, np.ndarray],
    abilities: dict[str, list[str]],
    n_boot: int,
    seed: int,
    workers: int = 1,
) -> dict[str, Ceiling]:
    """Row key -> the reference raters' ceiling (``row.human``) on CEILING_ITEMS.

    `side` is (item keys, score code counts (n, W), N/A counts) of the reference raters
    (:func:`human_side`, or a reference run as one rater). The figures depend on the
    campaigns, the slice, `n_boot` and `seed` only, never on which runs are shown
    or their order. Also counts, per row: items with a numeric score (n_items),
    numeric scores and N/A scores on every item of the slice.
    """
    keys, counts, na = side
    _, n_sk = item_keys(inp.skills)
    skill_idx = keys % n_sk
    m = counts.sum(axis=1)
    groups: dict[str, np.ndarray] = {}
    tallies: dict[str, np.ndarray] = {}
    values = inp.skills.values
    for i, key in enumerate(inp.skills.keys):
        sel = skill_idx == i
        if not sel.any():
            continue
        groups[key] = counts[sel & (m >= 2)][:, : len(values[key])]
        tallies[key] = np.array(
            [(m[sel] > 0).sum(), counts[sel].sum(), na[sel].sum()], np.int64
        )
    table = human_ceiling_table(
        groups, abilities, n_boot, seed, workers, {k: values[k] for k in groups}
    )
    members = {f"skill:{k}": [k] for k in groups}
    members.update({f"ability:{a}": ks for a, ks in abilities.items()})
    members["overall"] = list(groups)
    out = {}
    for label, ks in members.items():
        tally = sum((tallies[k] for k in ks if k in tallies), np.zeros(3, np.int64))
        h = table.get(label, {})
        if not tally.any():
            continue  # no reference score in this row: empty_ceiling()
        out[label] = Ceiling(
            item_set=CEILING_ITEMS,
            n_items=int(tally[0]),
            n_items_multi_rated=int(h.get("n_items_multi_rated", 0)),
            scores=int(tally[1]),
            na=int(tally[2]),
            stats=_stats(h, "raters"),
        )
    return out


def empty_ceiling(reason: str = NO_ITEMS) -> Ceiling:
    """The ceiling of a row without reference scores: every figure undefined for
    `reason` ("no items")."""
    return Ceiling(
        item_set=CEILING_ITEMS,
        n_items=0,
        n_items_multi_rated=0,
        scores=0,
        na=0,
        stats=_undefined("raters", reason),
    )


def mixed_scale_rows(rows: list[Row], run_ids: list[int]) -> None:
    """Pooled rows over criteria on different scales: every figure undefined with
    :data:`MIXED_SCALES` as its reason (the ceiling's too, and each run's, with the
    run's item counts summed over the row's criteria)."""
    for row in rows:
        note = mixed_scale_note(row)
        if not note:
            continue
        row.human = empty_ceiling(note)
        members = [
            r
            for r in rows
            if r.level == "skill"
            and (row.level == "overall" or r.ability == row.ability)
        ]  # a pooled row is an ability's (never "") or the overall
        for rid in map(str, run_ids):
            counts: dict[str, int] = {}
            for r in members:
                cell = r.judge(rid)
                for k, v in (cell.counts if cell else {}).items():
                    counts[k] = counts.get(k, 0) + v
            row.judges[rid] = JudgeCell(
                counts=counts,
                stats=_undefined("judge", note),
                confusion=(),
                flag=Flag(reason=note),
                human=Ceiling(0, 0, 0, 0, _undefined("raters", note)),
                models=ModelMeans((), Stat.undefined(note), Stat.undefined(note)),
                scatter=(),
            )
