"""Agreement on categorical criteria (classification): data gathering for
:mod:`analysis.stats.categorical`.

Reads only. For a dataset, the chosen campaigns (human raters) and judge runs, it
reads the HumanScore and JudgeScore rows of the categorical criteria with a fixed
number of queries (skills, human labels, judge labels, and the responses when a
slice is asked for), whatever the data size, and returns JSON-safe per-criterion
reports (figures as :func:`analysis.selectors.agreement.rows.result_dict`).

Conventions (those of the agreement dashboard, :mod:`analysis.selectors.agreement`,
plus the categorical ones of :mod:`analysis.stats.categorical`):

* Sources: the same campaigns and runs as the agreement dashboard
  (:func:`agreement_defaults` when none is chosen); the humans are always the
  reference (a reference run or test-retest has no categorical section).
* A criterion is a categorical skill of the dataset's rubric, matched by key; the
  stored value is the label's code in its own rubric version, so a score of another
  version with the same key is mapped through its label *key* onto the dataset
  rubric's labels (a label that version lacks is added after them).
* Human side: the labels of *submitted* assignments; N/A is counted, never a label.
* Judge side: one label per item and run: the label most of its samples gave; a tie
  goes to the tied label of the earliest sample. An item whose samples are all N/A
  is counted as judge N/A and has no label.
* Results are cached under the agreement cache's fingerprint of the inputs
  (:func:`analysis.selectors.agreement.cache.inputs_fingerprint`): a new score gives
  a new key.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.db.models import Exists, OuterRef

from analysis.selectors.agreement.cache import (
    CACHE_SECONDS,
    cache_key,
    cached_responses,
    inputs_fingerprint,
)
from analysis.selectors.agreement.inputs import (
    dataset_responses,
    fetch,
    not_excluded_sql,
    placeholders,
    quoted_table,
    slice_mask,
)
from analysis.selectors.agreement.result import AgreementResult
from analysis.selectors.agreement.rows import result_dict
from analysis.selectors.agreement.sources import (
    agreement_defaults,
    check_params,
    run_label,
)
from analysis.stats.categorical import NO_LABEL, human_figures, judge_figures
from annotation.models import Assignment, Campaign, Dataset, HumanScore, Skill
from annotation.models.datasets import SkillKind
from judging.models import JudgeRun, JudgeScore

CACHE_PARAMS_VERSION = "classification-v1"

# The conventions a reader of the figures needs, in words (pages and the API).
RULES = (
    "Human majority: the label most raters chose; an item where two labels tie has "
    "no majority and is left out of the judge's figures (counted as tied). "
    "A judge's label: the one most of its samples gave. "
    "Leave-one-out ceiling: each rater against the majority of the item's other "
    "raters, pooled. Fleiss' κ uses the items with the most common number of "
    "raters. 95% percentile intervals over items resampled with replacement."
)


@dataclass
class Criterion:
    """One categorical criterion: its key, name, labels and the code map of every
    skill id (any rubric version) that carries its key."""

    key: str
    name: str
    labels: list[dict]  # [{"key", "name"}], the dataset rubric's order first
    code_map: dict[int, np.ndarray]  # skill id -> stored code -> label index


def categorical_criteria(dataset: Dataset) -> list[Criterion]:
    """The categorical criteria of the dataset's rubric, in rubric order, with the
    code maps of every categorical skill that shares a key (two queries; none of the
    second when the rubric has no categorical criterion)."""
    own = list(
        Skill.objects.filter(rubric_id=dataset.rubric_id, kind=SkillKind.CATEGORICAL)
        .order_by("position", "pk")
        .values("id", "key", "name", "labels")
    )
    if not own:
        return []
    others = Skill.objects.filter(
        kind=SkillKind.CATEGORICAL, key__in=[s["key"] for s in own]
    ).exclude(rubric_id=dataset.rubric_id)
    by_key: dict[str, list[dict]] = {}
    for s in others.order_by("pk").values("id", "key", "labels"):
        by_key.setdefault(s["key"], []).append(s)
    out = []
    for s in own:
        labels = [
            {"key": str(lab["key"]), "name": str(lab.get("name") or lab["key"])}
            for lab in s["labels"] or []
        ]
        index = {lab["key"]: i for i, lab in enumerate(labels)}
        code_map = {s["id"]: np.arange(len(labels), dtype=np.int64)}
        for other in by_key.get(s["key"], []):
            codes = []
            for lab in other["labels"] or []:
                key = str(lab["key"])
                if key not in index:
                    index[key] = len(labels)
                    labels.append({"key": key, "name": str(lab.get("name") or key)})
                codes.append(index[key])
            code_map[other["id"]] = np.array(codes, dtype=np.int64)
        out.append(Criterion(s["key"], s["name"], labels, code_map))
    return out


def dataset_has_categorical(dataset: Dataset) -> bool:
    """Whether the dataset's rubric has a categorical criterion (one query)."""
    return Skill.objects.filter(
        rubric_id=dataset.rubric_id, kind=SkillKind.CATEGORICAL
    ).exists()


def _human_rows(campaign_ids: list[int], skill_ids: list[int]) -> np.ndarray:
    """(n, 4): response id, skill id, stored code (-1 = N/A), number of such scores."""
    if not campaign_ids or not skill_ids:
        return np.zeros((0, 4), np.int64)
    rows = fetch(
        f"SELECT a.response_id, hs.skill_id, COALESCE(hs.score, -1), COUNT(*) "
        f"FROM {quoted_table(HumanScore)} hs JOIN {quoted_table(Assignment)} a "
        f"ON a.id = hs.assignment_id "
        f"WHERE a.campaign_id IN ({placeholders(campaign_ids)}) AND a.status = %s "
        f"AND NOT a.gold "  # gold items measure raters, not responses
        f"AND {not_excluded_sql('a')} "
        f"AND hs.skill_id IN ({placeholders(skill_ids)}) "
        f"GROUP BY a.response_id, hs.skill_id, hs.score",
        [*campaign_ids, Assignment.Status.SUBMITTED, *skill_ids],
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 4)


def _judge_rows(run_ids: list[int], skill_ids: list[int]) -> np.ndarray:
    """(n, 5): run id, response id, skill id, sample index, stored code (-1 = N/A)."""
    if not run_ids or not skill_ids:
        return np.zeros((0, 5), np.int64)
    rows = fetch(
        f"SELECT run_id, response_id, skill_id, sample_index, COALESCE(score, -1) "
        f"FROM {quoted_table(JudgeScore)} WHERE run_id IN ({placeholders(run_ids)}) "
        f"AND skill_id IN ({placeholders(skill_ids)})",
        [*run_ids, *skill_ids],
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


def _map_codes(skill_ids: np.ndarray, codes: np.ndarray, crit: Criterion):
    """Stored codes -> label indices of `crit` (-1 stays N/A; a code outside its
    version's labels, which the scale never accepts, is treated as N/A)."""
    out = np.full(len(codes), NO_LABEL, np.int64)
    for sid, table in crit.code_map.items():
        sel = (skill_ids == sid) & (codes >= 0) & (codes < len(table))
        out[sel] = table[codes[sel]]
    return out


def judge_labels(responses: np.ndarray, samples: np.ndarray, labels: np.ndarray):
    """Per response: (response ids, judge label or NO_LABEL, whether all samples were
    N/A). The label most samples gave; a tie goes to the earliest sample's label."""
    uniq, inv = np.unique(responses, return_inverse=True)
    inv = inv.ravel()
    n_labels = int(labels.max()) + 1 if len(labels) and labels.max() >= 0 else 1
    has = labels >= 0
    counts = np.zeros((len(uniq), n_labels), np.int64)
    np.add.at(counts, (inv[has], labels[has]), 1)
    never = np.iinfo(np.int64).max
    first = np.full((len(uniq), n_labels), never)
    np.minimum.at(first, (inv[has], labels[has]), samples[has])
    top = counts.max(axis=1)
    first = np.where(counts == top[:, None], first, never)
    label = np.where(top > 0, first.argmin(axis=1), NO_LABEL)
    return uniq, label.astype(np.int64), top == 0


def _criterion_report(crit, human, judge, run_ids, labels_of_run, n_boot, seed):
    """The JSON report of one criterion (see :func:`classification_compute`)."""
    n_labels = len(crit.labels)
    h = human[np.isin(human[:, 1], list(crit.code_map))]
    h_label = _map_codes(h[:, 1], h[:, 2], crit)
    j = judge[np.isin(judge[:, 2], list(crit.code_map))]
    j_label = _map_codes(j[:, 2], j[:, 4], crit)
    items = np.union1d(h[:, 0], j[:, 0])
    counts = np.zeros((len(items), n_labels), np.int64)
    hi = np.searchsorted(items, h[:, 0])
    ok = h_label >= 0
    np.add.at(counts, (hi[ok], h_label[ok]), h[ok, 3])
    n_na = int(h[~ok, 3].sum())
    humans = human_figures(counts, n_boot=n_boot, seed=seed)
    report = {
        "key": crit.key,
        "name": crit.name,
        "labels": crit.labels,
        "humans": {
            "n_items": humans.n_items,
            "n_labels": humans.n_labels,
            "n_na": n_na,
            "n_tied": humans.n_tied,
            "raters_per_item": {str(k): v for k, v in humans.raters_per_item.items()},
            "fleiss": result_dict(humans.fleiss),
            "fleiss_raters": humans.fleiss_raters,
            "alpha_nominal": result_dict(humans.alpha_nominal),
            "ceiling": {
                "accuracy": result_dict(humans.loo_accuracy),
                "kappa": result_dict(humans.loo_kappa),
                "pairs": humans.loo_pairs,
                "tied": humans.loo_tied,
            },
        },
        "judges": {},
    }
    for rid in run_ids:
        sel = j[:, 0] == rid
        resp, label, all_na = judge_labels(j[sel, 1], j[sel, 3], j_label[sel])
        judge_label = np.full(len(items), NO_LABEL, np.int64)
        judge_label[np.searchsorted(items, resp)] = label
        fig = judge_figures(counts, judge_label, n_boot=n_boot, seed=seed)
        report["judges"][str(rid)] = {
            "run": labels_of_run[rid],
            "n_items": fig.n_items,
            "n_labelled": int(len(resp) - all_na.sum()),
            "n_judge_na": int(all_na.sum()),
            "n_tied": fig.n_tied,
            "n_no_human": fig.n_no_human,
            "n_no_judge": fig.n_no_judge,
            "accuracy": result_dict(fig.accuracy),
            "kappa": result_dict(fig.kappa),
            "alpha_with_judge": result_dict(fig.alpha_with_judge),
            "macro_f1": fig.macro_f1,
            "per_label": [
                {**lab, **vars(f)}
                for lab, f in zip(crit.labels, fig.labels, strict=True)
            ],
            "confusion": [
                {
                    "label": lab["key"],
                    "name": lab["name"],
                    "cells": [int(x) for x in row],
                    "total": int(row.sum()),
                }
                for lab, row in zip(crit.labels, fig.confusion, strict=True)
            ],
        }
    return report


def classification_compute(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    slice_dim: str = "",
    slice_value: str = "",
    n_boot: int = 1000,
    seed: int = 0,
    use_cache: bool = True,
) -> dict:
    """Per categorical criterion of the dataset's rubric: the human raters' agreement
    (Fleiss' κ, Krippendorff's nominal α, the leave-one-out ceiling) and, per run,
    the judge against the human majority (accuracy, Cohen's κ, nominal α with the
    judge, per-label precision / recall / F1, the confusion matrix with label names).

    Shape: {"dataset", "campaigns", "runs": [{"id", "label"}], "slice", "n_boot",
    "seed", "rules", "classification" (every criterion of the rubric is
    categorical), "criteria": [{"key", "name", "labels", "humans", "judges":
    {run id: ...}}]}. No campaign or no run: the agreement defaults. Raises
    AgreementError naming the parameter (campaign, run, slice, n_boot, seed).
    Queries: a fixed number whatever the data size; read only (writes the cache).
    """
    campaign_ids = sorted({int(c) for c in campaign_ids or []})
    run_ids = list(dict.fromkeys(int(r) for r in run_ids or []))
    if not campaign_ids or not run_ids:
        defaults = agreement_defaults(dataset=dataset)
        campaign_ids = campaign_ids or defaults.campaign_ids
        run_ids = run_ids or defaults.run_ids
    runs = check_params(dataset, campaign_ids, run_ids, None, False, n_boot, seed)
    criteria = categorical_criteria(dataset)
    key = None
    if use_cache:
        fingerprint = inputs_fingerprint(dataset, campaign_ids, run_ids)
        params = {
            "kind": CACHE_PARAMS_VERSION,
            "dataset": dataset.pk,
            "rubric": dataset.rubric_id,
            "campaigns": campaign_ids,
            "runs": run_ids,
            "slice": [slice_dim, slice_value],
            "n_boot": n_boot,
            "seed": seed,
        }
        key = cache_key(params, fingerprint)
        hit = cache.get(key)
        if hit is not None:
            return hit
    slice_label = "all responses"
    skill_ids = sorted({sid for c in criteria for sid in c.code_map})
    human = _human_rows(campaign_ids, skill_ids)
    judge = _judge_rows(run_ids, skill_ids)
    if slice_dim:
        if key is not None:
            resp = cached_responses(dataset, fingerprint)
        else:
            resp = dataset_responses(dataset)
        mask, slice_label = slice_mask(resp, slice_dim, slice_value)
        keep = resp.ids[mask]
        human = human[np.isin(human[:, 0], keep)]
        judge = judge[np.isin(judge[:, 1], keep)]
    labels_of_run = {rid: run_label(runs[rid]) for rid in run_ids}
    all_categorical = (
        not Skill.objects.filter(rubric_id=dataset.rubric_id)
        .exclude(kind=SkillKind.CATEGORICAL)
        .exists()
    )
    result = {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "campaigns": [
            {"id": c.pk, "name": c.name}
            for c in Campaign.objects.filter(pk__in=campaign_ids).order_by("pk")
        ],
        "runs": [{"id": rid, "label": labels_of_run[rid]} for rid in run_ids],
        "slice": {"dim": slice_dim, "value": slice_value, "label": slice_label},
        "n_boot": n_boot,
        "seed": seed,
        "rules": RULES,
        "classification": bool(criteria) and all_categorical,
        "criteria": [
            _criterion_report(c, human, judge, run_ids, labels_of_run, n_boot, seed)
            for c in criteria
        ],
    }
    if key is not None:
        cache.set(key, result, CACHE_SECONDS)
    return result


def classification_for_agreement(
    *, dataset: Dataset, result: AgreementResult
) -> dict | None:
    """The categorical section of an agreement result (the dashboard's and the API's
    hook): :func:`classification_compute` on the same campaigns, runs, slice,
    resamples and seed, or None when the rubric has no categorical criterion or the
    reference is not the human raters (one query then)."""
    if result.reference.kind != "humans":
        return None
    if not result.campaigns or not dataset_has_categorical(dataset):
        return None
    return classification_compute(
        dataset=dataset,
        campaign_ids=[c.id for c in result.campaigns],
        run_ids=[r.id for r in result.runs],
        slice_dim=result.slice.dim,
        slice_value=result.slice.value,
        n_boot=result.n_boot,
        seed=result.seed,
    )


def classification_runs(dataset: Dataset) -> list[JudgeRun]:
    """Runs with at least one score on a categorical criterion of `dataset`'s rubric
    (classification runs), newest first (one query)."""
    scored = JudgeScore.objects.filter(
        run__dataset=dataset,
        skill__rubric_id=dataset.rubric_id,
        skill__kind=SkillKind.CATEGORICAL,
    ).values("run_id")
    return list(
        JudgeRun.objects.filter(dataset=dataset, pk__in=scored)
        .select_related("config")
        .order_by("-created_at", "-pk")
    )


def classification_dataset_ids() -> list[int]:
    """Ids of the datasets whose rubric has a categorical criterion and that have a
    judge run with scores (the meta-evaluation's list; two small queries, no scan of
    the score table)."""
    categorical = Skill.objects.filter(kind=SkillKind.CATEGORICAL).values("rubric_id")
    datasets = Dataset.objects.filter(rubric_id__in=categorical).values("pk")
    scored = JudgeScore.objects.filter(run_id=OuterRef("pk"))
    return list(
        JudgeRun.objects.filter(dataset_id__in=datasets)
        .filter(Exists(scored))
        .values_list("dataset_id", flat=True)
        .distinct()
        .order_by()
    )
