"""Adapters: the meta-evaluation charts of one run of `metaeval_compute()`'s result
(`analysis.selectors.metaeval`), labelled from `analysis.glossary`."""

from __future__ import annotations

from analysis.charts.intervals import (
    Effect,
    Interval,
    effects_chart,
    interval_bars_chart,
)
from analysis.charts.svg import Series
from analysis.glossary import figure

# (figure, series index): the human ceiling is the reference (solid, dark).
CATEGORY_SERIES = (("human_loo", 0), ("accuracy_mean", 1), ("consistency", 2))
ALL_PAIRS = "All pairs"


def category_accuracy_from_metaeval(run: dict) -> str:
    """Accuracy (mean of both orders), positional consistency and the human ceiling
    per category, all pairs first, each with its 95% interval."""
    report = (run or {}).get("report") or {}
    categories = report.get("categories") or {}
    groups = [(ALL_PAIRS, report.get("overall") or {})]
    if len(categories) > 1:
        groups += [(name or "(none)", g) for name, g in sorted(categories.items())]
    series = [
        Series(
            figure(key).label,
            [Interval.from_result(g.get(key)) for _, g in groups],
            index,
        )
        for key, index in CATEGORY_SERIES
    ]
    return interval_bars_chart(
        title=f"{run.get('label', 'run')}: accuracy per category",
        groups=[name for name, _ in groups],
        series=series,
    )


def probe_effects_from_metaeval(run: dict) -> str:
    """Each bias probe of the run (order, length, self-preference, the cue probe)
    against its no-bias baseline."""
    report = (run or {}).get("report") or {}
    probes = list((report.get("probes") or {}).values())
    if run and run.get("cue"):
        probes.append(run["cue"])
    effects = []
    for p in probes:
        if not isinstance(p, dict):
            continue
        f = figure(str(p.get("name", "")))
        baseline = p.get("baseline")
        effects.append(
            Effect(
                label=f.label,
                value=Interval.from_result(p.get("value")),
                baseline=float(baseline) if isinstance(baseline, int | float) else 0.0,
                kind=f.kind,
            )
        )
    return effects_chart(
        title=f"{run.get('label', 'run')}: bias probes against their baseline",
        effects=effects,
    )
