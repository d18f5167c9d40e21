"""The judge's probability-weighted score as its score in the correlations.

With ``judge_score="expected"`` (`agreement_compute`), each compared run's Pearson,
Spearman and Kendall figures are computed on the judge's expected score
(`judging.models.JudgeScore.expected_score`: sum of value x probability over the
scale's values among the score token's top alternatives, `judging.logprobs`; the
mean over samples) against the raters' mean, on the items the integer figures use
that have one. QWK, exact agreement and every other statistic stay on the integer
score: they compare categories, which a continuous value is not. Items without an
expected score (a run without the option, an endpoint that returned no token
probabilities) are left out of these three figures, and their n says so.

Intervals: the items are resampled with replacement (`n_boot` times, `seed`), in
blocks so that memory stays bounded; pooled rows (abilities, overall) resample
their union of items.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.bootstrap import indices_to_weights
from analysis.stats.correlations import correlations_w
from analysis.stats.report import GroupItems, Report
from analysis.stats.results import result_from_rows
from analysis.stats.scale import mean_from_counts
from judging.models import JudgeScore

JUDGE_SCORES = ("integer", "expected")
CONTINUOUS = ("pearson", "spearman", "kendall")
NOTE = (
    "Judge score: the probability-weighted expected score for Pearson, Spearman "
    "and Kendall (items without one left out); QWK, exact agreement and the other "
    "statistics use the judge's integer score."
)
WHY = "fewer than two items with an expected score, or a constant side"
BLOCK = 50  # resamples per block


def expected_by_item(
    run_id: int, key_fn, skill_ids: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    """(sorted item keys, mean expected score over samples) of one run (one query)."""
    rows = list(
        JudgeScore.objects.filter(
            run_id=run_id, skill_id__in=skill_ids, expected_score__isnull=False
        ).values_list("response_id", "skill_id", "expected_score")
    )
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0)
    data = np.asarray(rows, dtype=float)
    keys = key_fn(data[:, 0].astype(np.int64), data[:, 1].astype(np.int64))
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    sums = np.bincount(inv, weights=data[:, 2], minlength=len(uniq))
    return uniq, sums / np.bincount(inv, minlength=len(uniq))


def skill_item_keys(h_keys, j_keys, n_skills: int, skill_keys: list[str]) -> dict:
    """Per skill key, the item keys of its `GroupItems` in their order (as
    `inputs.group_items` lays them out)."""
    all_keys = np.union1d(h_keys, j_keys)
    index = all_keys % max(n_skills, 1)
    return {k: all_keys[index == i] for i, k in enumerate(skill_keys)}


def _pairs(items: GroupItems, keys: np.ndarray, exp_keys, exp_values):
    """(expected score, raters' mean) of the items both sides scored that have an
    expected score."""
    counts = np.asarray(items.human_counts)
    used = (counts.sum(axis=1) > 0) & (np.asarray(items.judge) > 0)
    if len(exp_keys):
        pos = np.minimum(np.searchsorted(exp_keys, keys), len(exp_keys) - 1)
        found = exp_keys[pos] == keys
    else:
        pos, found = np.zeros(len(keys), np.int64), np.zeros(len(keys), bool)
    keep = used & found
    x = exp_values[pos[keep]] if keep.any() else np.zeros(0)
    y = mean_from_counts(counts[keep].astype(float), items.scale)
    return x, y


def continuous_stats(x: np.ndarray, y: np.ndarray, n_boot: int, seed: int) -> dict:
    """Pearson, Spearman and Kendall of `x` against `y` with bootstrap intervals."""
    n = len(x)
    if n == 0:
        rows = {k: np.full(1 + n_boot, np.nan) for k in CONTINUOUS}
        return {k: result_from_rows(v, 0, WHY) for k, v in rows.items()}
    parts = [correlations_w(np.ones((1, n)), x, y)]
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, BLOCK):
        size = min(BLOCK, n_boot - start)
        idx = rng.integers(0, n, size=(size, n))
        parts.append(correlations_w(indices_to_weights(idx, n).astype(float), x, y))
    return {
        k: result_from_rows(np.concatenate([p[k] for p in parts]), n, WHY)
        for k in CONTINUOUS
    }


def use_expected_scores(  # noqa: PLR0913 - one run's table, items and expected scores, by name
    *,
    table: dict[str, Report],
    groups: dict[str, GroupItems],
    item_keys: dict[str, np.ndarray],
    abilities: dict[str, list[str]],
    expected: tuple[np.ndarray, np.ndarray],
    n_boot: int,
    seed: int,
) -> None:
    """Replace the correlations of each row of `table` (one run's) by those of the
    judge's expected score (see the module); the other statistics are kept."""
    exp_keys, exp_values = expected
    pairs = {
        k: _pairs(g, item_keys[k], exp_keys, exp_values) for k, g in groups.items()
    }
    labelled = {f"skill:{k}": [k] for k in groups}
    labelled.update({f"ability:{a}": ks for a, ks in abilities.items()})
    labelled["overall"] = list(groups)
    for label, keys in labelled.items():
        report = table.get(label)
        if report is None:
            continue
        parts = [pairs[k] for k in keys if k in pairs]
        x = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0)
        y = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
        report.judge.update(continuous_stats(x, y, n_boot, seed))
