"""Agreement on one categorical criterion: human raters' labels and a judge's label.

Pure numpy (no database). Every figure is checked against the reference library on
the same arrays in ``tests/analysis/test_stats_categorical.py``: scikit-learn
(``cohen_kappa_score``, ``precision_recall_fscore_support``, ``confusion_matrix``,
``accuracy_score``), statsmodels (``fleiss_kappa`` on ``aggregate_raters``) and
``krippendorff.alpha(level_of_measurement="nominal")``.

Inputs, for one criterion with ``L`` labels (codes ``0..L-1``, as stored):

* ``counts`` (n, L): per item, how many human raters chose each label (their N/A
  answers are not labels and are left out; the caller counts them);
* ``judge`` (n,): the judge's label code per item, ``-1`` when the judge gave none
  (N/A, no score, an unparsable reply).

Conventions (the contract of every caller):

* **Human majority**: the label most raters of the item chose. When two or more
  labels share the highest count the item is *tied*: it has no majority, is left
  out of every judge-vs-majority figure and is counted (``n_tied``). An item with
  one rater has that rater's label as its majority.
* **Judge vs majority** (accuracy, Cohen's kappa, per-label precision / recall / F1,
  confusion matrix): items with a majority and a judge label. Rows of the confusion
  matrix are the majority's label, columns the judge's, in label order; every label
  of the criterion has a row and a column, used or not. Precision, recall and F1 of
  a label are ``None`` when undefined (no prediction, no true item, neither).
* **Fleiss' kappa** (humans): statsmodels' formula assumes the same number of raters
  per item, so it is computed on the items with the most common number of raters
  (at least 2; the larger number when two are equally common); the count used is
  reported.
* **Krippendorff's alpha, nominal**: every item's labels (humans; humans and the
  judge as one more rater); items with fewer than two labels add nothing.
* **Human leave-one-out ceiling**: each rater's label on an item against the
  majority of the item's *other* raters (items with at least two raters; a tied
  majority of the others leaves that pair out, counted), pooled over raters and
  items: accuracy and Cohen's kappa. This is the judge-vs-majority figure a human
  would get, the ceiling a judge is read against.
* **Bootstrap**: percentile 95% intervals (see :mod:`analysis.stats.results`) over
  items resampled with replacement, seeded; items with equal inputs are drawn as
  cells (:func:`analysis.stats.bootstrap.multinomial_cell_weights`), so the cost does
  not grow with the number of items.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analysis.stats.bootstrap import multinomial_cell_weights
from analysis.stats.kappa import kappa_from_table
from analysis.stats.results import (
    Result,
    finite_or_none,
    make_result,
    ratio,
    result_from_rows,
)

NO_LABEL = -1  # the judge gave no label for the item


def _counts(counts) -> np.ndarray:
    c = np.asarray(counts, dtype=np.int64)
    if c.ndim != 2:
        raise ValueError("counts must be an (items, labels) array")
    return c


def majority(counts) -> tuple[np.ndarray, np.ndarray]:
    """(majority label per item, ``NO_LABEL`` where none; tied flag per item).

    An item without any human label has no majority and is not tied."""
    c = _counts(counts)
    if not c.size:
        return np.full(len(c), NO_LABEL, np.int64), np.zeros(len(c), bool)
    top = c.max(axis=1)
    tied = (top > 0) & ((c == top[:, None]).sum(axis=1) > 1)
    label = np.where((top > 0) & ~tied, c.argmax(axis=1), NO_LABEL)
    return label.astype(np.int64), tied


def confusion(truth, predicted, n_labels: int) -> np.ndarray:
    """(L, L) counts: rows = `truth` labels, columns = `predicted` (codes 0..L-1)."""
    t = np.asarray(truth, np.int64)
    p = np.asarray(predicted, np.int64)
    flat = np.bincount(t * n_labels + p, minlength=n_labels * n_labels)
    return flat.reshape(n_labels, n_labels)


def _table_results(tables: np.ndarray, n: int, why: str) -> tuple[Result, Result]:
    """(accuracy, Cohen's kappa) of confusion tables (B + 1, L, L): row 0 the sample,
    rows 1.. its bootstrap resamples."""
    total = tables.sum(axis=(1, 2))
    agree = np.trace(tables, axis1=1, axis2=2)
    accuracy = result_from_rows(ratio(agree, total), n, why)
    kappa = result_from_rows(
        kappa_from_table(tables), n, why or "every label on one side is the same"
    )
    return accuracy, kappa


def _resampled_tables(
    cell_tables: np.ndarray, cell_counts: np.ndarray, n_boot: int, seed: int
) -> np.ndarray:
    """(B + 1, L, L): the sample's table, then one table per bootstrap resample of
    the items, each item contributing its cell's table (cell_tables (C, L, L))."""
    point = np.tensordot(cell_counts, cell_tables, axes=1)[None]
    if n_boot <= 0 or cell_counts.sum() == 0:
        return point
    weights = multinomial_cell_weights(cell_counts, n_boot, seed)
    return np.concatenate([point, np.tensordot(weights, cell_tables, axes=1)])


@dataclass
class LabelFigures:
    """Precision, recall and F1 of one label (None when undefined), its support (items
    whose majority is the label) and predictions (items the judge gave it)."""

    precision: float | None
    recall: float | None
    f1: float | None
    support: int
    predicted: int


def per_label(table: np.ndarray) -> list[LabelFigures]:
    """Per label of a confusion table (rows truth, columns predicted): precision =
    tp / predicted, recall = tp / support, F1 = 2 tp / (2 tp + fp + fn), as
    scikit-learn's ``precision_recall_fscore_support(zero_division=np.nan)``."""
    t = np.asarray(table, dtype=float)
    tp = np.diag(t)
    support = t.sum(axis=1)
    predicted = t.sum(axis=0)
    precision = ratio(tp, predicted)
    recall = ratio(tp, support)
    f1 = ratio(2 * tp, support + predicted)
    return [
        LabelFigures(
            finite_or_none(precision[k]),
            finite_or_none(recall[k]),
            finite_or_none(f1[k]),
            int(support[k]),
            int(predicted[k]),
        )
        for k in range(len(tp))
    ]


def macro_f1(figures: list[LabelFigures]) -> float | None:
    """The mean F1 of the labels where it is defined (None when none is)."""
    values = [f.f1 for f in figures if f.f1 is not None]
    return float(np.mean(values)) if values else None


def fleiss(counts) -> tuple[float | None, int, int, str]:
    """(Fleiss' kappa, items used, raters per item, reason when undefined).

    Items used: those with the most common number of raters, at least 2 (see the
    module doc). Undefined with no such item or when every rating is one label.
    """
    c = _counts(counts)
    m = c.sum(axis=1)
    multi = m[m >= 2]
    if not multi.size:
        return None, 0, 0, "no item has two human labels"
    sizes, freq = np.unique(multi, return_counts=True)
    k = int(sizes[np.flatnonzero(freq == freq.max())[-1]])
    table = c[m == k].astype(float)
    n_items = len(table)
    p_cat = table.sum(axis=0) / table.sum()
    p_item = ((table * table).sum(axis=1) - k) / (k * (k - 1.0))
    p_exp = float((p_cat * p_cat).sum())
    if p_exp >= 1 - 1e-12:
        return None, n_items, k, "every human label is the same"
    value = (float(p_item.mean()) - p_exp) / (1 - p_exp)
    return value, n_items, k, ""


def alpha_nominal(counts) -> tuple[float | None, int, str]:
    """(Krippendorff's alpha for nominal data, pairable items, reason if undefined).

    From the coincidence matrix o_ck = sum_u n_uc (n_uk - [c = k]) / (m_u - 1) over
    items with m_u >= 2 labels: alpha = 1 - (n - 1) sum_{c != k} o_ck /
    sum_{c != k} n_c n_k, n_c the label totals of o. Undefined with no pairable item
    or a single label used (no expected disagreement).
    """
    c = _counts(counts).astype(float)
    m = c.sum(axis=1)
    c = c[m >= 2]
    m = m[m >= 2]
    if not len(c):
        return None, 0, "no item has two labels"
    weighted = c / (m - 1)[:, None]
    o = weighted.T @ c - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    n = n_c.sum()
    observed = o.sum() - np.trace(o)
    expected = n_c.sum() ** 2 - (n_c * n_c).sum()
    if expected <= 1e-12:
        return None, len(c), "a single label is used"
    return float(1 - (n - 1) * observed / expected), len(c), ""


@dataclass
class HumanFigures:
    """Agreement among the human raters of one criterion."""

    n_items: int  # items with at least one human label
    n_labels: int  # human labels (N/A not counted)
    n_tied: int  # items whose majority is tied
    raters_per_item: dict[int, int]  # number of raters -> items
    fleiss: Result
    fleiss_raters: int  # raters per item on the items Fleiss' kappa used
    alpha_nominal: Result
    loo_accuracy: Result
    loo_kappa: Result
    loo_pairs: int  # (rater, item) pairs compared
    loo_tied: int  # pairs left out: the other raters' majority was tied
    loo_table: np.ndarray | None = field(repr=False, default=None)  # (L, L) pooled


def loo_cells(counts) -> tuple[np.ndarray, np.ndarray]:
    """The leave-one-out comparisons as cells: (cell tables (C, L, L), items per cell)
    over the items with at least two raters; an item's table counts, for each of its raters, (the rater's
    label, the majority of the other raters) where that majority is not tied."""
    c = _counts(counts)
    n_labels = c.shape[1]
    keep = c.sum(axis=1) >= 2
    uniq, n_per = np.unique(c[keep], axis=0, return_counts=True)
    tables = np.zeros((len(uniq), n_labels, n_labels), np.int64)
    for lab in range(n_labels):
        has = uniq[:, lab] > 0
        others = uniq[has].copy()
        others[:, lab] -= 1
        maj, _ = majority(others)
        ok = maj != NO_LABEL
        rows = np.flatnonzero(has)[ok]
        tables[rows, lab, maj[ok]] += uniq[rows, lab]
    return tables, n_per


def human_figures(counts, *, n_boot: int = 1000, seed: int = 0) -> HumanFigures:
    """Fleiss' kappa, Krippendorff's nominal alpha and the leave-one-out ceiling of the
    raters' labels (`counts` (n, L), see the module doc)."""
    c = _counts(counts)
    m = c.sum(axis=1)
    _, tied = majority(c)
    sizes, freq = np.unique(m[m > 0], return_counts=True)
    f_value, f_items, f_raters, f_why = fleiss(c)
    a_value, a_items, a_why = alpha_nominal(c)
    cell_tables, cell_counts = loo_cells(c)
    tables = _resampled_tables(cell_tables, cell_counts, n_boot, seed)
    pairs = int(tables[0].sum())
    multi = c[m >= 2]
    possible = int(multi.sum())
    why = "" if pairs else "no rater has another rater's untied majority to meet"
    loo_acc, loo_kappa = _table_results(tables, pairs, why)
    return HumanFigures(
        n_items=int((m > 0).sum()),
        n_labels=int(m.sum()),
        n_tied=int(tied.sum()),
        raters_per_item={int(s): int(f) for s, f in zip(sizes, freq, strict=True)},
        fleiss=make_result(
            np.nan if f_value is None else f_value, None, f_items, f_why
        ),
        fleiss_raters=f_raters,
        alpha_nominal=make_result(
            np.nan if a_value is None else a_value, None, a_items, a_why
        ),
        loo_accuracy=loo_acc,
        loo_kappa=loo_kappa,
        loo_pairs=pairs,
        loo_tied=possible - pairs,
        loo_table=tables[0],
    )


@dataclass
class JudgeFigures:
    """One judge against the human majority on one criterion."""

    n_items: int  # items with a majority and a judge label (the figures' n)
    n_tied: int  # items with a judge label whose majority is tied
    n_no_human: int  # items with a judge label and no human label
    n_no_judge: int  # items with a human majority and no judge label
    accuracy: Result
    kappa: Result
    alpha_with_judge: Result  # Krippendorff nominal, humans and the judge
    confusion: np.ndarray  # (L, L): rows majority, columns judge
    labels: list[LabelFigures]
    macro_f1: float | None


def judge_figures(counts, judge, *, n_boot: int = 1000, seed: int = 0) -> JudgeFigures:
    """The judge's labels against the human majority (module doc): accuracy and Cohen's
    kappa with bootstrap intervals, per-label figures, the confusion matrix, and
    Krippendorff's nominal alpha with the judge as one more rater."""
    c = _counts(counts)
    j = np.asarray(judge, np.int64)
    n_labels = c.shape[1]
    if len(j) != len(c):
        raise ValueError("counts and judge must have one entry per item")
    maj, tied = majority(c)
    has_judge = j != NO_LABEL
    both = has_judge & (maj != NO_LABEL)
    cells = np.bincount(
        maj[both] * n_labels + j[both], minlength=n_labels * n_labels
    ).astype(float)
    unit = np.eye(n_labels * n_labels).reshape(-1, n_labels, n_labels)
    tables = _resampled_tables(unit, cells, n_boot, seed)
    n = int(both.sum())
    why = "" if n else "no item has both a human majority and a judge label"
    accuracy, kappa = _table_results(tables, n, why)
    with_judge = c.copy()
    with_judge[np.flatnonzero(has_judge), j[has_judge]] += 1
    a_value, a_items, a_why = alpha_nominal(with_judge)
    table = tables[0].astype(np.int64)
    figures = per_label(table)
    return JudgeFigures(
        n_items=n,
        n_tied=int((has_judge & tied).sum()),
        n_no_human=int((has_judge & (c.sum(axis=1) == 0)).sum()),
        n_no_judge=int((~has_judge & (maj != NO_LABEL)).sum()),
        accuracy=accuracy,
        kappa=kappa,
        alpha_with_judge=make_result(
            np.nan if a_value is None else a_value, None, a_items, a_why
        ),
        confusion=table,
        labels=figures,
        macro_f1=macro_f1(figures),
    )
