"""Adapters from ``analysis.selectors.skill_profiles.skill_profiles``' result (see its
contract) to the radar, the bars with their intervals and the pairwise-order heat
map. Pure functions; the charts escape every name (:mod:`analysis.charts`)."""

from __future__ import annotations

from analysis.charts.heatmap import order_heatmap_chart
from analysis.charts.intervals import Interval, interval_bars_chart
from analysis.charts.radar import radar_chart
from analysis.charts.svg import Series, empty_chart, fmt_num

NORMALISED_NOTE = "criteria on different scales: values normalised to 0..1"


def find_profile_row(result: dict, key: str) -> dict | None:
    """The row of `result` with this key (``overall``, ``skill:<key>``, ...)."""
    return next((r for r in result.get("rows") or [] if r["key"] == key), None)


def source_label(result: dict, source_key: str) -> str:
    """How a source is named (its key when unknown)."""
    found = [s["label"] for s in result.get("sources") or [] if s["key"] == source_key]
    return found[0] if found else source_key


def _scale(row: dict) -> tuple[float, float]:
    """The axis of a row's values: its scale, or 0..1 when normalised."""
    scale = row.get("scale") or {}
    if scale.get("mixed"):
        return (0.0, 1.0)
    return (float(scale.get("low", 1)), float(scale.get("high", 5)))


def _normalised(value, row: dict):
    """A criterion's value mapped to 0..1 on its scale (for a radar on mixed scales)."""
    if value is None:
        return None
    lo, hi = _scale(row)
    return (value - lo) / ((hi - lo) or 1.0)


def radar_from_profiles(result: dict, source_key: str) -> str:
    """One source's radar: the criteria on the axes, one line per model (its mean
    per criterion; each point's tooltip has its 95% interval and n). Criteria on
    different scales are drawn normalised to 0..1, and the chart says so."""
    title = f"Skill profile · {source_label(result, source_key)}"
    rows = [r for r in result.get("rows") or [] if r["level"] == "skill"]
    if not rows:
        return empty_chart(title, "no criterion has scores in this selection")
    scales = {_scale(r) for r in rows}
    mixed = len(scales) > 1
    scale = (0.0, 1.0) if mixed else scales.pop()
    series = []
    for m, model in enumerate(result.get("models") or []):
        values, notes = [], []
        for row in rows:
            entry = (row.get("sources") or {}).get(source_key, {}).get("models", [])
            stat = entry[m] if m < len(entry) else {}
            value = stat.get("mean")
            values.append(_normalised(value, row) if mixed else value)
            ci = stat.get("ci")
            notes.append(
                f"mean {fmt_num(value)}"
                + (f" [{fmt_num(ci[0])}, {fmt_num(ci[1])}]" if ci else "")
                + f", n={stat.get('n', 0)}"
                if value is not None
                else ""
            )
        series.append(Series(model, values, index=m + 1, notes=notes))
    return radar_chart(
        title=title,
        axes=[r["label"] for r in rows],
        series=series,
        scale=scale,
        note=NORMALISED_NOTE if mixed else "",
    )


def bars_from_profiles(result: dict, row_key: str) -> str:
    """One row's means with their 95% intervals: one group per model, one bar per
    source (humans first), on the row's scale (0..1 when normalised)."""
    row = find_profile_row(result, row_key)
    title = f"Mean score with 95% interval · {row['label'] if row else row_key}"
    if row is None or not row.get("sources"):
        return empty_chart(title, "no score for this row")
    series, judges = [], 0
    for source in result.get("sources") or []:
        entries = row["sources"].get(source["key"], {}).get("models", [])
        judges += source["kind"] != "humans"
        series.append(
            Series(
                source["label"],
                [Interval.from_result({**e, "value": e.get("mean")}) for e in entries],
                index=0 if source["kind"] == "humans" else judges,
            )
        )
    return interval_bars_chart(
        title=title,
        groups=list(result.get("models") or []),
        series=series,
        scale=_scale(row),
        kind="mean",
    )


def order_heatmap_from_profiles(result: dict, row_key: str, source_key: str) -> str:
    """P(row model ranks above column model) on one row under one source."""
    row = find_profile_row(result, row_key)
    label = row["label"] if row else row_key
    title = f"P(row above column) · {label} · {source_label(result, source_key)}"
    figures = (row or {}).get("sources", {}).get(source_key)
    if not figures:
        return empty_chart(title, "no score from this source for this row")
    if figures.get("ranking"):
        return empty_chart(title, figures["ranking"])
    return order_heatmap_chart(
        title=title,
        labels=list(result.get("models") or []),
        matrix=figures["above"],
        note=f"share of {result.get('n_boot', 0)} resamples of the instructions; "
        "ties count half; darker = more likely",
    )
