"""Adapters: one chart's numbers picked out of `agreement_compute()`'s result dict.

Scales: each row carries its ``scale`` (values, low, high, label; ``mixed`` for a
pooled row over criteria on different scales). The heatmap and the scatter of a row
are drawn on its criterion's scale; the radar puts criteria side by side, on their
shared scale when they have one, else each value normalised to 0..1 on its
criterion's scale (``annotation.scales.Scale.normalised``), saying so on the chart;
rank bars of a mixed row rank normalised means (the row's ``profiles_scale``).
"""

from __future__ import annotations

from analysis.charts.bars import rank_bars_chart, ranks_from_means
from analysis.charts.heatmap import heatmap_chart
from analysis.charts.radar import radar_chart
from analysis.charts.scatter import scatter_chart
from analysis.charts.svg import (
    JUDGE_COLOURS,
    SCALE,
    Series,
    empty_chart,
    fmt_num,
    shorten,
)
from annotation.scales import ORDINAL, Scale


def _value(stat) -> float | None:
    return stat.get("value") if isinstance(stat, dict) else None


def _n(stat) -> int:
    return int(stat.get("n") or 0) if isinstance(stat, dict) else 0


def reference_label(result: dict) -> str:
    return (result.get("reference") or {}).get("label") or "Humans"


def run_labels(result: dict) -> list[tuple[str, str]]:
    """[(run id as str, label)] in the result's order."""
    return [
        (str(r["id"]), r.get("label") or f"run {r['id']}")
        for r in result.get("runs") or []
    ]


def find_row(result: dict, key: str) -> dict | None:
    return next((r for r in result.get("rows") or [] if r.get("key") == key), None)


def row_scale(row: dict) -> Scale | None:
    """The ordinal `Scale` of a row (None for a row over mixed scales); rows of an
    older result without ``scale`` are on 1..5."""
    scale = row.get("scale") or {"low": SCALE[0], "high": SCALE[1]}
    if scale.get("mixed"):
        return None
    return Scale(ORDINAL, tuple(range(int(scale["low"]), int(scale["high"]) + 1)))


NORMALISED_NOTE = (
    "Criteria on different scales ({scales}): each value drawn normalised to 0-1 "
    "(its scale's lowest to highest)"
)


def _radar_scale(rows: list[dict]):
    """(chart scale, per-row value map, note) for the radar of `rows`."""
    scales = [row_scale(r) or Scale(ORDINAL, (1, 5)) for r in rows]
    if not scales or all(sc.values == scales[0].values for sc in scales):
        first = scales[0] if scales else Scale(ORDINAL, (1, 5))
        return (first.low, first.high), [None] * len(rows), ""
    labels = ", ".join(dict.fromkeys(sc.label for sc in scales))
    return (0, 1), scales, NORMALISED_NOTE.format(scales=labels)


def _on_scale(value, scale: Scale | None):
    if value is None or scale is None:
        return value
    return scale.normalised(value)


def _model_stats(row: dict, run_id: str) -> dict[str, dict]:
    judge = (row.get("judges") or {}).get(run_id) or {}
    models = (judge.get("models") or {}).get("models") or []
    return {m.get("model"): m for m in models if isinstance(m, dict)}


# The radar's two item sets (analysis.selectors.agreement.profiles.VIEWS).
RADAR_VIEWS = {
    "shared": "on shared items",
    "all": "all items each source scored",
}
RADAR_TITLES = {"shared": "shared items", "all": "all scored items"}  # fit 520 px


def _ci_note(stat: dict | None) -> str:
    """`n=12, 95% CI [2.9, 3.6]` for a tooltip."""
    if not isinstance(stat, dict):
        return ""
    note = f"n={_n(stat)}"
    if stat.get("ci"):
        note += f", 95% CI [{fmt_num(stat['ci'][0])}, {fmt_num(stat['ci'][1])}]"
    return note


def radar_from_agreement(result: dict, model: str, view: str = "shared") -> str:
    """One model's mean per skill under the reference and every judge run, on one
    item set (`view`, RADAR_VIEWS): "shared" - items every source scored (one n per
    skill for all lines); "all" - each source on every item it scored (its own n).
    Each legend entry carries its n (items over all skills), each point its n and CI.

    A result without profiles (an older shape) is drawn as before: the human mean
    over every item humans scored, the judges on the items they share with them.
    """
    rows = [r for r in result.get("rows") or [] if r.get("level") == "skill"]
    if rows and all("profiles" in r for r in rows):
        return _radar_view(
            result, rows, model, view if view in RADAR_VIEWS else "shared"
        )
    title = f"{model}: mean score per skill"
    runs = run_labels(result)
    human, human_notes = [], []
    judges = {rid: ([], []) for rid, _ in runs}
    for row in rows:
        h = None
        for rid, _ in runs:
            stats = _model_stats(row, rid).get(model) or {}
            if h is None and _value(stats.get("human_mean")) is not None:
                h = stats["human_mean"]
            values, notes = judges[rid]
            values.append(_value(stats.get("judge_mean")))
            notes.append(f"n={_n(stats.get('judge_mean'))}" if stats else "")
        own = {
            m.get("model"): m.get("mean")
            for m in (row.get("human") or {}).get("models") or []
        }
        if model in own:
            h = own[model]
        human.append(_value(h))
        human_notes.append(f"n={_n(h)}" if h else "")
    series = [Series(reference_label(result), human, 0, human_notes)]
    series += [
        Series(label, judges[rid][0], i + 1, judges[rid][1])
        for i, (rid, label) in enumerate(runs)
    ]
    return radar_chart(
        title=title, axes=[r.get("label", "") for r in rows], series=series
    )


def _radar_view(result: dict, rows: list[dict], model: str, view: str) -> str:
    runs = run_labels(result)
    per_skill = [
        next((e for e in r["profiles"][view] if e.get("model") == model), {})
        for r in rows
    ]
    chart_scale, norms, note = _radar_scale(rows)
    sources = [("reference", reference_label(result))] + runs
    series = []
    for i, (sid, label) in enumerate(sources):
        stats = [
            e.get("reference")
            if sid == "reference"
            else (e.get("judges") or {}).get(sid)
            for e in per_skill
        ]
        n = sum(_n(x) for x in stats)
        notes = [_ci_note(x) for x in stats]
        if note:  # the tooltip keeps the value on the criterion's own scale
            notes = [
                f"{fmt_num(_value(x))} on {sc.label}, {t}"
                if _value(x) is not None
                else t
                for x, sc, t in zip(stats, norms, notes, strict=True)
            ]
        series.append(
            Series(
                f"{label} (n={n})",
                [_on_scale(_value(x), sc) for x, sc in zip(stats, norms, strict=True)],
                i,
                notes,
            )
        )
    return radar_chart(
        title=f"{model}: mean per skill, {RADAR_TITLES[view]}",
        axes=[r.get("label", "") for r in rows],
        series=series,
        scale=chart_scale,
        note=note,
    )


def heatmap_from_agreement(result: dict, row_key: str, run_id: str) -> str:
    row = find_row(result, row_key) or {}
    label = dict(run_labels(result)).get(str(run_id), f"run {run_id}")
    title = f"{row.get('label', row_key)}: {label} vs {reference_label(result).lower()}"
    judge = (row.get("judges") or {}).get(str(run_id)) or {}
    scale = row_scale(row)
    if scale is None:
        return empty_chart(title, "criteria on different scales: no pooled table")
    return heatmap_chart(
        title=title,
        confusion=judge.get("confusion"),
        row_label=f"{shorten(label, 30)} score",
        col_label=f"{reference_label(result)} median (rounded)",
        labels=list(scale.values),
    )


def scatter_from_agreement(result: dict, row_key: str, run_id: str) -> str:
    row = find_row(result, row_key) or {}
    runs = run_labels(result)
    label = dict(runs).get(str(run_id), f"run {run_id}")
    index = next((i for i, (rid, _) in enumerate(runs) if rid == str(run_id)), 0)
    judge = (row.get("judges") or {}).get(str(run_id)) or {}
    scale = row_scale(row) or Scale(ORDINAL, SCALE)
    return scatter_chart(
        scale=(scale.low, scale.high),
        title=f"{row.get('label', row_key)}: {label} vs {reference_label(result).lower()}",
        points=judge.get("scatter"),
        x_label=f"{reference_label(result)} mean",
        y_label=f"{shorten(label, 30)} score",
        colour=JUDGE_COLOURS[index % len(JUDGE_COLOURS)],
    )


def rank_bars_from_agreement(result: dict, row_key: str) -> str:
    """Each model's rank on one row (skill, ability or overall) under the reference
    and under every judge run."""
    row = find_row(result, row_key) or {}
    runs = run_labels(result)
    if "profiles" in row:
        return _rank_bars_shared(result, row, row_key, runs)
    per_run = {rid: _model_stats(row, rid) for rid, _ in runs}
    models = list(result.get("models") or [])
    seen = {m for stats in per_run.values() for m in stats}
    models = [m for m in models if m in seen] + sorted(seen - set(models))
    human_means = []
    for m in models:
        h = next(
            (
                _value(per_run[rid][m].get("human_mean"))
                for rid, _ in runs
                if m in per_run[rid]
                and _value(per_run[rid][m].get("human_mean")) is not None
            ),
            None,
        )
        human_means.append(h)
    title = f"{row.get('label', row_key)}: model ranks"

    def notes(means):
        return [f"mean {fmt_num(v)}" if v is not None else "" for v in means]

    series = [
        Series(
            reference_label(result),
            ranks_from_means(human_means),
            0,
            notes(human_means),
        )
    ]
    for i, (rid, label) in enumerate(runs):
        means = [_value((per_run[rid].get(m) or {}).get("judge_mean")) for m in models]
        series.append(Series(label, ranks_from_means(means), i + 1, notes(means)))
    return rank_bars_chart(title=title, models=models, series=series)


def _rank_bars_shared(result: dict, row: dict, row_key: str, runs) -> str:
    """Rank bars on the row's shared items (every source scored them): the same
    items under the reference and every run, whatever the order of the runs."""
    entries = [e for e in row["profiles"].get("shared") or [] if e.get("n")]
    models = [e["model"] for e in entries]
    normalised = row.get("profiles_scale") == "normalised"
    on = " (normalised 0-1)" if normalised else ""

    def notes(stats):
        return [
            f"mean {fmt_num(_value(x))}{on}, n={_n(x)}" if _value(x) is not None else ""
            for x in stats
        ]

    sources = [(reference_label(result), [e.get("reference") for e in entries])]
    sources += [
        (label, [(e.get("judges") or {}).get(rid) for e in entries])
        for rid, label in runs
    ]
    series = [
        Series(label, ranks_from_means([_value(x) for x in stats]), i, notes(stats))
        for i, (label, stats) in enumerate(sources)
    ]
    title = f"{row.get('label', row_key)}: model ranks, shared items"
    if normalised:
        title += ", means of values normalised per criterion (different scales)"
    return rank_bars_chart(title=title, models=models, series=series)
