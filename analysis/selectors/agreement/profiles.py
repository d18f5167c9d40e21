"""Model profiles: each evaluated model's mean score per row (skill, ability, overall),
under the reference raters and under each run, in two explicitly named item sets.

* ``shared`` ("on shared items"): only items that the reference and every compared run
  scored numerically, so the lines of a radar compare like with like; one n per model
  and row, the same for every source.
* ``all`` ("all items each source scored", FLASK's own aggregation): each source on
  every item it scored numerically; each source has its own n.

The reference's value of an item is the mean of its raters' numeric scores; a run's is
its score (median of its samples). Means are over items, with a 95% bootstrap CI
(items resampled within each skill and model, an ability's or overall resample the
union of its skills'). The random stream of a source depends on the seed, the view
and the items it scored, never on the run's id or the order of the runs: sources
that scored the same items the same way get the same interval, and sources that
scored the same items share their item draws when items are drawn one by one (a
paired bootstrap). A source whose items are exactly the shared items has the same
resamples in both views. On a lattice of values (the usual case: scores and means
of a few raters) each resampled sum is drawn from its exact distribution
(:mod:`analysis.stats.lattice`).

Scales: means are on the criterion's own scale. An ability or overall row whose
criteria are on different scales (``row.scale.mixed``) averages each item's
value normalised to 0..1 on its criterion's scale (``annotation.scales.Scale.
normalised``: (value - low) / (high - low)) and says so: ``row.profiles_scale`` is
"normalised" there, else the row's scale label ("1-5").
"""

from __future__ import annotations

import zlib
from dataclasses import replace

import numpy as np

from analysis.selectors.agreement.inputs import Inputs, item_keys, value_offset
from analysis.selectors.agreement.result import ProfileEntry, Profiles, Row, Stat
from analysis.stats.bootstrap import GroupDraws, group_sums, sum_method
from analysis.stats.lattice import value_lattice
from analysis.stats.results import make_result, percentile_intervals

VIEWS = {
    "shared": "on shared items",
    "all": "all items each source scored",
}
WHY = {
    "shared": "no item that the reference and every run scored",
    "all": "no score from this source for this model",
}


def row_skills(rows: list[Row], skills: list[str]) -> list[list[int]]:
    """Per row, the indices (into `skills`) of the skills it covers."""
    out = []
    for row in rows:
        if row.level == "skill":
            out.append([skills.index(row.skill)])
        elif row.level == "ability":
            out.append(
                [
                    skills.index(r.skill)
                    for r in rows
                    if r.level == "skill" and r.ability == row.ability
                ]
            )
        else:
            out.append(list(range(len(skills))))
    return out


def _stats(point: np.ndarray, boot: np.ndarray, n: np.ndarray, why: str) -> list[Stat]:
    """Per group, the figure of `make_result` (point, n), with the percentile
    intervals of its replicates, those of all groups computed at once."""
    lo = hi = None
    if boot.shape[0]:
        lo, hi, _ = percentile_intervals(boot)
    out = []
    for g in range(len(point)):
        stat = Stat.from_result(make_result(point[g], None, int(n[g]), why))
        if lo is not None and stat.value is not None:
            stat = replace(stat, ci=(float(lo[g]), float(hi[g])))
        out.append(stat)
    return out


def _cells(inp: Inputs, keys: np.ndarray, n_sk: int) -> np.ndarray:
    """The (skill, model) cell of each item key: items are resampled within it."""
    n_m = len(inp.resp.model_names)
    model = inp.resp.model[inp.resp.index(keys // n_sk)] if len(keys) else keys
    return (keys % n_sk) * n_m + model


def _shared_item_draws(inp, by_source, n_sk, n_boot, seed, view_code) -> dict:
    """Item keys (bytes) -> one :class:`GroupDraws` for the sources that scored
    exactly those items, when drawing items is the cheapest way for all of them
    (:func:`sum_method`); its stream depends on the seed, the view and the items."""
    layouts: dict[bytes, list] = {}
    for keys, vals in by_source.values():
        layouts.setdefault(keys.tobytes(), [keys, []])[1].append(vals)
    out = {}
    for blob, (keys, values) in layouts.items():
        if len(values) < 2 or not n_boot or not len(keys):
            continue
        cell = _cells(inp, keys, n_sk)
        sizes = np.bincount(cell)
        sizes = sizes[sizes > 0]
        methods = {
            sum_method(sizes, len(u), n_boot, value_lattice(u))
            for u in (np.unique(v) for v in values)
        }
        if methods == {"items"}:
            rng = np.random.default_rng([seed, view_code, zlib.crc32(blob)])
            out[blob] = GroupDraws(cell, n_sk * len(inp.resp.model_names), n_boot, rng)
    return out


def item_values(
    inp: Inputs,
    reference: tuple[np.ndarray, np.ndarray],
    runs: dict[int, tuple[np.ndarray, np.ndarray]],
) -> tuple[tuple[np.ndarray, np.ndarray], dict[int, tuple[np.ndarray, np.ndarray]]]:
    """The value of each item a source scored numerically, on its skill's scale:
    (reference (item keys, mean of the raters' numeric scores), run id -> (item
    keys, score)). `reference`: (item keys, score code counts (n, W)); `runs`: run
    id -> (item keys, score code 0..V); items without a numeric score are left out.
    """
    ref_keys, ref_counts = reference
    m = ref_counts.sum(axis=1)
    ok = m > 0
    codes = np.arange(1, ref_counts.shape[1] + 1, dtype=float)
    ref = (ref_keys[ok], (ref_counts[ok] @ codes) / np.maximum(m[ok], 1))
    judged = {rid: (k[s > 0], s[s > 0].astype(float)) for rid, (k, s) in runs.items()}
    if not inp.skills.flask:  # codes -> values on each skill's scale
        ref = (ref[0], ref[1] + value_offset(inp, ref[0]))
        judged = {rid: (k, v + value_offset(inp, k)) for rid, (k, v) in judged.items()}
    return ref, judged


def model_profiles(
    inp: Inputs,
    reference: tuple[np.ndarray, np.ndarray],
    runs: dict[int, tuple[np.ndarray, np.ndarray]],
    rows: list[Row],
    n_boot: int,
    seed: int,
) -> list[tuple[str, Profiles]]:
    """Per row of `rows`, (its ``profiles_scale``, its :class:`Profiles`: per item
    set of VIEWS, one :class:`ProfileEntry` per model); :func:`set_profiles` puts
    them on the rows.

    `reference`: (item keys, score code counts (n, W)); `runs`: run id -> (item keys,
    score code 0..V). Pure computation on arrays already loaded; no query. `rows` is
    only read (each row's level, skill, ability and scale), so this may run in a
    thread while another fills the rows' other keys.
    """
    _, n_sk = item_keys(inp.skills)
    names = inp.resp.model_names
    ref, judged = item_values(inp, reference, runs)
    shared = ref[0]
    for keys, _ in judged.values():
        shared = np.intersect1d(shared, keys)
    sources = {0: ref, **judged}  # 0: the reference (run ids start at 1)
    views = {
        "all": sources,
        "shared": {
            sid: (shared, vals[np.searchsorted(keys, shared)])
            for sid, (keys, vals) in sources.items()
        },
    }
    members = row_skills(rows, inp.skills.keys)
    mixed = [bool(row.scale and row.scale.mixed) for row in rows]
    low = inp.skills.low.astype(float)
    span = np.array(
        [
            max(v[-1] - v[0], 1.0)
            for v in (inp.skills.values[k] for k in inp.skills.keys)
        ]
    )
    scale_of = [
        "normalised" if mix else (row.scale.label if row.scale else "1-5")
        for row, mix in zip(rows, mixed, strict=True)
    ]
    n_m = len(names)
    view_code = {"shared": 1, "all": 2}
    profiles: list[dict[str, tuple[ProfileEntry, ...]]] = [{} for _ in rows]
    drawn: dict[int, tuple] = {}  # source -> its "all" view's keys and draws
    for view, by_source in views.items():
        stats: dict[int, list[list[Stat]]] = {}
        shared_draws = _shared_item_draws(
            inp, by_source, n_sk, n_boot, seed, view_code[view]
        )
        for sid, (keys, vals) in by_source.items():
            if view == "shared" and np.array_equal(keys, drawn[sid][0]):
                # The source scored exactly the shared items: the same resamples.
                n, sums, boot = drawn[sid][1]
            else:
                cell = _cells(inp, keys, n_sk)
                draws = shared_draws.get(keys.tobytes())
                rng = np.random.default_rng(
                    [seed, view_code[view], zlib.crc32(keys.tobytes())]
                )
                n, sums, boot = group_sums(
                    vals, cell, n_sk * n_m, 0 if draws else n_boot, rng
                )
                if draws:
                    boot = np.zeros((n_boot, n_sk * n_m))
                    boot[:, draws.live] = draws.boot(vals)
                n, sums = n.reshape(n_sk, n_m), sums.reshape(n_sk, n_m)
                boot = boot.reshape(n_boot, n_sk, n_m)
                drawn.setdefault(sid, (keys, (n, sums, boot)))
            per_row = []
            for wanted, mix in zip(members, mixed, strict=True):
                # An ability or overall: its skills' resamples added up (stratified
                # by skill, as in analysis.stats.report.agreement_table); on mixed
                # scales, of values normalised per skill (linear: sums - n * low).
                rn = n[wanted].sum(axis=0)
                rs, rb = sums[wanted], boot[:, wanted]
                if mix:
                    lo, sp = low[wanted][:, None], span[wanted][:, None]
                    rs = (rs - n[wanted] * lo) / sp
                    rb = (rb - n[wanted] * lo) / sp
                with np.errstate(invalid="ignore", divide="ignore"):
                    point = np.where(rn > 0, rs.sum(axis=0) / rn, np.nan)
                    rboot = rb.sum(axis=1) / rn
                per_row.append(_stats(point, rboot, rn, WHY[view]))
            stats[sid] = per_row
        for r_i in range(len(rows)):
            profiles[r_i][view] = tuple(
                ProfileEntry(
                    name,
                    stats[0][r_i][g],
                    {str(rid): stats[rid][r_i][g] for rid in runs},
                    stats[0][r_i][g].n if view == "shared" else None,
                )
                for g, name in enumerate(names)
            )
    return [
        (scale, Profiles(**by_view))
        for scale, by_view in zip(scale_of, profiles, strict=True)
    ]


def set_profiles(rows: list[Row], profiles: list[tuple[str, Profiles]]) -> None:
    """Sets ``row.profiles_scale`` and ``row.profiles`` from
    :func:`model_profiles`' result for the same rows."""
    for row, (scale, by_view) in zip(rows, profiles, strict=True):
        row.profiles_scale, row.profiles = scale, by_view
