"""Radar chart: skills on the axes, one closed line per series (FLASK's figure)."""

from __future__ import annotations

import math

from analysis.charts.svg import (
    GRID,
    MUTED,
    SCALE,
    TEXT_CHAR_EM,
    Series,
    empty_chart,
    esc,
    fmt_num,
    heading_extra,
    svg_document,
    svg_heading,
    svg_legend,
    svg_marker,
    svg_text,
)


def _wrap(label: str, width: int = 13) -> list[str]:
    words, lines = str(label).split(), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return lines[:3]


LABEL_SIZE = 13
LABEL_LINE = 14
LABEL_GAP = 12  # at least this far beyond the outer ring, whatever the angle
SCALE_INSET = 8  # scale numbers this far inside their ring


def _angle(i: int, n: int) -> float:
    return -math.pi / 2 + 2 * math.pi * i / n


def _label_layout(lines: list[str], angle: float, radius: float):
    """((anchor, x, first baseline), lines, box) of an axis label around a centre at
    (0, 0): the box (x0, y0, x1, y1, estimated from the characters) is pushed out
    along its axis until its nearest point is `LABEL_GAP` beyond the outer ring."""
    w = max(len(line) for line in lines) * TEXT_CHAR_EM * LABEL_SIZE
    h = LABEL_LINE * len(lines)
    c, s = math.cos(angle), math.sin(angle)
    dist = radius + LABEL_GAP
    while True:
        ax, ay = dist * c, dist * s
        if abs(c) < 0.2:
            anchor, x0 = "middle", ax - w / 2
        elif c > 0:
            anchor, x0 = "start", ax
        else:
            anchor, x0 = "end", ax - w
        y0 = ay - h if s < -0.2 else (ay if s > 0.2 else ay - h / 2)
        box = (x0, y0, x0 + w, y0 + h)
        near = math.hypot(min(max(0.0, x0), x0 + w), min(max(0.0, y0), y0 + h))
        if near >= radius + LABEL_GAP:
            break
        dist += 2
    # the first baseline: a line's ascent is about 0.8 of the font size
    return (
        (anchor, ax, y0 + 0.8 * LABEL_SIZE + (LABEL_LINE - LABEL_SIZE) / 2),
        lines,
        box,
    )


def radar_ticks(scale: tuple[float, float]) -> list[float]:
    """The rings of a scale: each whole value of a small scale (1..5, 0..4, 1..10),
    else five evenly spaced levels (0, 0.25, ..., 1 for normalised values)."""
    lo, hi = scale
    if float(lo).is_integer() and float(hi).is_integer() and 2 <= hi - lo <= 10:
        return list(range(int(lo), int(hi) + 1))
    return [lo + (hi - lo) * k / 4 for k in range(5)]


def radar_chart(
    *,
    title: str,
    axes: list[str],
    series: list[Series],
    scale: tuple[float, float] = SCALE,
    note: str = "",
) -> str:
    """Skills on the axes (values of `scale` from the centre out, default 1..5), one
    closed line per series; `note` (e.g. that values are normalised) is printed
    under the legend and added to the description.

    The centre is 0 when the scale starts at or above 0 (1..5 rings at 1/5 .. 5/5 of
    the radius, as FLASK draws it), else the scale's lowest value. A missing value
    (None) leaves out that vertex and the two edges that touch it, so a gap shows
    where a skill had no data instead of a fake zero.
    """
    chart_note = note  # `note` is reused below for each point's tooltip
    n = len(axes)
    defined = [s for s in series if any(v is not None for v in s.values)]
    if n < 3:
        return empty_chart(title, f"a radar chart needs at least 3 skills (got {n})")
    if not defined:
        return empty_chart(title, "no mean score for any skill")
    radius = 150
    # Labels first (around a centre at 0, 0): their boxes decide the chart's size.
    labels = [
        _label_layout(_wrap(label), _angle(i, n), radius)
        for i, label in enumerate(axes)
    ]
    reach_x = max([radius] + [max(-b[0], b[2]) for _, _, b in labels]) + 16
    width = max(520.0, 2 * reach_x)
    cx = width / 2
    cy = (
        40 + heading_extra(title, width) + max([radius] + [-b[1] for _, _, b in labels])
    )
    bottom = max([radius] + [b[3] for _, _, b in labels])
    legend_y = cy + bottom + 30
    height = legend_y + 18 * len(series) + (22 if note else 0)
    lo, hi = scale
    base = min(lo, 0)

    def frac(v: float) -> float:
        return (max(base, min(v, hi)) - base) / (hi - base)

    def point(i: int, v: float) -> tuple[float, float]:
        angle = _angle(i, n)
        r = radius * frac(v)
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    body = [svg_heading(title, width)]
    grid = ['<g class="grid">']
    # Scale numbers sit on the first (upright) axis, just right of it and just inside
    # where it crosses their ring (issue 37: halfway between two axes they floated off both);
    # the axis labels all lie beyond the outer ring, so the two never meet.
    for level in radar_ticks(scale):
        ring = " ".join(
            f"{fmt_num(x)},{fmt_num(y)}" for x, y in (point(i, level) for i in range(n))
        )
        grid.append(f'<polygon points="{ring}" fill="none" stroke="{GRID}"/>')
        x, y = point(0, level)
        grid.append(
            svg_text(
                x + SCALE_INSET / 2,
                y + 11,  # just inside the ring: the outer number stays within it
                fmt_num(level),
                anchor="start",
                size=10,
                fill=MUTED,
                extra=' class="scale" stroke="#ffffff" stroke-width="3" '
                'paint-order="stroke"',
            )
        )
    for i, label in enumerate(axes):
        x, y = point(i, hi)
        grid.append(
            f'<line class="axis" x1="{fmt_num(cx)}" y1="{fmt_num(cy)}" '
            f'x2="{fmt_num(x)}" y2="{fmt_num(y)}" stroke="{GRID}"/>'
        )
        (anchor, lx, first), lines, _ = labels[i]
        spans = "".join(
            f'<tspan x="{fmt_num(cx + lx)}" y="{fmt_num(cy + first + LABEL_LINE * k)}">'
            f"{esc(line)}</tspan>"
            for k, line in enumerate(lines)
        )
        grid.append(
            f'<text class="axis-label" text-anchor="{anchor}" font-size="{LABEL_SIZE}">'
            f"<title>{esc(label)}</title>{spans}</text>"
        )
    grid.append("</g>")
    body += grid
    for s in series:
        vals = [v if v is None else float(v) for v in s.values[:n]]
        vals += [None] * (n - len(vals))
        segments, marks = [], []
        for i, v in enumerate(vals):
            if v is None:
                continue
            x, y = point(i, v)
            note = s.notes[i] if i < len(s.notes) and s.notes[i] else ""
            tip = f"{axes[i]} · {s.label}: {fmt_num(v)}" + (
                f" ({note})" if note else ""
            )
            marks.append(svg_marker(s.marker, x, y, s.colour, tip))
            nxt = vals[(i + 1) % n]
            if nxt is not None:
                segments.append((point(i, v), point((i + 1) % n, nxt)))
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        stroke = f'stroke="{s.colour}" stroke-width="2.2"{dash} stroke-linejoin="round"'
        if all(v is not None for v in vals):
            pts = " ".join(
                f"{fmt_num(x)},{fmt_num(y)}"
                for x, y in (point(i, v) for i, v in enumerate(vals))
            )
            fill = (
                f'fill="{s.colour}" fill-opacity="{"0.10" if s.index == 0 else "0.06"}"'
            )
            body.append(f'<polygon class="series" points="{pts}" {fill} {stroke}/>')
        elif segments:
            d = " ".join(
                f"M{fmt_num(a[0])},{fmt_num(a[1])} L{fmt_num(b[0])},{fmt_num(b[1])}"
                for a, b in segments
            )
            body.append(f'<path class="series" d="{d}" fill="none" {stroke}/>')
        body.append(f'<g class="marks">{"".join(marks)}</g>')
    body.append(svg_legend(24, legend_y, series, width=width - 24))
    if chart_note:
        body.append(
            svg_text(24, height - 10, chart_note, size=11, fill=MUTED, anchor="start")
        )
    scale_text = f"{fmt_num(lo)} to {fmt_num(hi)}"
    desc = f"Radar chart of {n} skills on a {scale_text} scale: " + "; ".join(
        s.label for s in series
    )
    if chart_note:
        desc += f". {chart_note}"
    return svg_document(width, height, title, desc, body)


# ---------------------------------------------------------------------------------
# Heatmap (confusion matrix)
