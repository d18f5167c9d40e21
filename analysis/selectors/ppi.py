"""Prediction-powered estimates of each model's mean human score per criterion.

An *item* is a (response, criterion) pair (`analysis.selectors.agreement.inputs`).
Per model and ordinal criterion:

* labelled items: the humans of the chosen campaigns gave a numeric score and the
  run scored it; y = the raters' mean, f = the run's score (median of its samples);
* unlabelled items: the run scored them and no human of those campaigns did
  (items the humans marked N/A only are neither: the humans did label them);
* items humans scored and the run did not are left out (PPI needs both on the
  labelled ones), so the humans-only column averages the labelled items.

The estimates are those of :func:`analysis.stats.ppi.ppi_mean` (humans only, judge
only, prediction-powered with the tuned lam and with lam = 1, the effective number
of human labels). Categorical criteria are left out (the loaders drop them). The
campaigns sample items uniformly here, so no weights are used.

Sampling campaigns (`judging.services.sampling`) drew their items with unequal
probabilities: their labels are not a uniform sample, so they are left out of the
default campaigns (and said so in ``left_out``) and refused when chosen; their
probability-weighted estimates are on their own page (`analysis.selectors.sampling`).

Win rates from pairwise votes: `analysis.selectors.ppi_pairwise`.
"""

from __future__ import annotations

import math

import numpy as np

from analysis.selectors.agreement.inputs import (
    human_side,
    item_keys,
    judge_by_item,
    load_inputs,
    value_offset,
)
from analysis.selectors.agreement.sources import (
    AgreementError,
    agreement_defaults,
    check_params,
    run_label,
)
from analysis.stats.ppi import PPIResult, humans_mean, ppi_mean
from analysis.stats.scale import mean_from_counts
from annotation.models import Campaign, Dataset

# Fewer labelled items give no standard deviation to speak of.
MIN_LABELLED = 2
# Shown beside the humans-only mean when the run scored no item humans left alone.
EVERY_ITEM_LABELLED = (
    "every item the run scored has a human label, so the humans-only mean is the "
    "answer and the judge adds nothing; for a useful estimate, have humans label a "
    "sample of the items and the judge score all of them"
)

NO_VALID_CI = (
    "the judge's own mean: biased by the judge's bias, so its interval is no "
    "confidence interval for the human mean"
)


def _number(x: float) -> float | None:
    """JSON-safe: inf and nan become None."""
    return float(x) if math.isfinite(x) else None


def estimates_dict(r: PPIResult) -> dict:
    """A `PPIResult` as JSON (non-finite effective n as None), the judge-only
    estimate with the note that its interval is not valid."""
    out = r.as_dict()
    out["effective_n"] = _number(r.effective_n)
    out["judge"]["note"] = NO_VALID_CI
    return out


def _sampling_campaigns(campaign_ids) -> list[Campaign]:
    """The campaigns among these that drew their items by a sampling design."""
    return list(
        Campaign.objects.filter(pk__in=list(campaign_ids))
        .exclude(sampling={})
        .order_by("pk")
    )


def _item_values(inp, run_id: int):
    """(labelled keys, y, f on them, unlabelled keys, f on them), sorted by key,
    scores on each criterion's own scale (module doc)."""
    key_fn, _ = item_keys(inp.skills)
    h_keys, h_counts, _ = human_side(inp)
    j_keys, j_codes = judge_by_item(inp.judge, run_id, key_fn)
    scored = j_codes > 0
    j_keys, j_codes = j_keys[scored], j_codes[scored]
    numeric = h_counts.sum(axis=1) > 0
    width = h_counts.shape[1]
    codes = np.arange(1, width + 1, dtype=float)
    lab, hi, ji = np.intersect1d(h_keys[numeric], j_keys, return_indices=True)
    y = mean_from_counts(h_counts[numeric][hi], codes)
    f = j_codes[ji].astype(float)
    unl = ~np.isin(j_keys, h_keys)
    u_keys, f_u = j_keys[unl], j_codes[unl].astype(float)
    if (off := value_offset(inp, lab)) is not None:
        y, f = y + off, f + off
    if (off := value_offset(inp, u_keys)) is not None:
        f_u = f_u + off
    return lab, y, f, u_keys, f_u


def _row(model: str, y, f, f_u, alpha: float, lam: float | None) -> dict:
    row = {"model": model, "n_labelled": len(y), "n_unlabelled": len(f_u)}
    if len(y) < MIN_LABELLED:
        row["reason"] = (
            f"{len(y)} human-labelled item(s) the run also scored; "
            f"PPI needs at least {MIN_LABELLED}"
        )
        return row
    if not len(f_u):
        # The humans-only mean is the answer; the judge has nothing to add until
        # some items are left to it alone.
        row["humans"] = humans_mean(y, alpha=alpha).as_dict()
        row["reason"] = EVERY_ITEM_LABELLED
        return row
    row.update(estimates_dict(ppi_mean(y, f, f_u, alpha=alpha, lam=lam)))
    row["reason"] = ""
    return row


def prediction_powered_means(
    *,
    dataset: Dataset,
    run_id: int | None,
    campaign_ids: list[int] | None = None,
    criterion: str | None = None,
    slice_dim: str = "",
    slice_value: str = "",
    alpha: float = 0.05,
    lam: float | None = None,
) -> dict:
    """Per ordinal criterion and model: humans only, judge only and
    prediction-powered means with their intervals, lam and the effective n.

    campaign_ids: the human campaigns (None: every pointwise campaign, the
    agreement default); run_id: one judge run of `dataset` (required); criterion:
    one skill key (None: all); slice_dim / slice_value: as the agreement's.
    Raises AgreementError naming the parameter: `campaign` (none, unknown, or no
    item both the humans and the run scored), `run` (none, unknown, or no score on an
    ordinal criterion), `criterion`, `slice`, `alpha`. Read only; a constant number
    of queries.
    """
    if not 0 < alpha < 1:
        raise AgreementError(f"alpha: must be between 0 and 1, not {alpha}")
    if lam is not None and not 0 <= lam <= 1:
        raise AgreementError(f"lam: must be between 0 and 1, not {lam}")
    left_out = []
    if campaign_ids is None:
        campaign_ids = agreement_defaults(dataset=dataset).campaign_ids
        sampled = _sampling_campaigns(campaign_ids)
        left_out = [
            f"{c.name}: a sampling campaign (unequal inclusion probabilities); its "
            "weighted estimates are on its sampling page"
            for c in sampled
        ]
        campaign_ids = [pk for pk in campaign_ids if pk not in {c.pk for c in sampled}]
    elif sampled := _sampling_campaigns(campaign_ids):
        names = ", ".join(c.name for c in sampled)
        raise AgreementError(
            f"campaign: {names} drew its items with unequal probabilities (a "
            "sampling campaign), so its labels are no uniform sample for PPI; its "
            "probability-weighted estimates are on its sampling page"
        )
    if not campaign_ids:
        raise AgreementError(
            "campaign: no human-labelled items: the dataset has no pointwise "
            "campaign; PPI needs humans on some items"
        )
    if run_id is None:
        raise AgreementError("run: choose the judge run whose scores PPI uses")
    runs = check_params(dataset, campaign_ids, [run_id], None, False, 0)
    inp, slice_label = load_inputs(
        dataset, campaign_ids, [run_id], slice_dim, slice_value
    )
    if criterion and criterion not in inp.skills.keys:
        raise AgreementError(
            f"criterion: no ordinal criterion {criterion!r} was scored on this "
            f"dataset; use one of {', '.join(inp.skills.keys) or '(none)'}"
        )
    lab, y, f, u_keys, f_u = _item_values(inp, run_id)
    if not len(lab) and not len(u_keys):
        raise AgreementError(
            f"run: {run_label(runs[run_id])} has no score on an ordinal criterion "
            f"of this dataset ({slice_label})"
        )
    if not len(lab):
        raise AgreementError(
            "campaign: no human-labelled items: the humans of the chosen campaign(s) "
            f"scored none of the items the run scored ({slice_label})"
        )
    _, n_sk = item_keys(inp.skills)
    resp = inp.resp
    lab_model = resp.model[resp.index(lab // n_sk)]
    u_model = resp.model[resp.index(u_keys // n_sk)]
    criteria = []
    for i, key in enumerate(inp.skills.keys):
        if criterion and key != criterion:
            continue
        ls, us = lab % n_sk == i, u_keys % n_sk == i
        if not ls.any() and not us.any():
            continue
        rows = []
        for m, name in enumerate(resp.model_names):
            lm, um = ls & (lab_model == m), us & (u_model == m)
            if lm.any() or um.any():
                rows.append(_row(name, y[lm], f[lm], f_u[um], alpha, lam))
        values = inp.skills.values[key]
        criteria.append(
            {
                "key": key,
                "name": inp.skills.names[key],
                "scale": [float(values[0]), float(values[-1])],
                "models": rows,
            }
        )
    campaigns = Campaign.objects.filter(pk__in=campaign_ids).order_by("pk")
    return {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "run": {"id": run_id, "label": run_label(runs[run_id])},
        "campaigns": [{"id": c.pk, "name": c.name} for c in campaigns],
        "slice": slice_label,
        "alpha": alpha,
        "lam": "tuned (PPI++)" if lam is None else lam,
        "criteria": criteria,
        "left_out": left_out,
        "notes": [
            "humans only: the raters' mean on the labelled items (CLT interval)",
            f"judge only: {NO_VALID_CI}",
            "prediction-powered: the judge's mean on the unlabelled items corrected "
            "by its error on the labelled ones (PPI++, lam tuned to minimise the "
            "variance, clipped to [0, 1]; classic: lam = 1)",
            "effective n: the human labels alone that would give the "
            "prediction-powered interval's width",
            "categorical criteria are left out",
        ],
    }
