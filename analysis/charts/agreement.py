"""Adapters: one chart's numbers picked out of `agreement_compute()`'s result, an
:class:`~analysis.selectors.agreement.result.AgreementResult`.

Scales: each row carries its ``scale`` (values, low, high, label; ``mixed`` for a
pooled row over criteria on different scales). The heatmap and the scatter of a row
are drawn on its criterion's scale; the radar puts criteria side by side, on their
shared scale when they have one, else each value normalised to 0..1 on its
criterion's scale (``annotation.scales.Scale.normalised``), saying so on the chart;
rank bars of a mixed row rank normalised means (the row's ``profiles_scale``).
A row without profiles (a hand-made result) is drawn from its runs' model means.
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
from analysis.selectors.agreement.result import (
    AgreementResult,
    JudgeCell,
    ModelMean,
    Row,
    Stat,
)
from annotation.scales import ORDINAL, Scale


def _value(stat: Stat | None) -> float | None:
    return stat.value if stat is not None else None


def _n(stat: Stat | None) -> int:
    return stat.n if stat is not None else 0


def row_scale(row: Row | None) -> Scale | None:
    """The ordinal `Scale` of a row (None for a row over mixed scales); no row, or
    a row without a scale, is on 1..5."""
    if row is None or row.scale is None:
        return Scale(ORDINAL, tuple(range(SCALE[0], SCALE[1] + 1)))
    if row.scale.mixed:
        return None
    return Scale(ORDINAL, tuple(range(int(row.scale.low), int(row.scale.high) + 1)))


NORMALISED_NOTE = (
    "Criteria on different scales ({scales}): each value drawn normalised to 0-1 "
    "(its scale's lowest to highest)"
)


def _radar_scale(rows: list[Row]):
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


def _model_stats(row: Row, run_id: str) -> dict[str, ModelMean]:
    judge = row.judge(run_id)
    return judge.models.by_model() if judge else {}


# The radar's two item sets (analysis.selectors.agreement.profiles.VIEWS).
RADAR_VIEWS = {
    "shared": "on shared items",
    "all": "all items each source scored",
}
RADAR_TITLES = {"shared": "shared items", "all": "all scored items"}  # fit 520 px


def _ci_note(stat: Stat | None) -> str:
    """`n=12, 95% CI [2.9, 3.6]` for a tooltip."""
    if stat is None:
        return ""
    note = f"n={_n(stat)}"
    if stat.ci:
        note += f", 95% CI [{fmt_num(stat.ci[0])}, {fmt_num(stat.ci[1])}]"
    return note


def radar_from_agreement(
    result: AgreementResult, model: str, view: str = "shared"
) -> str:
    """One model's mean per skill under the reference and every judge run, on one
    item set (`view`, RADAR_VIEWS): "shared" - items every source scored (one n per
    skill for all lines); "all" - each source on every item it scored (its own n).
    Each legend entry carries its n (items over all skills), each point its n and CI.

    Rows without profiles (a hand-made result) are drawn from the runs' model
    means: the human mean over every item humans scored, the judges on the items
    they share with them.
    """
    rows = [r for r in result.rows if r.level == "skill"]
    if rows and all(r.profiles is not None for r in rows):
        return _radar_view(
            result, rows, model, view if view in RADAR_VIEWS else "shared"
        )
    title = f"{model}: mean score per skill"
    runs = result.run_labels
    human, human_notes = [], []
    judges = {rid: ([], []) for rid, _ in runs}
    for row in rows:
        h = None
        for rid, _ in runs:
            stats = _model_stats(row, rid).get(model)
            if h is None and stats and stats.human_mean.value is not None:
                h = stats.human_mean
            values, notes = judges[rid]
            values.append(_value(stats.judge_mean) if stats else None)
            notes.append(f"n={_n(stats.judge_mean)}" if stats else "")
        own = {m.model: m.mean for m in row.human.models or ()}
        if model in own:
            h = own[model]
        human.append(_value(h))
        human_notes.append(f"n={_n(h)}" if h else "")
    series = [Series(result.reference_label, human, 0, human_notes)]
    series += [
        Series(label, judges[rid][0], i + 1, judges[rid][1])
        for i, (rid, label) in enumerate(runs)
    ]
    return radar_chart(title=title, axes=[r.label for r in rows], series=series)


def _radar_view(result: AgreementResult, rows: list[Row], model: str, view: str) -> str:
    runs = result.run_labels
    per_skill = [
        next((e for e in r.profiles.view(view) if e.model == model), None) for r in rows
    ]
    chart_scale, norms, note = _radar_scale(rows)
    sources = [("reference", result.reference_label)] + runs
    series = []
    for i, (sid, label) in enumerate(sources):
        stats = [
            None
            if e is None
            else e.reference
            if sid == "reference"
            else e.judges.get(sid)
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
        axes=[r.label for r in rows],
        series=series,
        scale=chart_scale,
        note=note,
    )


def _row_and_cell(
    result: AgreementResult, row_key: str, run_id: str
) -> tuple[Row | None, JudgeCell | None, str]:
    """The row, the run's cell on it and the run's label."""
    row = result.row(row_key)
    label = dict(result.run_labels).get(str(run_id), f"run {run_id}")
    return row, row.judge(run_id) if row else None, label


def heatmap_from_agreement(result: AgreementResult, row_key: str, run_id: str) -> str:
    row, judge, label = _row_and_cell(result, row_key, run_id)
    reference = result.reference_label
    title = f"{row.label if row else row_key}: {label} vs {reference.lower()}"
    scale = row_scale(row)
    if scale is None:
        return empty_chart(title, "criteria on different scales: no pooled table")
    return heatmap_chart(
        title=title,
        confusion=[list(line) for line in judge.confusion] if judge else None,
        row_label=f"{shorten(label, 30)} score",
        col_label=f"{reference} median (rounded)",
        labels=list(scale.values),
    )


def scatter_from_agreement(result: AgreementResult, row_key: str, run_id: str) -> str:
    row, judge, label = _row_and_cell(result, row_key, run_id)
    runs = result.run_labels
    index = next((i for i, (rid, _) in enumerate(runs) if rid == str(run_id)), 0)
    scale = row_scale(row) or Scale(ORDINAL, SCALE)
    reference = result.reference_label
    return scatter_chart(
        scale=(scale.low, scale.high),
        title=f"{row.label if row else row_key}: {label} vs {reference.lower()}",
        points=[p.to_list() for p in judge.scatter] if judge else None,
        x_label=f"{reference} mean",
        y_label=f"{shorten(label, 30)} score",
        colour=JUDGE_COLOURS[index % len(JUDGE_COLOURS)],
    )


def rank_bars_from_agreement(result: AgreementResult, row_key: str) -> str:
    """Each model's rank on one row (skill, ability or overall) under the reference
    and under every judge run."""
    row = result.row(row_key)
    runs = result.run_labels
    if row is not None and row.profiles is not None:
        return _rank_bars_shared(result, row, runs)
    per_run = {rid: _model_stats(row, rid) if row else {} for rid, _ in runs}
    models = list(result.models)
    seen = {m for stats in per_run.values() for m in stats}
    models = [m for m in models if m in seen] + sorted(seen - set(models))
    human_means = []
    for m in models:
        h = next(
            (
                per_run[rid][m].human_mean.value
                for rid, _ in runs
                if m in per_run[rid] and per_run[rid][m].human_mean.value is not None
            ),
            None,
        )
        human_means.append(h)
    title = f"{row.label if row else row_key}: model ranks"

    def notes(means):
        return [f"mean {fmt_num(v)}" if v is not None else "" for v in means]

    series = [
        Series(
            result.reference_label,
            ranks_from_means(human_means),
            0,
            notes(human_means),
        )
    ]
    for i, (rid, label) in enumerate(runs):
        means = [
            per_run[rid][m].judge_mean.value if m in per_run[rid] else None
            for m in models
        ]
        series.append(Series(label, ranks_from_means(means), i + 1, notes(means)))
    return rank_bars_chart(title=title, models=models, series=series)


def _rank_bars_shared(result: AgreementResult, row: Row, runs) -> str:
    """Rank bars on the row's shared items (every source scored them): the same
    items under the reference and every run, whatever the order of the runs."""
    entries = [e for e in row.profiles.shared if e.n]
    models = [e.model for e in entries]
    normalised = row.profiles_scale == "normalised"
    on = " (normalised 0-1)" if normalised else ""

    def notes(stats):
        return [
            f"mean {fmt_num(_value(x))}{on}, n={_n(x)}" if _value(x) is not None else ""
            for x in stats
        ]

    sources = [(result.reference_label, [e.reference for e in entries])]
    sources += [(label, [e.judges.get(rid) for e in entries]) for rid, label in runs]
    series = [
        Series(label, ranks_from_means([_value(x) for x in stats]), i, notes(stats))
        for i, (label, stats) in enumerate(sources)
    ]
    title = f"{row.label}: model ranks, shared items"
    if normalised:
        title += ", means of values normalised per criterion (different scales)"
    return rank_bars_chart(title=title, models=models, series=series)
