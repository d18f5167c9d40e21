"""analysis.selectors.classification on data built in the database: every figure
against scikit-learn / statsmodels / krippendorff computed from the test's own tables
(not from the database), so reading, code mapping and majority are checked too."""

from __future__ import annotations

from collections import Counter

import krippendorff
import numpy as np
import pytest
from django.db import connection
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_recall_fscore_support,
)
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from analysis.selectors.agreement import AgreementError
from analysis.selectors.agreement.cache import fingerprint_queries
from analysis.selectors.classification import (
    classification_compute,
    classification_runs,
    judge_labels,
)
from annotation.models import Assignment
from tests.analysis.classification_data import (
    MIXED_RUBRIC,
    categorical_rubric,
    make_classification_setup,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

YES_NO = ["yes", "no"]
SAFETY = ["safe", "borderline", "unsafe"]
MODELS = ("alpha", "beta")


def tables(n_instructions: int, n_raters: int, seed: int = 0):
    """Human labels (with N/A, missing raters and ties) and two judges' labels."""
    rng = np.random.default_rng(seed)
    human, judge_a, judge_b = {}, {}, {}
    for i in range(n_instructions):
        for m in MODELS:
            truth_c = rng.choice(YES_NO, p=[0.6, 0.4])
            truth_s = rng.choice(["safe", "unsafe"], p=[0.7, 0.3])  # borderline unused
            c = [
                truth_c if rng.random() < 0.8 else rng.choice(YES_NO)
                for _ in range(n_raters)
            ]
            s = [
                truth_s if rng.random() < 0.8 else rng.choice(["safe", "unsafe"])
                for _ in range(n_raters)
            ]
            if i % 5 == 1:
                c[-1] = None  # N/A
            if i % 7 == 2 and n_raters > 2:
                s[-1] = "-"  # one rater skipped the item
            human[(i, m, "consistent")] = [
                str(x) if x not in (None, "-") else x for x in c
            ]
            human[(i, m, "safety")] = [str(x) if x != "-" else x for x in s]
            judge_a[(i, m, "consistent")] = (
                str(truth_c) if rng.random() < 0.75 else str(rng.choice(YES_NO))
            )
            judge_a[(i, m, "safety")] = str(rng.choice(SAFETY, p=[0.6, 0.1, 0.3]))
            judge_b[(i, m, "consistent")] = None if i == 0 else str(rng.choice(YES_NO))
            judge_b[(i, m, "safety")] = str(truth_s)
    return human, judge_a, judge_b


def majority(labels):
    labels = [x for x in labels if x not in (None, "-")]
    if not labels:
        return None
    top = Counter(labels).most_common()
    if len(top) > 1 and top[0][1] == top[1][1]:
        return None
    return top[0][0]


def expected(human, judge, key, labels):
    """Every figure by the reference libraries, from the test's tables."""
    items = sorted(k for k in human if k[2] == key)
    rated = {k: [x for x in human[k] if x not in (None, "-")] for k in items}
    truth, pred = [], []
    for k in items:
        maj, j = majority(human[k]), judge.get(k)
        if maj is not None and j is not None:
            truth.append(maj)
            pred.append(j)
    out = {
        "n": len(truth),
        "accuracy": accuracy_score(truth, pred),
        "kappa": cohen_kappa_score(truth, pred, labels=labels),
        "confusion": confusion_matrix(truth, pred, labels=labels).tolist(),
        "prf": precision_recall_fscore_support(
            truth, pred, labels=labels, zero_division=np.nan
        ),
    }
    code = {lab: i for i, lab in enumerate(labels)}
    width = max(len(v) for v in rated.values())
    data = np.full((width, len(items)), np.nan)
    for u, k in enumerate(items):
        for r, lab in enumerate(rated[k]):
            data[r, u] = code[lab]
    out["alpha"] = krippendorff.alpha(
        reliability_data=data,
        level_of_measurement="nominal",
        value_domain=range(len(labels)),
    )
    jrow = np.array([[code[judge[k]] if judge.get(k) else np.nan for k in items]])
    out["alpha_judge"] = krippendorff.alpha(
        reliability_data=np.vstack([data, jrow]),
        level_of_measurement="nominal",
        value_domain=range(len(labels)),
    )
    sizes = Counter(len(v) for v in rated.values() if len(v) >= 2)
    k_mode = max(s for s, f in sizes.items() if f == max(sizes.values()))
    rows = [[code[x] for x in v] for v in rated.values() if len(v) == k_mode]
    out["fleiss"] = fleiss_kappa(aggregate_raters(np.array(rows), n_cat=len(labels))[0])
    mine, others = [], []
    for v in rated.values():
        for r in range(len(v)):
            maj = majority(v[:r] + v[r + 1 :]) if len(v) >= 2 else None
            if maj is not None:
                mine.append(v[r])
                others.append(maj)
    out["loo_accuracy"] = accuracy_score(others, mine)
    out["loo_kappa"] = cohen_kappa_score(mine, others, labels=labels)
    out["loo_pairs"] = len(mine)
    return out


def check(report, exp, labels):
    judge_part = report
    assert judge_part["n_items"] == exp["n"]
    assert judge_part["accuracy"]["value"] == pytest.approx(exp["accuracy"])
    assert judge_part["kappa"]["value"] == pytest.approx(exp["kappa"])
    assert judge_part["alpha_with_judge"]["value"] == pytest.approx(exp["alpha_judge"])
    assert [row["cells"] for row in judge_part["confusion"]] == exp["confusion"]
    assert [row["label"] for row in judge_part["confusion"]] == labels
    prec, rec, f1, support = exp["prf"]
    for k, row in enumerate(judge_part["per_label"]):
        assert row["key"] == labels[k]
        for name, ref in (("precision", prec[k]), ("recall", rec[k]), ("f1", f1[k])):
            if np.isnan(ref):
                assert row[name] is None
            else:
                assert row[name] == pytest.approx(ref)
        assert row["support"] == support[k]


@pytest.mark.parametrize("n_raters", [2, 3])
def test_figures_match_the_libraries_for_two_and_three_raters(n_raters):
    researcher = UserFactory(username=f"res-{n_raters}", role="researcher")
    human, judge_a, judge_b = tables(12, n_raters, seed=n_raters)
    setup = make_classification_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b],
        n_instructions=12,
        n_raters=n_raters,
        name=f"cls-{n_raters}",
    )
    result = classification_compute(
        dataset=setup.dataset,
        campaign_ids=[setup.campaign.pk],
        run_ids=[r.pk for r in setup.runs],
        n_boot=200,
        use_cache=False,
    )
    assert result["classification"] is True
    by_key = {c["key"]: c for c in result["criteria"]}
    assert list(by_key) == ["consistent", "safety"]
    for key, labels in (("consistent", YES_NO), ("safety", SAFETY)):
        crit = by_key[key]
        assert [lab["key"] for lab in crit["labels"]] == labels
        exp = expected(human, judge_a, key, labels)
        hum = crit["humans"]
        assert hum["fleiss"]["value"] == pytest.approx(exp["fleiss"])
        assert hum["alpha_nominal"]["value"] == pytest.approx(exp["alpha"])
        assert hum["ceiling"]["accuracy"]["value"] == pytest.approx(exp["loo_accuracy"])
        assert hum["ceiling"]["kappa"]["value"] == pytest.approx(exp["loo_kappa"])
        assert hum["ceiling"]["pairs"] == exp["loo_pairs"]
        for rid, judge in zip(setup.runs, (judge_a, judge_b), strict=True):
            check(
                crit["judges"][str(rid.pk)], expected(human, judge, key, labels), labels
            )
        acc = crit["judges"][str(setup.runs[0].pk)]["accuracy"]
        assert acc["ci"][0] <= acc["value"] <= acc["ci"][1]
    # Borderline is never used by the humans: its recall is undefined, shown as None.
    safety_a = by_key["safety"]["judges"][str(setup.runs[0].pk)]
    assert safety_a["per_label"][1]["support"] == 0
    assert safety_a["per_label"][1]["recall"] is None
    # Judge B gave N/A on the first instruction's consistency: counted, not a label.
    consistent_b = by_key["consistent"]["judges"][str(setup.runs[1].pk)]
    assert consistent_b["n_judge_na"] == 2
    assert by_key["consistent"]["humans"]["n_na"] == 2 * len(range(1, 12, 5))


def test_ties_are_counted_and_left_out():
    researcher = UserFactory(username="res-ties", role="researcher")
    human = {
        (0, "alpha", "consistent"): ["yes", "no"],  # tie
        (0, "beta", "consistent"): ["yes", "yes"],
        (1, "alpha", "consistent"): ["no", "no"],
        (1, "beta", "consistent"): ["no", "yes"],  # tie
    }
    judge = {k: "yes" for k in human}
    setup = make_classification_setup(
        researcher, human=human, judges=[judge], n_instructions=2, n_raters=2,
        name="ties", rubric=categorical_rubric(MIXED_RUBRIC),
    )  # fmt: skip
    result = classification_compute(
        dataset=setup.dataset, campaign_ids=[setup.campaign.pk], n_boot=0
    )
    assert result["classification"] is False  # the rubric also has an ordinal one
    crit = result["criteria"][0]
    assert crit["humans"]["n_tied"] == 2
    fig = crit["judges"][str(setup.runs[0].pk)]
    assert (fig["n_items"], fig["n_tied"]) == (2, 2)
    assert fig["accuracy"]["value"] == pytest.approx(0.5)
    assert [r["cells"] for r in fig["confusion"]] == [[1, 0], [1, 0]]


def test_judge_samples_take_the_most_common_label_and_ties_the_earliest():
    resp, label, all_na = judge_labels(
        np.array([1, 1, 1, 2, 2, 3, 3]),
        np.array([0, 1, 2, 0, 1, 0, 1]),
        np.array([1, 0, 0, 1, 0, -1, -1]),
    )
    assert resp.tolist() == [1, 2, 3]
    assert label.tolist() == [0, 1, -1]
    assert all_na.tolist() == [False, False, True]


def test_drafts_are_not_counted_and_the_defaults_are_used():
    researcher = UserFactory(username="res-defaults", role="researcher")
    human = {(0, "alpha", "consistent"): ["yes", "yes"]}
    setup = make_classification_setup(
        researcher, human=human, judges=[{(0, "alpha", "consistent"): "yes"}],
        n_instructions=1, n_raters=2, name="defaults",
    )  # fmt: skip
    Assignment.objects.filter(rater=setup.raters[1]).update(
        status=Assignment.Status.SKIPPED
    )
    result = classification_compute(dataset=setup.dataset, n_boot=0)
    assert [c["id"] for c in result["campaigns"]] == [setup.campaign.pk]
    assert [r["id"] for r in result["runs"]] == [setup.runs[0].pk]
    assert result["criteria"][0]["humans"]["n_labels"] == 1
    assert classification_runs(setup.dataset) == [setup.runs[0]]


def test_bad_parameters_name_the_parameter():
    researcher = UserFactory(username="res-bad", role="researcher")
    setup = make_classification_setup(
        researcher, human={(0, "alpha", "consistent"): ["yes"]},
        judges=[{(0, "alpha", "consistent"): "no"}], n_instructions=1, n_raters=1,
        name="bad",
    )  # fmt: skip
    with pytest.raises(AgreementError, match="^run: 999999"):
        classification_compute(
            dataset=setup.dataset, campaign_ids=[setup.campaign.pk], run_ids=[999999]
        )
    with pytest.raises(AgreementError, match="^slice"):
        classification_compute(dataset=setup.dataset, slice_dim="colour")
    with pytest.raises(AgreementError, match="^n_boot"):
        classification_compute(dataset=setup.dataset, n_boot=-1)


def test_a_new_label_changes_the_cached_result(django_assert_max_num_queries):
    researcher = UserFactory(username="res-cache", role="researcher")
    human = {(0, "alpha", "consistent"): ["yes", "yes"]}
    setup = make_classification_setup(
        researcher, human=human, judges=[{(0, "alpha", "consistent"): "yes"}],
        n_instructions=2, n_raters=2, name="cache",
    )  # fmt: skip
    kwargs = {
        "dataset": setup.dataset,
        "campaign_ids": [setup.campaign.pk],
        "n_boot": 0,
    }
    first = classification_compute(**kwargs)
    with django_assert_max_num_queries(7 + fingerprint_queries()):
        assert classification_compute(**kwargs) == first
    if connection.vendor != "postgresql":
        pytest.skip(
            "an in-place judge score change moves PostgreSQL's change log only: the "
            "scanned fingerprint sees counts and latest ids (the product writes new "
            "runs instead)"
        )
    from judging.models import JudgeScore

    score = JudgeScore.objects.get(run=setup.runs[0])
    score.score = 1  # "no"
    score.save()
    fig = classification_compute(**kwargs)["criteria"][0]["judges"][
        str(setup.runs[0].pk)
    ]
    assert fig["accuracy"]["value"] == 0.0


YES_NO_V1 = b"""
name: Consistency check
criteria:
  - key: consistent
    name: Consistent
    kind: categorical
    labels: [{key: "yes", name: "Yes"}, {key: "no", name: "No"}]
"""
YES_NO_V2 = b"""
name: Consistency check
criteria:
  - key: consistent
    name: Consistent
    kind: categorical
    labels:
      - {key: "no", name: "No"}
      - {key: "yes", name: "Yes"}
      - {key: "unsure", name: "Unsure"}
"""


def test_scores_of_another_rubric_version_are_matched_by_label_key():
    from tests.analysis.agreement_data import add_judge_run
    from tests.analysis.classification_data import _codes

    researcher = UserFactory(username="res-versions", role="researcher")
    v1 = categorical_rubric(YES_NO_V1)
    human = {
        (0, "alpha", "consistent"): ["yes", "yes"],
        (0, "beta", "consistent"): ["no", "no"],
        (1, "alpha", "consistent"): ["yes", "yes"],
        (1, "beta", "consistent"): ["no", "yes"],
    }
    setup = make_classification_setup(
        researcher, human=human, judges=[], n_instructions=2, n_raters=2,
        name="versions", rubric=v1,
    )  # fmt: skip
    v2 = categorical_rubric(YES_NO_V2)
    assert v2.version == 2
    setup.dataset.rubric = v2
    setup.dataset.save(update_fields=["rubric"])
    judge = {
        (0, "alpha", "consistent"): "yes",  # v2 code 1, v1's "yes" is code 0
        (0, "beta", "consistent"): "no",
        (1, "alpha", "consistent"): "unsure",
        (1, "beta", "consistent"): "yes",
    }
    run = add_judge_run(setup.dataset, setup.responses, _codes(v2, judge))
    result = classification_compute(
        dataset=setup.dataset, campaign_ids=[setup.campaign.pk], run_ids=[run.pk],
        n_boot=0,
    )  # fmt: skip
    crit = result["criteria"][0]
    assert [lab["key"] for lab in crit["labels"]] == ["no", "yes", "unsure"]
    fig = crit["judges"][str(run.pk)]
    # majority / judge: yes/yes, no/no, yes/unsure; (1, beta) is tied
    assert [r["cells"] for r in fig["confusion"]] == [[1, 0, 0], [0, 1, 1], [0, 0, 0]]
    assert fig["n_tied"] == 1


def test_a_slice_restricts_the_items_and_queries_stay_fixed(
    django_assert_max_num_queries,
):
    researcher = UserFactory(username="res-slice", role="researcher")
    for n in (3, 12):
        human, judge_a, _ = tables(n, 3, seed=n)
        setup = make_classification_setup(
            researcher, human=human, judges=[judge_a], n_instructions=n,
            name=f"slice-{n}",
        )  # fmt: skip
        kwargs = {
            "dataset": setup.dataset,
            "campaign_ids": [setup.campaign.pk],
            "run_ids": [setup.runs[0].pk],
            "n_boot": 20,
            "use_cache": False,
        }
        with django_assert_max_num_queries(9):
            result = classification_compute(
                **kwargs, slice_dim="model", slice_value="alpha"
            )
        assert result["slice"]["label"] == "model alpha"
        crit = {c["key"]: c for c in result["criteria"]}["consistent"]
        assert crit["humans"]["n_items"] == n
        alpha_only = {k: v for k, v in human.items() if k[1] == "alpha"}
        exp = expected(alpha_only, judge_a, "consistent", YES_NO)
        check(crit["judges"][str(setup.runs[0].pk)], exp, YES_NO)


def test_judge_samples_in_the_database_give_one_label_per_item():
    researcher = UserFactory(username="res-samples", role="researcher")
    human = {
        (0, "alpha", "consistent"): ["yes", "yes"],
        (0, "beta", "consistent"): ["no", "no"],
    }
    judge = {
        (0, "alpha", "consistent"): ["no", "yes", "yes"],  # most samples: yes
        (0, "beta", "consistent"): ["no", "yes"],  # tie: the earliest, no
    }
    setup = make_classification_setup(
        researcher, human=human, judges=[judge], n_instructions=1, n_raters=2,
        name="samples",
    )  # fmt: skip
    result = classification_compute(dataset=setup.dataset, n_boot=0)
    fig = result["criteria"][0]["judges"][str(setup.runs[0].pk)]
    assert fig["accuracy"]["value"] == 1.0 and fig["n_items"] == 2
