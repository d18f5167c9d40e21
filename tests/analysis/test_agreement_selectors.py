"""The agreement data layer: numbers from the database equal the reference libraries
on the same scores; slices, references, caching and errors."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score

from analysis.selectors.agreement import (
    AgreementError,
    agreement_compute,
    agreement_disagreements,
    agreement_slice_values,
    agreement_sources_for_user,
)
from analysis.selectors.agreement.cache import fingerprint_queries
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from judging.models import JudgeScore
from tests.analysis.agreement_data import add_judge_run, make_agreement_setup

pytestmark = pytest.mark.django_db

SKILLS = ("comprehension", "factuality", "readability")
MODELS = ("alpha", "beta", "gamma")
N_INSTR = 10


def random_tables(seed: int = 7):
    """Three raters (some missing, some N/A) and two judges over 10 x 3 x 3 items."""
    rng = np.random.default_rng(seed)
    human, judge_a, judge_b = {}, {}, {}
    for i in range(N_INSTR):
        for mi, m in enumerate(MODELS):
            for key in SKILLS:
                q = np.clip(2 + mi + rng.normal(0, 0.8), 1, 5)
                scores = []
                for _ in range(3):
                    u = rng.random()
                    if u < 0.15:
                        scores.append("-")  # not rated by this rater
                    elif u < 0.2:
                        scores.append(None)  # N/A
                    else:
                        scores.append(int(np.clip(round(q + rng.normal(0, 0.7)), 1, 5)))
                human[(i, m, key)] = scores
                judge_a[(i, m, key)] = int(
                    np.clip(round(q + rng.normal(0.4, 0.6)), 1, 5)
                )
                judge_b[(i, m, key)] = [
                    int(np.clip(round(q + rng.normal(0, 1)), 1, 5)),
                    int(np.clip(round(q + rng.normal(0, 1)), 1, 5)),
                ]
    judge_a[(0, "alpha", "comprehension")] = None  # judge N/A
    return human, judge_a, judge_b


@pytest.fixture
def setup(researcher):
    human, judge_a, judge_b = random_tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=N_INSTR,
        models=MODELS,
        difficulty=[1, 1, 2, 2, 3, 3, 4, 4, 5, None],
        is_hard=[True, False] * 5,
    )
    s.tables = (human, judge_a, judge_b)
    return s


def row(result, key):
    return result.row(key)


def reference_arrays(human, judge, skills, keep=lambda i, m: True, sample=None):
    """Rating matrix (raters x items), human mean, rounded median and judge vector for
    items both sides scored, computed independently of the module under test."""
    mat, mean, med, jv = [], [], [], []
    for (i, m, key), scores in human.items():
        if key not in skills or not keep(i, m):
            continue
        j = judge.get((i, m, key))
        if isinstance(j, list):
            j = j[sample] if sample is not None else j
            if isinstance(j, list):
                nums = sorted(x for x in j if x is not None)
                j = np.floor(np.median(nums) + 0.5) if nums else None
        nums = [x for x in scores if x not in ("-", None)]
        if not nums or j is None:
            continue
        mat.append([np.nan if x in ("-", None) else x for x in scores])
        mean.append(np.mean(nums))
        med.append(np.floor(np.median(nums) + 0.5))
        jv.append(j)
    return np.array(mat, float).T, np.array(mean), np.array(med), np.array(jv, float)


def test_per_skill_numbers_match_the_reference_libraries(setup):
    human, judge_a, _ = setup.tables
    res = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        n_boot=200,
    )
    rid = str(setup.runs[0].pk)
    for key in SKILLS:
        mat, mean, med, jv = reference_arrays(human, judge_a, {key})
        r = row(res, f"skill:{key}")
        j = r.judge(rid)
        assert j.stat("spearman").value == pytest.approx(sps.spearmanr(jv, mean)[0])
        assert j.stat("kendall").value == pytest.approx(sps.kendalltau(jv, mean)[0])
        assert j.stat("pearson").value == pytest.approx(sps.pearsonr(jv, mean)[0])
        assert j.stat("qwk").value == pytest.approx(
            cohen_kappa_score(jv.astype(int), med.astype(int), weights="quadratic")
        )
        assert j.stat("leniency").value == pytest.approx(np.mean(jv - mean))
        assert j.stat("mae").value == pytest.approx(np.mean(np.abs(jv - mean)))
        assert j.stat("exact").value == pytest.approx(np.mean(jv == med))
        # the raters' figures on the items this run shares with them
        assert j.human.stat("alpha_ordinal").value == pytest.approx(
            krippendorff.alpha(
                reliability_data=mat,
                level_of_measurement="ordinal",
                value_domain=[1, 2, 3, 4, 5],
            )
        )
        assert j.human.stat("alpha_interval").value == pytest.approx(
            krippendorff.alpha(reliability_data=mat, level_of_measurement="interval")
        )
        with_judge = np.vstack([mat, jv[None, :]])
        assert j.stat("alpha_ordinal_with_judge").value == pytest.approx(
            krippendorff.alpha(
                reliability_data=with_judge,
                level_of_measurement="ordinal",
                value_domain=[1, 2, 3, 4, 5],
            )
        )
        assert j.scored_by_both == len(jv)
        conf = np.array(j.confusion)
        assert conf.sum() == len(jv)
        assert conf[int(jv[0]) - 1, int(med[0]) - 1] >= 1
        assert (
            j.stat("spearman").ci[0]
            <= j.stat("spearman").value
            <= j.stat("spearman").ci[1]
        )
    # N/A are counted, not scored
    na = sum(
        1
        for (i, m, k), sc in human.items()
        if k == "comprehension"
        for x in sc
        if x is None
    )
    assert row(res, "skill:comprehension").judge(rid).counts["human_na"] == na
    assert row(res, "skill:comprehension").judge(rid).counts["judge_na"] == 1
    # overall pools every skill
    mat, mean, _, jv = reference_arrays(human, judge_a, set(SKILLS))
    overall = row(res, "overall").judge(rid)
    assert overall.stat("spearman").value == pytest.approx(sps.spearmanr(jv, mean)[0])
    # the ability row pools its skills (comprehension is Problem Handling)
    ability_rows = [r.key for r in res.rows if r.level == "ability"]
    assert len(ability_rows) == 3
    # model level: per-model means, rank agreement
    models = overall.models.by_model()
    assert set(models) == set(MODELS)
    keep_alpha = reference_arrays(
        human, judge_a, set(SKILLS), lambda i, m: m == "alpha"
    )
    assert models["alpha"].judge_mean.value == pytest.approx(keep_alpha[3].mean())
    assert models["alpha"].human_mean.value == pytest.approx(keep_alpha[1].mean())


def test_multi_sample_runs_use_the_rounded_median_and_support_test_retest(setup):
    human, _, judge_b = setup.tables
    rid = setup.runs[1].pk
    res = agreement_compute(
        dataset=setup.dataset, campaign_ids=[setup.campaign.pk], run_ids=[rid], n_boot=0
    )
    _, mean, _, jv = reference_arrays(human, judge_b, {"factuality"})
    got = row(res, "skill:factuality").judge(rid).stat("spearman").value
    assert got == pytest.approx(sps.spearmanr(jv, mean)[0])

    retest = agreement_compute(
        dataset=setup.dataset, run_ids=[rid], retest=True, n_boot=0
    )
    s0 = np.array(
        [v[0] for (i, m, k), v in judge_b.items() if k == "factuality"], float
    )
    s1 = np.array(
        [v[1] for (i, m, k), v in judge_b.items() if k == "factuality"], float
    )
    j = row(retest, "skill:factuality").judge(rid)
    assert retest.reference.kind == "retest"
    assert j.stat("spearman").value == pytest.approx(sps.spearmanr(s0, s1)[0])
    assert j.stat("qwk").value == pytest.approx(
        cohen_kappa_score(s0.astype(int), s1.astype(int), weights="quadratic")
    )


def test_judge_vs_judge_uses_the_reference_run_as_the_other_side(setup):
    _, judge_a, judge_b = setup.tables
    a, b = setup.runs
    res = agreement_compute(
        dataset=setup.dataset, run_ids=[a.pk], reference_run_id=b.pk, n_boot=0
    )
    pairs = [
        (judge_a[k], np.floor(np.median(judge_b[k]) + 0.5))
        for k in judge_a
        if k[2] == "readability" and judge_a[k] is not None
    ]
    x, y = np.array(pairs, float).T
    j = row(res, "skill:readability").judge(a.pk)
    assert res.reference.kind == "run"
    assert j.stat("kendall").value == pytest.approx(sps.kendalltau(x, y)[0])
    assert j.stat("exact").value == pytest.approx(np.mean(x == y))


def test_slices_restrict_the_items(setup):
    human, judge_a, _ = setup.tables
    rid = str(setup.runs[0].pk)
    hard_idx = {i for i in range(N_INSTR) if i % 2 == 0}
    res = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        slice_dim="hard",
        slice_value="hard",
        n_boot=0,
    )
    _, mean, _, jv = reference_arrays(
        human, judge_a, {"readability"}, keep=lambda i, m: i in hard_idx
    )
    j = row(res, "skill:readability").judge(rid)
    assert j.scored_by_both == len(jv)
    assert j.stat("pearson").value == pytest.approx(sps.pearsonr(jv, mean)[0])
    assert res.slice.label == "FLASK-Hard"

    res = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        slice_dim="difficulty",
        slice_value="unknown",
        n_boot=0,
    )
    _, mean, _, jv = reference_arrays(
        human, judge_a, {"readability"}, lambda i, m: i == 9
    )
    assert row(res, "skill:readability").judge(rid).scored_by_both == len(jv)
    res = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        slice_dim="model",
        slice_value="beta",
        n_boot=0,
    )
    models = row(res, "overall").judge(rid).models
    assert [m.model for m in models.models] == ["beta"]
    assert models.spearman.value is None
    assert models.spearman.reason.startswith("not enough data")

    values = agreement_slice_values(dataset=setup.dataset)
    assert {v["value"] for v in values["difficulty"]} == {
        "1",
        "2",
        "3",
        "4",
        "5",
        "unknown",
    }
    assert {v["value"] for v in values["hard"]} == {"hard", "rest"}
    assert [v["value"] for v in values["model"]] == list(MODELS)
    assert values["domain"][0]["n_responses"] == N_INSTR * len(MODELS)


def test_undefined_statistics_say_not_enough_data(researcher):
    # one item per skill, constant scores: nothing is defined, nothing is 0 or NaN
    s = make_agreement_setup(
        researcher,
        human={(0, "alpha", "readability"): [3, 3, "-"]},
        judges=[{(0, "alpha", "readability"): 3}],
        n_instructions=1,
        models=("alpha",),
        name="tiny",
    )
    res = agreement_compute(
        dataset=s.dataset, campaign_ids=[s.campaign.pk], run_ids=[s.runs[0].pk]
    )
    j = row(res, "skill:readability").judge(s.runs[0].pk)
    for stat in ("spearman", "kendall", "pearson", "qwk"):
        assert j.stat(stat).value is None
        assert j.stat(stat).reason.startswith("not enough data")
        assert j.stat(stat).n == 1
    assert row(res, "skill:readability").human.stat("alpha_ordinal").value is None
    assert j.flag.below_ceiling is False


def test_bad_parameters_are_named_and_nothing_is_computed(setup, researcher):
    base = {
        "dataset": setup.dataset,
        "campaign_ids": [setup.campaign.pk],
        "run_ids": [setup.runs[0].pk],
    }
    cases = [
        ({"slice_dim": "colour", "slice_value": "x"}, "slice"),
        ({"slice_dim": "difficulty", "slice_value": "9"}, "slice value"),
        ({"slice_dim": "model", "slice_value": "nobody"}, "slice value"),
        ({"run_ids": [999999]}, "run"),
        ({"campaign_ids": [999999]}, "campaign"),
        ({"n_boot": -1}, "n_boot"),
        ({"reference_run_id": setup.runs[0].pk}, "reference_run"),
    ]
    for change, field in cases:
        with pytest.raises(AgreementError) as exc:
            agreement_compute(**{**base, **change})
        assert str(exc.value).startswith(field), (change, str(exc.value))
    other, _ = __import__(
        "tests.analysis.agreement_data", fromlist=["make_dataset"]
    ).make_dataset("other-set", 1, ("alpha",))
    with pytest.raises(AgreementError, match="run"):
        agreement_compute(**{**base, "dataset": other, "campaign_ids": []})


def test_cache_serves_repeats_and_new_scores_invalidate_it(
    setup, django_assert_max_num_queries
):
    args = {
        "dataset": setup.dataset,
        "campaign_ids": [setup.campaign.pk],
        "run_ids": [setup.runs[0].pk],
        "n_boot": 50,
    }
    first = agreement_compute(**args)
    # parameter checks + fingerprint only (one query of it on PostgreSQL)
    with django_assert_max_num_queries(5 + fingerprint_queries()):
        again = agreement_compute(**args)
    assert again == first
    # a changed judge score gives new numbers at once
    score = JudgeScore.objects.filter(run=setup.runs[0], score__isnull=False).first()
    JudgeScore.objects.filter(pk=score.pk).delete()
    changed = agreement_compute(**args)

    def judged(result) -> int:
        cell = row(result, "overall").judge(setup.runs[0].pk)
        return cell.counts["judge_only"] + cell.scored_by_both

    assert judged(changed) == judged(first) - 1


def test_an_amended_human_score_is_seen_at_once(setup):
    from annotation.models import HumanScore

    args = {
        "dataset": setup.dataset,
        "campaign_ids": [setup.campaign.pk],
        "run_ids": [setup.runs[0].pk],
        "n_boot": 0,
    }
    before = agreement_compute(**args)
    score = HumanScore.objects.filter(
        skill__key="readability", score__isnull=False
    ).first()
    score.score = 1 if score.score != 1 else 5  # a rater amends one score
    score.save()  # updated_at moves: the cache key changes
    after = agreement_compute(**args)
    rid = str(setup.runs[0].pk)
    assert (
        row(after, "skill:readability").judge(rid).stat("mae").value
        != row(before, "skill:readability").judge(rid).stat("mae").value
    )


def test_query_count_does_not_grow_with_the_data(researcher, django_assert_num_queries):
    def tables(n):
        human = {
            (i, "alpha", "readability"): [1 + i % 5, 1 + (i + 1) % 5] for i in range(n)
        }
        judge = {(i, "alpha", "readability"): 1 + i % 5 for i in range(n)}
        return human, judge

    counts = []
    for n, name in ((3, "small"), (30, "large")):
        human, judge = tables(n)
        s = make_agreement_setup(
            researcher, human=human, judges=[judge], n_instructions=n,
            models=("alpha",), n_raters=2, name=name,
        )  # fmt: skip
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        with CaptureQueriesContext(connection) as ctx:
            agreement_compute(
                dataset=s.dataset,
                campaign_ids=[s.campaign.pk],
                run_ids=[s.runs[0].pk],
                n_boot=10,
                use_cache=False,
            )
        counts.append(len(ctx.captured_queries))
    assert counts[0] == counts[1]


def test_disagreements_are_ordered_and_show_both_sides(setup):
    human, judge_a, _ = setup.tables
    items = agreement_disagreements(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_id=setup.runs[0].pk,
        skill_key="factuality",
        limit=5,
    )
    assert len(items) == 5
    diffs = [abs(x["difference"]) for x in items]
    assert diffs == sorted(diffs, reverse=True)
    _, mean, _, jv = reference_arrays(human, judge_a, {"factuality"})
    assert diffs[0] == pytest.approx(np.max(np.abs(jv - mean)))
    top = items[0]
    assert top["judge_rationale"].startswith("judge A says")
    assert all(h["rater"].startswith("rater ") for h in top["human"])
    assert all("username" not in str(h) for h in top["human"])
    assert top["judge_score"] - top["human_mean"] == pytest.approx(top["difference"])
    with pytest.raises(AgreementError, match="^skill"):
        agreement_disagreements(
            dataset=setup.dataset,
            campaign_ids=[setup.campaign.pk],
            run_id=setup.runs[0].pk,
            skill_key="nope",
        )


def test_sources_list_campaigns_and_scored_runs(setup, researcher):
    empty = add_judge_run(setup.dataset, setup.responses, {}, name="no scores")
    src = agreement_sources_for_user(user=researcher, dataset=setup.dataset)
    assert [c["id"] for c in src["campaigns"]] == [setup.campaign.pk]
    ids = {r["id"] for r in src["runs"]}
    assert ids == {r.pk for r in setup.runs}
    assert empty.pk not in ids


def test_human_model_means_cover_every_human_scored_item(setup):
    human, _, _ = setup.tables
    res = agreement_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[setup.runs[0].pk],
        n_boot=0,
    )
    for key in ("skill:factuality", "overall"):
        models = {m.model: m for m in row(res, key).human.models}
        for m in MODELS:
            means = [
                np.mean([x for x in sc if x not in ("-", None)])
                for (i, mm, k), sc in human.items()
                if mm == m
                and (key == "overall" or k == "factuality")
                and any(x not in ("-", None) for x in sc)
            ]
            assert models[m].n == len(means)
            assert models[m].mean.value == pytest.approx(np.mean(means))


def test_disagreements_never_list_one_label_twice_for_an_item(researcher):
    """Bug 9: a rater who scored an item in two chosen campaigns was listed as
    "rater 1" twice. Each entry now reads differently (the campaign is named), and a
    synthetic account's entry says it is generated."""
    from django.contrib.auth.models import Group

    from annotation.models import Campaign
    from annotation.services.campaigns import campaign_create
    from flaskapp import roles
    from tests.analysis.agreement_data import add_human_scores

    human = {(0, "alpha", "factuality"): [2, 3]}
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[{(0, "alpha", "factuality"): 5}],
        n_instructions=1,
        models=("alpha",),
        n_raters=2,
        name="twice",
    )
    again = campaign_create(
        spec=CampaignSpec(
            name="second look",
            dataset=s.dataset,
            skill_mode=Campaign.SkillMode.ALL,
            raters=[s.raters[0]],
            serving=ServingPolicy(overlap=1),
        ),
        created_by=researcher,
    )
    add_human_scores(again, s.responses, {(0, "alpha", "factuality"): [4]}, s.raters)
    s.raters[1].groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])

    (item,) = agreement_disagreements(
        dataset=s.dataset,
        campaign_ids=[s.campaign.pk, again.pk],
        run_id=s.runs[0].pk,
        skill_key="factuality",
    )
    labels = [h["rater"] for h in item["human"]]
    assert len(labels) == 3 and len(set(labels)) == 3
    assert labels == [
        "rater 1 (twice campaign)",
        "rater 1 (second look)",
        "rater 2 (generated)",
    ]
