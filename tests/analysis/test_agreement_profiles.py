"""Model profiles behind the radar, in two named item sets: "on shared items" (every
source scored the item) and "all items each source scored" (FLASK's aggregation),
each mean with its n and a bootstrap CI; the radar offers both views."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from django.urls import reverse

from analysis.selectors.agreement import agreement_compute
from tests.analysis.agreement_data import make_agreement_setup
from tests.analysis.test_agreement_selectors import MODELS, N_INSTR, random_tables

pytestmark = pytest.mark.django_db
NS = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def setup(researcher):
    """Judge B scores only the first four instructions (and has two samples)."""
    human, judge_a, judge_b = random_tables(seed=9)
    judge_b = {k: v for k, v in judge_b.items() if k[0] < 4}
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="profile-set",
    )
    s.tables = (human, judge_a, judge_b)
    return s


def _human_value(scores):
    nums = [x for x in scores if x not in ("-", None)]
    return float(np.mean(nums)) if nums else None


def _judge_value(value):
    samples = value if isinstance(value, list) else [value]
    nums = sorted(x for x in samples if x is not None)
    return float(np.floor(np.median(nums) + 0.5)) if nums else None


def expected(s, skill, model):
    """(all: human, A, B means and ns; shared: n and the three means), by hand."""
    human, judge_a, judge_b = s.tables
    items = [k for k in human if k[2] == skill and k[1] == model]
    h = {k: _human_value(human[k]) for k in items}
    a = {k: _judge_value(judge_a[k]) for k in items if k in judge_a}
    b = {k: _judge_value(judge_b[k]) for k in items if k in judge_b}
    h, a, b = ({k: v for k, v in d.items() if v is not None} for d in (h, a, b))
    shared = sorted(set(h) & set(a) & set(b))
    return (
        [(np.mean(list(d.values())), len(d)) for d in (h, a, b)],
        (len(shared), [np.mean([d[k] for k in shared]) for d in (h, a, b)]),
    )


def test_profiles_on_all_items_and_on_shared_items(setup):
    a, b = (str(r.pk) for r in setup.runs)
    res = agreement_compute(dataset=setup.dataset, n_boot=200)
    for skill in ("factuality", "readability"):
        row = res.row(f"skill:{skill}")
        for model in MODELS:
            (h_all, a_all, b_all), (n_shared, shared) = expected(setup, skill, model)
            e = next(x for x in row.profiles.view("all") if x.model == model)
            for stat, (mean, n) in zip(
                (e.reference, e.judges[a], e.judges[b]),
                (h_all, a_all, b_all),
                strict=True,
            ):
                assert stat.value == pytest.approx(mean) and stat.n == n
                lo, hi = stat.ci
                assert lo <= stat.value <= hi
            assert e.judges[b].n < e.judges[a].n  # B judged fewer items
            e = next(x for x in row.profiles.view("shared") if x.model == model)
            assert e.n == n_shared
            got = [e.reference, e.judges[a], e.judges[b]]
            assert [g.n for g in got] == [n_shared] * 3
            assert [g.value for g in got] == pytest.approx(shared)


def test_human_model_means_have_a_ci_and_runs_order_changes_nothing(setup):
    a, b = setup.runs
    ab = agreement_compute(dataset=setup.dataset, run_ids=[a.pk, b.pk], n_boot=100)
    ba = agreement_compute(dataset=setup.dataset, run_ids=[b.pk, a.pk], n_boot=100)
    for r1, r2 in zip(ab.rows, ba.rows, strict=True):
        assert r1.profiles == r2.profiles
        for m in r1.human.models:
            if m.n > 1:
                assert m.mean.ci is not None


def dashboard(client, s, **params):
    url = reverse("analysis:agreement", args=[s.dataset.pk])
    return client.get(url, {"n_boot": 50, **params})


def legend(svg: str) -> list[str]:
    root = ET.fromstring(svg)
    return [t.text for t in root.find(f".//{NS}g[@class='legend']").iter(f"{NS}text")]


def test_radar_offers_both_views_labelled_with_n(setup, researcher, client_for):
    c = client_for(researcher)
    page = dashboard(c, setup).content.decode()
    assert 'data-radar="shared" aria-current="true"' in page
    link = re.search(r'<a href="([^"]+)" hx-get="[^"]+" hx-target="#agreement-radars"'
                     r'[^>]*data-radar="all"', page)  # fmt: skip
    assert link and "radar=all" in link.group(1)
    fragment = c.get(
        reverse("analysis:agreement", args=[setup.dataset.pk]),
        {"n_boot": 50, "radar": "all"},
        headers={"HX-Request": "true", "HX-Target": "agreement-radars"},
    ).content.decode()
    assert fragment.lstrip().startswith('<section class="card" id="agreement-radars"')
    assert "all items each source scored (flask" in fragment.lower()
    assert 'data-radar="all" aria-current="true"' in fragment

    url = reverse("analysis:agreement-chart", args=[setup.dataset.pk, "radar"])
    shared = c.get(url, {"model": "alpha", "n_boot": 50}).content.decode()
    every = c.get(url, {"model": "alpha", "n_boot": 50, "radar": "all"})
    every = every.content.decode()
    assert "alpha: mean per skill, shared items" in shared
    assert "alpha: mean per skill, all scored items" in every
    res = agreement_compute(dataset=setup.dataset, n_boot=50)
    skills = [r for r in res.rows if r.level == "skill"]
    n_shared = sum(
        next(e for e in r.profiles.view("shared") if e.model == "alpha").n
        for r in skills
    )
    labels = legend(shared)
    assert all(label.endswith(f"(n={n_shared})") for label in labels)
    counts = {re.search(r"\(n=(\d+)\)$", x).group(1) for x in legend(every)}
    assert len(counts) > 1  # each source its own n
    assert "95% CI [" in every


def test_bad_radar_view_is_named(setup, researcher, client_for):
    c = client_for(researcher)
    page = dashboard(c, setup, radar="sideways")
    assert page.status_code == 400 and "`radar`" in page.content.decode()
    url = reverse("analysis:agreement-chart", args=[setup.dataset.pk, "radar"])
    svg = c.get(url, {"model": "alpha", "radar": "sideways"})
    assert svg.status_code == 400 and "`radar`" in svg.content.decode()


def test_rank_bars_stand_on_shared_items_whatever_the_run_order(setup):
    from analysis import charts

    a, b = setup.runs
    ab = agreement_compute(dataset=setup.dataset, run_ids=[a.pk, b.pk], n_boot=0)
    ba = agreement_compute(dataset=setup.dataset, run_ids=[b.pk, a.pk], n_boot=0)

    def human_tips(result):
        root = ET.fromstring(charts.rank_bars_from_agreement(result, "overall"))
        tips = [t.text for t in root.iter(f"{NS}title")]
        return sorted(t for t in tips if t and "human raters" in t)

    tips = human_tips(ab)
    assert tips and tips == human_tips(ba)
    overall = ab.row("overall")
    alpha = next(e for e in overall.profiles.view("shared") if e.model == "alpha")
    assert any(f"n={alpha.n})" in t for t in tips if t.startswith("alpha"))
