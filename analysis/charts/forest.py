"""A forest plot of paired differences from a baseline: per criterion, one row per
run with its difference (run minus baseline) and 95% interval, a line at 0 ("no
difference"), and each row's verdict in words. Contract (escaping, accessibility,
palette): the package docstring."""

from __future__ import annotations

from analysis.charts.intervals import LABEL, Interval, note_text, whisker
from analysis.charts.svg import (
    GRID,
    MUTED,
    TEXT,
    TEXT_CHAR_EM,
    Series,
    empty_chart,
    esc,
    fmt_num,
    heading_extra,
    shorten,
    svg_document,
    svg_heading,
    svg_marker,
    svg_text,
)
from analysis.compare import nice_ticks, verdict

VERDICT_WORDS = {
    "better": "better",
    "worse": "worse",
    "none": "no difference shown",
    None: "no interval",
}


def paired_differences_chart(
    *,
    title: str,
    stat_name: str,
    runs: list[str],
    groups: list[tuple[str, list[Interval]]],
) -> str:
    """`groups`: (criterion, one :class:`Interval` of run minus baseline per entry of
    `runs`); `runs` the compared runs' labels (the baseline is not one of them). A
    row whose interval lies wholly right of 0 is "better", wholly left "worse"
    (:func:`analysis.compare.verdict`); the axis has round ticks and always shows 0.
    """
    if not runs or not groups:
        return empty_chart(title, "no run to compare with the baseline")
    ends = [
        x
        for _, cells in groups
        for c in cells
        for x in (c.value, c.low, c.high)
        if x is not None
    ]
    if not ends:
        return empty_chart(title, "no difference is defined")
    reach = max(abs(x) for x in ends) or 0.1
    ticks = nice_ticks(-reach, reach, 6)
    lo, hi = ticks[0], ticks[-1]
    row_h, group_gap = LABEL + 10, 12
    longest_label = max(len(g) for g, _ in groups)
    left = min(260, 16 + int((max(longest_label, 8) + 2) * TEXT_CHAR_EM * LABEL))
    plot_w, right = 300, 16 + int(30 * TEXT_CHAR_EM * LABEL)
    width = left + plot_w + right
    top = 80 + heading_extra(title, width)
    n_rows = sum(len(cells) for _, cells in groups)
    bottom = top + n_rows * row_h + len(groups) * group_gap
    height = bottom + 50 + (LABEL + 6) * len(runs)

    def sx(d: float) -> float:
        return left + plot_w * (min(max(d, lo), hi) - lo) / (hi - lo)

    body = [svg_heading(title, width), '<g class="axis">']
    for t in ticks:
        body.append(
            f'<line x1="{fmt_num(sx(t))}" y1="{top - 4}" x2="{fmt_num(sx(t))}" '
            f'y2="{fmt_num(bottom)}" stroke="{GRID}"/>'
        )
        body.append(
            svg_text(sx(t), top - 10, f"{t:+g}" if t else "0", size=LABEL, fill=MUTED)
        )
    body.append(
        f'<line class="zero" x1="{fmt_num(sx(0))}" y1="{top - 4}" '
        f'x2="{fmt_num(sx(0))}" y2="{fmt_num(bottom)}" stroke="{TEXT}" '
        f'stroke-width="1.5" stroke-dasharray="5 3"><title>no difference from the '
        f"baseline</title></line>"
    )
    body.append(
        svg_text(
            left + plot_w / 2,
            top - 30,
            f"{stat_name}: run minus baseline",
            size=LABEL,
            fill=MUTED,
        )
    )
    body.append("</g>")
    series = [Series(label, [], k + 1) for k, label in enumerate(runs)]
    rows = ['<g class="differences">']
    y = top
    for criterion, cells in groups:
        y += group_gap
        rows.append(
            f'<text x="{left - 10}" y="{fmt_num(y + row_h / 2 + 5)}" '
            f'text-anchor="end" font-size="{LABEL}" font-weight="600" '
            f'class="criterion"><title>{esc(criterion)}</title>'
            f"{esc(shorten(criterion, max(8, int((left - 16) / (TEXT_CHAR_EM * LABEL)))))}"
            "</text>"
        )
        for k, cell in enumerate(cells[: len(runs)]):
            s = series[k]
            mid = y + row_h / 2
            if cell.value is None:
                rows.append(
                    note_text(
                        left + 4,
                        mid + 5,
                        f"{runs[k]}: {cell.text('signed')}",
                        cell.reason,
                    )
                )
                y += row_h
                continue
            word = VERDICT_WORDS[verdict(cell.low, cell.high)]
            tip = f"{criterion} · {runs[k]}: {cell.text('signed')}; {word}"
            g = [f'<g class="difference" data-verdict="{esc(word)}">']
            g.append(f"<title>{esc(tip)}</title>")
            if cell.has_ci:
                g.append(whisker(sx(cell.low), sx(cell.high), mid, s.colour))
            g.append(svg_marker(s.marker, sx(cell.value), mid, s.colour, "", 5.5))
            g.append("</g>")
            rows.append("".join(g))
            rows.append(
                svg_text(
                    left + plot_w + 10,
                    mid + 5,
                    f"{cell.value:+.2f} · {word}",
                    anchor="start",
                    size=LABEL,
                    extra=' class="value"',
                )
            )
            y += row_h
    rows.append("</g>")
    body += rows
    body.append(
        svg_text(
            left,
            bottom + 24,
            "right of the dashed line: better than the baseline; whiskers: 95% "
            "paired intervals",
            anchor="start",
            size=LABEL,
            fill=MUTED,
        )
    )
    legend = [
        f'<g class="legend" transform="translate({left},{fmt_num(bottom + 48)})">'
    ]
    for k, s in enumerate(series):
        yy = k * (LABEL + 6)
        legend.append(svg_marker(s.marker, 8, yy, s.colour, "", 5.5))
        legend.append(svg_text(22, yy + 5, s.label, anchor="start", size=LABEL))
    legend.append("</g>")
    body += legend
    desc = (
        f"Forest plot of the paired difference in {stat_name} of {len(runs)} run"
        f"{'s' if len(runs) != 1 else ''} from the baseline, per criterion, with 95% "
        "intervals: "
        + "; ".join(
            f"{criterion}: "
            + ", ".join(
                f"{runs[k]} {c.text('signed')}"
                for k, c in enumerate(cells[: len(runs)])
            )
            for criterion, cells in groups
        )
    )
    return svg_document(width, height, title, desc, body)


def forest_from_comparison(comparison: dict) -> str:
    """The forest plot of :func:`analysis.selectors.experiments.experiment_comparison`:
    every run other than the baseline, per criterion (the pooled row included)."""
    versus = comparison["versus"]
    if not versus:
        return empty_chart(
            "Difference from the baseline", "no run to compare with the baseline"
        )
    names = [d["name"] for d in versus[0]["diffs"]]
    return paired_differences_chart(
        title="Difference from the baseline, per criterion",
        stat_name=comparison["stat_name"],
        runs=[v["run"]["label"] for v in versus],
        groups=[
            (name, [Interval.from_result(v["diffs"][i]["result"]) for v in versus])
            for i, name in enumerate(names)
        ],
    )
