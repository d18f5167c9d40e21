"""Grouped bars of model ranks under the reference and under each judge."""

from __future__ import annotations

import numpy as np

from analysis.charts.svg import (
    MUTED,
    Series,
    bar_rect,
    chart_id,
    empty_chart,
    esc,
    fmt_num,
    hatch_defs,
    heading_extra,
    shorten,
    svg_document,
    svg_heading,
    svg_legend,
    svg_text,
)
from analysis.stats.ranks import ranks_high_first


def ranks_from_means(means: list) -> list:
    """Rank 1 = highest mean; ties share their average rank; None stays unranked
    (the one rank rule: :func:`analysis.stats.ranks.ranks_high_first`)."""
    ranks = ranks_high_first([np.nan if v is None else v for v in means])
    return [None if v is None else float(r) for v, r in zip(means, ranks, strict=True)]


def rank_bars_chart(*, title: str, models: list[str], series: list[Series]) -> str:
    """Grouped horizontal bars, one group per model, one bar per series: the model's
    rank under that series (rank 1 = best = longest bar)."""
    n_models = len(models)
    if n_models < 2:
        return empty_chart(title, f"ranks need at least 2 models (got {n_models})")
    if not any(v is not None for s in series for v in s.values):
        return empty_chart(title, "no model has a mean score")
    uid = chart_id("ranks", title, *models)
    bar_h, gap, left, top, plot_w = 14, 14, 150, 48, 330
    group_h = bar_h * len(series) + gap
    width = left + plot_w + 70
    top += heading_extra(title, width)
    height = top + n_models * group_h + 40 + 18 * len(series)
    body = [hatch_defs(uid, series), svg_heading(title, width)]
    body.append(
        svg_text(
            left,
            top - 8,
            f"longer bar = better rank (1 = best of {n_models})",
            anchor="start",
            size=11,
            fill=MUTED,
        )
    )
    bars = ['<g class="bars">']
    for m, model in enumerate(models):
        y0 = top + m * group_h
        body.append(
            f'<text x="{left - 10}" y="{fmt_num(y0 + group_h / 2)}" text-anchor="end">'
            f"<title>{esc(model)}</title>{esc(shorten(model))}</text>"
        )
        for k, s in enumerate(series):
            rank = s.values[m] if m < len(s.values) else None
            y = y0 + k * bar_h
            note = s.notes[m] if m < len(s.notes) and s.notes[m] else ""
            if rank is None:
                bars.append(
                    svg_text(
                        left + 4,
                        y + bar_h - 3,
                        f"{s.label}: no data",
                        anchor="start",
                        size=10,
                        fill=MUTED,
                    )
                )
                continue
            w = plot_w * (n_models - rank + 1) / n_models
            tip = f"{model} · {s.label}: rank {fmt_num(rank, 1)} of {n_models}"
            tip += f" ({note})" if note else ""
            bars.append(bar_rect(left, y + 1, w, bar_h - 2, s, uid, tip))
            bars.append(
                svg_text(
                    left + w + 6,
                    y + bar_h - 3,
                    f"#{fmt_num(rank, 1)}",
                    anchor="start",
                    size=11,
                )
            )
    bars.append("</g>")
    body += bars
    body.append(
        svg_legend(
            left,
            top + n_models * group_h + 20,
            series,
            bars=True,
            uid=uid,
            width=width - left,
        )
    )
    desc = f"Ranks of {n_models} models under " + ", ".join(s.label for s in series)
    return svg_document(width, height, title, desc, body)
