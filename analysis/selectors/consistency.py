"""Self-consistency of a judge run that scored each item several times.

Per ordinal criterion: how well sample 0 alone, the median of the samples and their
mode agree with the humans (QWK, Spearman), and how much the samples of one item
differ (`analysis.stats.consistency` states the conventions). The scores are read
as the agreement figures read them (`analysis.selectors.agreement.inputs`): the same
campaigns by default, excluded raters and gold items left out, the same slices, the
test split only with a logged look.
"""

from __future__ import annotations

import numpy as np

from analysis.selectors.agreement.inputs import (
    TEST_LOCKED,
    human_side,
    item_keys,
    load_inputs,
)
from analysis.selectors.agreement.sources import (
    AgreementError,
    agreement_defaults,
    check_params,
    run_label,
)
from analysis.stats.consistency import READING_LABELS, consistency_figures
from analysis.stats.scale import mean_from_counts, median_from_counts, round_half_up
from annotation.models import Campaign, Dataset
from annotation.selectors.exclusions import exclusions_note
from judging.selectors.item_scores import SCORE_KINDS


def _sample_matrix(inp, key_fn) -> tuple[np.ndarray, np.ndarray]:
    """(item keys, samples (n, S) of score codes, NaN = none) of the loaded run."""
    j = inp.judge
    if not len(j):
        return np.zeros(0, np.int64), np.zeros((0, 1))
    keys = key_fn(j[:, 1], j[:, 2])
    items, row = np.unique(keys, return_inverse=True)
    samples = np.full((len(items), int(j[:, 3].max()) + 1), np.nan)
    numeric = j[:, 4] > 0  # code 0: N/A or off the scale
    samples[row.ravel()[numeric], j[numeric, 3]] = j[numeric, 4]
    return items, samples


def _human_at(inp, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The humans' mean and rounded median (codes) at `items`, NaN where none."""
    h_keys, h_counts, _ = human_side(inp)
    mean = np.full(len(items), np.nan)
    median = np.full(len(items), np.nan)
    _, at, hi = np.intersect1d(items, h_keys, return_indices=True)
    counts = h_counts[hi]
    has = counts.sum(axis=1) > 0
    codes = np.arange(1, counts.shape[1] + 1, dtype=float)
    mean[at[has]] = mean_from_counts(counts[has], codes)
    if has.any():
        median[at[has]] = round_half_up(median_from_counts(counts[has], codes))
    return mean, median


def self_consistency(
    *,
    dataset: Dataset,
    run_id: int,
    campaign_ids: list[int] | None = None,
    slice_dim: str = "",
    slice_value: str = "",
    test_look=None,
) -> dict:
    """The self-consistency figures of run `run_id` on `dataset`, per criterion.

    Shape: {"dataset", "run": {"id", "label", "samples"}, "slice", "campaigns",
    "exclusions", "readings" (name -> label), "rows": [{"key", "name", "scale",
    "n_items", "n_samples", "readings": {"first"|"median"|"mode": {"qwk",
    "spearman"}}, "spread": {"n_items", "mean_variance", "median_variance",
    "share_disagreeing"}}], "note"}. Figures are None where undefined. No
    `campaign_ids`: every pointwise campaign (`agreement_defaults`). Raises
    AgreementError naming the parameter (campaign, run, slice); the test split
    needs `test_look`, as in `agreement_compute`. Read only; a fixed number of
    queries. The caller checks the role (the pages and the API do).
    """
    campaign_ids = sorted({int(c) for c in campaign_ids or []})
    if not campaign_ids:
        campaign_ids = agreement_defaults(dataset=dataset).campaign_ids
    run = check_params(dataset, campaign_ids, [int(run_id)], None, False, 0)[
        int(run_id)
    ]
    if run.kind not in SCORE_KINDS:
        raise AgreementError(
            f"run: #{run.pk} is a {run.get_kind_display().lower()} run, without "
            "criterion scores"
        )
    if (slice_dim, slice_value) == ("split", "test") and test_look is None:
        raise AgreementError(TEST_LOCKED)
    inp, slice_label = load_inputs(
        dataset, campaign_ids, [run.pk], slice_dim, slice_value, None, test_look
    )
    key_fn, n_sk = item_keys(inp.skills)
    items, samples = _sample_matrix(inp, key_fn)
    mean, median = _human_at(inp, items)
    rows = []
    for i, key in enumerate(inp.skills.keys):
        sel = items % n_sk == i
        if not sel.any():
            continue
        values = inp.skills.values[key]
        codes = np.arange(1, len(values) + 1, dtype=float)
        rows.append(
            {
                "key": key,
                "name": inp.skills.names[key],
                "scale": f"{int(values[0])}-{int(values[-1])}",
                **consistency_figures(samples[sel], mean[sel], median[sel], codes),
            }
        )
    n_samples = int(samples.shape[1]) if len(items) else 0
    return {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "run": {"id": run.pk, "label": run_label(run), "samples": n_samples},
        "slice": {"dim": slice_dim, "value": slice_value, "label": slice_label},
        "campaigns": [
            {"id": c.pk, "name": c.name}
            for c in Campaign.objects.filter(pk__in=campaign_ids).order_by("pk")
        ],
        "exclusions": exclusions_note(campaign_ids),
        "readings": READING_LABELS,
        "rows": rows,
        "note": ""
        if n_samples > 1
        else "This run has one sample per item: its readings are all the same.",
    }
