"""Means on a criterion's own scale with their intervals, several estimates per model
(humans only, judge only, prediction-powered): a forest plot with the rules of
`analysis.charts` (escaped text, a title and description, markers and dashes that
do not rely on colour). Intervals, whiskers, notes and group labels are those of
`analysis.charts.intervals`."""

from __future__ import annotations

from analysis.charts.intervals import (
    Interval,
    group_label,
    interval_cells,
    note_text,
    whisker,
)
from analysis.charts.svg import (
    GRID,
    MUTED,
    NOT_ENOUGH,
    Series,
    chart_id,
    empty_chart,
    esc,
    fmt_num,
    heading_extra,
    shorten,
    svg_document,
    svg_heading,
    svg_legend,
    svg_marker,
    svg_text,
)


def _text(v: Interval) -> str:
    ci = f" [{v.low:.2f}, {v.high:.2f}]" if v.has_ci else " (no valid CI)"
    return f"{v.value:.2f}{ci}, n={v.n}"


def means_chart(
    *,
    title: str,
    groups: list[str],
    series: list[Series],
    low: float,
    high: float,
) -> str:
    """One row per group (a model), one marker per series whose `values` are
    :class:`Interval` (or None) per group, on an axis from `low` to `high` (the
    criterion's scale; values outside are drawn at the edge). A value without an
    interval is drawn as a marker alone and its text says "no valid CI"; an
    undefined value says so with its reason as the tooltip."""
    if not groups or not series:
        return empty_chart(title, "no model to show")
    cells = interval_cells(series, len(groups))
    if all(c.value is None for row in cells for c in row):
        return empty_chart(title, "no estimate is defined")
    uid = chart_id("means", title, *groups)
    # The value texts right of the plot are as long as they are: the margin fits
    # the longest (about 6.4 px a character at 11 px).
    longest = max(
        (
            len(f"{shorten(s.label, 12)} {_text(c)}")
            for s, row in zip(series, cells, strict=True)
            for c in row
            if c.value is not None
        ),
        default=0,
    )
    row_h, gap, left, top, plot_w = 16, 14, 150, 62, 300
    right = max(190, int(6.4 * longest) + 16)
    group_h = row_h * len(series) + gap
    width = left + plot_w + right
    top += heading_extra(title, width)
    height = top + len(groups) * group_h + 30 + 18 * len(series)
    span = (high - low) or 1.0

    def sx(x: float) -> float:
        return left + plot_w * (min(max(x, low), high) - low) / span

    body = [svg_heading(title, width), '<g class="axis">']
    bottom = top + len(groups) * group_h - gap / 2
    for k in range(5):
        tick = low + span * k / 4
        x = sx(tick)
        body.append(
            f'<line x1="{fmt_num(x)}" y1="{top - 4}" x2="{fmt_num(x)}" '
            f'y2="{fmt_num(bottom)}" stroke="{GRID}"/>'
        )
        body.append(svg_text(x, top - 9, f"{tick:g}", size=10, fill=MUTED))
    body.append("</g>")
    marks = ['<g class="estimates">']
    for g, group in enumerate(groups):
        y0 = top + g * group_h
        marks.append(
            group_label(left - 10, y0 + row_h * len(series) / 2 + 4, group, 15)
        )
        for k, s in enumerate(series):
            cell, y = cells[k][g], y0 + k * row_h + row_h / 2
            if cell.value is None:
                why = cell.reason or NOT_ENOUGH
                marks.append(
                    note_text(left + 4, y + 4, f"{s.label}: {NOT_ENOUGH}", why)
                )
                continue
            tip = f"{group} · {s.label}: {_text(cell)}"
            item = [f'<g class="estimate"><title>{esc(tip)}</title>']
            if cell.has_ci:
                item.append(whisker(sx(cell.low), sx(cell.high), y, s.colour))
            item.append(svg_marker(s.marker, sx(cell.value), y, s.colour, ""))
            item.append("</g>")
            marks.append("".join(item))
            marks.append(
                svg_text(
                    left + plot_w + 8,
                    y + 4,
                    f"{shorten(s.label, 12)} {_text(cell)}",
                    anchor="start",
                    size=11,
                    extra=' class="value"',
                )
            )
    marks.append("</g>")
    body += marks
    body.append(
        svg_legend(
            left, top + len(groups) * group_h + 14, series, uid=uid, width=width - left
        )
    )
    desc = (
        f"Means of {len(groups)} models on a {low:g} to {high:g} scale: "
        + "; ".join(s.label for s in series)
        + ". Whiskers are 95% intervals; a marker without one has no valid interval."
    )
    return svg_document(width, height, title, desc, body)
