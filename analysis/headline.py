"""The agreement dashboard at a glance: a headline per judge and the compact table.

Pure functions of `agreement_compute()`'s result (no database access), like
`analysis.display`. The headline of a judge reads the "overall" row:

    QWK 0.61 [0.57, 0.65] (n=324) vs human ceiling α 0.72 [0.68, 0.75] (n=410);
    below ceiling on 3 of 12 skills

The statistic is the registry's headline (:func:`analysis.statistics.headline`):
QWK, the judge's quadratic-weighted kappa with the rounded human median on the items
both scored; the ceiling is the raters' ordinal Krippendorff's alpha on their own item
set (`rows.CEILING_ITEMS`); "below ceiling" counts the skills whose flag is set (the
judge, as one more rater, lowers alpha) among the skills the judge shares items on.
The compact table shows one number per judge and skill (QWK) with the interval, n and
flag in the cell's title; the full table (`analysis.display.table_context`) has the rest.
"""

from __future__ import annotations

from analysis import charts, statistics


def _num(stat: dict | None) -> str:
    """`0.61 [0.57, 0.65]`, or `not enough data` (with the reason in the title)."""
    if not isinstance(stat, dict) or stat.get("value") is None:
        return "not enough data"
    text = f"{stat['value']:.2f}"
    if stat.get("ci"):
        lo, hi = stat["ci"]
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def _ceiling_name(result: dict) -> str:
    kind = (result.get("reference") or {}).get("kind")
    return "human ceiling" if kind == "humans" else "reference ceiling"


def headlines(result: dict) -> list[dict]:
    """One headline per compared run, in the result's order.

    Each: run_id, label, text (the whole sentence), and its parts: stat (the QWK
    dict), ceiling (the overall row's alpha dict), below, skills (counts), n (items
    both scored overall).
    """
    overall = charts.find_row(result, "overall") or {}
    ceiling = (overall.get("human") or {}).get("alpha_ordinal")
    skills = [r for r in result.get("rows") or [] if r.get("level") == "skill"]
    stat = statistics.headline()
    key, name = stat.key, stat.short
    out = []
    for rid, label in charts.run_labels(result):
        judge = (overall.get("judges") or {}).get(rid) or {}
        stat = judge.get(key)
        n = int((judge.get("counts") or {}).get("scored_by_both") or 0)
        shared = [
            (r.get("judges") or {}).get(rid) or {}
            for r in skills
            if ((r.get("judges") or {}).get(rid) or {})
            .get("counts", {})
            .get("scored_by_both")
        ]
        below = sum(1 for j in shared if (j.get("flag") or {}).get("below_ceiling"))
        significant = sum(1 for j in shared if (j.get("flag") or {}).get("significant"))
        ceiling_n = int((ceiling or {}).get("n") or 0)
        text = (
            f"{name} {_num(stat)} (n={n}) vs {_ceiling_name(result)} "
            f"α {_num(ceiling)} (n={ceiling_n}); "
            f"below ceiling on {below} of {len(shared)} skill"
            f"{'' if len(shared) == 1 else 's'}"
        )
        if significant:
            text += f" ({significant} significantly)"
        out.append(
            {
                "run_id": rid,
                "label": label,
                "text": text,
                "stat": stat,
                "ceiling": ceiling,
                "below": below,
                "significant": significant,
                "skills": len(shared),
                "n": n,
            }
        )
    return out


def _title(what: str, stat: dict | None, extra: str = "") -> str:
    """A cell's hover text: the figure, its interval and n, the reason if undefined."""
    if not isinstance(stat, dict):
        return f"{what}: no data"
    text = f"{what} {_num(stat)}, n={stat.get('n') or 0}"
    if stat.get("value") is None and stat.get("reason"):
        text += f" ({stat['reason']})"
    return text + (f"; {extra}" if extra else "")


def compact_table(result: dict) -> dict:
    """The compact table: per row the ceiling's α and each run's QWK, one number per
    cell (None when undefined), the interval, n and flag in `title`."""
    stat = statistics.headline()
    key, name = stat.key, stat.short
    runs = charts.run_labels(result)
    rows = []
    for row in result.get("rows") or []:
        human = row.get("human") or {}
        alpha = human.get("alpha_ordinal")
        cells = []
        for rid, label in runs:
            judge = (row.get("judges") or {}).get(rid) or {}
            stat = judge.get(key)
            flag = judge.get("flag") or {}
            counts = judge.get("counts") or {}
            mark = (
                "▼▼"
                if flag.get("significant")
                else "▼"
                if flag.get("below_ceiling")
                else ""
            )
            extra = (
                f"{counts.get('scored_by_both', 0)} items scored by both; "
                f"{flag.get('reason', '')}"
            )
            cells.append(
                {
                    "run_id": rid,
                    "value": (stat or {}).get("value"),
                    "mark": mark,
                    "title": _title(f"{label}: {name}", stat, extra),
                }
            )
        rows.append(
            {
                "row": row,
                "ceiling": (alpha or {}).get("value"),
                "ceiling_title": _title(
                    "Raters' α (ordinal)",
                    alpha,
                    f"{human.get('n_items_multi_rated', 0)} items with 2+ scores",
                ),
                "cells": cells,
            }
        )
    return {"rows": rows, "runs": runs, "stat_name": name, "span": 1 + len(runs)}
