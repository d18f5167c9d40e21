"""The dashboard's SVG charts: well-formed XML, the expected marks and labels, escaped
names, accessible markup, and a "not enough data" chart instead of a crash."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from analysis import charts
from analysis.charts import Series
from analysis.selectors.agreement.result import AgreementResult

NS = "{http://www.w3.org/2000/svg}"
EVIL = '<script>alert("x")</script> & co'


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # raises on malformed XML
    assert root.tag == f"{NS}svg"
    return root


def assert_accessible(root: ET.Element) -> None:
    assert root.get("role") == "img"
    assert root.get("aria-label")
    assert root.get("viewBox", "").startswith("0 0 ")
    # Size comes from the viewBox only, so the chart scales with its box.
    assert root.get("width") is None and root.get("height") is None
    assert root.find(f"{NS}title").text == root.get("aria-label")
    assert root.find(f"{NS}desc").text


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{NS}text")]


def tooltips(root: ET.Element) -> list[str]:
    return [t.text for t in root.iter(f"{NS}title")][1:]  # the first is the chart's


def is_empty_chart(root: ET.Element) -> bool:
    return any(t.startswith("not enough data") for t in texts(root))


# --- Radar ---------------------------------------------------------------------------------

AXES = [
    "Logical Robustness",
    "Factuality",
    "Comprehension",
    "Readability",
    "Harmlessness",
]


def test_radar_draws_one_closed_shape_and_one_marker_per_value():
    human = Series("Humans", [3.0, 4.0, 3.5, 4.5, 5.0], 0)
    judge = Series("Judge", [3.5, 4.5, 4.0, 4.0, 4.5], 1)
    root = parse(charts.radar_chart(title="alpha", axes=AXES, series=[human, judge]))
    assert_accessible(root)
    shapes = root.findall(f".//{NS}polygon[@class='series']")
    assert len(shapes) == 2
    assert all(len(s.get("points").split()) == 5 for s in shapes)
    marks = root.findall(f".//{NS}g[@class='marks']/*")
    assert len(marks) == 10
    labels = root.findall(f".//{NS}text[@class='axis-label']")
    assert [[s.text for s in t.iter(f"{NS}tspan")] for t in labels] == [
        ["Logical", "Robustness"],  # wrapped onto two lines
        ["Factuality"],
        ["Comprehension"],
        ["Readability"],
        ["Harmlessness"],
    ]
    assert [t.find(f"{NS}title").text for t in labels] == AXES
    assert "Factuality · Judge: 4.5" in tooltips(root)
    legend = root.find(f".//{NS}g[@class='legend']")
    assert [t.text for t in legend.iter(f"{NS}text")] == ["Humans", "Judge"]


def test_radar_humans_solid_judges_dashed():
    series = [Series("Humans", [3, 4, 5], 0)] + [
        Series(f"judge {k}", [3, 4, 5], k) for k in range(1, 4)
    ]
    root = parse(charts.radar_chart(title="m", axes=AXES[:3], series=series))
    shapes = root.findall(f".//{NS}polygon[@class='series']")
    dashes = [s.get("stroke-dasharray") for s in shapes]
    assert dashes[0] is None
    assert all(dashes[1:]) and len(set(dashes[1:])) == 3
    # colour is not the only difference: marker shapes differ too
    marks = root.findall(f".//{NS}g[@class='marks']")
    assert {m[0].tag for m in marks} >= {f"{NS}circle", f"{NS}rect", f"{NS}polygon"}


def test_radar_missing_value_leaves_a_gap():
    judge = Series("Judge", [3.0, None, 4.0, 4.0, 2.0], 1)
    root = parse(charts.radar_chart(title="m", axes=AXES, series=[judge]))
    assert root.find(f".//{NS}polygon[@class='series']") is None
    path = root.find(f".//{NS}path[@class='series']")
    # edges 3-4, 4-5 and 5-1 remain; the two edges touching the missing vertex do not
    assert path.get("d").count("M") == 3
    assert len(root.findall(f".//{NS}g[@class='marks']/*")) == 4
    assert not any(t.startswith("Factuality ·") for t in tooltips(root))


@pytest.mark.parametrize(
    "axes, series",
    [
        (AXES, []),
        (AXES, [Series("Humans", [None] * 5, 0)]),
        (AXES[:2], [Series("Humans", [3, 4], 0)]),
        ([], [Series("Humans", [], 0)]),
    ],
)
def test_radar_without_enough_data_says_so(axes, series):
    root = parse(charts.radar_chart(title="empty", axes=axes, series=series))
    assert_accessible(root)
    assert is_empty_chart(root)


# --- Heatmap -------------------------------------------------------------------------------

CONFUSION = [
    [3, 1, 0, 0, 0],
    [2, 5, 3, 0, 0],
    [0, 4, 12, 6, 1],
    [0, 1, 7, 20, 5],
    [0, 0, 1, 6, 14],
]


def test_heatmap_has_25_cells_with_counts_and_labels():
    root = parse(charts.heatmap_chart(title="Factuality", confusion=CONFUSION))
    assert_accessible(root)
    cells = root.findall(f".//{NS}g[@class='cells']/{NS}g")
    assert len(cells) == 25
    counts = [int(c.find(f"{NS}text").text) for c in cells]
    assert counts == [c for row in reversed(CONFUSION) for c in row]  # judge 5 on top
    # each cell's tooltip names its row and column
    first = cells[0].find(f"{NS}title").text
    assert first.startswith("Judge score 5, human median (rounded) 1: 0 items")
    all_texts = texts(root)
    for label in ("1", "2", "3", "4", "5", "Judge score", "Human median (rounded)"):
        assert label in all_texts
    # the diagonal (exact agreement) is outlined
    outlined = [c for c in cells if c.find(f"{NS}rect").get("stroke-width") == "2"]
    assert len(outlined) == 5
    assert "91 items; darker = more" in all_texts


@pytest.mark.parametrize(
    "confusion",
    [
        None,
        [],
        [[0] * 5] * 5,
        [[1, 2], [3, 4]],
        [["a"] * 5] * 5,
        {"x": 1},
        [[-1] * 5] * 5,
    ],
)
def test_heatmap_without_data_says_so(confusion):
    root = parse(charts.heatmap_chart(title="x", confusion=confusion))
    assert is_empty_chart(root)


# --- Scatter -------------------------------------------------------------------------------


def test_scatter_circle_per_point_area_by_count():
    points = [[3.0, 3, 5], [3.5, 4, 2], [4.33, 4, 7], [2.0, 1, 1]]
    root = parse(charts.scatter_chart(title="Factuality", points=points))
    assert_accessible(root)
    circles = root.findall(f".//{NS}g[@class='points']/{NS}circle")
    assert len(circles) == 4
    by_tip = {c.find(f"{NS}title").text: float(c.get("r")) for c in circles}
    assert (
        by_tip["Human mean 4.33, judge score 4: 7 items"]
        > by_tip["Human mean 3, judge score 3: 5 items"]
    )
    assert by_tip["Human mean 2, judge score 1: 1 item"] == min(by_tip.values())
    assert root.find(f".//{NS}line[@class='diagonal']") is not None
    assert "15 items in 4 distinct points" in texts(root)


def test_scatter_skips_malformed_points():
    root = parse(
        charts.scatter_chart(
            title="x", points=[[3, 3, 2], None, ["a", 1, 1], [1, 2], [2, 2, 0]]
        )
    )
    assert len(root.findall(f".//{NS}g[@class='points']/{NS}circle")) == 1


@pytest.mark.parametrize("points", [None, [], [[float("nan"), 3, 1]], "junk"])
def test_scatter_without_data_says_so(points):
    assert is_empty_chart(parse(charts.scatter_chart(title="x", points=points)))


# --- Rank bars -----------------------------------------------------------------------------


def test_ranks_from_means_best_first_ties_share_the_average():
    assert charts.ranks_from_means([3.0, 4.5, None, 3.0, 1.0]) == [
        2.5,
        1.0,
        None,
        2.5,
        4.0,
    ]
    assert charts.ranks_from_means([]) == []


def test_rank_bars_one_bar_per_ranked_model_and_source():
    models = ["gpt-4", "claude", "vicuna"]
    series = [
        Series("Humans", [1, 2, 3], 0),
        Series("Judge", [2, 1, None], 1),
    ]
    root = parse(
        charts.rank_bars_chart(title="Factuality", models=models, series=series)
    )
    assert_accessible(root)
    bars = root.findall(f".//{NS}g[@class='bars']/{NS}rect")
    assert len(bars) == 5
    widths = {b.find(f"{NS}title").text: float(b.get("width")) for b in bars}
    assert (
        widths["gpt-4 · Humans: rank 1 of 3"] > widths["claude · Humans: rank 2 of 3"]
    )
    assert "Judge: no data" in texts(root)
    # the judge's bars are hatched (a pattern), the humans' solid
    fills = {b.get("fill") for b in bars}
    assert any(f.startswith("url(#") for f in fills) and "#222222" in fills
    patterns = root.findall(f".//{NS}pattern")
    assert len(patterns) == 1
    assert all(f[5:-1] == patterns[0].get("id") for f in fills if f.startswith("url("))


def test_rank_bars_need_two_models():
    root = parse(
        charts.rank_bars_chart(title="x", models=["one"], series=[Series("H", [1], 0)])
    )
    assert is_empty_chart(root)
    root = parse(
        charts.rank_bars_chart(
            title="x", models=["a", "b"], series=[Series("H", [None, None], 0)]
        )
    )
    assert is_empty_chart(root)


# --- Escaping ------------------------------------------------------------------------------


def test_names_are_escaped_everywhere():
    svgs = [
        charts.radar_chart(
            title=EVIL, axes=[EVIL, "b", "c"], series=[Series(EVIL, [1, 2, 3], 1)]
        ),
        charts.heatmap_chart(title=EVIL, confusion=CONFUSION, row_label=EVIL),
        charts.scatter_chart(title=EVIL, points=[[1, 1, 1]], x_label=EVIL),
        charts.rank_bars_chart(
            title=EVIL, models=[EVIL, "b"], series=[Series(EVIL, [1, 2], 1)]
        ),
        charts.empty_chart(EVIL, EVIL),
    ]
    for svg in svgs:
        assert "<script" not in svg
        root = parse(svg)
        assert root.get("aria-label") == EVIL
        # the name came back as text, never as an element
        assert root.find(f".//{NS}script") is None and root.find(".//script") is None
        assert any(EVIL in t for t in texts(root) + tooltips(root))


# --- Adapters from agreement_compute()'s result ------------------------------------------


def stat(value, n=10, ci=None):
    return {
        "value": value,
        "n": n,
        "ci": ci,
        "reason": "" if value is not None else "not enough data: fewer than 2 items",
        "n_undefined": 0,
    }


def judge_entry(models, confusion=None, scatter=None):
    return {
        "confusion": confusion if confusion is not None else CONFUSION,
        "scatter": scatter if scatter is not None else [[3.0, 3, 4], [4.5, 5, 2]],
        "models": {
            "models": [
                {"model": m, "n": 10, "human_mean": stat(h), "judge_mean": stat(j)}
                for m, h, j in models
            ],
            "spearman": stat(None),
            "kendall": stat(None),
        },
    }


def hand_made_json():
    """A result's JSON without profiles: 3 skills, 2 runs, 2 models (one evil)."""
    rows = []
    for k, (key, label) in enumerate(
        [
            ("factuality", "Factuality"),
            ("comprehension", "Comprehension"),
            ("readability", "Readability"),
        ]
    ):
        rows.append(
            {
                "key": f"skill:{key}",
                "level": "skill",
                "skill": key,
                "label": label,
                "ability": "Background Knowledge",
                "human": {"alpha_ordinal": stat(0.7)},
                "judges": {
                    "1": judge_entry([("alpha", 3.0 + k / 2, 4.0), (EVIL, 2.0, 2.5)]),
                    # run 2 did not judge readability for the evil model
                    "2": judge_entry(
                        [("alpha", 3.1, 3.0)] + ([(EVIL, 2.1, 4.5)] if k < 2 else [])
                    ),
                },
            }
        )
    rows.append(
        {
            "key": "overall",
            "level": "overall",
            "skill": None,
            "label": "Overall",
            "ability": None,
            "human": {},
            "judges": {"1": judge_entry([("alpha", 3.5, 4.0), (EVIL, 2.0, 2.5)])},
        }
    )
    return {
        "dataset": {"id": 1, "name": "set"},
        "reference": {"kind": "humans", "label": "human raters"},
        "runs": [{"id": 1, "label": "#1 gpt"}, {"id": 2, "label": "#2 claude"}],
        "models": ["alpha", EVIL],
        "rows": rows,
    }


def hand_made_result() -> AgreementResult:
    """The typed result of :func:`hand_made_json` (the charts draw its rows from the
    runs' model means)."""
    return AgreementResult.of(hand_made_json())


def test_radar_from_agreement_overlays_humans_and_every_run():
    result = hand_made_result()
    root = parse(charts.radar_from_agreement(result, EVIL))
    legend = root.find(f".//{NS}g[@class='legend']")
    assert [t.text for t in legend.iter(f"{NS}text")] == [
        "human raters",
        "#1 gpt",
        "#2 claude",
    ]
    assert len(root.findall(f".//{NS}polygon[@class='series']")) == 2  # humans, run 1
    gap = root.find(f".//{NS}path[@class='series']")  # run 2: readability missing
    assert gap.get("d").count("M") == 1
    tips = tooltips(root)
    assert "Factuality · human raters: 2 (n=10)" in tips  # from the first run
    assert "Comprehension · #2 claude: 4.5 (n=10)" in tips


def test_heatmap_and_scatter_from_agreement():
    result = hand_made_result()
    heat = parse(charts.heatmap_from_agreement(result, "skill:factuality", "1"))
    assert "Factuality: #1 gpt vs human raters" == heat.get("aria-label")
    assert len(heat.findall(f".//{NS}g[@class='cells']/{NS}g")) == 25
    scatter = parse(charts.scatter_from_agreement(result, "skill:factuality", "2"))
    assert len(scatter.findall(f".//{NS}g[@class='points']/{NS}circle")) == 2


def test_rank_bars_from_agreement_ranks_under_each_source():
    result = hand_made_result()
    root = parse(charts.rank_bars_from_agreement(result, "skill:factuality"))
    bars = root.findall(f".//{NS}g[@class='bars']/{NS}rect")
    tips = [b.find(f"{NS}title").text for b in bars]
    assert "alpha · human raters: rank 1 of 2 (mean 3)" in tips
    assert "alpha · #2 claude: rank 2 of 2 (mean 3)" in tips
    assert f"{EVIL} · #2 claude: rank 1 of 2 (mean 4.5)" in tips


@pytest.mark.parametrize(
    "make",
    [
        lambda r: charts.radar_from_agreement(r, "alpha"),
        lambda r: charts.heatmap_from_agreement(r, "skill:factuality", "1"),
        lambda r: charts.scatter_from_agreement(r, "skill:factuality", "1"),
        lambda r: charts.rank_bars_from_agreement(r, "skill:factuality"),
        lambda r: charts.heatmap_from_agreement(r, "skill:nothing", "9"),
    ],
)
@pytest.mark.parametrize("result", [{}, {"rows": [], "runs": [], "models": []}])
def test_adapters_on_empty_results_say_not_enough_data(make, result):
    root = parse(make(AgreementResult.of(result)))
    assert_accessible(root)
    assert is_empty_chart(root)


def test_adapters_on_undefined_means_say_not_enough_data():
    json = hand_made_json()
    for row in json["rows"]:
        for judge in row["judges"].values():
            for m in judge["models"]["models"]:
                m["human_mean"] = stat(None, n=1)
                m["judge_mean"] = stat(None, n=1)
            judge["confusion"] = [[0] * 5 for _ in range(5)]
            judge["scatter"] = []
    result = AgreementResult.of(json)
    for svg in (
        charts.radar_from_agreement(result, "alpha"),
        charts.rank_bars_from_agreement(result, "skill:factuality"),
        charts.heatmap_from_agreement(result, "skill:factuality", "1"),
        charts.scatter_from_agreement(result, "skill:factuality", "1"),
    ):
        assert is_empty_chart(parse(svg))


def test_charts_in_one_page_never_share_ids():
    result = hand_made_result()
    page = "".join(
        charts.rank_bars_from_agreement(result, key)
        for key in ("skill:factuality", "skill:comprehension", "overall")
    )
    root = ET.fromstring(f"<div>{page}</div>")
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert ids and len(ids) == len(set(ids))


# --- Layout: the title inside the viewBox, radar labels clear of the scale -------------

# Generous glyph widths (em per character): wide fonts (DejaVu Sans, Verdana) reach
# ~0.74 em in bold and ~0.62 em in regular text.
BOLD_EM, REGULAR_EM = 0.76, 0.64
LONG_TITLE = "Commonsense Understanding: Baseline: ROUGE-L vs reference on demo dataset vs humans"


def view_box(root) -> tuple[float, float]:
    _, _, w, h = (float(v) for v in root.get("viewBox").split())
    return w, h


def title_lines(root) -> list[ET.Element]:
    title = next(t for t in root.iter(f"{NS}text") if t.get("class") == "chart-title")
    return title.findall(f"{NS}tspan")


def assert_title_inside(root, title: str) -> float:
    """Every line of the visible title lies inside the viewBox and, together, they
    are the whole title; returns the last line's baseline."""
    width, height = view_box(root)
    lines = title_lines(root)
    size = 15
    for line in lines:
        x, y = float(line.get("x")), float(line.get("y"))
        assert x >= 0 and y - size >= 0
        assert x + len(line.text) * BOLD_EM * size <= width, line.text
        assert y <= height
    assert " ".join(t.text for t in lines) == title
    return float(lines[-1].get("y"))


def test_heatmap_title_is_wrapped_inside_the_view_box_above_the_matrix():
    root = parse(charts.heatmap_chart(title=LONG_TITLE, confusion=CONFUSION))
    last = assert_title_inside(root, LONG_TITLE)
    assert len(title_lines(root)) > 1
    # the matrix and its column heading start below the title
    cells = [float(r.get("y")) for r in root.iter(f"{NS}rect") if r.get("fill") and r.get("width") == "58"]  # fmt: skip
    col_label = next(t for t in texts(root) if t.startswith("Human median"))
    col_y = next(
        float(t.get("y")) for t in root.iter(f"{NS}text") if t.text == col_label
    )
    assert last + 8 <= col_y - 12 and last < min(cells)


@pytest.mark.parametrize(
    "make",
    [
        lambda t: charts.radar_chart(title=t, axes=AXES, series=[Series("H", [3] * 5)]),
        lambda t: charts.scatter_chart(title=t, points=[[1, 1, 1]]),
        lambda t: charts.rank_bars_chart(
            title=t, models=["a", "b"], series=[Series("H", [1, 2])]
        ),
        lambda t: charts.empty_chart(t, "nothing"),
    ],
)
def test_every_chart_keeps_a_long_title_inside_its_view_box(make):
    assert_title_inside(parse(make(LONG_TITLE)), LONG_TITLE)


FLASK_SKILLS = [
    "Logical Robustness", "Logical Correctness", "Logical Efficiency", "Factuality",
    "Commonsense Understanding", "Comprehension", "Insightfulness", "Completeness",
    "Metacognition", "Conciseness", "Readability", "Harmlessness",
]  # fmt: skip


def _box(text: ET.Element, size: float) -> tuple[float, float, float, float]:
    """Estimated box of a text (its tspans, or itself) with generous glyph widths."""
    spans = text.findall(f"{NS}tspan") or [text]
    anchor = text.get("text-anchor", "start")
    boxes = []
    for span in spans:
        label = "".join(span.itertext()) if span is text else span.text
        w = len(label) * REGULAR_EM * size
        x, y = float(span.get("x")), float(span.get("y"))
        x0 = {"start": x, "middle": x - w / 2, "end": x - w}[anchor]
        boxes.append((x0, y - 0.8 * size, x0 + w, y + 0.25 * size))
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


def _nearest(box, cx, cy) -> float:
    x = min(max(cx, box[0]), box[2])
    y = min(max(cy, box[1]), box[3])
    return ((x - cx) ** 2 + (y - cy) ** 2) ** 0.5


def _farthest(box, cx, cy) -> float:
    return max(
        ((x - cx) ** 2 + (y - cy) ** 2) ** 0.5
        for x in (box[0], box[2])
        for y in (box[1], box[3])
    )


@pytest.mark.parametrize(
    "axes", [FLASK_SKILLS, AXES, FLASK_SKILLS[:3], FLASK_SKILLS[:4]]
)
def test_radar_labels_lie_beyond_the_outer_ring_and_the_scale_inside_it(axes):
    root = parse(
        charts.radar_chart(
            title="model: mean score per skill",
            axes=axes,
            series=[Series("Humans", [4] * len(axes))],
        )
    )
    width, height = view_box(root)
    grid = next(g for g in root.iter(f"{NS}g") if g.get("class") == "grid")
    axis = grid.find(f"{NS}line")  # centre to the outer ring's vertex
    cx, cy = float(axis.get("x1")), float(axis.get("y1"))
    radius = (
        (float(axis.get("x2")) - cx) ** 2 + (float(axis.get("y2")) - cy) ** 2
    ) ** 0.5
    labels = [t for t in root.iter(f"{NS}text") if t.get("class") == "axis-label"]
    scale = [t for t in grid.findall(f"{NS}text") if (t.text or "").isdigit()]
    assert len(labels) == len(axes) and [t.text for t in scale] == list("12345")
    for label in labels:
        box = _box(label, 13)
        # beyond the outer ring, with room to spare, and inside the viewBox
        assert _nearest(box, cx, cy) > radius + 6, "".join(label.itertext())
        assert box[0] >= 0 and box[2] <= width and box[1] >= 0 and box[3] <= height
    for number in scale:
        assert _farthest(_box(number, 10), cx, cy) <= radius
    # the radar sits below its title
    assert float(title_lines(root)[-1].get("y")) + 6 < min(
        _box(t, 13)[1] for t in labels
    )


def test_a_long_legend_label_is_shortened_to_fit_and_keeps_its_text_in_a_title():
    long = "Baseline: ROUGE-L vs reference · demo · 2026-12-04 18:22 #2 of a long name"
    svg = charts.rank_bars_chart(
        title="Factuality",
        models=["a", "b"],
        series=[Series("Humans", [1, 2], 0), Series(long, [2, 1], 1)],
    )
    root = ET.fromstring(svg)
    width = float(root.get("viewBox").split()[2])
    ns = "{http://www.w3.org/2000/svg}"
    legend = next(g for g in root.iter(f"{ns}g") if g.get("class") == "legend")
    x0 = float(legend.get("transform").split("(")[1].split(",")[0])
    texts = list(legend.iter(f"{ns}text"))
    shown = [
        "".join(t.itertext()).replace(t.findtext(f"{ns}title") or "", "") for t in texts
    ]
    assert "Humans" in shown
    cut = next(s for s in shown if s.startswith("Baseline"))
    assert cut.endswith("…") and len(cut) < len(long)
    # Within the chart at a generous 7 px per character.
    assert x0 + 38 + 7 * len(cut) <= width
    assert any(t.findtext(f"{ns}title") == long for t in texts)
