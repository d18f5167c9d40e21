"""Scatter plot of judge score against human mean, circle area by item count."""

from __future__ import annotations

import math

from analysis.charts.svg import (
    GRID,
    JUDGE_COLOURS,
    MUTED,
    SCALE,
    empty_chart,
    esc,
    fmt_num,
    heading_extra,
    svg_document,
    svg_heading,
    svg_text,
)


def scatter_chart(
    *,
    title: str,
    points,
    x_label: str = "Human mean",
    y_label: str = "Judge score",
    colour: str = JUDGE_COLOURS[1],
    scale: tuple[int, int] = SCALE,
) -> str:
    """Distinct (x, y, count) points on the scale x the scale (`scale`: its lowest
    and highest value, default 1..5); circle area grows with the count; the dashed
    diagonal is perfect agreement."""
    clean = []
    for p in points or []:
        try:
            x, y, n = float(p[0]), float(p[1]), int(p[2])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(x) and math.isfinite(y) and n > 0:
            clean.append((x, y, n))
    if not clean:
        return empty_chart(title, "no item scored by both sides (n=0)")
    total, peak = sum(p[2] for p in clean), max(p[2] for p in clean)
    left, top, size = 64, 50, 320
    width = left + size + 40
    top += heading_extra(title, width)
    height = top + size + 110
    lo, hi = (int(x) for x in scale)

    def sx(v):
        return left + (v - lo + 0.3) / (hi - lo + 0.6) * size

    def sy(v):
        return top + size - (v - lo + 0.3) / (hi - lo + 0.6) * size

    def radius(n):
        return 3 + 13 * math.sqrt(n / peak)

    body = [svg_heading(title, width)]
    body.append(
        f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" '
        f'stroke="{GRID}"/>'
    )
    for v in range(lo, hi + 1):
        body.append(
            f'<line x1="{fmt_num(sx(v))}" y1="{top}" x2="{fmt_num(sx(v))}" y2="{top + size}" '
            f'stroke="{GRID}" stroke-width="0.7"/>'
            f'<line x1="{left}" y1="{fmt_num(sy(v))}" x2="{left + size}" y2="{fmt_num(sy(v))}" '
            f'stroke="{GRID}" stroke-width="0.7"/>'
        )
        body.append(svg_text(sx(v), top + size + 16, v, size=11))
        body.append(svg_text(left - 8, sy(v) + 4, v, anchor="end", size=11))
    body.append(
        f'<line class="diagonal" x1="{fmt_num(sx(lo - 0.3))}" y1="{fmt_num(sy(lo - 0.3))}" '
        f'x2="{fmt_num(sx(hi + 0.3))}" y2="{fmt_num(sy(hi + 0.3))}" stroke="{MUTED}" '
        f'stroke-dasharray="5 4"/>'
    )
    body.append(svg_text(left + size / 2, top + size + 36, x_label, fill=MUTED))
    yx, yy = 20, top + size / 2
    body.append(
        f'<text x="{yx}" y="{fmt_num(yy)}" text-anchor="middle" fill="{MUTED}" '
        f'transform="rotate(-90 {yx} {fmt_num(yy)})">{esc(y_label)}</text>'
    )
    dots = ['<g class="points">']
    # Big circles first, so small ones stay visible (and clickable for the tooltip).
    for x, y, n in sorted(clean, key=lambda p: -p[2]):
        tip = f"{x_label} {fmt_num(x)}, {y_label.lower()} {fmt_num(y)}: {n} item{'s' if n != 1 else ''}"
        dots.append(
            f'<circle cx="{fmt_num(sx(x))}" cy="{fmt_num(sy(y))}" r="{fmt_num(radius(n))}" '
            f'fill="{colour}" fill-opacity="0.55" stroke="{colour}" stroke-width="1.2">'
            f"<title>{esc(tip)}</title></circle>"
        )
    dots.append("</g>")
    body += dots
    ly = top + size + 62
    body.append(
        f'<g class="legend" transform="translate({left},{ly})">'
        f'<circle cx="6" cy="0" r="{fmt_num(radius(1))}" fill="{colour}" fill-opacity="0.55"/>'
        + svg_text(10 + radius(1), 4, "1 item", anchor="start", size=11)
        + f'<circle cx="86" cy="0" r="{fmt_num(radius(peak))}" fill="{colour}" fill-opacity="0.55"/>'
        + svg_text(90 + radius(peak), 4, f"{peak} items", anchor="start", size=11)
        + f'<line x1="180" y1="0" x2="210" y2="0" stroke="{MUTED}" stroke-dasharray="5 4"/>'
        + svg_text(216, 4, "perfect agreement", anchor="start", size=11)
        + svg_text(
            0,
            28,
            f"{total} items in {len(clean)} distinct points",
            anchor="start",
            size=11,
            fill=MUTED,
        )
        + "</g>"
    )
    desc = f"Scatter plot of {total} items: {y_label} against {x_label}."
    return svg_document(width, height, title, desc, body)


# ---------------------------------------------------------------------------------
# Rank bars
