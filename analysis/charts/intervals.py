"""Figures with their 95% intervals: grouped bars of shares (accuracy per category)
and the effects of bias probes against their no-bias baseline (a forest plot)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from analysis.charts.svg import (
    GRID,
    JUDGE_COLOURS,
    MUTED,
    NOT_ENOUGH,
    TEXT,
    TEXT_CHAR_EM,
    Series,
    bar_rect,
    chart_id,
    empty_chart,
    esc,
    fmt_num,
    fmt_value,
    hatch_defs,
    heading_extra,
    shorten,
    svg_document,
    svg_heading,
    svg_legend,
    svg_marker,
    svg_text,
)
from analysis.compare import nice_ticks


def _finite(x) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class Interval:
    """A figure: value (None = undefined), its 95% interval, n and why undefined."""

    value: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    reason: str = ""

    @classmethod
    def from_result(cls, result) -> Interval:
        """From a result dict {"value", "ci", "n", "reason"}; anything malformed or
        non-finite is undefined."""
        if not isinstance(result, dict):
            return cls(None)
        ci = result.get("ci") or [None, None]
        low, high = (
            (ci[0], ci[1])
            if isinstance(ci, list | tuple) and len(ci) == 2
            else (None, None)
        )
        n = result.get("n")
        return cls(
            _finite(result.get("value")),
            _finite(low),
            _finite(high),
            int(n) if isinstance(n, int) and not isinstance(n, bool) else 0,
            str(result.get("reason") or ""),
        )

    @property
    def has_ci(self) -> bool:
        return self.low is not None and self.high is not None

    def text(self, kind: str = "share") -> str:
        if self.value is None:
            return f"{NOT_ENOUGH} (n={self.n})"
        ci = (
            f" [{fmt_value(self.low, kind)}, {fmt_value(self.high, kind)}]"
            if self.has_ci
            else ""
        )
        return f"{fmt_value(self.value, kind)}{ci}, n={self.n}"


def interval_cells(series: list[Series], n_groups: int) -> list[list[Interval]]:
    """Each series' values as `n_groups` Intervals (missing or not an Interval:
    undefined)."""
    return [
        [
            v if isinstance(v, Interval) else Interval(None)
            for v in (list(s.values) + [None] * n_groups)[:n_groups]
        ]
        for s in series
    ]


# The interval charts are drawn about 650 units wide and shown in columns of 400 px
# and more, so their text is at least this size: >= 11 px on screen (issue 37).
LABEL = 14


def group_label(x: float, y: float, group: str, limit: int = 22) -> str:
    """A group's name right-aligned at `x` (shortened; the full name as tooltip)."""
    return (
        f'<text x="{x}" y="{fmt_num(y)}" text-anchor="end" font-size="{LABEL}" '
        f'class="group-label"><title>{esc(group)}</title>'
        f"{esc(shorten(group, limit))}</text>"
    )


def note_text(x: float, y: float, text: str, tip: str = "") -> str:
    """A muted "not enough data" text, its reason as the tooltip."""
    title = f"<title>{esc(tip)}</title>" if tip else ""
    return (
        f'<text x="{fmt_num(x)}" y="{fmt_num(y)}" text-anchor="start" '
        f'font-size="{LABEL}" fill="{MUTED}" class="undefined">{title}{esc(text)}</text>'
    )


def whisker(x1: float, x2: float, y: float, colour: str = TEXT) -> str:
    """The interval: a line with a cap at each end (class "ci")."""
    caps = "".join(
        f'<line x1="{fmt_num(x)}" y1="{fmt_num(y - 4)}" x2="{fmt_num(x)}" '
        f'y2="{fmt_num(y + 4)}" stroke="{colour}" stroke-width="1.5"/>'
        for x in (x1, x2)
    )
    # A white halo under the line keeps it visible across a dark bar.
    return (
        f'<g class="ci"><line x1="{fmt_num(x1)}" y1="{fmt_num(y)}" x2="{fmt_num(x2)}" '
        f'y2="{fmt_num(y)}" stroke="#ffffff" stroke-width="3.5"/>'
        f'<line x1="{fmt_num(x1)}" y1="{fmt_num(y)}" x2="{fmt_num(x2)}" '
        f'y2="{fmt_num(y)}" stroke="{colour}" stroke-width="1.5"/>{caps}</g>'
    )


def interval_bars_chart(
    *,
    title: str,
    groups: list[str],
    series: list[Series],
    scale: tuple[float, float] = (0.0, 1.0),
    kind: str = "share",
) -> str:
    """Grouped horizontal bars on a 0-100% axis: one group per entry of `groups`
    (e.g. categories), one bar per series whose `values` are :class:`Interval` (or
    None) per group; each bar has its interval as a whisker and its value, interval
    and n as text. An undefined value says so in place of its bar.

    `scale` (low, high) and `kind` (:func:`svg.fmt_value`) put the bars on another
    axis, e.g. mean scores on (1, 5) shown as "mean": ticks at round numbers
    (:func:`analysis.compare.nice_ticks`, the axis widened to the outer ones), bars
    from the low end."""
    cells = interval_cells(series, len(groups))
    if not groups or not series:
        return empty_chart(title, "no category to show")
    if all(c.value is None for row in cells for c in row):
        return empty_chart(title, "no figure is defined")
    uid = chart_id("intervals", title, *groups)
    bar_h, gap, left, top, plot_w = 20, 16, 180, 66, 300
    # The value column is as wide as its longest text, at least 170.
    longest = max((len(c.text(kind)) for row in cells for c in row), default=0)
    right = max(170, 8 + math.ceil(longest * TEXT_CHAR_EM * LABEL) + 8)
    group_h = bar_h * len(series) + gap
    width = left + plot_w + right
    top += heading_extra(title, width)
    height = top + len(groups) * group_h + 30 + (LABEL + 6) * len(series)
    body = [hatch_defs(uid, series), svg_heading(title, width)]
    axis = ['<g class="axis">']
    lo_end, hi_end = float(scale[0]), float(scale[1])
    share_axis = kind == "share" and (lo_end, hi_end) == (0.0, 1.0)
    ticks = [0, 0.25, 0.5, 0.75, 1] if share_axis else nice_ticks(lo_end, hi_end)
    if not share_axis:
        lo_end, hi_end = ticks[0], ticks[-1]
    extent = (hi_end - lo_end) or 1.0

    def frac(x: float) -> float:
        return min(max((x - lo_end) / extent, 0.0), 1.0)

    for tick in ticks:
        x = left + plot_w * frac(tick)
        axis.append(
            f'<line x1="{fmt_num(x)}" y1="{top - 4}" x2="{fmt_num(x)}" '
            f'y2="{fmt_num(top + len(groups) * group_h - gap / 2)}" stroke="{GRID}"/>'
        )
        label = f"{tick * 100:.0f}%" if share_axis else fmt_num(tick)
        axis.append(
            svg_text(x, top - 9, label, size=LABEL, fill=MUTED, extra=' class="tick"')
        )
    axis.append("</g>")
    body += axis
    bars = ['<g class="bars">']
    for g, group in enumerate(groups):
        y0 = top + g * group_h
        body.append(group_label(left - 10, y0 + bar_h * len(series) / 2 + 4, group, 18))
        for k, s in enumerate(series):
            cell = cells[k][g]
            y = y0 + k * bar_h
            if cell.value is None:
                bars.append(
                    note_text(
                        left + 4,
                        y + bar_h - 4,
                        f"{s.label}: {cell.text(kind)}",
                        cell.reason,
                    )
                )
                continue
            v = frac(cell.value)
            tip = f"{group} · {s.label}: {cell.text(kind)}"
            bars.append(bar_rect(left, y + 2, plot_w * v, bar_h - 4, s, uid, tip))
            if cell.has_ci:
                lo, hi = frac(cell.low), frac(cell.high)
                bars.append(
                    whisker(left + plot_w * lo, left + plot_w * hi, y + bar_h / 2)
                )
            bars.append(
                svg_text(
                    left + plot_w + 8,
                    y + bar_h - 4,
                    cell.text(kind),
                    anchor="start",
                    size=LABEL,
                    extra=' class="value"',
                )
            )
    bars.append("</g>")
    body += bars
    body.append(
        svg_legend(
            left,
            top + len(groups) * group_h + 14,
            series,
            bars=True,
            uid=uid,
            width=width - left,
            size=LABEL,
        )
    )
    desc = (
        f"Bars with 95% intervals for {len(groups)} groups: "
        + "; ".join(s.label for s in series)
        + ". Whiskers are 95% bootstrap intervals."
    )
    return svg_document(width, height, title, desc, body)


@dataclass(frozen=True)
class Effect:
    """One probe: its label, value (an :class:`Interval`), the value a judge without
    the bias would have (`baseline`) and how to show the value (`kind`)."""

    label: str
    value: Interval
    baseline: float
    kind: str = "share"


_EXTENTS = (0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0)


def effects_chart(*, title: str, effects: list[Effect]) -> str:
    """A forest plot of bias probes: per probe, its difference from its own
    baseline (the dashed line at 0 is "no bias") with the 95% interval; the text
    gives the value, the interval, n and the baseline. An undefined probe says why."""
    if not effects:
        return empty_chart(title, "no bias probe")
    defined = [e for e in effects if e.value.value is not None]
    if not defined:
        return empty_chart(title, "no bias probe is defined")
    reach = max(
        abs(x - e.baseline)
        for e in defined
        for x in (e.value.value, e.value.low, e.value.high)
        if x is not None
    )
    extent = next((x for x in _EXTENTS if reach <= x), _EXTENTS[-1])
    row_h, left, top, plot_w, right = 36, 170, 74, 300, 170
    width = left + plot_w + right
    top += heading_extra(title, width)
    height = top + len(effects) * row_h + 44
    colour = JUDGE_COLOURS[1]
    mid = left + plot_w / 2

    def sx(d: float) -> float:
        return mid + plot_w / 2 * max(-1.0, min(1.0, d / extent))

    body = [svg_heading(title, width)]
    bottom = top + len(effects) * row_h
    axis = ['<g class="axis">']
    for t in (-1, -0.5, 0.5, 1):
        x = sx(t * extent)
        axis.append(
            f'<line x1="{fmt_num(x)}" y1="{top - 4}" x2="{fmt_num(x)}" '
            f'y2="{bottom}" stroke="{GRID}"/>'
        )
        axis.append(svg_text(x, top - 9, f"{t * extent:+g}", size=10, fill=MUTED))
    axis.append(
        f'<line class="baseline" x1="{fmt_num(mid)}" y1="{top - 4}" '
        f'x2="{fmt_num(mid)}" y2="{bottom}" stroke="{TEXT}" stroke-width="1.5" '
        f'stroke-dasharray="5 3"><title>no bias: each probe at its own baseline'
        f"</title></line>"
    )
    axis.append(svg_text(mid, top - 9, "baseline", size=10, weight="600"))
    axis.append(
        svg_text(
            mid, top - 26, "difference from the no-bias baseline", size=11, fill=MUTED
        )
    )
    axis.append("</g>")
    body += axis
    rows = ['<g class="effects">']
    for i, e in enumerate(effects):
        y = top + i * row_h + row_h / 2
        base = (
            "0"
            if e.baseline == 0 and e.kind != "share"
            else fmt_value(e.baseline, e.kind)
        )
        rows.append(
            f'<text x="{left - 10}" y="{fmt_num(y)}" text-anchor="end" '
            f'class="effect-label"><title>{esc(e.label)}</title>'
            f"{esc(shorten(e.label, 24))}</text>"
        )
        rows.append(
            svg_text(
                left - 10,
                y + 12,
                f"baseline {base}",
                anchor="end",
                size=10,
                fill=MUTED,
                extra=' class="effect-baseline"',
            )
        )
        v = e.value
        if v.value is None:
            why = v.reason or NOT_ENOUGH
            rows.append(
                note_text(left + plot_w + 8, y + 4, f"{NOT_ENOUGH} (n={v.n})", why)
            )
            continue
        tip = f"{e.label}: {v.text(e.kind)}; baseline {base}"
        g = [f'<g class="effect"><title>{esc(tip)}</title>']
        if v.has_ci:
            g.append(
                whisker(sx(v.low - e.baseline), sx(v.high - e.baseline), y, colour)
            )
        g.append(svg_marker("square", sx(v.value - e.baseline), y, colour, ""))
        g.append("</g>")
        rows.append("".join(g))
        rows.append(
            svg_text(
                left + plot_w + 8,
                y + 4,
                v.text(e.kind),
                anchor="start",
                size=11,
                extra=' class="value"',
            )
        )
    rows.append("</g>")
    body += rows
    body.append(
        svg_text(
            left,
            bottom + 26,
            "right of the line: more than the baseline; whiskers: 95% intervals",
            anchor="start",
            size=11,
            fill=MUTED,
        )
    )
    desc = (
        f"{len(effects)} bias probes, each as its difference from its no-bias "
        "baseline with a 95% interval: "
        + "; ".join(f"{e.label} {e.value.text(e.kind)}" for e in effects)
    )
    return svg_document(width, height, title, desc, body)
