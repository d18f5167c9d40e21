"""The meta-evaluation charts: accuracy per category with 95% intervals and bias
probes against their baseline. Well-formed XML, one mark per defined figure, the
labels and numbers a reader needs, escaped names, "not enough data" otherwise."""

from __future__ import annotations

import numpy as np

from analysis import charts
from analysis import stats as me
from analysis.charts import Effect, Interval, Series
from analysis.glossary import figure
from analysis.selectors.metaeval import _json
from tests.analysis.test_charts import (
    EVIL,
    NS,
    assert_accessible,
    is_empty_chart,
    parse,
    texts,
    tooltips,
)


def shown(root) -> list[str]:
    """The visible text of each <text> element (its tooltip left out)."""
    out = []
    for t in root.iter(f"{NS}text"):
        parts = [t.text or ""]
        for child in t:
            if child.tag != f"{NS}title":
                parts.append("".join(child.itertext()))
            parts.append(child.tail or "")
        out.append("".join(parts))
    return out


def by_class(root, cls: str, tag: str = ""):
    return [
        e
        for e in root.iter()
        if cls in (e.get("class") or "").split() and (not tag or e.tag == NS + tag)
    ]


def test_interval_bars_one_bar_and_whisker_per_defined_value():
    groups = ["All pairs", "chat", "code"]
    series = [
        Series("Human ceiling", [Interval(0.8, 0.7, 0.9, 30), None, Interval(0.5)], 0),
        Series(
            "Accuracy",
            [Interval(0.62, 0.55, 0.70, 40), Interval(0.25, 0.0, 0.5, 8),
             Interval(None, n=0, reason="no comparisons")],
            1,
        ),
    ]  # fmt: skip
    root = parse(
        charts.interval_bars_chart(title="Run 1", groups=groups, series=series)
    )
    assert_accessible(root)
    group = by_class(root, "bars", "g")[0]
    bars = by_class(group, "bar", "rect")
    assert len(bars) == 4  # the defined values; the legend has its own swatches
    assert len(by_class(root, "ci", "g")) == 3  # the 0.5 without an interval has none
    all_text = shown(root)
    for name in groups:
        assert name in all_text
    assert "62% [55%, 70%], n=40" in all_text
    assert "Accuracy: not enough data (n=0)" in all_text
    assert "no comparisons" in tooltips(root)
    # one 0-100% axis, 300 units long, from the bars' common left edge
    left = float(bars[0].get("x"))
    assert {float(b.get("x")) for b in bars} == {left}
    widths = [float(b.get("width")) for b in bars]
    assert widths == [0.8 * 300, 0.62 * 300, 0.25 * 300, 0.5 * 300]  # group by group
    # the first whisker spans its interval, 70% to 90%, on that axis
    line = by_class(root, "ci", "g")[0].findall(f"{NS}line")[1]
    assert float(line.get("x1")) == left + 0.7 * 300
    assert float(line.get("x2")) == left + 0.9 * 300


def test_effects_chart_places_each_probe_against_its_own_baseline():
    effects = [
        Effect("Position bias", Interval(0.62, 0.55, 0.70, 40), 0.5),
        Effect("Self-preference", Interval(0.0, -0.1, 0.1, 30), 0.0, "signed"),
        Effect("Bandwagon cue", Interval(None, n=0, reason="no base run"), 0.0),
    ]
    root = parse(charts.effects_chart(title="Probes", effects=effects))
    assert_accessible(root)
    baseline = by_class(root, "baseline", "line")[0]
    x0 = float(baseline.get("x1"))
    marks = by_class(root, "mark")
    assert len(marks) == 2 == len(by_class(root, "effect", "g"))
    centres = [float(m.get("x")) + float(m.get("width")) / 2 for m in marks]
    assert centres[0] > x0  # 62% is above its 50% baseline
    assert abs(centres[1] - x0) < 1e-6  # at its baseline: on the line
    all_text = shown(root)
    for label in ("Position bias", "Self-preference", "Bandwagon cue"):
        assert label in all_text
    assert "baseline 50%" in all_text and "baseline 0" in all_text
    assert "62% [55%, 70%], n=40" in all_text
    assert "not enough data (n=0)" in all_text and "no base run" in tooltips(root)


def test_new_charts_escape_names_and_say_when_nothing_is_defined():
    svgs = [
        charts.interval_bars_chart(
            title=EVIL, groups=[EVIL], series=[Series(EVIL, [Interval(0.5)], 1)]
        ),
        charts.effects_chart(title=EVIL, effects=[Effect(EVIL, Interval(0.5), 0.5)]),
    ]
    for svg in svgs:
        assert "<script" not in svg
        root = parse(svg)
        assert root.get("aria-label") == EVIL
        assert any(EVIL in t for t in texts(root) + tooltips(root))
    for svg in (
        charts.interval_bars_chart(title="x", groups=[], series=[]),
        charts.interval_bars_chart(
            title="x", groups=["a"], series=[Series("s", [Interval(None)], 1)]
        ),
        charts.effects_chart(title="x", effects=[]),
        charts.effects_chart(title="x", effects=[Effect("a", Interval(None), 0.5)]),
    ):
        assert is_empty_chart(parse(svg))


def _run():
    """One run as metaeval_compute returns it, from a small synthetic report."""
    rng = np.random.default_rng(5)
    labels = np.array(["1", "2", "tie"], dtype=object)
    n = 30
    data = me.PairwiseData(
        np.arange(n), labels[rng.integers(0, 3, n)], labels[rng.integers(0, 3, n)],
        np.arange(n), labels[rng.integers(0, 2, n)],
        category=np.array(["chat", "code", "math"] * 10, object),
        length_1=rng.integers(1, 99, n), length_2=rng.integers(1, 99, n),
    )  # fmt: skip
    return {
        "id": 7,
        "label": "judge <A>",
        "report": _json(me.metaeval_report(data, n_boot=30)),
    }


def test_metaeval_adapters_chart_every_category_and_probe():
    run = _run()
    root = parse(charts.category_accuracy_from_metaeval(run))
    assert_accessible(root)
    all_text = shown(root)
    for group in ("All pairs", "chat", "code", "math"):
        assert group in all_text
    for key in ("human_loo", "accuracy_mean", "consistency"):
        assert figure(key).label in all_text
    overall = run["report"]["overall"]["accuracy_mean"]
    assert f"{100 * overall['value']:.0f}%" in " ".join(all_text)
    root = parse(charts.probe_effects_from_metaeval(run))
    all_text = shown(root)
    assert figure("order").label in all_text and figure("length").label in all_text
    assert root.get("aria-label") == "judge <A>: bias probes against their baseline"
