"""The agreement dashboard pages: the table and charts from real scores, htmx
fragments, slices, sorting, CSV and SVG downloads that repeat `agreement_compute`'s
numbers, the drill-down, bad input, and the refusal of raters and anonymous users."""

from __future__ import annotations

import csv
import io
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from analysis.selectors.agreement.cache import fingerprint_queries
from annotation.models import Response
from tests.analysis.agreement_data import make_agreement_setup

pytestmark = pytest.mark.django_db

SKILLS = ("comprehension", "factuality", "readability")
MODELS = ("alpha", "beta", "<i>gamma</i>")
N_INSTR = 10
N_BOOT = 60
SVG_NS = "{http://www.w3.org/2000/svg}"


def score_tables(seed: int = 3):
    """Three raters who mostly agree; judge A follows them, judge B contradicts them
    on factuality (so it falls below the human ceiling there)."""
    rng = np.random.default_rng(seed)
    human, judge_a, judge_b = {}, {}, {}
    for i in range(N_INSTR):
        for mi, m in enumerate(MODELS):
            for key in SKILLS:
                q = np.clip(1.5 + mi + rng.normal(0, 0.9), 1, 5)
                scores = [
                    int(np.clip(round(q + rng.normal(0, 0.4)), 1, 5)) for _ in range(3)
                ]
                if rng.random() < 0.1:
                    scores[2] = "-"  # this rater did not rate the item
                human[(i, m, key)] = scores
                judge_a[(i, m, key)] = int(
                    np.clip(round(q + rng.normal(0.3, 0.5)), 1, 5)
                )
                judge_b[(i, m, key)] = (
                    int(np.clip(round(6 - q), 1, 5))
                    if key == "factuality"
                    else int(np.clip(round(q + rng.normal(0, 1)), 1, 5))
                )
    return human, judge_a, judge_b


@pytest.fixture
def setup(researcher):
    human, judge_a, judge_b = score_tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="dash-set",
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
        is_hard=[True, False] * 5,
    )
    return s


def query(s, **extra) -> dict:
    params = {
        "campaign": [s.campaign.pk],
        "run": [r.pk for r in s.runs],
        "n_boot": N_BOOT,
        "full": 1,  # the full table (the compact one: test_agreement_headline.py)
    }
    params.update(extra)
    return params


def compute(s, **kwargs):
    return agreement_compute(
        dataset=s.dataset,
        campaign_ids=[s.campaign.pk],
        run_ids=[r.pk for r in s.runs],
        n_boot=N_BOOT,
        **kwargs,
    )


def dashboard_url(s) -> str:
    return reverse("analysis:agreement", args=[s.dataset.pk])


def table_rows(html: str) -> dict[str, str]:
    """data-row key -> the row's HTML."""
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    rows = re.findall(
        r'<tr class="level-\w+" data-row="([^"]+)">(.*?)</tr>', body, re.S
    )
    return dict(rows)


def row_of(result, key):
    return result.row(key)


# --- The page -----------------------------------------------------------------------------


def test_dashboard_shows_every_row_with_the_computed_numbers(
    client_for, researcher, setup
):
    response = client_for(researcher).get(dashboard_url(setup), query(setup))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" in html and 'id="agreement-results"' in html
    rows = table_rows(html)
    result = compute(setup)
    assert list(rows) == [r.key for r in result.rows]
    for r in result.rows:
        cells = rows[r.key]
        alpha = r.human.stat("alpha_ordinal")
        assert f"{alpha.value:.2f}" in cells
        for run in setup.runs:
            j = r.judge(run.pk)
            for stat in ("spearman", "kendall", "qwk"):
                value, (lo, hi) = j.stat(stat).value, j.stat(stat).ci
                assert f"{value:.2f}" in cells
                assert f"[{lo:.2f}, {hi:.2f}]" in cells
            assert f"{j.stat('leniency').value:+.2f}" in cells
            assert f"{100 * j.stat('exact').value:.0f}%" in cells
    # A NaN would show as a word of its own; a CSRF token or "nano" may hold the letters.
    assert not re.search(r"\bnan\b", html, flags=re.IGNORECASE)


def test_judge_below_the_ceiling_is_flagged(client_for, researcher, setup):
    result = compute(setup)
    flag = row_of(result, "skill:factuality").judge(setup.runs[1].pk).flag
    assert flag.below_ceiling and flag.significant
    html = (
        client_for(researcher).get(dashboard_url(setup), query(setup)).content.decode()
    )
    factuality = table_rows(html)["skill:factuality"]
    assert "significantly below" in factuality
    assert factuality.count("flag-significant") == 1  # judge A is not flagged


def test_undefined_statistics_say_not_enough_data(client_for, researcher):
    # One item per skill: no correlation, no alpha can be computed.
    s = make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [3, 4, 3]},
        judges=[{(0, "alpha", "factuality"): 4}],
        n_instructions=1,
        models=("alpha",),
        name="tiny-set",
    )
    response = client_for(researcher).get(dashboard_url(s), query(s))
    html = response.content.decode()
    assert response.status_code == 200
    assert "not enough data (n=1)" in table_rows(html)["skill:factuality"]
    assert ">nan<" not in html.lower() and "NaN" not in html
    # A radar with fewer than 3 skills says why instead of drawing a line.
    assert "at least 3 skills" in html


def test_page_without_a_choice_opens_with_the_defaults(client_for, researcher, setup):
    response = client_for(researcher).get(dashboard_url(setup), {"n_boot": N_BOOT})
    html = response.content.decode()
    assert response.status_code == 200
    assert "Choose what to compare" not in html and "Showing the defaults" in html
    assert list(table_rows(html)) == [r.key for r in compute(setup).rows]


def test_htmx_gets_the_results_fragment_only(client_for, researcher, setup):
    response = client_for(researcher).get(
        dashboard_url(setup), query(setup), headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in html and 'id="agreement-form"' not in html
    assert html.lstrip().startswith('<section id="agreement-results"')
    assert "HX-Request" in response["Vary"]


def test_htmx_chart_row_switch_gets_the_charts_fragment(client_for, researcher, setup):
    response = client_for(researcher).get(
        dashboard_url(setup),
        query(setup, chart="skill:readability"),
        headers={"HX-Request": "true", "HX-Target": "agreement-charts"},
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section class="card" id="agreement-charts"')
    assert "Readability" in html and 'id="agreement-table"' not in html
    # rank bars + a heatmap and a scatter per run
    assert html.count("<svg") == 1 + 2 * len(setup.runs)


def test_slice_restricts_the_numbers(client_for, researcher, setup):
    response = client_for(researcher).get(
        dashboard_url(setup),
        query(setup, slice="difficulty:2"),
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    sliced = compute(setup, slice_dim="difficulty", slice_value="2")
    j = row_of(sliced, "overall").judge(setup.runs[0].pk)
    assert f"{j.stat('spearman').value:.2f}" in table_rows(html)["overall"]
    assert (
        j.scored_by_both
        < row_of(compute(setup), "overall").judge(setup.runs[0].pk).scored_by_both
    )
    assert 'data-slice="difficulty:2" aria-current="true"' in html


def test_sorting_orders_skills_by_the_column(client_for, researcher, setup):
    rid = str(setup.runs[1].pk)
    response = client_for(researcher).get(
        dashboard_url(setup), query(setup, sort=f"{rid}.spearman", dir="asc")
    )
    keys = [k for k in table_rows(response.content.decode()) if k.startswith("skill:")]
    result = compute(setup)
    values = {k: row_of(result, k).judge(rid).stat("spearman").value for k in keys}
    assert keys == sorted(keys, key=values.get)
    assert 'aria-sort="ascending"' in response.content.decode()


def test_model_names_are_escaped(client_for, researcher, setup):
    html = (
        client_for(researcher).get(dashboard_url(setup), query(setup)).content.decode()
    )
    assert "<i>gamma</i>" not in html
    assert "&lt;i&gt;gamma&lt;/i&gt;" in html


@pytest.mark.parametrize(
    "params, field",
    [
        ({"campaign": ["abc"]}, "`campaign`"),
        ({"campaign": [999999]}, "`campaign`"),
        ({"run": [999999]}, "`run`"),
        ({"n_boot": "-3"}, "`n_boot`"),
        ({"n_boot": "many"}, "`n_boot`"),
        ({"slice": "colour:red"}, "`slice`"),
        ({"slice": "difficulty:9"}, "`slice`"),
    ],
)
def test_bad_choice_is_a_400_naming_the_parameter(
    client_for, researcher, setup, params, field
):
    response = client_for(researcher).get(dashboard_url(setup), query(setup, **params))
    assert response.status_code == 400
    html = response.content.decode()
    assert field in html and "Nothing was computed" in html
    assert 'id="agreement-table"' not in html


def test_reference_run_compares_judge_with_judge(client_for, researcher, setup):
    a, b = setup.runs
    response = client_for(researcher).get(
        dashboard_url(setup), {"run": [a.pk], "reference": b.pk, "n_boot": 0}
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert "judge run" in html and "judge B" in html
    reference_as_run = client_for(researcher).get(
        dashboard_url(setup), {"run": [a.pk], "reference": a.pk}
    )
    assert reference_as_run.status_code == 400
    assert "`reference`" in reference_as_run.content.decode()


# --- Downloads ------------------------------------------------------------------------------


def test_table_csv_repeats_the_computed_numbers(client_for, researcher, setup):
    url = reverse("analysis:agreement-csv", args=[setup.dataset.pk, "table"])
    response = client_for(researcher).get(url, query(setup))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert response["Content-Disposition"].startswith("attachment; filename=")
    assert response["Content-Disposition"].endswith('.csv"')
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    result = compute(setup)
    rid = str(setup.runs[0].pk)
    by = {(x["row"], x["source"], x["statistic"]): x for x in lines}
    for r in result.rows:
        j = r.judge(rid)
        for stat in ("spearman", "kendall", "qwk", "leniency", "mae"):
            line = by[(r.key, f"run:{rid}", stat)]
            assert float(line["value"]) == j.stat(stat).value
            assert float(line["ci_low"]) == j.stat(stat).ci[0]
            assert int(line["n"]) == j.stat(stat).n
        ref = by[(r.key, "reference", "alpha_ordinal")]
        assert float(ref["value"]) == r.human.stat("alpha_ordinal").value
        flag = by[(r.key, f"run:{rid}", "flag_below_ceiling")]
        assert flag["value"] == ("true" if j.flag.below_ceiling else "false")


def test_undefined_values_are_empty_in_the_csv_with_their_reason(
    client_for, researcher
):
    s = make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [3, 4, 3]},
        judges=[{(0, "alpha", "factuality"): 4}],
        n_instructions=1,
        models=("alpha",),
        name="tiny-csv",
    )
    url = reverse("analysis:agreement-csv", args=[s.dataset.pk, "table"])
    text = client_for(researcher).get(url, query(s)).content.decode()
    line = next(
        x
        for x in csv.DictReader(io.StringIO(text))
        if x["row"] == "skill:factuality" and x["statistic"] == "spearman"
    )
    assert line["value"] == "" and line["reason"].startswith("not enough data")
    assert "nan" not in text.lower()


def test_model_means_csv(client_for, researcher, setup):
    url = reverse("analysis:agreement-csv", args=[setup.dataset.pk, "models"])
    response = client_for(researcher).get(url, query(setup))
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    result = compute(setup)
    rid = str(setup.runs[0].pk)
    expected = row_of(result, "skill:factuality").judge(rid).models.models
    got = [
        x
        for x in lines
        if x["row"] == "skill:factuality" and x["source"] == f"run:{rid}"
    ]
    assert [x["model"] for x in got] == [m.model for m in expected]
    for x, m in zip(got, expected, strict=True):
        assert float(x["judge_mean"]) == m.judge_mean.value
        assert float(x["human_mean"]) == m.human_mean.value


def svg_of(response) -> ET.Element:
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("image/svg+xml")
    assert response["Content-Disposition"].startswith("attachment; filename=")
    assert response["Content-Disposition"].endswith('.svg"')
    return ET.fromstring(response.content)


def test_heatmap_svg_counts_match_the_confusion_matrix(client_for, researcher, setup):
    rid = setup.runs[0].pk
    url = reverse("analysis:agreement-chart", args=[setup.dataset.pk, "heatmap"])
    root = svg_of(
        client_for(researcher).get(
            url, query(setup, chart="skill:factuality", judge=rid)
        )
    )
    confusion = row_of(compute(setup), "skill:factuality").judge(rid).confusion
    cells = root.findall(f".//{SVG_NS}g[@class='cells']/{SVG_NS}g")
    counts = [int(c.find(f"{SVG_NS}text").text) for c in cells]
    # drawn top row first: judge score 5 down to 1
    assert counts == [c for row in reversed(confusion) for c in row]


def test_every_chart_downloads_as_svg(client_for, researcher, setup):
    c = client_for(researcher)
    base = query(setup, chart="skill:readability", judge=setup.runs[1].pk)
    for kind, extra in [
        ("radar", {"model": "<i>gamma</i>"}),
        ("ranks", {}),
        ("scatter", {}),
        ("heatmap", {}),
    ]:
        url = reverse("analysis:agreement-chart", args=[setup.dataset.pk, kind])
        root = svg_of(c.get(url, {**base, **extra}))
        assert root.get("role") == "img" and root.get("aria-label")
    radar = c.get(
        reverse("analysis:agreement-chart", args=[setup.dataset.pk, "radar"]),
        {**base, "model": "<i>gamma</i>"},
    )
    assert b"<i>" not in radar.content


@pytest.mark.parametrize(
    "kind, extra, field",
    [
        ("radar", {"model": "nobody"}, "`model`"),
        ("heatmap", {"chart": "skill:nothing"}, "`chart`"),
        ("scatter", {"chart": "skill:factuality", "judge": "0"}, "`judge`"),
    ],
)
def test_chart_bad_parameters_are_400s(
    client_for, researcher, setup, kind, extra, field
):
    url = reverse("analysis:agreement-chart", args=[setup.dataset.pk, kind])
    response = client_for(researcher).get(url, query(setup, **extra))
    assert response.status_code == 400
    assert field in response.content.decode()


def test_downloads_with_a_bad_choice_are_400s(client_for, researcher, setup):
    url = reverse("analysis:agreement-csv", args=[setup.dataset.pk, "table"])
    response = client_for(researcher).get(url, {"run": "x"})
    assert response.status_code == 400
    assert "`run`" in response.content.decode()


# --- Drill-down --------------------------------------------------------------------------


def test_drilldown_shows_judge_and_anonymous_raters_side_by_side(
    client_for, researcher, setup
):
    Response.objects.filter(instruction__dataset=setup.dataset).update(
        text="Some **bold** claim. <script>alert(1)</script>"
    )
    run = setup.runs[1]
    url = reverse("analysis:agreement-skill", args=[setup.dataset.pk, "factuality"])
    response = client_for(researcher).get(url, query(setup, judge=run.pk))
    html = response.content.decode()
    assert response.status_code == 200
    assert "<html" in html
    assert "judge B says" in html  # the judge's rationale
    assert "rater 1" in html and "human 0 on factuality" in html
    for rater in setup.raters:
        assert rater.username not in html
    assert "<strong>bold</strong>" in html  # Markdown rendered
    assert "<script>alert" not in html  # and sanitised
    assert html.count('class="disagreement"') == 25


def test_drilldown_fragment_for_htmx(client_for, researcher, setup):
    url = reverse("analysis:agreement-skill", args=[setup.dataset.pk, "factuality"])
    response = client_for(researcher).get(
        url, query(setup), headers={"HX-Request": "true"}
    )
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="agreement-disagreements"')
    assert "judge A says" in html  # the first run by default


def test_drilldown_csv(client_for, researcher, setup):
    run = setup.runs[0]
    url = reverse("analysis:agreement-skill-csv", args=[setup.dataset.pk, "factuality"])
    response = client_for(researcher).get(url, query(setup, judge=run.pk))
    assert response["Content-Type"].startswith("text/csv")
    lines = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert lines and {x["judge_run"] for x in lines} == {str(run.pk)}
    assert all(x["rater"].startswith("rater ") for x in lines)


def test_drilldown_of_unknown_skill_is_404(client_for, researcher, setup):
    url = reverse("analysis:agreement-skill", args=[setup.dataset.pk, "telepathy"])
    assert client_for(researcher).get(url, query(setup)).status_code == 404


# --- Permissions and navigation -----------------------------------------------------------


def all_urls(s) -> list[tuple[str, dict]]:
    ds = s.dataset.pk
    q = query(s, chart="skill:factuality", judge=s.runs[0].pk, model="alpha")
    return [
        (reverse("analysis:agreement-home"), {}),
        (reverse("analysis:agreement", args=[ds]), q),
        (reverse("analysis:agreement-csv", args=[ds, "table"]), q),
        (reverse("analysis:agreement-csv", args=[ds, "models"]), q),
        *[
            (reverse("analysis:agreement-chart", args=[ds, kind]), q)
            for kind in ("radar", "heatmap", "scatter", "ranks")
        ],
        (reverse("analysis:agreement-skill", args=[ds, "factuality"]), q),
        (reverse("analysis:agreement-skill-csv", args=[ds, "factuality"]), q),
    ]


def test_every_url_works_for_researchers_and_admins(
    client_for, researcher, admin_user, setup
):
    for user in (researcher, admin_user):
        c = client_for(user)
        for url, params in all_urls(setup):
            assert c.get(url, params).status_code == 200, url


def test_every_url_refuses_raters_and_users_without_a_role(
    client_for, rater, no_role_user, setup
):
    for user in (rater, no_role_user):
        c = client_for(user)
        for url, params in all_urls(setup):
            assert c.get(url, params).status_code == 403, url
            assert c.get(url, params, headers={"HX-Request": "true"}).status_code == 403


def test_every_url_sends_anonymous_users_to_the_login(client_for, setup):
    c = client_for(None)
    for url, params in all_urls(setup):
        response = c.get(url, params)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("login"))


def test_every_url_refuses_posts(client_for, researcher, setup):
    c = client_for(researcher)
    for url, _ in all_urls(setup):
        assert c.post(url).status_code == 405, url


def test_navigation_links_to_the_dashboard_for_researchers_only(
    client_for, researcher, rater
):
    link = f'href="{reverse("analysis:agreement-home")}"'
    assert link in client_for(researcher).get(reverse("home")).content.decode()
    assert link not in client_for(rater).get(reverse("home")).content.decode()


def test_home_lists_datasets(client_for, researcher, setup):
    html = (
        client_for(researcher).get(reverse("analysis:agreement-home")).content.decode()
    )
    assert dashboard_url(setup) in html and setup.dataset.name in html


def test_bad_choice_in_an_htmx_request_shows_the_problem_in_the_fragment(
    client_for, researcher, setup
):
    response = client_for(researcher).get(
        dashboard_url(setup), query(setup, n_boot="x"), headers={"HX-Request": "true"}
    )
    # 200: htmx swaps only 2xx answers; the fragment says what is wrong.
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="agreement-results"')
    assert "`n_boot`" in html and 'id="agreement-table"' not in html


def test_many_slice_values_become_a_select_that_keeps_the_choice(
    client_for, researcher
):
    n = 14
    human = {(i, "alpha", "factuality"): [3, 4, 4] for i in range(n)}
    judge = {(i, "alpha", "factuality"): 2 + i % 3 for i in range(n)}
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=n,
        models=("alpha",),
        name="many-tasks",
        source_task=[f"task-{i:02d}" for i in range(n)],
    )
    c = client_for(researcher)
    html = c.get(dashboard_url(s), query(s)).content.decode()
    select = html.split('data-slice-dim="task"', 1)[1].split("</form>", 1)[0]
    assert 'hx-trigger="change"' in select and '<select name="slice"' in select
    assert f'<input type="hidden" name="campaign" value="{s.campaign.pk}">' in select
    assert f'<input type="hidden" name="run" value="{s.runs[0].pk}">' in select
    assert select.count("<option") == n + 1
    sliced = c.get(dashboard_url(s), query(s, slice="task:task-03"))
    assert sliced.status_code == 200
    assert '<option value="task:task-03" selected>' in sliced.content.decode()


def test_drilldown_needs_human_raters_as_the_reference(client_for, researcher, setup):
    a, b = setup.runs
    url = reverse("analysis:agreement-skill", args=[setup.dataset.pk, "factuality"])
    params = {"run": [a.pk], "reference": b.pk, "n_boot": 0}
    c = client_for(researcher)
    assert c.get(url, params).status_code == 400
    fragment = c.get(url, params, headers={"HX-Request": "true"})
    assert fragment.status_code == 200
    assert "`campaign`" in fragment.content.decode()
    # and the table does not offer the drill-down links in that mode
    page = c.get(dashboard_url(setup), params).content.decode()
    assert url not in page


def test_dashboard_queries_do_not_grow_with_the_data(client_for, researcher, setup):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    human, judge_a, judge_b = score_tables(seed=11)
    bigger = make_agreement_setup(
        researcher,
        human={
            (i + N_INSTR * k, m, key): v
            for (i, m, key), v in human.items()
            for k in range(3)
        },
        judges=[
            {
                (i + N_INSTR * k, m, key): v
                for (i, m, key), v in j.items()
                for k in range(3)
            }
            for j in (judge_a, judge_b)
        ],
        n_instructions=3 * N_INSTR,
        models=MODELS,
        name="bigger-set",
    )
    c = client_for(researcher)
    counts = []
    for s in (setup, bigger):
        c.get(dashboard_url(s), query(s))  # computes and caches
        with CaptureQueriesContext(connection) as cached:
            assert c.get(dashboard_url(s), query(s)).status_code == 200
        counts.append(len(cached))
    # 16: two of them say which campaigns have real (not generated) ratings, for the
    # default reference and the "Human reference" line (issue 37, defect 17).
    assert counts[0] == counts[1] <= 16 + fingerprint_queries()


def test_model_slice_draws_only_that_models_radar(client_for, researcher, setup):
    html = (
        client_for(researcher)
        .get(dashboard_url(setup), query(setup, slice="model:beta"))
        .content.decode()
    )
    radars = re.findall(r'aria-label="([^"]*): mean per skill, [^"]*"', html)
    assert radars == ["beta"]
    assert "2 other models of the dataset have no score in this selection." in html


def test_sorting_by_the_ceiling_and_back_to_groups(client_for, researcher, setup):
    c = client_for(researcher)
    html = c.get(dashboard_url(setup), query(setup, sort="human")).content.decode()
    keys = list(table_rows(html))
    result = compute(setup)
    alpha = {k: row_of(result, k).human.stat("alpha_ordinal").value for k in keys}
    skills = [k for k in keys if k.startswith("skill:")]
    assert skills == sorted(skills, key=lambda k: -alpha[k])
    assert keys[-1] == "overall"
    assert "back to the ability groups" in html
    unknown = c.get(
        dashboard_url(setup), query(setup, sort="nonsense")
    ).content.decode()
    assert list(table_rows(unknown)) == [r.key for r in result.rows]
