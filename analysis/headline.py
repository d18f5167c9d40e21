"""The agreement dashboard at a glance: a headline per judge and the compact table.

Pure functions of `agreement_compute()`'s result (no database access), like
`analysis.display`. The headline of a judge reads the "overall" row:

    QWK 0.61 [0.57, 0.65] (n=324) vs human ceiling α 0.72 [0.68, 0.75] (n=410);
    below ceiling on 3 of 12 skills

The statistic is the registry's headline (:func:`analysis.statistics.headline`):
QWK, the judge's quadratic-weighted kappa with the rounded human median on the items
both scored; the ceiling is the raters' ordinal Krippendorff's alpha on their own item
set (`rows.CEILING_ITEMS`); "below ceiling" counts the criteria whose flag is set (the
judge, as one more rater, lowers alpha) among the criteria the judge shares items on,
and the categorical criteria (the dashboard's classification section) where the
judge's Cohen's kappa with the human majority is below the raters' leave-one-out
kappa. The word is FLASK's "skills" when every criterion is one of FLASK's skills,
else the rubric's "criteria".
The compact table shows one number per judge and skill (QWK) with the interval, n and
flag in the cell's title; the full table (`analysis.display.table_context`) has the rest.
"""

from __future__ import annotations

from analysis import compare, statistics
from analysis.selectors.agreement.result import AgreementResult, Stat


def _num(stat: Stat | None) -> str:
    """`0.61 [0.57, 0.65]`, or `not enough data` (with the reason in the title)."""
    if stat is None or stat.value is None:
        return "not enough data"
    text = f"{stat.value:.2f}"
    if stat.ci:
        lo, hi = stat.ci
        text += f" [{lo:.2f}, {hi:.2f}]"
    return text


def _ceiling_name(result: AgreementResult) -> str:
    kind = result.reference.kind
    return "human ceiling" if kind == "humans" else "reference ceiling"


def _categorical_counts(categorical: dict | None, rid: str) -> tuple[int, int]:
    """(criteria the run labelled, those below the ceiling) of the categorical
    section: below when the judge's kappa with the human majority is under the raters'
    leave-one-out kappa (both defined)."""
    shared = below = 0
    for crit in (categorical or {}).get("criteria") or []:
        judge = (crit.get("judges") or {}).get(rid)
        if not judge or not judge.get("n_items"):
            continue
        shared += 1
        kappa = (judge.get("kappa") or {}).get("value")
        ceiling = ((crit["humans"].get("ceiling") or {}).get("kappa") or {}).get(
            "value"
        )
        if kappa is not None and ceiling is not None and kappa < ceiling:
            below += 1
    return shared, below


def headlines(result: AgreementResult, categorical: dict | None = None) -> list[dict]:
    """One headline per compared run, in the result's order; `categorical`: the
    dashboard's classification section (`classification_for_agreement`), whose
    criteria are counted too.

    Each: run_id, label, text (the whole sentence), and its parts: stat (the QWK
    :class:`Stat`), ceiling (the overall row's alpha), below, skills (counts of
    criteria, categorical ones included), word ("skill" or "criterion"), n (items
    both scored overall).
    """
    overall = result.row("overall")
    ceiling = overall.human.stat("alpha_ordinal") if overall else None
    skills = [r for r in result.rows if r.level == "skill"]
    flask = not (categorical or {}).get("criteria") and all(r.ability for r in skills)
    word, words = ("skill", "skills") if flask else ("criterion", "criteria")
    headline = statistics.headline()
    out = []
    for rid, label in result.run_labels:
        judge = overall.judge(rid) if overall else None
        stat = judge.stat(headline.key) if judge else None
        n = judge.scored_by_both if judge else 0
        shared = [j for r in skills if (j := r.judge(rid)) and j.scored_by_both]
        below = sum(1 for j in shared if j.flag.below_ceiling)
        significant = sum(1 for j in shared if j.flag.significant)
        labelled, labelled_below = _categorical_counts(categorical, rid)
        counted = len(shared) + labelled
        below += labelled_below
        ceiling_n = ceiling.n if ceiling else 0
        text = (
            f"{headline.short} {_num(stat)} (n={n}) vs {_ceiling_name(result)} "
            f"α {_num(ceiling)} (n={ceiling_n}); "
            f"below ceiling on {below} of {counted} {word if counted == 1 else words}"
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
                "skills": counted,
                "word": word,
                "n": n,
            }
        )
    return out


def _title(what: str, stat: Stat | None, extra: str = "") -> str:
    """A cell's hover text: the figure, its interval and n, the reason if undefined."""
    if stat is None:
        return f"{what}: no data"
    text = f"{what} {_num(stat)}, n={stat.n}"
    if stat.value is None and stat.reason:
        text += f" ({stat.reason})"
    return text + (f"; {extra}" if extra else "")


def compact_table(result: AgreementResult) -> dict:
    """The compact table: per row (a :class:`Row`) the ceiling's α and each run's
    headline statistic, one number per cell (None when undefined), the interval, n
    and flag in `title`; `style` colours a cell on the comparison scale
    (:func:`analysis.compare.colour`, 0 to 1) and `n` is its count."""
    headline = statistics.headline()
    runs = result.run_labels
    rows = []
    for row in result.rows:
        alpha = row.human.stat("alpha_ordinal")
        cells = []
        for rid, label in runs:
            judge = row.judge(rid)
            stat = judge.stat(headline.key) if judge else None
            flag = judge.flag if judge else None
            extra = (
                f"{judge.scored_by_both if judge else 0} items scored by both; "
                f"{flag.reason if flag else ''}"
            )
            c = compare.colour(stat.value if stat else None)
            cells.append(
                {
                    "run_id": rid,
                    "value": stat.value if stat else None,
                    "n": stat.n if stat else 0,
                    "style": c.style if c else "",
                    "mark": flag.mark if flag else "",
                    "title": _title(f"{label}: {headline.short}", stat, extra),
                }
            )
        ceiling_colour = compare.colour(alpha.value if alpha else None)
        rows.append(
            {
                "row": row,
                "ceiling": alpha.value if alpha else None,
                "ceiling_n": alpha.n if alpha else 0,
                "ceiling_style": ceiling_colour.style if ceiling_colour else "",
                "ceiling_title": _title(
                    "Raters' α (ordinal)",
                    alpha,
                    f"{row.human.n_items_multi_rated} items with 2+ scores",
                ),
                "cells": cells,
            }
        )
    return {
        "rows": rows,
        "runs": runs,
        "stat_name": headline.short,
        "span": 1 + len(runs),
        "legend": compare.legend(),
    }
