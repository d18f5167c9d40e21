"""analysis.stats.categorical against the reference libraries on the same arrays:
scikit-learn, statsmodels (Fleiss) and krippendorff (nominal alpha)."""

from __future__ import annotations

from collections import Counter

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    precision_recall_fscore_support,
)
from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

from analysis.stats.categorical import (
    NO_LABEL,
    alpha_nominal,
    fleiss,
    human_figures,
    judge_figures,
    majority,
)


def rater_lists(counts) -> list[list[int]]:
    """Each item's labels as a list (one entry per rater)."""
    return [[lab for lab, k in enumerate(row) for _ in range(k)] for row in counts]


def reliability(counts) -> np.ndarray:
    """krippendorff's layout: raters x items, NaN where a rater has no label."""
    lists = rater_lists(counts)
    width = max((len(x) for x in lists), default=1)
    out = np.full((max(width, 1), len(lists)), np.nan)
    for u, labels in enumerate(lists):
        out[: len(labels), u] = labels
    return out


def reference_majority(labels: list[int]) -> int | None:
    """The most common label; None when tied or empty (the module's rule)."""
    if not labels:
        return None
    top = Counter(labels).most_common()
    if len(top) > 1 and top[0][1] == top[1][1]:
        return None
    return top[0][0]


def random_counts(rng, n_items, n_labels, raters, p=None):
    """Counts of `raters` labels per item (an int or an array per item)."""
    raters = np.resize(np.asarray(raters), n_items)
    out = np.zeros((n_items, n_labels), np.int64)
    for i, m in enumerate(raters):
        for lab in rng.choice(n_labels, size=m, p=p):
            out[i, lab] += 1
    return out


def noisy_judge(rng, counts, flip=0.25, none=0.05):
    maj = counts.argmax(axis=1)
    judge = np.where(
        rng.random(len(counts)) < flip,
        rng.integers(0, counts.shape[1], len(counts)),
        maj,
    )
    judge[rng.random(len(counts)) < none] = NO_LABEL
    return judge


CASES = [
    # (labels, raters per item, label probabilities)
    (2, 2, None),
    (2, 3, [0.7, 0.3]),
    (3, 3, [0.6, 0.25, 0.15]),
    (3, np.array([2, 3] * 40), None),
    (3, 3, [0.5, 0.0, 0.5]),  # "borderline" never used
]


@pytest.mark.parametrize(("n_labels", "raters", "p"), CASES)
def test_judge_figures_match_sklearn(n_labels, raters, p):
    rng = np.random.default_rng(7)
    counts = random_counts(rng, 80, n_labels, raters, p)
    judge = noisy_judge(rng, counts)
    got = judge_figures(counts, judge, n_boot=0)

    maj = [reference_majority(x) for x in rater_lists(counts)]
    keep = [i for i in range(len(counts)) if maj[i] is not None and judge[i] >= 0]
    truth = [maj[i] for i in keep]
    pred = [int(judge[i]) for i in keep]
    labels = list(range(n_labels))
    assert got.n_items == len(keep)
    assert got.n_tied == sum(
        1 for i, m in enumerate(maj) if m is None and judge[i] >= 0
    )
    assert got.accuracy.value == pytest.approx(accuracy_score(truth, pred))
    assert got.kappa.value == pytest.approx(
        cohen_kappa_score(truth, pred, labels=labels)
    )
    np.testing.assert_array_equal(
        got.confusion, confusion_matrix(truth, pred, labels=labels)
    )
    prec, rec, f1, support = precision_recall_fscore_support(
        truth, pred, labels=labels, zero_division=np.nan
    )
    for k, fig in enumerate(got.labels):
        for mine, ref in (
            (fig.precision, prec[k]),
            (fig.recall, rec[k]),
            (fig.f1, f1[k]),
        ):
            if np.isnan(ref):
                assert mine is None
            else:
                assert mine == pytest.approx(ref)
        assert fig.support == support[k]
    with_judge = reliability(counts)
    row = np.where(judge >= 0, judge, np.nan)[None]
    data = np.vstack([with_judge, row])
    assert got.alpha_with_judge.value == pytest.approx(
        krippendorff.alpha(
            reliability_data=data,
            level_of_measurement="nominal",
            value_domain=labels,
        )
    )


def test_unused_label_has_undefined_precision_and_recall_and_zero_rows():
    counts = np.array([[3, 0, 0], [0, 0, 3], [2, 0, 1], [1, 0, 2], [3, 0, 0]])
    judge = np.array([0, 2, 2, 2, 0])
    got = judge_figures(counts, judge, n_boot=0)
    assert got.confusion[1].sum() == 0 and got.confusion[:, 1].sum() == 0
    assert got.labels[1].precision is None
    assert got.labels[1].recall is None
    assert got.labels[1].f1 is None
    assert got.labels[2].precision == pytest.approx(2 / 3)
    assert got.macro_f1 == pytest.approx(np.mean([got.labels[0].f1, got.labels[2].f1]))


def test_ties_are_left_out_and_counted():
    counts = np.array([[1, 1], [2, 0], [0, 2], [1, 1], [0, 0]])
    judge = np.array([0, 0, 0, 1, 1])
    maj, tied = majority(counts)
    assert maj.tolist() == [NO_LABEL, 0, 1, NO_LABEL, NO_LABEL]
    assert tied.tolist() == [True, False, False, True, False]
    got = judge_figures(counts, judge, n_boot=0)
    assert (got.n_items, got.n_tied, got.n_no_human) == (2, 2, 1)
    assert got.accuracy.value == pytest.approx(0.5)


def test_a_single_label_everywhere_leaves_kappa_undefined_with_a_reason():
    counts = np.array([[2, 0]] * 4)
    got = judge_figures(counts, np.zeros(4, np.int64), n_boot=50)
    assert got.accuracy.value == 1.0
    assert got.kappa.value is None
    assert got.kappa.reason.startswith("not enough data")
    humans = human_figures(counts, n_boot=0)
    assert humans.fleiss.value is None and humans.alpha_nominal.value is None


@pytest.mark.parametrize(("n_labels", "raters", "p"), CASES)
def test_fleiss_matches_statsmodels_on_the_modal_rater_count(n_labels, raters, p):
    rng = np.random.default_rng(3)
    counts = random_counts(rng, 60, n_labels, raters, p)
    value, n_items, k, _ = fleiss(counts)
    m = counts.sum(axis=1)
    sizes, freq = np.unique(m, return_counts=True)
    k_ref = sizes[freq == freq.max()].max()
    rows = [x for x in rater_lists(counts) if len(x) == k_ref]
    table, _ = aggregate_raters(np.array(rows), n_cat=n_labels)
    assert (n_items, k) == (len(rows), k_ref)
    assert value == pytest.approx(fleiss_kappa(table, method="fleiss"))


@pytest.mark.parametrize(("n_labels", "raters", "p"), CASES)
def test_alpha_nominal_matches_krippendorff(n_labels, raters, p):
    rng = np.random.default_rng(11)
    counts = random_counts(rng, 50, n_labels, raters, p)
    counts[:3] = 0  # items without labels add nothing
    counts[3] = 0
    counts[3, 0] = 1  # nor does an item with one label
    value, n_items, _ = alpha_nominal(counts)
    assert n_items == 46
    assert value == pytest.approx(
        krippendorff.alpha(
            reliability_data=reliability(counts),
            level_of_measurement="nominal",
            value_domain=list(range(n_labels)),
        )
    )


@pytest.mark.parametrize(("n_labels", "raters", "p"), CASES)
def test_leave_one_out_ceiling_matches_a_per_rater_loop(n_labels, raters, p):
    rng = np.random.default_rng(5)
    counts = random_counts(rng, 70, n_labels, raters, p)
    got = human_figures(counts, n_boot=0)
    mine, others, left_out = [], [], 0
    for labels in rater_lists(counts):
        if len(labels) < 2:
            continue
        for r, lab in enumerate(labels):
            maj = reference_majority(labels[:r] + labels[r + 1 :])
            if maj is None:
                left_out += 1
                continue
            mine.append(lab)
            others.append(maj)
    assert (got.loo_pairs, got.loo_tied) == (len(mine), left_out)
    assert got.loo_accuracy.value == pytest.approx(accuracy_score(others, mine))
    assert got.loo_kappa.value == pytest.approx(
        cohen_kappa_score(mine, others, labels=list(range(n_labels)))
    )
    assert got.n_tied == sum(
        1 for x in rater_lists(counts) if x and reference_majority(x) is None
    )


def test_two_raters_leave_one_out_is_their_pairwise_agreement():
    counts = np.array([[2, 0], [0, 2], [1, 1], [2, 0], [1, 1]])
    got = human_figures(counts, n_boot=0)
    # each of the two raters meets the other: 2 pairs per item, 6 agree of 10
    assert got.loo_pairs == 10 and got.loo_accuracy.value == pytest.approx(0.6)
    assert got.raters_per_item == {2: 5}


def test_bootstrap_is_seeded_brackets_the_value_and_matches_an_item_bootstrap():
    rng = np.random.default_rng(1)
    counts = random_counts(rng, 400, 3, 3, [0.5, 0.3, 0.2])
    judge = noisy_judge(rng, counts, flip=0.3, none=0.0)
    a = judge_figures(counts, judge, n_boot=2000, seed=4)
    b = judge_figures(counts, judge, n_boot=2000, seed=4)
    assert (a.accuracy, a.kappa) == (b.accuracy, b.kappa)
    for r in (a.accuracy, a.kappa):
        assert r.ci_low < r.value < r.ci_high
    # The cell draw has the distribution of an item bootstrap: compare intervals.
    maj = [reference_majority(x) for x in rater_lists(counts)]
    maj = np.array([-1 if m is None else m for m in maj])
    keep = maj >= 0
    t, p = maj[keep], judge[keep]
    idx = np.random.default_rng(9).integers(0, len(t), size=(2000, len(t)))
    accs = (t[idx] == p[idx]).mean(axis=1)
    kappas = [cohen_kappa_score(t[i], p[i], labels=[0, 1, 2]) for i in idx[:400]]
    assert a.accuracy.ci_low == pytest.approx(np.quantile(accs, 0.025), abs=0.015)
    assert a.accuracy.ci_high == pytest.approx(np.quantile(accs, 0.975), abs=0.015)
    assert a.kappa.ci_low == pytest.approx(np.quantile(kappas, 0.025), abs=0.03)
    assert a.kappa.ci_high == pytest.approx(np.quantile(kappas, 0.975), abs=0.03)
    ceiling = human_figures(counts, n_boot=500, seed=2)
    assert (
        ceiling.loo_kappa.ci_low < ceiling.loo_kappa.value < ceiling.loo_kappa.ci_high
    )


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="one entry per item"):
        judge_figures(np.zeros((3, 2), np.int64), np.zeros(2, np.int64))
