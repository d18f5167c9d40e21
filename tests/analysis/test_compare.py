"""Compare at a glance (issue 37): the colour scale, nice ticks and the summary line
(analysis.compare), the judges grid of the experiment, meta-evaluation and agreement
pages held to their selectors' numbers, the forest plot, and the item-level diff of
two runs (analysis.selectors.run_diff) for each role."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from analysis import compare
from analysis.charts.forest import forest_from_comparison, paired_differences_chart
from analysis.charts.intervals import Interval, interval_bars_chart
from analysis.charts.radar import radar_chart
from analysis.charts.svg import Series
from analysis.headline import compact_table
from analysis.selectors.agreement import agreement_compute
from analysis.selectors.agreement.sources import AgreementError
from analysis.selectors.experiments import experiment_comparison, experiment_figures
from analysis.selectors.run_diff import run_diff_for_user
from flaskapp.errors import DomainError
from flaskapp.models import Workspace
from judging.services.experiments import experiment_create
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_experiments import (
    MODELS,
    SKILLS,
    N,
    human_table,
    judge_table,
)
from tests.factories import UserFactory

# --- the pure rules -------------------------------------------------------------------


def test_every_colour_of_the_scale_has_readable_text():
    for k in range(101):
        c = compare.colour(k / 100)
        assert compare.contrast(c.background, c.text) >= 4.5, (k, c)


def test_the_scale_gets_lighter_as_the_value_grows_and_clamps_at_the_ends():
    lum = [compare.luminance(compare.colour(k / 20).background) for k in range(21)]
    assert lum == sorted(lum) and lum[0] < lum[-1]
    assert compare.colour(-0.4) == compare.colour(0) and compare.colour(
        3
    ) == compare.colour(1)
    assert compare.colour(None) is None and compare.colour(float("nan")) is None
    assert compare.colour(0).background == compare.CIVIDIS[0]
    assert compare.colour(1).background == compare.CIVIDIS[-1]


def test_nice_ticks_are_round_numbers_covering_the_range():
    assert compare.nice_ticks(812.5, 1137.5) == [800, 900, 1000, 1100, 1200]
    assert compare.nice_ticks(1, 5) == [1, 2, 3, 4, 5]
    assert compare.nice_ticks(-0.13, 0.13) == [-0.2, -0.1, 0, 0.1, 0.2]
    assert compare.nice_ticks(-0.07, 0.09) == [-0.1, -0.05, 0, 0.05, 0.1]
    assert compare.nice_ticks(0, 1) == [0, 0.2, 0.4, 0.6, 0.8, 1]
    ticks = compare.nice_ticks(3, 3)
    assert ticks[0] < 3 < ticks[-1]


def test_the_summary_counts_intervals_that_exclude_zero():
    s = compare.difference_summary(
        [
            ("a", 0.1, 0.3),
            ("b", -0.2, -0.01),
            ("c", -0.1, 0.2),
            ("d", 0.0, 0.2),
            ("e", None, None),
        ]
    )
    assert (s.better, s.worse, s.no_difference, s.not_computable) == (
        ["a"],
        ["b"],
        ["c", "d"],
        ["e"],
    )
    assert s.text == (
        "better than the baseline on 1 of 4 criteria, worse on 1, no difference "
        "shown on 2 (1 not computable)"
    )
    assert "no difference" in compare.difference_summary([]).text


# --- the charts -----------------------------------------------------------------------


def _font_sizes(svg: str) -> list[int]:
    return [int(x) for x in re.findall(r'font-size="(\d+)"', svg)]


def test_interval_bars_use_round_ticks_and_large_labels():
    svg = interval_bars_chart(
        title="Ratings",
        groups=["alpha", "beta"],
        series=[
            Series(
                "rating", [Interval(900, 830, 960, 10), Interval(1100, 1050, 1130, 10)]
            )
        ],
        scale=(812.5, 1137.5),
        kind="rating",
    )
    ticks = re.findall(r'class="tick">([^<]+)<', svg)
    assert ticks == ["800", "900", "1000", "1100", "1200"]
    body = svg.split("</desc>", 1)[1]
    assert min(_font_sizes(body)) >= 14  # >= 11 px when drawn 80% of its size


def test_radar_scale_numbers_sit_on_the_first_axis():
    svg = radar_chart(
        title="r", axes=["a", "b", "c"], series=[Series("humans", [3, 4, 2])]
    )
    axis = re.search(r'<line class="axis" x1="([\d.]+)"', svg)
    xs = [
        float(x)
        for x in re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="start" '
                            r'font-size="10" fill="#5b6575" class="scale"', svg)
    ]  # fmt: skip
    assert len(xs) == 5
    assert all(0 < x - float(axis.group(1)) <= 6 for x in xs)


def test_the_forest_plot_says_which_side_of_zero_each_run_is():
    svg = paired_differences_chart(
        title="Difference",
        stat_name="QWK",
        runs=["judge B"],
        groups=[
            ("Readability", [Interval(0.2, 0.1, 0.3, 40)]),
            ("Factuality", [Interval(-0.05, -0.2, 0.1, 40)]),
            ("Overall", [Interval(None, reason="no items")]),
        ],
    )
    assert re.findall(r'data-verdict="([^"]+)"', svg) == [
        "better",
        "no difference shown",
    ]
    assert "not enough data (n=0)" in svg
    assert 'class="zero"' in svg and min(_font_sizes(svg.split("</desc>", 1)[1])) >= 14


# --- the experiment page ---------------------------------------------------------------


@pytest.fixture
def researcher(db):
    return UserFactory(username="cmp-researcher", role="researcher")


@pytest.fixture
def setup(researcher):
    return make_agreement_setup(
        researcher,
        human=human_table(),
        judges=[judge_table(0), judge_table(2)],
        n_instructions=N,
        models=MODELS,
        n_raters=2,
        name="cmp",
    )


@pytest.fixture
def experiment(setup, researcher):
    return experiment_create(
        user=researcher,
        dataset=setup.dataset,
        name="cmp experiment",
        run_ids=[r.pk for r in setup.runs],
    )


def test_the_comparison_holds_the_figures_numbers(experiment):
    figures = experiment_figures(experiment=experiment, n_boot=50)
    comparison = experiment_comparison(figures, "qwk")
    grid = comparison["grid"]
    assert [r["key"] for r in grid["rows"]] == [r["key"] for r in figures["rows"]]
    for row in grid["rows"]:
        for cell in row["cells"]:
            run = next(r for r in figures["runs"] if r["id"] == cell["judge_id"])
            want = run["figures"][row["key"]]["qwk"]
            assert (cell["value"], list(cell["ci"] or []), cell["n"]) == (
                want["value"],
                want["ci"] or [],
                want["n"],
            )
            assert f"n={want['n']}" in cell["label"]
        ceiling = figures["ceiling"][row["key"]]["alpha_ordinal"]
        assert row["ceiling"]["value"] == ceiling["value"]
    (versus,) = comparison["versus"]
    baseline_run = figures["runs"][0]
    assert comparison["baseline"]["id"] == baseline_run["id"] == figures["baseline"]
    diffs = versus["run"]["vs_baseline"]
    crits = [r for r in figures["rows"] if r["key"] != "overall"]
    better = sum(diffs[r["key"]]["diff"]["qwk"]["ci"][0] > 0 for r in crits)
    worse = sum(diffs[r["key"]]["diff"]["qwk"]["ci"][1] < 0 for r in crits)
    assert versus["summary"].text.startswith(
        f"better than the baseline on {better} of {len(crits)} criteria, worse on "
        f"{worse}, no difference shown on {len(crits) - better - worse}"
    )
    svg = forest_from_comparison(comparison)
    assert svg.count('class="difference"') == len(figures["rows"])
    with pytest.raises(AgreementError, match="^stat:"):
        experiment_comparison(figures, "kappa")


def test_the_experiment_page_shows_the_grid_the_forest_and_says_baseline_once(
    client, experiment, researcher
):
    client.force_login(researcher)
    url = reverse("analysis:experiment", args=[experiment.pk])
    html = client.get(url, {"n_boot": 50, "stat": "spearman"}).content.decode()
    figures = experiment_figures(experiment=experiment, n_boot=50)
    grid = html.split('id="experiment-grid"', 1)[1].split("</table>", 1)[0]
    for run in figures["runs"]:
        for row in figures["rows"]:
            value = run["figures"][row["key"]]["spearman"]["value"]
            cell = re.search(
                rf'<tr data-row="{row["key"]}">.*?<td [^>]*data-judge="{run["id"]}" '
                r'data-value="([^"]*)"',
                grid,
                flags=re.S,
            )
            assert float(cell.group(1)) == value
    assert 'id="experiment-forest"' in html and "<svg" in html
    summary = experiment_comparison(figures, "spearman")["versus"][0]["summary"]
    assert summary.text in html
    diffs = html.split('id="experiment-differences"', 1)[1].split("</table>", 1)[0]
    assert "baseline" not in diffs.split("<tbody>", 1)[1]
    runs = html.split('id="experiment-runs"', 1)[1].split("</table>", 1)[0]
    assert runs.count(">baseline<") == 1  # the badge
    diff_url = reverse(
        "analysis:run-diff", args=[figures["runs"][1]["id"], figures["runs"][0]["id"]]
    )
    assert diff_url in html
    bad = client.get(url, {"n_boot": 50, "stat": "nope"})
    assert bad.status_code == 400 and "stat: use one of" in bad.content.decode()


def test_the_agreement_compact_table_is_coloured_from_the_result(
    client, setup, researcher
):
    client.force_login(researcher)
    html = client.get(
        reverse("analysis:agreement", args=[setup.dataset.pk]), {"n_boot": 50}
    ).content.decode()
    result = agreement_compute(dataset=setup.dataset, n_boot=50)
    table = compact_table(result)
    compact = html.split('id="agreement-compact"', 1)[1].split("</table>", 1)[0]
    for item in table["rows"]:
        for c in item["cells"]:
            if c["value"] is None:
                continue
            style = compare.colour(c["value"]).style
            row = compact.split(f'data-row="{item["row"].key}"', 1)[1].split(
                "</tr>", 1
            )[0]
            assert f'data-run="{c["run_id"]}" style="{style}"' in row
            assert f"n={c['n']}" in row
    assert 'class="grid-legend"' in html


# --- the item-level diff ---------------------------------------------------------------


def _differing(skill=None):
    a, b = judge_table(0), judge_table(2)
    return sorted(k for k in a if a[k] != b[k] and (skill is None or k[2] == skill))


def test_the_diff_lists_exactly_the_items_where_the_runs_differ(setup, researcher):
    a, b = setup.runs
    diff = run_diff_for_user(user=researcher, run_id=b.pk, other_id=a.pk, per_page=500)
    assert diff["compared"] == N * len(MODELS) * len(SKILLS)
    want = _differing()
    assert diff["n_differ"] == len(want)
    got = sorted(
        (
            next(
                i for (i, m), r in setup.responses.items() if r.pk == row["response"].pk
            ),
            row["response"].model_name,
            row["skill"].key,
        )
        for row in diff["page"].object_list
    )
    assert got == want
    tables = {setup.runs[0].pk: judge_table(0), setup.runs[1].pk: judge_table(2)}
    for row in diff["page"].object_list:
        i = next(
            i for (i, m), r in setup.responses.items() if r.pk == row["response"].pk
        )
        key = (i, row["response"].model_name, row["skill"].key)
        assert row["a"].samples == [str(tables[b.pk][key])]
        assert row["b"].samples == [str(tables[a.pk][key])]
    gaps = [row["gap"] for row in diff["page"].object_list]
    assert gaps == sorted(gaps, reverse=True)
    only = run_diff_for_user(
        user=researcher, run_id=b.pk, other_id=a.pk, criterion="factuality"
    )
    assert only["n_differ"] == len(_differing("factuality"))
    assert {r["skill"].key for r in only["page"].object_list} == {"factuality"}
    with pytest.raises(DomainError) as caught:
        run_diff_for_user(user=researcher, run_id=b.pk, other_id=a.pk, criterion="nope")
    assert caught.value.problems[0].field == "criterion"
    with pytest.raises(DomainError):
        run_diff_for_user(user=researcher, run_id=b.pk, other_id=b.pk)


def test_the_diff_page_for_each_role(client, setup, researcher):
    a, b = setup.runs
    url = reverse("analysis:run-diff", args=[b.pk, a.pk])
    assert client.get(url).status_code == 302  # anonymous: to the login page
    client.force_login(setup.raters[0])
    assert client.get(url).status_code == 403
    other_ws = Workspace.objects.create(name="Lab B", slug="lab-b-cmp")
    other = UserFactory(
        username="cmp-other", role="researcher", role__workspace=other_ws
    )
    other.groups.clear()  # a member of B only
    client.force_login(other)
    assert client.get(url).status_code == 404
    client.force_login(researcher)
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert (
        f"{len(_differing())} of {N * len(MODELS) * len(SKILLS)} items differ" in html
    )
    assert html.count('<tr data-response="') == 25  # the first page
    assert 'rel="next"' in html
    second = client.get(url, {"page": 2}).content.decode()
    assert second.count('<tr data-response="') == len(_differing()) - 25
    assert 'rel="prev"' in second
    filtered = client.get(url, {"criterion": "readability"}).content.decode()
    assert filtered.count('data-criterion="readability"') == len(
        _differing("readability")
    )
    assert 'data-criterion="factuality"' not in filtered
    for params, field in (
        ({"criterion": "nope"}, "criterion"),
        ({"page": "x"}, "page"),
    ):
        bad = client.get(url, params)
        assert bad.status_code == 400 and field in bad.content.decode()


# --- the meta-evaluation page -----------------------------------------------------------


def test_the_metaeval_page_opens_with_the_judges_grid_and_folds_the_details(
    researcher, client
):
    from analysis.selectors.metaeval import metaeval_comparison, metaeval_compute
    from tests.judging.pairwise_data import make_pref_setup

    dataset, _, run_a, cued = make_pref_setup("cmp-pref")
    client.force_login(researcher)
    html = client.get(
        reverse("analysis:metaeval", args=[dataset.pk]),
        {"run": [run_a.pk, cued.pk], "n_boot": 50},
    ).content.decode()
    result = metaeval_compute(dataset=dataset, run_ids=[run_a.pk, cued.pk], n_boot=50)
    grid = metaeval_comparison(result)
    table = html.split('id="metaeval-grid"', 1)[1].split("</table>", 1)[0]
    assert html.index('id="metaeval-grid"') < html.index('id="metaeval-overall-')
    assert len(grid["rows"]) > 1 and grid["rows"][-1]["key"] == "overall"
    for row in grid["rows"]:
        for cell in row["cells"]:
            report = next(r for r in result["runs"] if r["id"] == cell["judge_id"])
            group = (
                report["report"]["overall"]
                if row["key"] == "overall"
                else report["report"]["categories"][row["key"]]
            )
            assert cell["value"] == group["accuracy_mean"]["value"]
            m = re.search(
                rf'<tr data-row="{re.escape(row["key"])}">.*?data-judge='
                rf'"{cell["judge_id"]}" data-value="([^"]*)"',
                table,
                flags=re.S,
            )
            shown = m.group(1)
            assert (float(shown) if shown else None) == cell["value"]
    # each run's full figures are folded under its name
    assert html.count('<details class="card metaeval-run"') == 2
