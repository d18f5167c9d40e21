"""Radar chart: skills on the axes, one closed line per series (FLASK's figure)."""

from __future__ import annotations

import math

from analysis.charts.svg import (
    GRID,
    MUTED,
    SCALE,
    Series,
    empty_chart,
    esc,
    fmt_num,
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


def radar_chart(*, title: str, axes: list[str], series: list[Series]) -> str:
    """Skills on the axes (1..5 from the centre out), one closed line per series.

    A missing value (None) leaves out that vertex and the two edges that touch it,
    so a gap shows where a skill had no data instead of a fake zero.
    """
    n = len(axes)
    defined = [s for s in series if any(v is not None for v in s.values)]
    if n < 3:
        return empty_chart(title, f"a radar chart needs at least 3 skills (got {n})")
    if not defined:
        return empty_chart(title, "no mean score for any skill")
    width, cx, cy, radius = 520, 260, 222, 150
    height = cy + radius + 62 + 18 * len(series)
    lo, hi = SCALE

    def point(i: int, v: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / n
        r = radius * max(0.0, min(v, hi)) / hi
        return cx + r * math.cos(angle), cy + r * math.sin(angle)

    body = [svg_heading(title, width)]
    grid = ['<g class="grid">']
    for level in range(lo, hi + 1):
        ring = " ".join(
            f"{fmt_num(x)},{fmt_num(y)}" for x, y in (point(i, level) for i in range(n))
        )
        grid.append(f'<polygon points="{ring}" fill="none" stroke="{GRID}"/>')
        # Scale numbers sit halfway between the first two axes, clear of the labels.
        tick = -math.pi / 2 + math.pi / max(n, 2)
        grid.append(
            svg_text(
                cx + radius * level / hi * math.cos(tick) + 2,
                cy + radius * level / hi * math.sin(tick) - 2,
                level,
                anchor="start",
                size=10,
                fill=MUTED,
            )
        )
    for i, label in enumerate(axes):
        x, y = point(i, hi)
        grid.append(
            f'<line x1="{cx}" y1="{cy}" x2="{fmt_num(x)}" y2="{fmt_num(y)}" stroke="{GRID}"/>'
        )
        lx, ly = point(i, hi + 0.62)
        dx = lx - cx
        anchor = "middle" if abs(dx) < 8 else ("start" if dx > 0 else "end")
        lines = _wrap(label)
        top = ly - 6 * (len(lines) - 1) + (4 if ly >= cy else 0)
        if ly < cy - radius * 0.9:
            top -= 6 * (len(lines) - 1)
        spans = "".join(
            f'<tspan x="{fmt_num(lx)}" y="{fmt_num(top + 12 * k)}">{esc(line)}</tspan>'
            for k, line in enumerate(lines)
        )
        grid.append(
            f'<text class="axis-label" text-anchor="{anchor}" font-size="13">'
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
    body.append(svg_legend(24, cy + radius + 58, series))
    desc = f"Radar chart of {n} skills on a 1 to 5 scale: " + "; ".join(
        s.label for s in series
    )
    return svg_document(width, height, title, desc, body)


# ---------------------------------------------------------------------------------
# Heatmap (confusion matrix)
