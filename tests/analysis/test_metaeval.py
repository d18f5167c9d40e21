"""analysis.stats meta-evaluation and probes: every definition on a small hand-computed case, plus kappa against
sklearn, Spearman against scipy, the bootstrap against a naive loop, and undefined cases.
No database."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as ss
from sklearn.metrics import cohen_kappa_score

from analysis import stats as me
from analysis.stats.bootstrap import draw_cell_counts, value_codes
from analysis.stats.correlations import pearson_from_sums, pearson_w
from analysis.stats.results import Result


def approx(x):
    return pytest.approx(x, rel=1e-12, abs=1e-12)


def walk_results(obj):
    """Every Result inside nested dicts / Probes."""
    if isinstance(obj, Result):
        yield obj
    elif isinstance(obj, me.Probe):
        yield obj.value
        yield from walk_results(obj.details)
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from walk_results(v)


def assert_no_nan(obj):
    for r in walk_results(obj):
        for x in (r.value, r.ci_low, r.ci_high):
            assert x is None or math.isfinite(x)
        if r.value is None:
            assert r.reason.startswith("not enough data")


# ---------------------------------------------------------------------------
# The main hand case
# ---------------------------------------------------------------------------
#
# pair  cat  ab     ba     human votes
# P1    x    "1"    "1"    "1", "1", "2"
# P2    x    "2"    "1"    "2"
# P3    x    "tie"  "tie"  "tie"
# P4    x    ""     "2"    "2"          (error in ab)
# P5    x    "1"    None   "tie"        (ba not run)
# P6    y    "1"    "2"    -            (no votes)
# P7    y    "2"    "tie"  "1"

HAND = me.PairwiseData(
    pair_id=[11, 12, 13, 14, 15, 16, 17],
    category=["x", "x", "x", "x", "x", "y", "y"],
    verdict_ab=["1", "2", "tie", "", "1", "1", "2"],
    verdict_ba=["1", "1", "tie", "2", None, "2", "tie"],
    vote_pair=[11, 11, 11, 12, 13, 14, 15, 17],
    vote_label=["1", "1", "2", "2", "tie", "2", "tie", "1"],
)


@pytest.fixture(scope="module")
def hand():
    return me.metaeval_report(HAND, n_boot=200, seed=1)


def test_accuracy_ties_as_a_class(hand):
    o = hand["overall"]
    # ab comparisons: P1 (1v1 ok, 1v1 ok, 1v2 no), P2 ok, P3 tie=tie ok, P4 error no,
    # P5 1vtie no, P7 2v1 no -> 4 / 8
    assert o["accuracy_ab"].value == approx(4 / 8)
    assert o["accuracy_ab"].n == 8
    # ba: P1 2 of 3, P2 1v2 no, P3 ok, P4 2v2 ok, P7 tie v1 no -> 4 / 7 (P5 absent)
    assert o["accuracy_ba"].value == approx(4 / 7)
    assert o["accuracy_ba"].n == 7
    # both orders present (P1 P2 P3 P4 P7, 7 comparisons): ab correct 2+1+1+0+0 = 4,
    # ba correct 2+0+1+1+0 = 4 -> mean 8 / 14; correct in both: P1 x2, P3 -> 3 / 7
    assert o["accuracy_mean"].value == approx(8 / 14)
    assert o["accuracy_mean"].n == 14
    assert o["accuracy_both"].value == approx(3 / 7)
    c = o["counts"]
    assert c["error_comparisons_ab"] == 1 and c["error_comparisons_ba"] == 0
    assert c["judge_tie_comparisons_ab"] == 1 and c["judge_tie_comparisons_ba"] == 2
    assert c["missing_ab"] == 0 and c["missing_ba"] == 1
    assert (c["pairs"], c["pairs_with_votes"], c["votes"]) == (7, 6, 8)
    assert (c["human_votes_1"], c["human_votes_2"], c["human_votes_tie"]) == (3, 3, 2)
    assert c["comparisons_both"] == 7


def test_accuracy_without_ties(hand):
    o = hand["overall"]
    # ab: drop P3 (both tie) and P5 (human tie): P1 (2 of 3), P2 ok, P4 error, P7 no -> 3/6
    assert o["accuracy_ab_no_ties"].value == approx(3 / 6)
    assert o["accuracy_ab_no_ties"].n == 6
    # ba: drop P3 and P7 (judge tie): P1 (2 of 3), P2 no, P4 ok -> 3 / 5
    assert o["accuracy_ba_no_ties"].value == approx(3 / 5)
    # both: drop P3, P7 -> P1 (3), P2, P4 = 5 comparisons; ab ok 3, ba ok 3 -> 6/10;
    # correct in both: P1's two "1" votes -> 2/5
    assert o["accuracy_mean_no_ties"].value == approx(6 / 10)
    assert o["accuracy_both_no_ties"].value == approx(2 / 5)
    assert o["counts"]["comparisons_both_no_ties"] == 5


def test_kappa_by_hand_and_sklearn(hand):
    o = hand["overall"]
    # ab comparisons (judge, human): (1,1) (1,1) (1,2) (2,2) (tie,tie) ("",2) (1,tie) (2,1)
    # p_o = 4/8; judge marginals 1:4 2:2 tie:1 "":1, human 1:3 2:3 tie:2
    # p_e = (4*3 + 2*3 + 1*2 + 1*0) / 64 = 20/64; kappa = (0.5 - 0.3125) / 0.6875 = 3/11
    assert o["kappa_ab"].value == approx(3 / 11)
    judge = ["1", "1", "1", "2", "tie", "", "1", "2"]
    human = ["1", "1", "2", "2", "tie", "2", "tie", "1"]
    assert cohen_kappa_score(judge, human) == approx(3 / 11)
    assert me.cohen_kappa(judge, human) == approx(3 / 11)
    # without ties: drop (tie,tie) and (1,tie): 6 comparisons, p_o = 3/6,
    # judge 1:3 2:2 "":1, human 1:3 2:3 -> p_e = (9 + 6) / 36; kappa = (1/2 - 15/36) / (21/36)
    assert o["kappa_ab_no_ties"].value == approx((0.5 - 15 / 36) / (21 / 36))
    assert o["kappa_ab_no_ties"].n == 6


def test_consistency_and_order_bias(hand):
    o = hand["overall"]
    # usable in both orders: P1 (1,1) P2 (2,1) P3 (tie,tie) P6 (1,2) P7 (2,tie);
    # P4 has an error, P5 no ba. consistent P1 P3 -> 2/5; inconsistent 3: P6 first
    # position (A won twice), P2 second position, P7 involves a tie
    assert o["consistency"].value == approx(2 / 5)
    assert o["consistency"].n == 5
    assert o["first_position_share"].value == approx(1 / 3)
    assert o["second_position_share"].value == approx(1 / 3)
    c = o["counts"]
    assert (c["error_pairs"], c["tie_inconsistent_pairs"]) == (1, 1)
    assert (c["first_position_pairs"], c["second_position_pairs"]) == (1, 1)


def test_per_category(hand):
    x, y = hand["categories"]["x"], hand["categories"]["y"]
    # x: ab comparisons P1..P5: correct 2+1+1 of 7
    assert x["accuracy_ab"].value == approx(4 / 7)
    # y: only P7 has a vote: ab 2 v 1 wrong; consistency P6, P7 both inconsistent
    assert y["accuracy_ab"].value == approx(0.0)
    assert y["consistency"].value == approx(0.0)
    assert y["counts"]["pairs"] == 2 and y["counts"]["pairs_with_votes"] == 1
    assert set(hand["categories"]) == {"x", "y"}


def test_report_has_no_nan(hand):
    assert_no_nan(hand)


# ---------------------------------------------------------------------------
# Several humans on a pair: per-vote comparisons and the leave-one-out ceiling
# ---------------------------------------------------------------------------


def test_every_human_vote_is_a_comparison():
    # one pair, judge "1" in both orders, votes 1, 1, 2, tie -> 2 of 4 per order
    d = me.PairwiseData([1], ["1"], ["1"], [1, 1, 1, 1], ["1", "1", "2", "tie"])
    o = me.metaeval_report(d, n_boot=10)["overall"]
    assert o["accuracy_ab"].value == approx(0.5) and o["accuracy_ab"].n == 4
    assert o["accuracy_both"].value == approx(0.5)


def test_human_leave_one_out():
    # Q1 1,1,1: each vote vs majority of the others (1) -> 3 agree
    # Q2 1,1,2: a "1" sees {1,2} -> tied, skipped (x2); the "2" sees {1,1} -> disagrees
    # Q3 1,tie,tie: the "1" sees majority tie -> disagrees; a tie sees {1,tie} -> tied (x2)
    # Q4 2,2,2,1: each "2" sees {2,2,1} -> agree (x3); the "1" sees {2,2,2} -> disagrees
    # Q5 2: single voter, skipped
    # scored 3+1+1+4 = 9, agree 6; without ties the Q3 "1" vote is dropped -> 6/8
    votes = {
        1: ["1", "1", "1"],
        2: ["1", "1", "2"],
        3: ["1", "tie", "tie"],
        4: ["2", "2", "2", "1"],
        5: ["2"],
    }
    vp = [p for p, labels in votes.items() for _ in labels]
    vl = [x for labels in votes.values() for x in labels]
    d = me.PairwiseData(list(votes), ["1"] * 5, [None] * 5, vp, vl)
    o = me.metaeval_report(d, n_boot=50)["overall"]
    assert o["human_loo"].value == approx(6 / 9) and o["human_loo"].n == 9
    assert o["human_loo_no_ties"].value == approx(6 / 8)
    c = o["counts"]
    assert (c["loo_votes"], c["loo_tied_majority"], c["loo_single_voter"]) == (9, 4, 1)


# ---------------------------------------------------------------------------
# Reward-model style sets
# ---------------------------------------------------------------------------


def test_rm_subsets_and_sections():
    # s1: R1 ab 1 / ba 1, vote 1 -> 1; R2 ab 2 / ba tie, vote 1 -> (0 + 0.5)/2 = 0.25;
    #     R3 ab "" / ba absent, vote 2 -> 0.5          => s1 = 1.75 / 3
    # s2: R4 ab 2 / ba 2, votes 2, 2 -> 2; R5 human tie -> dropped  => s2 = 2 / 2
    # section [s1, s2, s3]: (1.75 + 2) / (3 + 2) = 0.75 = (3 * 1.75/3 + 2 * 1) / 5
    d = me.PairwiseData(
        pair_id=["R1", "R2", "R3", "R4", "R5"],
        category=["s1", "s1", "s1", "s2", "s2"],
        verdict_ab=["1", "2", "", "2", "tie"],
        verdict_ba=["1", "tie", None, "2", "1"],
        vote_pair=["R1", "R2", "R3", "R4", "R4", "R5"],
        vote_label=["1", "1", "2", "2", "2", "tie"],
    )
    rep = me.metaeval_report(d, {"sec": ["s1", "s2", "s3"]}, n_boot=100)
    assert rep["categories"]["s1"]["rm_accuracy"].value == approx(1.75 / 3)
    assert rep["categories"]["s2"]["rm_accuracy"].value == approx(1.0)
    assert rep["categories"]["s2"]["counts"]["rm_human_ties"] == 1
    sec = rep["sections"]["sec"]
    assert sec["score"].value == approx(0.75) and sec["score"].n == 5
    assert sec["subsets"] == {"s1": 3, "s2": 2}
    assert sec["missing_subsets"] == ["s3"]
    assert rep["overall"]["rm_accuracy"].value == approx(0.75)
    assert_no_nan(rep)


# ---------------------------------------------------------------------------
# Kappa against sklearn on random data
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_kappa_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    n = 60
    jl = np.array(["1", "2", "tie", "", None], dtype=object)
    ab = jl[rng.choice(5, n, p=[0.35, 0.35, 0.1, 0.1, 0.1])]
    ba = jl[rng.choice(5, n, p=[0.35, 0.35, 0.1, 0.1, 0.1])]
    nv = rng.integers(0, 4, n)
    vp = np.repeat(np.arange(n), nv)
    vl = np.array(["1", "2", "tie"], dtype=object)[rng.choice(3, vp.size)]
    o = me.metaeval_report(me.PairwiseData(np.arange(n), ab, ba, vp, vl), n_boot=0)[
        "overall"
    ]
    pooled_j, pooled_h = [], []
    for name, v in (("ab", ab), ("ba", ba)):
        j = [v[p] for p in vp if v[p] is not None]
        h = [lab for p, lab in zip(vp, vl, strict=True) if v[p] is not None]
        pooled_j += j
        pooled_h += h
        assert o[f"kappa_{name}"].value == approx(cohen_kappa_score(j, h))
        assert o[f"accuracy_{name}"].value == approx(
            np.mean(np.array(j) == np.array(h))
        )
        keep = [a != "tie" and b != "tie" for a, b in zip(j, h, strict=True)]
        jn = [a for a, k in zip(j, keep, strict=True) if k]
        hn = [b for b, k in zip(h, keep, strict=True) if k]
        assert o[f"kappa_{name}_no_ties"].value == approx(cohen_kappa_score(jn, hn))
    assert o["kappa"].value == approx(cohen_kappa_score(pooled_j, pooled_h))


# ---------------------------------------------------------------------------
# Undefined cases
# ---------------------------------------------------------------------------


def test_empty_data_is_not_enough_data():
    rep = me.metaeval_report(me.PairwiseData([], [], []), {"s": ["a"]}, n_boot=20)
    o = rep["overall"]
    for key in ("accuracy_ab", "kappa", "consistency", "human_loo", "rm_accuracy"):
        assert o[key].value is None and o[key].n == 0
        assert o[key].reason.startswith("not enough data")
    assert rep["sections"]["s"]["score"].value is None
    assert rep["probes"]["order"].value.value is None
    assert_no_nan(rep)


def test_one_class_only():
    # judge and humans all "1": accuracy 1, kappa undefined (p_e = 1), no inconsistency
    d = me.PairwiseData([1, 2, 3], ["1"] * 3, ["1"] * 3, [1, 2, 3], ["1"] * 3)
    o = me.metaeval_report(d, n_boot=30)["overall"]
    assert o["accuracy_ab"].value == approx(1.0)
    assert o["kappa"].value is None and o["kappa"].n == 6
    assert o["kappa"].reason.startswith("not enough data")
    assert o["first_position_share"].value is None
    assert o["first_position_share"].n == 0
    assert me.cohen_kappa(["1", "1"], ["1", "1"]) is None
    assert_no_nan(o)


# ---------------------------------------------------------------------------
# Input validation and the row pivot
# ---------------------------------------------------------------------------


def test_bad_input_names_field_and_index():
    with pytest.raises(ValueError, match=r"verdict_ab\[1\] = 'A'"):
        me.metaeval_report(me.PairwiseData([1, 2], ["1", "A"], ["1", "2"]))
    with pytest.raises(ValueError, match=r"vote_label\[0\] = ''"):
        me.metaeval_report(me.PairwiseData([1], ["1"], ["1"], [1], [""]))
    with pytest.raises(ValueError, match=r"vote_pair\[1\] = 9 is not a known pair_id"):
        me.metaeval_report(me.PairwiseData([1], ["1"], ["1"], [1, 9], ["1", "2"]))
    with pytest.raises(ValueError, match="pair_id must be unique"):
        me.metaeval_report(me.PairwiseData([1, 1], ["1", "1"], ["1", "1"]))
    with pytest.raises(ValueError, match="verdict_ba must have one entry per pair"):
        me.metaeval_report(me.PairwiseData([1, 2], ["1", "1"], ["1"]))
    with pytest.raises(ValueError, match="length_1"):
        me.metaeval_report(me.PairwiseData([1], ["1"], ["1"], length_1=[float("nan")]))


def test_bad_sections_and_n_boot():
    with pytest.raises(ValueError, match=r"sections\['chat'\] must be a list"):
        me.metaeval_report(HAND, {"chat": "s1"})
    with pytest.raises(ValueError, match="n_boot"):
        me.metaeval_report(HAND, n_boot=-1)


def test_vote_ids_of_another_type_are_refused():
    with pytest.raises(ValueError, match=r"vote_pair\[0\] = '1' is not a known"):
        me.metaeval_report(
            me.PairwiseData([1, 2], ["1", "1"], ["1", "1"], ["1"], ["1"])
        )


def test_from_verdict_rows():
    d = me.PairwiseData.from_verdict_rows(
        pair_id=[5, 6, 7],
        verdict_pair=[5, 5, 6, 7],
        verdict_order=["ab", "ba", "ab", "ba"],
        verdict=["1", "2", "", "tie"],
        vote_pair=[5],
        vote_label=["1"],
        category=["a", "b", "a"],
    )
    assert list(d.verdict_ab) == ["1", "", None]
    assert list(d.verdict_ba) == ["2", None, "tie"]
    with pytest.raises(ValueError, match="verdict row 1: second verdict for pair 5"):
        me.PairwiseData.from_verdict_rows([5], [5, 5], ["ab", "ab"], ["1", "2"])
    with pytest.raises(ValueError, match=r"verdict_order\[0\] = 'xy'"):
        me.PairwiseData.from_verdict_rows([5], [5], ["xy"], ["1"])
    with pytest.raises(ValueError, match=r"verdict_pair\[0\] = 8"):
        me.PairwiseData.from_verdict_rows([5], [8], ["ab"], ["1"])


# ---------------------------------------------------------------------------
# Bootstrap
# ---------------------------------------------------------------------------


def test_draw_is_a_multinomial_over_cells():
    rng = np.random.default_rng(3)
    counts = np.array([1, 2, 40, 3, 100, 1])  # small and big cells
    w = draw_cell_counts(counts, 20000, rng, small=5)
    assert (w.sum(axis=1) == counts.sum()).all()
    p = counts / counts.sum()
    assert w.mean(axis=0) == pytest.approx(counts, rel=0.02)
    var = counts.sum() * p * (1 - p)
    assert w.var(axis=0) == pytest.approx(var, rel=0.08)


def test_ci_matches_a_naive_pair_bootstrap():
    rng = np.random.default_rng(0)
    n = 400
    lab = np.array(["1", "2", "tie"], dtype=object)
    truth = rng.choice(3, n)
    ab = np.where(rng.random(n) < 0.7, truth, rng.choice(3, n))
    d = me.PairwiseData(np.arange(n), lab[ab], lab[ab], np.arange(n), lab[truth])
    res = me.metaeval_report(d, n_boot=4000, seed=2)["overall"]["accuracy_ab"]
    ok = (ab == truth).astype(float)
    boot = ok[rng.integers(0, n, (4000, n))].mean(axis=1)
    lo, hi = np.quantile(boot, [0.025, 0.975])
    assert res.value == approx(ok.mean())
    assert res.ci_low == pytest.approx(lo, abs=0.012)
    assert res.ci_high == pytest.approx(hi, abs=0.012)


def test_seeded():
    a = me.metaeval_report(HAND, n_boot=100, seed=5)["overall"]["accuracy_ab"]
    b = me.metaeval_report(HAND, n_boot=100, seed=5)["overall"]["accuracy_ab"]
    assert a == b


# ---------------------------------------------------------------------------
# Probes
# ---------------------------------------------------------------------------


def test_order_probe():
    # usable: (1,2) (1,2) (2,1) (1,1) (tie,1); ("",1) error, (1,None) absent
    # consistent 1 of 5; inconsistent 4: first 2, second 1, tie 1 -> value 2/3
    p = me.order_probe(
        ["1", "1", "2", "1", "tie", "", "1"], ["2", "2", "1", "1", "1", "1", None]
    )
    assert p.value.value == approx(2 / 3) and p.value.n == 3
    assert p.baseline == 0.5
    assert p.details["consistency"].value == approx(1 / 5)
    assert p.details["first_position_share"].value == approx(2 / 4)
    assert p.details["second_position_share"].value == approx(1 / 4)
    assert p.value.ci_low is not None


def test_length_probe():
    # a (1,1) 100/50 longer wins; b (2,2) 100/50 shorter wins; c (2,2) 30/80 longer wins;
    # d (1,1) 60/60 equal, dropped; e (1,2) inconsistent; f tie; g (1,1) 200/100 longer
    # -> P = 3/4, |P - 0.5| = 0.25. Humans (non-tie, unequal lengths): a "1" longer,
    # b "2" shorter (its tie vote ignored), c "2" longer; d's vote ignored -> 2/3
    p = me.length_probe(
        ["1", "2", "2", "1", "1", "tie", "1"],
        ["1", "2", "2", "1", "2", "tie", "1"],
        [100, 100, 30, 60, 100, 100, 200],
        [50, 50, 80, 60, 10, 10, 100],
        vote_pair_index=[0, 1, 1, 2, 3],
        vote_label=["1", "2", "tie", "2", "1"],
        n_boot=300,
    )
    assert p.value.value == approx(0.75) and p.value.n == 4
    assert p.details["deviation"].value == approx(0.25)
    assert p.details["human"].value == approx(2 / 3)
    assert p.details["equal_length_pairs"] == 1
    assert p.details["consistent_non_tie_pairs"] == 5
    assert p.baseline == 0.5
    assert 0 <= p.details["deviation"].ci_low <= p.details["deviation"].ci_high <= 0.5


def test_self_preference_probe():
    # s1 (1,1) own 1, vote 1: judge 2 of 2 verdicts own, human 1 of 1
    # s2 (2,tie) own 1, votes 2, tie: judge 0 + 0.5 of 2, human 0 + 0.5 of 2
    # s3 (2,"") own 2, vote 1: judge 1 of 1 usable, human 0 of 1
    # s4 both own, s5 neither, s6 no votes, s7 no usable verdict: excluded
    # judge 3.5 / 5 = 0.7, human 1.5 / 4 = 0.375, value 0.325
    p = me.self_preference_probe(
        ["1", "2", "2", "1", "1", "1", ""],
        ["1", "tie", "", "1", "1", "2", None],
        [True, True, False, True, False, True, True],
        [False, False, True, True, False, False, False],
        vote_pair_index=[0, 1, 1, 2, 3, 4, 6],
        vote_label=["1", "2", "tie", "1", "1", "1", "1"],
        n_boot=200,
    )
    assert p.details["judge_rate"].value == approx(0.7)
    assert p.details["human_rate"].value == approx(0.375)
    assert p.value.value == approx(0.325) and p.value.n == 3
    assert p.details["own_family_pairs"] == 5
    assert p.baseline == 0.0


def test_score_inflation_probe():
    # own: diffs 1, 0 -> 0.5; others: -1, 0, 1.5 -> 1/6; value 1/3; one NaN item dropped
    p = me.score_inflation_probe(
        [5, 4, 3, 2, 5, np.nan],
        [4, 4, 4, 2, 3.5, 3],
        [True, True, False, False, False, False],
        n_boot=200,
    )
    assert p.details["inflation_own"].value == approx(0.5)
    assert p.details["inflation_other"].value == approx(1 / 6)
    assert p.value.value == approx(1 / 3) and p.value.n == 5
    assert p.details["dropped_missing"] == 1


def test_cue_probe():
    # (base, cued, target): (1,1,1) (2,1,1) (2,2,1) (1,2,1) (2,2,2) ("",1,1) (tie,1,1)
    # used 6 (the error slot dropped): follow base 3/6, cued 4/6 -> value 1/6;
    # base away from target: slots 2, 3, 7 -> 2 flip toward (2/3); base on target:
    # slots 1, 4, 5 -> 1 flips away (1/3)
    base = ["1", "2", "2", "1", "2", "", "tie"]
    cued = ["1", "1", "2", "2", "2", "1", "1"]
    tgt = ["1", "1", "1", "1", "2", "1", "1"]
    p = me.cue_probe(base, cued, tgt, n_boot=200)
    assert p.value.value == approx(1 / 6) and p.value.n == 6
    assert p.details["follow_base"].value == approx(0.5)
    assert p.details["follow_cued"].value == approx(4 / 6)
    assert p.details["flip_toward"].value == approx(2 / 3)
    assert p.details["flip_away"].value == approx(1 / 3)
    assert p.details["dropped_unusable"] == 1
    clustered = me.cue_probe(base, cued, tgt, pair_id=[1, 1, 2, 2, 3, 3, 4])
    assert clustered.value.value == approx(1 / 6)
    with pytest.raises(ValueError, match=r"cue_target\[0\]"):
        me.cue_probe(["1"], ["1"], ["tie"])


def test_pointwise_length_probe_by_hand_and_scipy():
    p = me.pointwise_length_probe([1, 2, 3, 4], [4, 3, 2, 1], [10, 20, 30, 40])
    assert p.value.value == approx(2.0)  # rho judge 1, humans -1
    rng = np.random.default_rng(4)
    j = rng.integers(1, 6, 80).astype(float)
    h = np.round(rng.normal(3, 1, 80) * 3) / 3
    ln = rng.integers(10, 60, 80)
    j[3] = np.nan
    p = me.pointwise_length_probe(j, h, ln, n_boot=100)
    k = ~np.isnan(j)
    rj = ss.spearmanr(j[k], ln[k]).statistic
    rh = ss.spearmanr(h[k], ln[k]).statistic
    assert p.details["judge_spearman"].value == approx(rj)
    assert p.details["human_spearman"].value == approx(rh)
    assert p.value.value == approx(rj - rh)
    assert p.details["dropped_missing"] == 1


def test_weighted_spearman_equals_scipy_on_expanded_data():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 5, 30).astype(float)
    y = rng.normal(size=30).round(1)
    w = rng.integers(0, 4, (6, 30)).astype(float)
    got = me.spearman_w(w, x, y)
    for b in range(6):
        idx = np.repeat(np.arange(30), w[b].astype(int))
        assert got[b] == approx(ss.spearmanr(x[idx], y[idx]).statistic)
        assert me.midranks_w(w[b : b + 1], x)[0][idx] == approx(ss.rankdata(x[idx]))


def test_sorted_fast_spearman_equals_the_general_one():
    rng = np.random.default_rng(11)
    x = np.sort(rng.integers(0, 25, 200))
    y1 = rng.integers(0, 5, 200)
    y2 = rng.normal(size=200).round(1)
    w = rng.integers(0, 3, (15, 200)).astype(float)
    w[0] = 0
    w[1] = 0
    w[1, 7] = 5  # a single cell: both sides constant -> undefined
    got = me.spearman_sorted_w(w, x, [value_codes(y1)[1], value_codes(y2)[1]])
    for g, y in zip(got, (y1, y2), strict=True):
        ref = me.spearman_w(w, x, y)
        assert np.isnan(g[0]) and np.isnan(g[1]) and np.isnan(ref[1])
        assert g[2:] == pytest.approx(ref[2:], rel=1e-10)


def test_halo_probe():
    # judge: three identical skill columns -> r = 1 for every pair, mean 1
    # humans: s0 = s1 = 1..4, s2 reversed -> r01 = 1, r02 = r12 = -1, mean -1/3
    # value 1 - (-1/3) = 4/3. A fifth response lacks s2 for the judge: it only
    # enters the (s0, s1) pair, where both sides stay perfectly correlated.
    judge = np.array([[1, 1, 1], [2, 2, 2], [3, 3, 3], [4, 4, 4], [5, 5, np.nan]])
    human = np.array([[1, 1, 4], [2, 2, 3], [3, 3, 2], [4, 4, 1], [5, 5, 5]])
    p = me.halo_probe(judge, human, n_boot=200)
    assert p.details["judge_mean_r"].value == approx(1.0)
    assert p.details["human_mean_r"].value == approx(-1 / 3)
    assert p.value.value == approx(4 / 3)
    assert p.details["skill_pairs"] == 3


def test_pearson_from_sums_equals_pearson_w():
    rng = np.random.default_rng(5)
    x = rng.integers(1, 6, 40).astype(float)
    y = x + rng.normal(0, 1, 40).round(1)
    w = rng.integers(0, 3, (10, 40)).astype(float)
    w[0] = 0
    w[0, :3] = 1
    x[:3] = 4.0  # row 0 sees a constant x -> undefined
    xc, yc = x - x.mean(), y - y.mean()
    sums = [w @ v for v in (np.ones(40), xc, yc, xc * xc, yc * yc, xc * yc)]
    got = pearson_from_sums(*sums)
    ref = pearson_w(w, x, y)
    assert np.isnan(got[0]) and np.isnan(ref[0])
    assert got[1:] == pytest.approx(ref[1:], rel=1e-10)


def test_halo_matches_numpy_corrcoef():
    rng = np.random.default_rng(9)
    j = rng.integers(1, 6, (50, 4)).astype(float)
    h = rng.integers(1, 6, (50, 4)) + rng.random((50, 4)).round(1)
    p = me.halo_probe(j, h, n_boot=0)
    cj = np.corrcoef(j.T)[np.triu_indices(4, 1)].mean()
    ch = np.corrcoef(h.T)[np.triu_indices(4, 1)].mean()
    assert p.details["judge_mean_r"].value == approx(cj)
    assert p.value.value == approx(cj - ch)


@pytest.mark.parametrize(
    "probe",
    [
        lambda: me.order_probe([], []),
        lambda: me.length_probe([], [], [], []),
        lambda: me.self_preference_probe([], [], [], [], [], []),
        lambda: me.score_inflation_probe([], [], []),
        lambda: me.cue_probe([], [], []),
        lambda: me.pointwise_length_probe([], [], []),
        lambda: me.halo_probe(np.zeros((0, 3)), np.zeros((0, 3))),
        lambda: me.pointwise_length_probe([3, 3, 3], [1, 2, 3], [5, 6, 7]),
    ],
)
def test_probes_without_data_are_not_enough_data(probe):
    p = probe()
    assert p.value.value is None
    assert p.value.reason.startswith("not enough data")
    assert_no_nan(p)


def test_report_probes_from_lengths_and_families():
    d = me.PairwiseData(
        pair_id=[1, 2],
        verdict_ab=["1", "2"],
        verdict_ba=["1", "1"],
        vote_pair=[1, 2],
        vote_label=["1", "2"],
        length_1=[10, 5],
        length_2=[3, 9],
        own_1=[True, False],
        own_2=[False, False],
    )
    probes = me.metaeval_report(d, n_boot=50)["probes"]
    assert set(probes) == {"order", "length", "self_preference"}
    assert probes["length"].value.value == approx(1.0)  # pair 1: "1" longer, wins
    assert probes["self_preference"].details["judge_rate"].value == approx(1.0)


# ---------------------------------------------------------------------------
# Random data against a naive loop written straight from the definitions
# ---------------------------------------------------------------------------


def naive(ab, ba, votes):
    """Per-comparison / per-pair loops; votes: list of label lists per pair."""
    acc = {k: [0, 0] for k in ("ab", "ba", "ab_no_ties", "ba_no_ties")}
    mean = [0, 0]
    both = [0, 0]
    mean_nt = [0, 0]
    both_nt = [0, 0]
    rm = [0.0, 0]
    cons = [0, 0]
    first = second = 0
    loo = [0, 0]
    loo_nt = [0, 0]
    for a, b, vs in zip(ab, ba, votes, strict=True):
        if a in ("1", "2", "tie") and b in ("1", "2", "tie"):
            cons[1] += 1
            cons[0] += a == b
            first += (a, b) == ("1", "2")
            second += (a, b) == ("2", "1")
        for h in vs:
            for name, v in (("ab", a), ("ba", b)):
                if v is None:
                    continue
                acc[name][1] += 1
                acc[name][0] += v == h
                if v != "tie" and h != "tie":
                    acc[name + "_no_ties"][1] += 1
                    acc[name + "_no_ties"][0] += v == h
            if a is not None and b is not None:
                mean[1] += 2
                mean[0] += (a == h) + (b == h)
                both[1] += 1
                both[0] += a == h and b == h
                if "tie" not in (a, b, h):
                    mean_nt[1] += 2
                    mean_nt[0] += (a == h) + (b == h)
                    both_nt[1] += 1
                    both_nt[0] += a == h and b == h
            present = [v for v in (a, b) if v is not None]
            if h != "tie" and present:
                rm[1] += 1
                rm[0] += np.mean(
                    [
                        1.0 if v == h else 0.5 if v in ("tie", "") else 0.0
                        for v in present
                    ]
                )
        for i, h in enumerate(vs):
            others = vs[:i] + vs[i + 1 :]
            if not others:
                continue
            counts = {lab: others.count(lab) for lab in ("1", "2", "tie")}
            top = max(counts.values())
            winners = [lab for lab, c in counts.items() if c == top]
            if len(winners) > 1:
                continue
            loo[1] += 1
            loo[0] += h == winners[0]
            if "tie" not in (h, winners[0]):
                loo_nt[1] += 1
                loo_nt[0] += h == winners[0]
    incons = cons[1] - cons[0]
    r = {f"accuracy_{k}": v for k, v in acc.items()}
    r.update(
        accuracy_mean=mean,
        accuracy_both=both,
        accuracy_mean_no_ties=mean_nt,
        accuracy_both_no_ties=both_nt,
        rm_accuracy=rm,
        consistency=cons,
        first_position_share=[first, incons],
        second_position_share=[second, incons],
        human_loo=loo,
        human_loo_no_ties=loo_nt,
    )
    return r


@pytest.mark.parametrize("seed", range(4))
def test_report_matches_naive_loops(seed):
    rng = np.random.default_rng(seed)
    n = 150
    jl = np.array(["1", "2", "tie", "", None], dtype=object)
    ab = list(jl[rng.choice(5, n, p=[0.35, 0.3, 0.15, 0.1, 0.1])])
    ba = list(jl[rng.choice(5, n, p=[0.3, 0.35, 0.15, 0.1, 0.1])])
    votes = [
        list(rng.choice(["1", "2", "tie"], rng.integers(0, 5), p=[0.45, 0.4, 0.15]))
        for _ in range(n)
    ]
    cat = rng.choice(["a", "b", "c"], n)
    vp = [i for i, vs in enumerate(votes) for _ in vs]
    vl = [v for vs in votes for v in vs]
    rep = me.metaeval_report(
        me.PairwiseData(np.arange(n), ab, ba, vp, vl, category=cat), n_boot=20
    )
    groups = [("overall", np.ones(n, bool))]
    groups += [(c, cat == c) for c in "abc"]
    for name, mask in groups:
        got = rep["overall"] if name == "overall" else rep["categories"][name]
        idx = np.flatnonzero(mask)
        want = naive(
            [ab[i] for i in idx], [ba[i] for i in idx], [votes[i] for i in idx]
        )
        for key, (num, den) in want.items():
            res = got[key]
            assert res.n == den, (name, key)
            if den == 0:
                assert res.value is None
            else:
                assert res.value == approx(num / den), (name, key)
