"""A line chart of interval width against labels spent (the sampling page).

Keeps the contract of `analysis.charts` (escaping, role="img", viewBox only,
Okabe-Ito colours with a dash and a marker per series, "not enough data" for
empty input)."""

from __future__ import annotations

from math import isfinite

from analysis.charts.svg import (
    GRID,
    MUTED,
    REFERENCE_COLOUR,
    Series,
    empty_chart,
    fmt_num,
    heading_extra,
    svg_document,
    svg_heading,
    svg_legend,
    svg_marker,
    svg_text,
)

W, H = 640, 360
LEFT, RIGHT, TOP, BOTTOM = 64, 200, 56, 52


def width_curve_chart(
    *,
    title: str,
    series: list[tuple[str, list[float], list[float]]],
    point: tuple[float, float, str] | None = None,
    x_label: str = "human labels spent",
    y_label: str = "mean CI width",
) -> str:
    """Lines of (label, xs, ys), one per strategy, and an optional marked `point`
    (x, y, label), e.g. the campaign's real interval so far. Non-finite values are
    skipped; nothing finite gives the "not enough data" chart."""
    pts = [
        (
            label,
            [
                (x, y)
                for x, y in zip(xs, ys, strict=True)
                if isfinite(x) and isfinite(y)
            ],
        )
        for label, xs, ys in series
    ]
    pts = [(label, p) for label, p in pts if p]
    if not pts:
        return empty_chart(title)
    allx = [x for _, p in pts for x, _ in p] + ([point[0]] if point else [])
    ally = [y for _, p in pts for _, y in p] + ([point[1]] if point else [])
    x0, x1 = 0.0, max(allx) or 1.0
    y0, y1 = 0.0, (max(ally) or 1.0) * 1.1
    dy = heading_extra(title, W)
    top, bottom = TOP + dy, H + dy - BOTTOM
    right = W - RIGHT

    def sx(x):
        return LEFT + (x - x0) / (x1 - x0) * (right - LEFT)

    def sy(y):
        return bottom - (y - y0) / (y1 - y0) * (bottom - top)

    body = [svg_heading(title, W)]
    for k in range(5):
        yv = y0 + (y1 - y0) * k / 4
        body.append(
            f'<line x1="{LEFT}" x2="{fmt_num(right)}" y1="{fmt_num(sy(yv))}" '
            f'y2="{fmt_num(sy(yv))}" stroke="{GRID}"/>'
        )
        body.append(svg_text(LEFT - 6, sy(yv) + 4, fmt_num(yv), anchor="end",
                             size=11, fill=MUTED))  # fmt: skip
        xv = x0 + (x1 - x0) * k / 4
        body.append(svg_text(sx(xv), bottom + 16, fmt_num(xv, 0), size=11, fill=MUTED))
    body.append(svg_text((LEFT + right) / 2, bottom + 36, x_label, fill=MUTED))
    body.append(
        svg_text(16, (top + bottom) / 2, y_label, fill=MUTED,
                 extra=f' transform="rotate(-90 16 {fmt_num((top + bottom) / 2)})"')
    )  # fmt: skip
    legend = []
    for i, (label, p) in enumerate(pts, start=1):
        s = Series(label, [y for _, y in p], index=i)
        legend.append(s)
        path = " ".join(f"{fmt_num(sx(x))},{fmt_num(sy(y))}" for x, y in p)
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{s.colour}" '
            f'stroke-width="2.5" stroke-dasharray="{s.dash}"/>'
        )
        for x, y in p:
            tip = f"{label}: width {y:.3f} at {x:.0f} labels"
            body.append(svg_marker(s.marker, sx(x), sy(y), s.colour, tip))
    if point is not None:
        x, y, label = point
        legend.append(Series(label, [y], index=0))
        body.append(svg_marker("circle", sx(x), sy(y), REFERENCE_COLOUR,
                               f"{label}: width {y:.3f} at {x:.0f} labels", 6))  # fmt: skip
    body.append(svg_legend(right + 16, top + 10, legend, width=RIGHT - 20))
    desc = "; ".join(
        f"{label}: " + ", ".join(f"{x:.0f} labels -> {y:.3f}" for x, y in p)
        for label, p in pts
    )
    return svg_document(W, H + dy, title, desc, body)
