"""Exact ties between models stay ties wherever models are ranked or correlated.

The data: eight systems scored by three raters on three instructions. Systems "f" and
"g" have the same exact mean, 11/9, reached from different item means (1, 4/3, 4/3 and
1, 1, 5/3), so their float means differ in the last bit; every test first checks that
the naive floats do differ (else it could not fail). Expected figures come from
scipy on the exact fractions.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from django.core.cache import cache
from django.urls import reverse
from scipy import stats as sps

from analysis.charts.bars import ranks_from_means
from analysis.selectors.agreement import agreement_compute
from analysis.selectors.skill_profiles import skill_profiles
from analysis.stats import leaderboard as lb
from analysis.stats.profiles import (
    cluster_profiles,
    instruction_totals,
    instruction_weights,
)
from analysis.stats.ranks import (
    TIE_RTOL,
    model_rank_agreement,
    rank_correlations_rows,
    ranks_high_first,
    tie_safe,
)
from analysis.stats.report import GroupItems, agreement_report
from tests.analysis.agreement_data import make_agreement_setup

MODELS = ("a", "b", "c", "d", "e", "f", "g", "h")
# Per system, the three raters' scores on each of three instructions.
HUMAN = {
    "a": [(5, 5, 5)] * 3,
    "b": [(4, 4, 4)] * 3,
    "c": [(3, 3, 3)] * 3,
    "d": [(2, 2, 2)] * 3,
    "e": [(2, 2, 2), (2, 2, 2), (1, 1, 1)],
    "f": [(1, 1, 1), (1, 1, 2), (1, 1, 2)],  # item means 1, 4/3, 4/3: 11/9
    "g": [(1, 1, 1), (1, 1, 1), (1, 2, 2)],  # item means 1, 1, 5/3: 11/9
    "h": [(1, 1, 1)] * 3,
}
# The judge's score of every item of a system: it puts g above f.
JUDGE = {"a": 5, "b": 4, "c": 4, "d": 3, "e": 2, "f": 1, "g": 2, "h": 1}
SKILL = "factuality"


def exact_means() -> list[Fraction]:
    return [
        sum(Fraction(sum(t), len(t)) for t in HUMAN[m]) / len(HUMAN[m]) for m in MODELS
    ]


def naive_means() -> np.ndarray:
    """Float means as a float pipeline makes them: item means, summed in order."""
    return np.array([sum(sum(t) / len(t) for t in HUMAN[m]) / 3 for m in MODELS])


def exact_floats() -> np.ndarray:
    """The exact means as floats: equal fractions give equal floats."""
    return np.array([float(f) for f in exact_means()])


def judge_means() -> np.ndarray:
    return np.array([float(JUDGE[m]) for m in MODELS])


def test_the_data_has_an_exact_tie_that_floats_break():
    exact = exact_means()
    assert exact[5] == exact[6] == Fraction(11, 9)
    naive = naive_means()
    assert naive[5] != naive[6]  # the trap: 1.222222222222222 vs ...2223
    assert sps.rankdata(-naive)[5:7].tolist() == [7.0, 6.0]


def test_tie_safe_joins_float_ties_and_keeps_real_differences():
    naive = naive_means()
    safe = tie_safe(naive)
    assert safe[5] == safe[6]
    assert (np.argsort(-safe[[0, 1, 2, 3, 4, 7]]) == np.arange(6)).all()
    assert np.array_equal(tie_safe(safe), safe)  # idempotent
    x = np.array([[0.1 + 0.2, 0.3, np.nan, 1.0 + 5 * TIE_RTOL]])
    out = tie_safe(x)
    assert out[0, 0] == out[0, 1] == 0.3 and np.isnan(out[0, 2])
    assert out[0, 3] > 1.0  # a gap above the tolerance stays a difference
    assert tie_safe(np.array([1e12, 1e12 + 1.0]))[0] == 1e12  # relative to the row


def test_ranks_of_tied_means_are_shared_midranks():
    ranks = ranks_high_first(naive_means())
    assert ranks.tolist() == sps.rankdata(-exact_floats()).tolist()
    assert ranks[5] == ranks[6] == 6.5
    chart = ranks_from_means([*naive_means().tolist(), None])
    assert chart[5] == chart[6] == 6.5 and chart[8] is None


def test_system_level_spearman_and_kendall_equal_scipy_on_the_exact_means():
    exact, naive, judge = exact_floats(), naive_means(), judge_means()
    want_s = sps.spearmanr(exact, judge).statistic
    want_k = sps.kendalltau(exact, judge).statistic  # tau-b
    # the naive floats would give other values: the test can fail
    assert sps.spearmanr(naive, judge).statistic != pytest.approx(want_s)
    assert sps.kendalltau(naive, judge).statistic != pytest.approx(want_k)
    res = model_rank_agreement(naive, judge)
    assert res["spearman"].value == pytest.approx(want_s, abs=1e-12)
    assert res["kendall"].value == pytest.approx(want_k, abs=1e-12)
    rows = rank_correlations_rows(np.vstack([naive, exact]), np.vstack([judge, judge]))
    assert rows["spearman"][0] == rows["spearman"][1]


def group_items() -> GroupItems:
    counts, judge, model = [], [], []
    for m_code, m in enumerate(MODELS):
        for triple in HUMAN[m]:
            counts.append(np.bincount(triple, minlength=6)[1:])
            judge.append(JUDGE[m])
            model.append(m_code)
    return GroupItems(np.array(counts), np.array(judge), np.array(model))


def test_agreement_report_model_level_correlations_see_the_tie():
    rep = agreement_report(group_items(), n_boot=20, seed=1)
    h = [e["human_mean"].value for e in rep.models["models"]]
    assert h[5] != h[6]  # the report's own float means differ in the last bit
    assert h[5] == pytest.approx(h[6])
    exact, judge = exact_floats(), judge_means()
    want_s = sps.spearmanr(exact, judge).statistic
    want_k = sps.kendalltau(exact, judge).statistic
    assert sps.spearmanr(h, judge).statistic != pytest.approx(want_s)
    assert rep.models["spearman"].value == pytest.approx(want_s, abs=1e-12)
    assert rep.models["kendall"].value == pytest.approx(want_k, abs=1e-12)


def test_skill_profiles_rank_tied_means_6_5_each():
    item_means = [sum(t) / 3 for m in MODELS for t in HUMAN[m]]
    instr = [i for _ in MODELS for i in range(3)]
    model = [k for k in range(len(MODELS)) for _ in range(3)]
    sums, counts = instruction_totals(
        instr, model, [0] * len(instr), item_means, (3, len(MODELS), 1)
    )
    prof = cluster_profiles(
        sums[None], counts[None], [[0]], [False], np.ones(1), np.full(1, 4.0), 30, 0
    )
    mean = prof.mean[0, 0]
    assert mean[5] != mean[6]  # float means differ...
    assert prof.rank[0, 0, 5] == prof.rank[0, 0, 6] == 6.5  # ...the ranks do not
    assert prof.rank[0, 0].tolist() == sps.rankdata(-exact_floats()).tolist()
    # P(f above g) over the resamples, ties half, from exact fractions
    item = {m: [Fraction(sum(t), 3) for t in HUMAN[m]] for m in ("f", "g")}
    score = 0.0
    for w in instruction_weights(3, 30, 0):
        f, g = (sum(int(k) * v for k, v in zip(w, item[m], strict=True)) for m in "fg")
        score += 1.0 if f > g else 0.5 if f == g else 0.0
    assert prof.above[0, 0, 5, 6] == pytest.approx(score / 30)


# Votes: wins[i][j] of model i over model j; m4 and m5 have the same record against
# every other model and split their own votes: exchangeable, so one rating.
WINS = [
    [0, 3, 3, 1, 1, 1],
    [0, 0, 1, 4, 3, 3],
    [3, 3, 0, 4, 3, 3],
    [3, 5, 1, 0, 4, 4],
    [2, 5, 3, 0, 0, 2],
    [2, 5, 3, 0, 2, 0],
]


def test_pairwise_leaderboard_gives_exchangeable_models_one_rank():
    pairs = [(i, j, w) for i, row in enumerate(WINS) for j, w in enumerate(row) if w]
    m1, m2, count = (list(x) for x in zip(*pairs, strict=True))
    board = lb.pairwise_leaderboard(
        [f"m{i}" for i in range(6)], m1, m2, [0] * len(m1), count, n_boot=0
    )
    theta = board.theta_rows[0]
    # Newton's steps may leave float noise between the two (they differ in the last
    # digits with some BLAS builds, not with others); either way it is not an order.
    assert theta[4] == pytest.approx(theta[5], abs=1e-12)
    assert board.rank[4] == board.rank[5]
    assert board.p_above[4, 5] == board.p_above[5, 4] == 0.0
    # the rank rule itself, with the noise made certain
    noisy = theta.copy()
    noisy[5] = np.nextafter(noisy[4], np.inf)
    assert lb.ranks_of(noisy)[0][4] == lb.ranks_of(noisy)[0][5]


# --- through the database: the selectors, the API and the page ----------------------


@pytest.fixture
def tied(researcher):
    cache.clear()
    human = {
        (i, m, SKILL): list(HUMAN[m][i]) for m in MODELS for i in range(3)
    }  # fmt: skip
    judge = {(i, m, SKILL): JUDGE[m] for m in MODELS for i in range(3)}
    return make_agreement_setup(
        researcher, human=human, judges=[judge], n_instructions=3, models=MODELS,
        name="tied-set",
    )  # fmt: skip


def _profile_ranks(result) -> dict:
    row = next(r for r in result["rows"] if r["key"] == f"skill:{SKILL}")
    return {e["model"]: e["rank"] for e in row["sources"]["humans"]["models"]}


@pytest.mark.django_db
def test_profiles_selector_api_and_page_show_the_tie(tied, researcher, client_for):
    want = dict(zip(MODELS, sps.rankdata(-exact_floats()).tolist(), strict=True))
    res = skill_profiles(dataset=tied.dataset, n_boot=20, use_cache=False)
    assert _profile_ranks(res) == want
    url = reverse("analysis_api:leaderboard-profiles", args=[tied.dataset.pk])
    resp = client_for(researcher).get(url, {"n_boot": 20})
    assert resp.status_code == 200
    assert _profile_ranks(resp.json())["f"] == _profile_ranks(resp.json())["g"] == 6.5
    page = client_for(researcher).get(
        reverse("analysis:leaderboard-profiles", args=[tied.dataset.pk]),
        {"n_boot": 20},
    )
    assert page.status_code == 200
    assert page.content.decode().count('<td class="rank">6.5') >= 2


@pytest.mark.django_db
def test_agreement_system_level_correlations_equal_scipy_on_exact_means(tied):
    res = agreement_compute(dataset=tied.dataset, n_boot=20, use_cache=False)
    models = res.row(f"skill:{SKILL}").judge(tied.runs[0].pk).models
    h = [e.human_mean.value for e in models.models]
    assert h[5] != h[6]
    exact, judge = exact_floats(), judge_means()
    assert models.spearman.value == pytest.approx(
        sps.spearmanr(exact, judge).statistic, abs=1e-12
    )
    assert models.kendall.value == pytest.approx(
        sps.kendalltau(exact, judge).statistic, abs=1e-12
    )


@pytest.mark.django_db
def test_pairwise_leaderboard_api_and_page_show_exchangeable_models_tied(
    researcher, client_for
):
    from annotation.models import HumanPreference, PreferencePair
    from tests.analysis.agreement_data import make_dataset

    names = tuple(f"m{i}" for i in range(6))
    dataset, responses = make_dataset("tied-votes", 1, names)
    for i in range(6):
        for j in range(i + 1, 6):
            pair = PreferencePair.objects.create(
                dataset=dataset,
                instruction=responses[(0, names[i])].instruction,
                response_1=responses[(0, names[i])],
                response_2=responses[(0, names[j])],
            )
            labels = ["1"] * WINS[i][j] + ["2"] * WINS[j][i]
            HumanPreference.objects.bulk_create(
                HumanPreference(pair=pair, label=v, origin="imported", voter=f"v{k}")
                for k, v in enumerate(labels)
            )
    url = reverse("analysis_api:leaderboard-pairwise", args=[dataset.pk])
    resp = client_for(researcher).get(url, {"n_boot": 0})
    assert resp.status_code == 200
    rank = {m["name"]: m["rank"] for m in resp.json()["models"]}
    assert rank["m4"] == rank["m5"]
    assert sorted(rank.values()) == [1, 2, 3, 4, 4, 6]  # 1 + the models rated above
    page = client_for(researcher).get(
        reverse("analysis:leaderboard-pairwise", args=[dataset.pk]), {"n_boot": 0}
    )
    assert page.status_code == 200
    assert page.content.decode().count("<td>4 [4, 4]</td>") == 2
