"""Heatmaps: a V x V confusion matrix (judge score by rounded human median), on the
criterion's scale (FLASK's 1..5 by default), and an M x M matrix of the
probabilities that one model ranks above another."""

from __future__ import annotations

from analysis.charts.svg import (
    HEADING_X,
    MUTED,
    TEXT,
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


def blend(t: float) -> str:
    """Sequential light-to-dark blue (readable in every common colour-vision type)."""
    lo, hi = (0xF3, 0xF7, 0xFC), (0x08, 0x30, 0x6B)
    rgb = (round(a + (b - a) * t) for a, b in zip(lo, hi, strict=True))
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _matrix(confusion, v: int = 5) -> list[list[int]] | None:
    try:
        rows = [[int(c) for c in row] for row in confusion]
    except (TypeError, ValueError):
        return None
    if (
        len(rows) != v
        or any(len(r) != v for r in rows)
        or any(c < 0 for r in rows for c in r)
    ):
        return None
    return rows


def heatmap_chart(
    *,
    title: str,
    confusion,
    row_label: str = "Judge score",
    col_label: str = "Human median (rounded)",
    labels: list[int] | None = None,
) -> str:
    """V x V counts on the scale `labels` (its values in order, default 1..5): rows
    the judge's score (highest at the top), columns the rounded human median; the
    diagonal (exact agreement) is outlined. Cells shrink for scales over 5 values
    so the chart keeps about the same width."""
    labels = list(labels) if labels else [1, 2, 3, 4, 5]
    v = len(labels)
    matrix = _matrix(confusion, v)
    if matrix is None:
        return empty_chart(title, f"no {v} x {v} confusion matrix")
    total = sum(map(sum, matrix))
    if total == 0:
        return empty_chart(title, "no item scored by both sides (n=0)")
    peak = max(max(r) for r in matrix)
    cell, left, top = (58 if v <= 5 else max(30, 290 // v)), 96, 58
    count_size = 14 if cell >= 40 else 11
    width = left + v * cell + 70
    top += heading_extra(title, width)
    height = top + v * cell + 110
    body = [svg_heading(title, width)]
    body.append(svg_text(left + v * cell / 2, top - 10, col_label, size=12, fill=MUTED))
    for j in range(v):
        body.append(
            svg_text(
                left + (j + 0.5) * cell, top + v * cell + 18, labels[j], weight="600"
            )
        )
    body.append(svg_text(left + v * cell + 30, top - 10, "total", size=11, fill=MUTED))
    ylab_x, ylab_y = 24, top + v * cell / 2
    body.append(
        f'<text x="{ylab_x}" y="{fmt_num(ylab_y)}" text-anchor="middle" font-size="12" '
        f'fill="{MUTED}" transform="rotate(-90 {ylab_x} {fmt_num(ylab_y)})">{esc(row_label)}</text>'
    )
    cells = ['<g class="cells">']
    for k in range(v):  # k = 0 is the top row = the highest judge score
        pos = v - 1 - k
        score = labels[pos]
        row = matrix[pos]
        y = top + k * cell
        body.append(
            svg_text(left - 14, y + cell / 2 + 4, score, anchor="end", weight="600")
        )
        for j, count in enumerate(row):
            x = left + j * cell
            t = count / peak if peak else 0.0
            share = 100 * count / total
            tip = (
                f"{row_label} {score}, {col_label.lower()} {labels[j]}: {count} "
                f"item{'s' if count != 1 else ''} ({fmt_num(share, 1)}%)"
            )
            diag = pos == j
            stroke = 'stroke="#000000" stroke-width="2"' if diag else 'stroke="#ffffff"'
            ink = "#ffffff" if t > 0.5 else TEXT
            cells.append(
                f'<g class="cell"><title>{esc(tip)}</title>'
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="{blend(t)}" {stroke}/>'
                + svg_text(
                    x + cell / 2, y + cell / 2 + 5, count, size=count_size, fill=ink
                )
                + "</g>"
            )
        body.append(
            svg_text(
                left + v * cell + 30, y + cell / 2 + 4, sum(row), size=11, fill=MUTED
            )
        )
    cells.append("</g>")
    body += cells
    legend_y = top + v * cell + 40
    legend = [f'<g class="legend" transform="translate({left},{legend_y})">']
    for i in range(6):
        legend.append(
            f'<rect x="{i * 30}" y="0" width="30" height="12" fill="{blend(i / 5)}"/>'
        )
    legend.append(svg_text(0, 28, 0, anchor="start", size=11, fill=MUTED))
    legend.append(svg_text(180, 28, peak, anchor="end", size=11, fill=MUTED))
    legend.append(
        '<rect x="200" y="-1" width="14" height="14" fill="none" stroke="#000000" '
        'stroke-width="2"/>'
    )
    legend.append(svg_text(220, 10, "exact agreement", anchor="start", size=11))
    legend.append(
        svg_text(
            0, 48, f"{total} items; darker = more", anchor="start", size=11, fill=MUTED
        )
    )
    legend.append("</g>")
    body += legend
    desc = f"Confusion matrix of {total} items: {row_label} by {col_label}."
    return svg_document(width, height, title, desc, body)


# A matrix chart is at least this wide, so that its title (up to three lines) and
# its note fit beside a few models; the matrix is centred in it.
MATRIX_MIN_WIDTH = 440


def matrix_frame(labels: list[str], cell: float) -> tuple[float, float]:
    """(x of the matrix's left edge, the chart's width) for an M x M matrix of
    `cell`-wide cells with the row labels on its left."""
    left = 24 + min(22, max(len(x) for x in labels)) * 7
    natural = left + len(labels) * cell + 30
    width = max(natural, MATRIX_MIN_WIDTH)
    return left + (width - natural) / 2, width


# ---------------------------------------------------------------------------------
# Scatter


def order_heatmap_chart(
    *, title: str, labels: list[str], matrix, note: str = ""
) -> str:
    """An M x M matrix of probabilities (0..1, None = undefined): row i, column j is
    P(row i's model ranks above column j's), e.g. the share of bootstrap resamples
    in which its mean is higher; darker = more likely. The diagonal is left blank."""
    labels = [str(x) for x in labels]
    m = len(labels)
    if m < 2:
        return empty_chart(title, f"an order needs at least 2 models (got {m})")
    try:
        rows = [
            [None if p is None else min(max(float(p), 0.0), 1.0) for p in row]
            for row in matrix
        ]
    except (TypeError, ValueError):
        rows = []
    if len(rows) != m or any(len(r) != m for r in rows):
        return empty_chart(title, f"no {m} x {m} matrix of probabilities")
    if all(p is None for r in rows for p in r):
        return empty_chart(title, "no pairwise order is defined")
    cell = 44 if m <= 8 else max(26, 360 // m)
    size = 12 if cell >= 40 else 9
    left, width = matrix_frame(labels, cell)
    top = 58 + heading_extra(title, width) + min(22, max(len(x) for x in labels)) * 5
    note_svg, note_extra = svg_note(
        HEADING_X,
        top + m * cell + 24,
        note or "row above column: share of resamples; darker = more likely",
        width - HEADING_X,
    )
    height = top + m * cell + 70 + note_extra
    body = [svg_heading(title, width)]
    cells = ['<g class="cells">']
    for j, name in enumerate(labels):  # column labels, slanted above the columns
        x, y = left + (j + 0.5) * cell, top - 8
        cells.append(
            f'<text x="{fmt_num(x)}" y="{fmt_num(y)}" font-size="11" '
            f'text-anchor="start" transform="rotate(-45 {fmt_num(x)} {fmt_num(y)})">'
            f"<title>{esc(name)}</title>{esc(shorten(name))}</text>"
        )
    for i, name in enumerate(labels):
        y = top + i * cell
        cells.append(
            f'<text x="{left - 8}" y="{fmt_num(y + cell / 2 + 4)}" text-anchor="end" '
            f'font-size="11"><title>{esc(name)}</title>{esc(shorten(name))}</text>'
        )
        for j, p in enumerate(rows[i]):
            x = left + j * cell
            if i == j or p is None:
                why = "" if i == j else " (undefined)"
                cells.append(
                    f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                    f'fill="#ffffff" stroke="{MUTED}" stroke-width="0.5">'
                    f"<title>{esc(name)}{why}</title></rect>"
                )
                continue
            tip = f"P({name} above {labels[j]}) = {fmt_num(p, 3)}"
            ink = "#ffffff" if p > 0.5 else TEXT
            cells.append(
                f'<g class="cell"><title>{esc(tip)}</title>'
                f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" '
                f'fill="{blend(p)}" stroke="#ffffff"/>'
                + svg_text(
                    x + cell / 2, y + cell / 2 + 4, f"{p:.2f}", size=size, fill=ink
                )
                + "</g>"
            )
    cells.append("</g>")
    body += cells
    body.append(note_svg)
    desc = f"Probabilities that each of {m} models ranks above each other one."
    if note:
        desc += f" {note}"
    return svg_document(width, height, title, desc, body)
