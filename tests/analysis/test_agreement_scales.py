"""Agreement on any ordinal scale, from the database: a 0-4 five-criterion rubric,
a 1-10 rubric and a mixed one (0-4, 1-10 and a categorical criterion), checked
against scipy, scikit-learn and krippendorff on the same arrays."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from analysis.selectors.agreement import agreement_compute, agreement_disagreements
from analysis.selectors.agreement.result import RowScale
from tests.analysis.scale_data import make_rubric, make_scale_setup
from tests.analysis.test_agreement_selectors import reference_arrays

pytestmark = pytest.mark.django_db

MODELS = ("alpha", "beta", "gamma")
N_INSTR = 10


def tables(skills: dict[str, tuple[int, int]], seed: int = 3, n_instr: int = N_INSTR):
    """Three raters (some missing, some N/A) and two judges (one of two samples) on
    each skill's own scale; the lowest value (0 on 0-4) is used often."""
    rng = np.random.default_rng(seed)
    human, judge_a, judge_b = {}, {}, {}
    for i in range(n_instr):
        for mi, m in enumerate(MODELS):
            for key, (lo, hi) in skills.items():
                span = hi - lo
                q = lo + span * (0.2 + 0.3 * mi) + rng.normal(0, span / 6)

                def draw(shift=0.0, q=q, lo=lo, hi=hi, sd=span / 6):
                    return int(np.clip(round(q + shift + rng.normal(0, sd)), lo, hi))

                scores = []
                for _ in range(3):
                    u = rng.random()
                    if u < 0.12:
                        scores.append("-")
                    elif u < 0.17:
                        scores.append(None)
                    else:
                        scores.append(draw())
                human[(i, m, key)] = scores
                judge_a[(i, m, key)] = draw(span / 10)
                judge_b[(i, m, key)] = [draw(), draw()]
    first = next(iter(skills))
    judge_a[(0, "alpha", first)] = None
    return human, judge_a, judge_b


def row(result, key):
    return result.row(key)


def check_skill(res, rid, key, values, human, judge, sample=None):
    """Every figure of one criterion's row equals the reference libraries."""
    mat, mean, med, jv = reference_arrays(human, judge, {key}, sample=sample)
    j = row(res, f"skill:{key}").judge(rid)
    labels = [int(v) for v in values]
    assert j.scored_by_both == len(jv) > 10
    assert j.stat("spearman").value == pytest.approx(sps.spearmanr(jv, mean)[0])
    assert j.stat("kendall").value == pytest.approx(sps.kendalltau(jv, mean)[0])
    assert j.stat("pearson").value == pytest.approx(sps.pearsonr(jv, mean)[0])
    assert j.stat("qwk").value == pytest.approx(
        cohen_kappa_score(
            jv.astype(int), med.astype(int), weights="quadratic", labels=labels
        )
    )
    assert j.stat("exact").value == pytest.approx(np.mean(jv == med))
    assert j.stat("within1").value == pytest.approx(np.mean(np.abs(jv - med) <= 1))
    assert j.stat("leniency").value == pytest.approx(np.mean(jv - mean))
    assert j.stat("mae").value == pytest.approx(np.mean(np.abs(jv - mean)))
    assert np.array_equal(
        np.array(j.confusion),
        confusion_matrix(jv.astype(int), med.astype(int), labels=labels),
    )
    for level in ("ordinal", "interval"):
        assert j.human.stat(f"alpha_{level}").value == pytest.approx(
            krippendorff.alpha(
                reliability_data=mat, level_of_measurement=level, value_domain=labels
            )
        )
        assert j.stat(f"alpha_{level}_with_judge").value == pytest.approx(
            krippendorff.alpha(
                reliability_data=np.vstack([mat, jv[None, :]]),
                level_of_measurement=level,
                value_domain=labels,
            )
        )
    # the ceiling: every item of the criterion with 2+ human scores
    all_mat = np.array(
        [
            [np.nan if x in ("-", None) else x for x in sc]
            for (i, m, k), sc in human.items()
            if k == key
        ],
        float,
    ).T
    ceiling = row(res, f"skill:{key}").human
    assert ceiling.stat("alpha_ordinal").value == pytest.approx(
        krippendorff.alpha(
            reliability_data=all_mat,
            level_of_measurement="ordinal",
            value_domain=labels,
        )
    )
    assert list(row(res, f"skill:{key}").scale.values) == labels
    return mat, mean, med, jv


ZERO_FOUR = {f"c{k}": (0, 4) for k in range(5)}


@pytest.fixture
def zero_four(researcher):
    rubric = make_rubric(
        "zero-four",
        [{"key": k, "low": 0, "high": 4, "group": "all"} for k in ZERO_FOUR],
        groups=[{"key": "all", "name": "Every criterion"}],
    )
    human, judge_a, judge_b = tables(ZERO_FOUR)
    s = make_scale_setup(
        rubric,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        name="zf",
    )
    s.tables = (human, judge_a, judge_b)
    return s


def test_zero_to_four_rubric_matches_the_reference_libraries(zero_four):
    human, judge_a, judge_b = zero_four.tables
    a, b = (str(r.pk) for r in zero_four.runs)
    res = agreement_compute(
        dataset=zero_four.dataset,
        campaign_ids=[zero_four.campaign.pk],
        run_ids=[r.pk for r in zero_four.runs],
        n_boot=100,
    )
    zeros = 0
    for key in ZERO_FOUR:
        _, _, _, jv = check_skill(res, a, key, range(5), human, judge_a)
        zeros += int((jv == 0).sum())
        check_skill(res, b, key, range(5), human, judge_b)
    assert zeros >= 3  # a 0 is a score, not an N/A
    first = row(res, "skill:c0").judge(a).counts
    assert first["judge_na"] == 1
    # the pooled rows share one scale: pooled figures on 0-4
    _, mean, med, jv = reference_arrays(human, judge_a, set(ZERO_FOUR))
    for key in ("overall", "ability:Every criterion"):
        r = row(res, key)
        assert r.note == "" and r.scale.label == "0-4"
        j = r.judge(a)
        assert j.stat("spearman").value == pytest.approx(sps.spearmanr(jv, mean)[0])
        assert j.stat("qwk").value == pytest.approx(
            cohen_kappa_score(
                jv.astype(int), med.astype(int), weights="quadratic", labels=range(5)
            )
        )
        assert np.array(j.confusion).shape == (5, 5)
    # model means on the criterion's own scale
    prof = {e.model: e for e in row(res, "overall").profiles.view("all")}
    keep = reference_arrays(human, judge_a, set(ZERO_FOUR), lambda i, m: m == "alpha")
    assert prof["alpha"].judges[a].value == pytest.approx(keep[3].mean())
    assert row(res, "overall").profiles_scale == "0-4"


def test_disagreements_use_the_criterion_scale(zero_four):
    human, judge_a, _ = zero_four.tables
    key = next(k for k in ZERO_FOUR if 0 in reference_arrays(human, judge_a, {k})[3])
    out = agreement_disagreements(
        dataset=zero_four.dataset,
        campaign_ids=[zero_four.campaign.pk],
        run_id=zero_four.runs[0].pk,
        skill_key=key,
        limit=500,
    )
    _, mean, _, jv = reference_arrays(human, judge_a, {key})
    got = sorted((round(e["human_mean"], 6), e["judge_score"]) for e in out)
    want = sorted((round(float(m), 6), int(j)) for m, j in zip(mean, jv, strict=True))
    assert got == want
    assert min(j for _, j in got) == 0


ONE_TEN = {"depth": (1, 10), "style": (1, 10)}


def test_one_to_ten_rubric_matches_the_reference_libraries(researcher):
    rubric = make_rubric("one-ten", [{"key": k, "low": 1, "high": 10} for k in ONE_TEN])
    human, judge_a, _ = tables(ONE_TEN, seed=11, n_instr=14)
    s = make_scale_setup(
        rubric, human=human, judges=[judge_a], n_instructions=14, models=MODELS
    )
    rid = str(s.runs[0].pk)
    res = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=[rid], n_boot=100
    )
    for key in ONE_TEN:
        check_skill(res, rid, key, range(1, 11), human, judge_a)
        assert np.array(row(res, f"skill:{key}").judge(rid).confusion).shape == (
            10,
            10,
        )
    # no rubric group: no ability row, the overall pools both 1-10 criteria
    assert [r.level for r in res.rows] == ["skill", "skill", "overall"]
    _, mean, _, jv = reference_arrays(human, judge_a, set(ONE_TEN))
    overall = row(res, "overall")
    assert overall.judge(rid).stat("kendall").value == pytest.approx(
        sps.kendalltau(jv, mean)[0]
    )


MIXED = {"brief": (0, 4), "deep": (1, 10)}


def test_mixed_scales_pool_nothing_and_say_why(researcher):
    rubric = make_rubric(
        "mixed",
        [
            {"key": "brief", "low": 0, "high": 4, "group": "g"},
            {"key": "deep", "low": 1, "high": 10, "group": "g"},
            {"key": "safe", "labels": ["yes", "no"], "group": "g"},
        ],
        groups=[{"key": "g", "name": "Quality"}],
    )
    human, judge_a, _ = tables(MIXED, seed=5)
    for (i, m, _k), sc in list(human.items()):  # the categorical criterion: codes
        human[(i, m, "safe")] = [x if x in ("-", None) else x % 2 for x in sc]
        judge_a[(i, m, "safe")] = 1
    s = make_scale_setup(
        rubric, human=human, judges=[judge_a], n_instructions=N_INSTR, models=MODELS
    )
    rid = str(s.runs[0].pk)
    res = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=[rid], n_boot=100
    )
    keys = [r.key for r in res.rows]
    assert keys == ["skill:brief", "skill:deep", "ability:Quality", "overall"]
    check_skill(res, rid, "brief", range(5), human, judge_a)
    check_skill(res, rid, "deep", range(1, 11), human, judge_a)
    for key in ("ability:Quality", "overall"):
        r = row(res, key)
        assert r.scale == RowScale(True, "0-4, 1-10", scales=("0-4", "1-10"))
        assert "different scales (0-4, 1-10)" in r.note
        j = r.judge(rid)
        assert (
            j.stat("qwk").value is None and "different scales" in j.stat("qwk").reason
        )
        assert r.human.stat("alpha_ordinal").value is None
        assert j.scored_by_both == sum(
            row(res, f"skill:{k}").judge(rid).scored_by_both for k in MIXED
        )
        # model profiles: each item's value normalised on its criterion's scale
        assert r.profiles_scale == "normalised"
    norm = []
    for key, (lo, hi) in MIXED.items():
        _, _, _, jv = reference_arrays(human, judge_a, {key}, lambda i, m: m == "beta")
        norm += list((jv - lo) / (hi - lo))
    prof = {e.model: e for e in row(res, "overall").profiles.view("all")}
    assert prof["beta"].judges[rid].value == pytest.approx(np.mean(norm))
    assert row(res, "skill:deep").profiles_scale == "1-10"
