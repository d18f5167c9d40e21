"""Skill profiles: means per source, model and row equal numpy on the same arrays;
the bootstrap clustered by instruction and the pairwise-order probabilities equal an
explicit loop that resamples instruction indices; slices; the page and the API with
their roles; a constant number of queries."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from analysis.selectors.agreement import AgreementError
from analysis.selectors.agreement.cache import fingerprint_queries
from analysis.selectors.skill_profiles import skill_profiles
from analysis.stats.bootstrap import bootstrap_indices
from analysis.stats.profiles import (
    NOT_ENOUGH_MODELS,
    cluster_boot,
    cluster_profiles,
    instruction_totals,
    order_probabilities,
)
from analysis.stats.ranks import ranks_high_first
from tests.analysis.agreement_data import make_agreement_setup

SKILLS = ("comprehension", "factuality", "readability")
MODELS = ("alpha", "beta", "gamma")
N_INSTR = 8


# --- pure numpy --------------------------------------------------------------------


def random_items(seed=0, n_i=9, n_m=3, n_c=4, n_s=2, continuous=True):
    """Per source, items (instruction, model, criterion, value), some cells empty;
    criterion 3 is on 0..10, the others on 1..5."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_s):
        n = 140
        i = rng.integers(0, n_i, n)
        m = rng.integers(0, n_m, n)
        c = rng.integers(0, n_c, n)
        v = rng.uniform(1, 5, n) if continuous else rng.integers(1, 6, n).astype(float)
        v = np.where(c == 3, v * 2.5 - 2.5, v)
        out.append((i, m, c, v))
    return out


LOW = np.array([1.0, 1.0, 1.0, 0.0])
SPAN = np.array([4.0, 4.0, 4.0, 10.0])
MEMBERS = [[0], [1], [2], [3], [0, 1], [0, 1, 2, 3]]
NORMALISED = [False, False, False, False, False, True]


def _totals(items, n_i=9, n_m=3, n_c=4):
    pairs = [instruction_totals(i, m, c, v, (n_i, n_m, n_c)) for i, m, c, v in items]
    return np.stack([p[0] for p in pairs]), np.stack([p[1] for p in pairs])


def _mean(i, m, c, v, model, row):
    """A row's mean for one model, straight from the items."""
    sel = (m == model) & np.isin(c, MEMBERS[row])
    vals = v[sel]
    if NORMALISED[row]:
        vals = (vals - LOW[c[sel]]) / SPAN[c[sel]]
    return float(np.mean(vals)) if vals.size else np.nan


def test_means_equal_numpy_on_the_same_items():
    items = random_items()
    sums, counts = _totals(items)
    prof = cluster_profiles(sums, counts, MEMBERS, NORMALISED, LOW, SPAN, 50, 3)
    for s, (i, m, c, v) in enumerate(items):
        for r in range(len(MEMBERS)):
            for model in range(3):
                want = _mean(i, m, c, v, model, r)
                got = prof.mean[s, r, model]
                assert (np.isnan(want) and np.isnan(got)) or got == pytest.approx(
                    want, abs=1e-12
                )
                sel = (m == model) & np.isin(c, MEMBERS[r])
                assert prof.n[s, r, model] == sel.sum()
                assert prof.n_instructions[s, r, model] == len(np.unique(i[sel]))


def _loop_boot(items, n_boot, seed, n_i=9):
    """(B, S, R, M) means of the items of the drawn instructions, resample by
    resample: the same instruction indices as the module draws."""
    idx = bootstrap_indices(n_i, n_boot, seed)
    out = np.full((n_boot, len(items), len(MEMBERS), 3), np.nan)
    for b in range(n_boot):
        for s, (i, m, c, v) in enumerate(items):
            take = np.concatenate([np.flatnonzero(i == k) for k in idx[b]])
            for r in range(len(MEMBERS)):
                for model in range(3):
                    out[b, s, r, model] = _mean(
                        i[take], m[take], c[take], v[take], model, r
                    )
    return out


def test_cluster_bootstrap_equals_a_loop_over_resampled_instructions():
    items = random_items(seed=1)
    sums, counts = _totals(items)
    boot = cluster_boot(sums, counts, MEMBERS, NORMALISED, LOW, SPAN, 40, 7)
    want = _loop_boot(items, 40, 7)
    assert np.array_equal(np.isnan(boot), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.max(np.abs(boot[ok] - want[ok])) < 1e-12
    prof = cluster_profiles(sums, counts, MEMBERS, NORMALISED, LOW, SPAN, 40, 7)
    for s in range(2):
        for r in range(len(MEMBERS)):
            for model in range(3):
                col = want[:, s, r, model]
                col = col[np.isfinite(col)]
                if np.isnan(prof.mean[s, r, model]):
                    continue
                lo, hi = np.quantile(col, [0.025, 0.975])
                assert prof.ci_low[s, r, model] == pytest.approx(lo, abs=1e-12)
                assert prof.ci_high[s, r, model] == pytest.approx(hi, abs=1e-12)


@pytest.mark.parametrize("continuous", [True, False])
def test_order_probability_equals_the_loop_with_ties_counted_half(continuous):
    items = random_items(seed=2, continuous=continuous)
    sums, counts = _totals(items)
    prof = cluster_profiles(sums, counts, MEMBERS, NORMALISED, LOW, SPAN, 60, 5)
    boot = _loop_boot(items, 60, 5) if continuous else None
    if boot is None:  # exact ties: compare on the module's own resampled means
        boot = cluster_boot(sums, counts, MEMBERS, NORMALISED, LOW, SPAN, 60, 5)
    for s in range(2):
        for r in range(len(MEMBERS)):
            for a in range(3):
                for b in range(3):
                    if a == b:
                        assert np.isnan(prof.above[s, r, a, b])
                        continue
                    score = both = 0.0
                    for x in boot[:, s, r]:
                        if np.isfinite(x[a]) and np.isfinite(x[b]):
                            both += 1
                            score += 1.0 if x[a] > x[b] else 0.5 if x[a] == x[b] else 0
                    assert prof.above[s, r, a, b] == pytest.approx(
                        score / both, abs=1e-12
                    )
                    assert prof.above[s, r, a, b] + prof.above[
                        s, r, b, a
                    ] == pytest.approx(1.0)


def test_ranks_average_ties_and_leave_missing_models_unranked():
    assert ranks_high_first(np.array([3.0, 4.0, 3.0, np.nan])).tolist()[:3] == [
        2.5,
        1,
        2.5,
    ]
    assert np.isnan(ranks_high_first(np.array([1.0, np.nan]))[1])
    p = order_probabilities(np.array([[[1.0, 2.0]], [[2.0, 2.0]]]))  # (B, 1, M)
    assert p[0, 1, 0] == pytest.approx(0.75) and p[0, 0, 1] == pytest.approx(0.25)


def test_one_model_is_a_profile_without_a_ranking():
    i, c = np.arange(6) % 3, np.arange(6) % 2
    sums, counts = instruction_totals(i, np.zeros(6, int), c, np.ones(6) * 3, (3, 1, 2))
    prof = cluster_profiles(
        sums[None], counts[None], [[0], [1]], [False, False], LOW[:2], SPAN[:2], 20, 0
    )
    assert prof.mean[0, 0, 0] == 3.0 and np.isnan(prof.rank[0, 0, 0])


# --- from the database -------------------------------------------------------------


def tables(seed=4):
    """Three raters (some missing, some N/A) and one judge over 8 x 3 x 3 items."""
    rng = np.random.default_rng(seed)
    human, judge = {}, {}
    for i in range(N_INSTR):
        for mi, m in enumerate(MODELS):
            for key in SKILLS:
                q = np.clip(2 + mi + rng.normal(0, 0.8), 1, 5)
                scores = [
                    int(np.clip(round(q + rng.normal(0, 0.7)), 1, 5)) for _ in "abc"
                ]
                if rng.random() < 0.15:
                    scores[2] = "-"
                if rng.random() < 0.05:
                    scores[1] = None
                human[(i, m, key)] = scores
                if rng.random() < 0.9:
                    judge[(i, m, key)] = int(
                        np.clip(round(q + rng.normal(0.3, 0.6)), 1, 5)
                    )
    return human, judge


META = {
    "domain_1": ["math", "coding"] * (N_INSTR // 2),
    "difficulty": [1, 2, 3, 4, 5, 1, 2, 3],
    "is_hard": [True, False, False, True, False, False, False, True],
}


@pytest.fixture
def setup(researcher):
    cache.clear()
    human, judge = tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge],
        n_instructions=N_INSTR,
        models=MODELS,
        name="profiles-set",
        **META,
    )
    s.tables = (human, judge)
    return s


def _human_value(scores):
    nums = [x for x in scores if x not in ("-", None)]
    return float(np.mean(nums)) if nums else None


def _expected(s, keep=lambda i: True):
    """source -> (instruction, model, skill, value) items of the tables."""
    human, judge = s.tables
    out = {"humans": [], f"run:{s.runs[0].pk}": []}
    for (i, m, k), scores in human.items():
        v = _human_value(scores)
        if keep(i) and v is not None:
            out["humans"].append((i, m, k, v))
    for (i, m, k), v in judge.items():
        if keep(i) and v is not None:
            out[f"run:{s.runs[0].pk}"].append((i, m, k, float(v)))
    return out


def _entry(result, row_key, source, model):
    row = next(r for r in result["rows"] if r["key"] == row_key)
    return next(e for e in row["sources"][source]["models"] if e["model"] == model)


@pytest.mark.django_db
def test_selector_means_and_intervals_equal_the_tables(setup):
    res = skill_profiles(dataset=setup.dataset, n_boot=80, seed=3)
    assert [s["key"] for s in res["sources"]] == ["humans", f"run:{setup.runs[0].pk}"]
    assert res["models"] == list(MODELS)
    expected = _expected(setup)
    idx = bootstrap_indices(N_INSTR, 80, 3)  # every instruction has scores
    for source, items in expected.items():
        for model in MODELS:
            for row_key, keys in [("skill:factuality", {"factuality"}),
                                  ("overall", set(SKILLS))]:  # fmt: skip
                sel = [(i, v) for i, m, k, v in items if m == model and k in keys]
                e = _entry(res, row_key, source, model)
                assert e["mean"] == pytest.approx(
                    np.mean([v for _, v in sel]), abs=1e-12
                )
                assert e["n"] == len(sel)
                assert e["n_instructions"] == len({i for i, _ in sel})
                boot = [
                    np.mean([v for k in idx[b] for i, v in sel if i == k])
                    for b in range(80)
                ]
                lo, hi = np.quantile(boot, [0.025, 0.975])
                assert e["ci"] == pytest.approx([lo, hi], abs=1e-12)
    row = next(r for r in res["rows"] if r["key"] == "overall")
    ranks = [e["rank"] for e in row["sources"]["humans"]["models"]]
    assert sorted(ranks) == [1, 2, 3]
    above = row["sources"]["humans"]["above"]
    assert above[0][0] is None and above[0][1] + above[1][0] == pytest.approx(1)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "dim,value,keep",
    [
        ("domain", "coding", lambda i: META["domain_1"][i] == "coding"),
        ("difficulty", "3", lambda i: META["difficulty"][i] == 3),
        ("hard", "hard", lambda i: META["is_hard"][i]),
    ],
)
def test_slices_keep_only_their_instructions(setup, dim, value, keep):
    res = skill_profiles(
        dataset=setup.dataset, slice_dim=dim, slice_value=value, n_boot=20
    )
    assert res["slice"]["dim"] == dim
    assert res["bootstrap"]["instructions"] == sum(keep(i) for i in range(N_INSTR))
    for source, items in _expected(setup, keep).items():
        sel = [v for i, m, k, v in items if m == "beta" and k == "readability"]
        e = _entry(res, "skill:readability", source, "beta")
        assert e["n"] == len(sel) and e["mean"] == pytest.approx(np.mean(sel))


@pytest.mark.django_db
def test_bad_slice_and_unknown_run_are_refused(setup):
    with pytest.raises(AgreementError, match="^slice"):
        skill_profiles(dataset=setup.dataset, slice_dim="domain", slice_value="nope")
    with pytest.raises(AgreementError, match="^run"):
        skill_profiles(dataset=setup.dataset, run_ids=[10**8])


@pytest.mark.django_db
def test_one_model_says_not_enough_models(researcher):
    cache.clear()
    human = {(i, "solo", "factuality"): [3, 4] for i in range(3)}
    s = make_agreement_setup(
        researcher, human=human, judges=[], n_instructions=3, models=("solo",),
        n_raters=2, name="solo-set",
    )  # fmt: skip
    res = skill_profiles(dataset=s.dataset, n_boot=10)
    src = next(r for r in res["rows"] if r["key"] == "skill:factuality")["sources"]
    assert src["humans"]["models"][0]["mean"] == pytest.approx(3.5)
    assert src["humans"]["ranking"] == NOT_ENOUGH_MODELS
    assert src["humans"]["models"][0]["rank"] is None


@pytest.mark.django_db
def test_cached_until_a_score_changes(setup):
    from judging.models import JudgeScore

    first = skill_profiles(dataset=setup.dataset, n_boot=10)
    with CaptureQueriesContext(connection) as ctx:
        assert skill_profiles(dataset=setup.dataset, n_boot=10) == first
    assert len(ctx.captured_queries) <= 5 + fingerprint_queries()
    if connection.vendor != "postgresql":
        pytest.skip(
            "an in-place judge score change moves PostgreSQL's change log only: the "
            "scanned fingerprint sees counts and latest ids (the product writes new "
            "runs instead)"
        )
    score = JudgeScore.objects.filter(run=setup.runs[0]).exclude(score=1).first()
    score.score = 1
    score.save()
    again = skill_profiles(dataset=setup.dataset, n_boot=10)
    assert again != first


# --- page and API ------------------------------------------------------------------


def _url(s, **extra):
    qs = "&".join(f"{k}={v}" for k, v in extra.items())
    return reverse("analysis:leaderboard-profiles", args=[s.dataset.pk]) + (
        f"?{qs}" if qs else ""
    )


@pytest.mark.django_db
def test_page_shows_radar_bars_table_and_order_heatmap(setup, researcher, client_for):
    c = client_for(researcher)
    resp = c.get(_url(setup, n_boot=30, row="skill:factuality"))
    assert resp.status_code == 200
    html = resp.content.decode()
    assert html.count("<svg") >= 4  # two radars, the bars, the heat map
    assert "P(row above column)" in html and "Skill profile" in html
    assert 'open data-row="skill:factuality"' in html
    frag = c.get(
        _url(setup, n_boot=30, source="humans"),
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="profiles-detail",
    )
    assert frag.status_code == 200
    body = frag.content.decode()
    assert body.lstrip().startswith('<section class="card" id="profiles-detail"')
    bad = c.get(_url(setup, slice="domain:nope"))
    assert bad.status_code == 400 and "slice" in bad.content.decode()


@pytest.mark.django_db
def test_page_refuses_raters_and_anonymous(setup, rater, client_for):
    assert client_for(rater).get(_url(setup)).status_code == 403
    anon = client_for(None).get(_url(setup))
    assert anon.status_code == 302 and "login" in anon["Location"]


@pytest.mark.django_db
def test_api_returns_the_selector_result(setup, researcher, rater, api_client_for):
    url = reverse("analysis_api:leaderboard-profiles", args=[setup.dataset.pk])
    resp = api_client_for(researcher).get(url, {"n_boot": 25, "slice": "hard:hard"})
    assert resp.status_code == 200
    want = skill_profiles(
        dataset=setup.dataset, n_boot=25, slice_dim="hard", slice_value="hard"
    )
    assert resp.json()["rows"] == want["rows"]
    bad = api_client_for(researcher).get(url, {"slice": "domain:nope"})
    assert bad.status_code == 400
    assert bad.json()["problems"][0]["field"] == "slice_value"
    assert api_client_for(rater).get(url).status_code == 403
    assert api_client_for(None).get(url).status_code in (401, 403)


@pytest.mark.django_db
def test_page_queries_do_not_grow_with_the_data(researcher, client_for):
    counts = []
    for n in (3, 8):
        cache.clear()
        human, judge = tables(seed=n)
        human = {k: v for k, v in human.items() if k[0] < n}
        judge = {k: v for k, v in judge.items() if k[0] < n}
        s = make_agreement_setup(
            researcher, human=human, judges=[judge, judge], n_instructions=n,
            models=MODELS, name=f"queries-{n}",
        )  # fmt: skip
        c = client_for(researcher)
        with CaptureQueriesContext(connection) as ctx:
            assert c.get(_url(s, n_boot=10)).status_code == 200
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


@pytest.mark.django_db
def test_command_profiles_mode_prints_the_table(setup):
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command(
        "leaderboard", "--dataset", setup.dataset.name, "--profiles", "--boot", "10",
        "--slice", "domain:math", stdout=out,
    )  # fmt: skip
    text = out.getvalue()
    assert "Skill profiles of profiles-set" in text and "Overall" in text
    res = skill_profiles(
        dataset=setup.dataset, n_boot=10, slice_dim="domain", slice_value="math"
    )
    e = _entry(res, "overall", "humans", "alpha")
    assert f"{e['mean']:.2f} [{e['ci'][0]:.2f}, {e['ci'][1]:.2f}]" in text
