"""The pairwise leaderboard's charts: the win-rate heat map, and the adapters from
``analysis.selectors.leaderboard.pairwise_leaderboard``'s result to the shared
heat map and interval charts. Contract (escaping, accessibility, palette): the
package docstring."""

from __future__ import annotations

import math

from analysis.charts.heatmap import blend, matrix_frame, order_heatmap_chart
from analysis.charts.intervals import Interval, interval_bars_chart
from analysis.charts.svg import (
    HEADING_X,
    MUTED,
    TEXT,
    Series,
    empty_chart,
    esc,
    fmt_num,
    heading_extra,
    shorten,
    svg_document,
    svg_heading,
    svg_note,
    svg_text,
)


def _share(v) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return min(max(float(v), 0.0), 1.0)


def win_rate_chart(*, title: str, labels: list[str], rates, votes) -> str:
    """M x M win rates (0..1, None = never compared): row i, column j is the share of
    their votes row i's model won (ties as half); `votes` the number of votes each
    cell is over. Darker = the row wins more; the diagonal is blank."""
    labels = [str(x) for x in labels]
    m = len(labels)
    if m < 2:
        return empty_chart(title, f"a win-rate matrix needs 2 models (got {m})")
    try:
        rows = [[_share(v) for v in row] for row in rates]
        counts = [[int(v or 0) for v in row] for row in votes]
    except (TypeError, ValueError):
        rows, counts = [], []
    if len(rows) != m or any(len(r) != m for r in rows) or len(counts) != m:
        return empty_chart(title, f"no {m} x {m} matrix of win rates")
    if all(v is None for r in rows for v in r):
        return empty_chart(title, "no two models met")
    cell = 44 if m <= 8 else max(26, 360 // m)
    size = 12 if cell >= 40 else 9
    longest = min(22, max(len(x) for x in labels))
    left, width = matrix_frame(labels, cell)
    top = 58 + heading_extra(title, width) + longest * 5
    note_svg, note_extra = svg_note(
        HEADING_X,
        top + m * cell + 24,
        "row's win rate against the column (ties as half); darker = more wins",
        width - HEADING_X,
    )
    height = top + m * cell + 70 + note_extra
    body = [svg_heading(title, width), '<g class="cells">']
    for j, name in enumerate(labels):
        x, y = left + (j + 0.5) * cell, top - 8
        body.append(
            f'<text x="{fmt_num(x)}" y="{fmt_num(y)}" font-size="11" '
            f'text-anchor="start" transform="rotate(-45 {fmt_num(x)} {fmt_num(y)})">'
            f"<title>{esc(name)}</title>{esc(shorten(name))}</text>"
        )
    for i, name in enumerate(labels):
        y = top + i * cell
        body.append(
            f'<text x="{left - 8}" y="{fmt_num(y + cell / 2 + 4)}" text-anchor="end" '
            f'font-size="11"><title>{esc(name)}</title>{esc(shorten(name))}</text>'
        )
        for j, v in enumerate(rows[i]):
            x = left + j * cell
            if i == j or v is None:
                tip = name if i == j else f"{name} and {labels[j]} never met"
                body.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                    f'fill="#ffffff" stroke="{MUTED}" stroke-width="0.5">'
                    f"<title>{esc(tip)}</title></rect>"
                )
                continue
            n = counts[i][j]
            tip = (
                f"{name} against {labels[j]}: won {fmt_num(100 * v, 1)}% of "
                f"{n} vote{'s' if n != 1 else ''} (ties as half)"
            )
            ink = "#ffffff" if v > 0.5 else TEXT
            body.append(
                f'<g class="cell"><title>{esc(tip)}</title>'
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="{blend(v)}" stroke="#ffffff"/>'
                + svg_text(
                    x + cell / 2, y + cell / 2 + 4, f"{v:.2f}", size=size, fill=ink
                )
                + "</g>"
            )
    body.append("</g>")
    body.append(note_svg)
    desc = f"Win rates of each of {m} models against each other one."
    return svg_document(width, height, title, desc, body)


def win_rate_from_leaderboard(result: dict) -> str:
    return win_rate_chart(
        title="Win rate, row against column",
        labels=result.get("order") or [],
        rates=result.get("win_rate") or [],
        votes=result.get("votes_between") or [],
    )


def order_from_leaderboard(result: dict) -> str:
    return order_heatmap_chart(
        title="Probability that the row's model is rated above the column's",
        labels=result.get("order") or [],
        matrix=result.get("p_above") or [],
        note="share of bootstrap resamples; darker = more likely",
    )


def ratings_from_leaderboard(result: dict) -> str:
    """Each model's rating with its 95% interval (raw, and length-controlled when
    the result has it), on an axis covering every interval."""
    models = result.get("models") or []
    raw = [Interval.from_result(m.get("rating")) for m in models]
    series = [Series("Bradley-Terry rating", raw, 0)]
    if result.get("length"):
        lc = [
            Interval.from_result((m.get("length_controlled") or {}).get("rating"))
            for m in models
        ]
        series.append(Series("length-controlled", lc, 1))
    ends = [
        x
        for s in series
        for v in s.values
        for x in (v.value, v.low, v.high)
        if x is not None
    ]
    if not ends:
        return empty_chart("Ratings", "no rating is defined")
    low = math.floor(min(ends) / 50) * 50 - 50
    high = math.ceil(max(ends) / 50) * 50 + 50
    return interval_bars_chart(
        title="Ratings with 95% bootstrap intervals",
        groups=[str(m.get("name", "")) for m in models],
        series=series,
        scale=(low, high),
        kind="rating",
    )
