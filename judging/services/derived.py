"""Runs derived from other runs: a panel of judges, and a run calibrated to humans.

Both write a completed run of kind `derived` with one score per item (sample 0) and
no calls, in one transaction, as an import does (`judging.services.imports`), so the
agreement figures, the exports and the pages read it like any other run. The recipe
(method, component runs, fitted weights or thresholds, the split and the dev items
used) is kept in `settings_snapshot`, in words in `source_note`.

Anything fitted to humans (a weighted panel's weights, a calibration) is fitted on
the DEV part of the dataset's split only: test items' human scores are never read,
so the test figures of a derived run stay held out. The arithmetic is
`judging.panels`.
"""

from __future__ import annotations

import numpy as np
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.models import Dataset
from annotation.services.rubrics import rubric_freeze
from flaskapp import limits, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.limits import clip
from flaskapp.untrusted import text_problem
from judging import kinds
from judging.models import EvalSplit, JudgeRun, JudgeScore
from judging.panels import (
    MAJORITY,
    METHODS,
    ORDINAL_ONLY,
    WEIGHTED,
    combine,
    fit_isotonic,
    fit_weights,
    to_scale,
)
from judging.selectors.item_scores import (
    Criterion,
    dev_human_means,
    response_parts,
    run_item_values,
    score_campaigns,
)
from judging.services.run_names import NAME_MAX

PANEL_REFUSED = "the panel was not made"
CALIBRATION_REFUSED = "the run was not calibrated"
NO_SPLIT = (
    "the dataset has no development / test split, and {what} is fitted on its "
    "development part: make the split on the judge workbench page first"
)
TIE_RULE = (
    "majority: the most common score; a tie goes to the tied score nearest the "
    "median of the runs' scores (of two equally near, the higher); a categorical "
    "criterion's tie goes to the label of the first listed run among the tied"
)


def _refuse(message: str, problems: list[Problem]) -> None:
    if problems:
        raise DomainError(message, problems)


def _run_ids(raw) -> tuple[list[int], list[Problem]]:
    try:
        ids = list(dict.fromkeys(int(r) for r in raw or []))
    except (TypeError, ValueError):
        return [], [Problem("must be a list of run ids", field="run_ids")]
    return ids, []


def _score_run_problem(run: JudgeRun, dataset: Dataset) -> str | None:
    """Why `run` cannot be derived from, else None."""
    if run.dataset_id != dataset.pk:
        return f"run #{run.pk} is of dataset {run.dataset.name!r}, not {dataset.name!r}"
    if not kinds.get(run.kind).writes_scores:
        return (
            f"run #{run.pk} is a {run.get_kind_display().lower()} run; only runs "
            f"with criterion scores ({', '.join(kinds.keys(writes_scores=True))}) "
            "can be used"
        )
    if not run.scores.exists():
        return f"run #{run.pk} has no scores"
    return None


def _name(name: str, default: str) -> tuple[str, list[Problem]]:
    name = (name or "").strip()
    problem = text_problem(name) or (
        f"is longer than {NAME_MAX} characters" if len(name) > NAME_MAX else None
    )
    if problem:
        return "", [Problem(problem, field="name")]
    return name or default[:NAME_MAX], []


def _campaigns(dataset: Dataset, campaign_ids) -> tuple[list[int], list[Problem]]:
    try:
        return score_campaigns(dataset=dataset, campaign_ids=campaign_ids), []
    except (TypeError, ValueError) as exc:
        return [], [Problem(str(exc), field="campaign_ids")]


def _models(runs: list[JudgeRun]) -> list[str]:
    """The models a derived run covers: the union of its sources' (empty, meaning
    every model, when any source covered every model)."""
    if any(not r.models_included for r in runs):
        return []
    return sorted({m for r in runs for m in r.models_included})


def _write(
    *,
    user: User,
    dataset: Dataset,
    name: str,
    snapshot: dict,
    note: str,
    models: list[str],
    criteria: dict[str, Criterion],
    scores: dict[tuple[int, str], int | None],
) -> JudgeRun:
    """The derived run and its scores (sample 0, no call), in one transaction."""
    now = timezone.now()
    with transaction.atomic():
        rubric_freeze(rubric_id=dataset.rubric_id)  # the derived scores use it
        run = JudgeRun.objects.create(
            workspace_id=dataset.workspace_id,
            config=None,
            dataset=dataset,
            name=name,
            kind=JudgeRun.Kind.DERIVED,
            status=JudgeRun.Status.COMPLETED,
            models_included=models,
            settings_snapshot=snapshot,
            total_calls=0,
            created_by=user,
            started_at=now,
            finished_at=now,
            source_note=clip(note, limits.DESCRIPTION),
        )
        JudgeScore.objects.bulk_create(
            [
                JudgeScore(
                    run=run,
                    response_id=response_id,
                    skill=criteria[key].skill,
                    sample_index=0,
                    score=score,
                )
                for (response_id, key), score in sorted(scores.items())
            ],
            batch_size=2000,
        )
    return run


def _label(run: JudgeRun) -> str:
    return f"#{run.pk} {run.name}".strip() if run.name else f"#{run.pk}"


# --- Panels -------------------------------------------------------------------------


def _panel_runs(dataset: Dataset, run_ids) -> tuple[list[JudgeRun], list[Problem]]:
    ids, problems = _run_ids(run_ids)
    if problems:
        return [], problems
    if len(ids) < 2:
        return [], [Problem("a panel needs at least 2 runs", field="run_ids")]
    # Another workspace's run does not exist here (its dataset is not named).
    found = {
        r.pk: r
        for r in JudgeRun.objects.filter(
            pk__in=ids, workspace_id=dataset.workspace_id
        ).select_related("dataset")
    }
    for rid in ids:
        run = found.get(rid)
        problem = (
            f"no run with id {rid}" if run is None else _score_run_problem(run, dataset)
        )
        if problem:
            problems.append(Problem(problem, field="run_ids"))
    return [found[r] for r in ids if r in found], problems


def _panel_weights(
    dataset: Dataset,
    runs: list[JudgeRun],
    values: dict,
    keys: list[str],
    campaign_ids,
) -> tuple[np.ndarray, dict]:
    """The weighted panel's weights, fitted on the dev items that the humans and
    every run scored, and the fit's record. Raises DomainError (nothing written)."""
    split = EvalSplit.objects.filter(dataset=dataset).first()
    if split is None:
        what = "the weighted panel"
        raise DomainError(
            PANEL_REFUSED, [Problem(NO_SPLIT.format(what=what), field="method")]
        )
    campaigns, problems = _campaigns(dataset, campaign_ids)
    _refuse(PANEL_REFUSED, problems)
    human = dev_human_means(dataset=dataset, campaign_ids=campaigns)
    wanted = set(keys)
    items = sorted(
        item
        for item in human
        if item[1] in wanted and all(values[r.pk].get(item) is not None for r in runs)
    )
    if not items:
        raise DomainError(
            PANEL_REFUSED,
            [
                Problem(
                    "no item of the development split is scored by the humans and "
                    "by every run, so no weights can be fitted",
                    field="run_ids",
                )
            ],
        )
    scores = np.array([[values[r.pk][item] for r in runs] for item in items], float)
    target = np.array([human[item] for item in items], float)
    weights = fit_weights(scores, target)
    if weights is None:
        raise DomainError(
            PANEL_REFUSED,
            [Problem("the least-squares weights are all 0", field="run_ids")],
        )
    fit = {
        "split_id": split.pk,
        "campaigns": campaigns,
        "target": "the human mean score of each development item",
        "fitted_by": "scipy.optimize.nnls, then divided by the sum",
        "n_dev_items": len(items),
        "dev_items": [[rid, key] for rid, key in items],
    }
    return weights, fit


def judge_run_panel_create(
    *,
    user: User,
    dataset: Dataset,
    run_ids: list[int],
    method: str,
    name: str = "",
    campaign_ids: list[int] | None = None,
) -> JudgeRun:
    """A derived run whose score of each item combines the scores of the runs
    `run_ids` (each run's score: the median of its samples; N/A and missing left
    out; `judging.panels`).

    `method`: "mean" or "median" (rounded half up to the criterion's scale);
    "majority" (the mode; a tie goes to the tied score nearest the median, of two
    equally near the higher; a categorical tie to the first listed run's label);
    "weighted" (a weighted mean, the weights non-negative and summing to 1, fitted
    by least squares on the DEV split's items against their human mean score from
    `campaign_ids`, default every pointwise campaign of the dataset; an item some
    runs did not score is weighed over those that did). mean, median and weighted
    combine ordinal criteria only (categorical ones are left out and listed in
    the snapshot); majority combines both. An item every run scored N/A is N/A.

    Refuses (DomainError naming `run_ids`, `method`, `campaign_ids` or `name`;
    nothing written): fewer than 2 runs, an unknown run, a run of another dataset,
    a run without criterion scores (pairwise, critique, ...), an unknown method,
    no criterion the method can combine; for "weighted" also a dataset without
    a split and no dev item scored by the humans and by every run. Needs the
    researcher role. Side effects: one completed run of kind derived and its
    scores, in one transaction. Not idempotent: each call makes a new run.
    """
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    runs, problems = _panel_runs(dataset, run_ids)
    if method not in METHODS:
        problems.append(
            Problem(
                f"{str(method)[:40]!r} is not a method; use one of "
                f"{', '.join(METHODS)}",
                field="method",
            )
        )
    labels = ", ".join(_label(r) for r in runs)
    name, name_problems = _name(name, f"Panel ({method}) of {labels}")
    _refuse(PANEL_REFUSED, problems + name_problems)
    values, criteria = run_item_values(runs=runs)
    present = sorted({item[1] for v in values.values() for item in v})
    keys = [
        k for k in present if method not in ORDINAL_ONLY or criteria[k].scale.is_ordinal
    ]
    left_out = {
        k: f"categorical: the {method} needs numbers" for k in present if k not in keys
    }
    if not keys:
        _refuse(
            PANEL_REFUSED,
            [
                Problem(
                    f"the {method} combines ordinal criteria only, and these runs "
                    f"scored none; use {MAJORITY} for labels",
                    field="method",
                )
            ],
        )
    weights, fit = None, None
    if method == WEIGHTED:
        weights, fit = _panel_weights(dataset, runs, values, keys, campaign_ids)
    wanted = set(keys)
    items = sorted({item for v in values.values() for item in v if item[1] in wanted})
    scores: dict[tuple[int, str], int | None] = {}
    for item in items:
        scale = criteria[item[1]].scale
        given = [(i, values[r.pk].get(item)) for i, r in enumerate(runs)]
        numeric = [(i, v) for i, v in given if v is not None]
        if not numeric:
            if scale.allow_na:  # every run that scored it said N/A
                scores[item] = None
            continue
        score = combine(
            [v for _, v in numeric],
            method=method,
            low=scale.low,
            high=scale.high,
            ordinal=scale.is_ordinal,
            weights=None if weights is None else [weights[i] for i, _ in numeric],
        )
        if score is not None:
            scores[item] = score
    weight_of = (
        None
        if weights is None
        else {str(r.pk): float(w) for r, w in zip(runs, weights, strict=True)}
    )
    snapshot = {
        "source": "panel",
        "method": method,
        "runs": [r.pk for r in runs],
        "weights": weight_of,
        "split_id": fit["split_id"] if fit else None,
        "fit": fit,
        "criteria": keys,
        "left_out": left_out,
        "rounding": "half up, to the criterion's scale",
        "sample_rule": "each run's score of an item: the median of its samples",
        **({"tie_rule": TIE_RULE} if method == MAJORITY else {}),
    }
    if weights is None:
        note = f"Panel of {labels}: the {method} of their scores per item"
    else:
        parts = ", ".join(
            f"{_label(r)} x {w:.3f}" for r, w in zip(runs, weights, strict=True)
        )
        note = (
            f"Panel of {parts}: weights fitted by non-negative least squares on "
            f"{fit['n_dev_items']} development items (split {fit['split_id']}) "
            f"against the human mean score"
        )
    note += "; rounded half up" if method != MAJORITY else "; ties toward the median"
    return _write(
        user=user,
        dataset=dataset,
        name=name,
        snapshot=snapshot,
        note=note,
        models=_models(runs),
        criteria=criteria,
        scores=scores,
    )


# --- Calibration --------------------------------------------------------------------


def judge_run_calibrate(
    *,
    user: User,
    run: JudgeRun,
    name: str = "",
    campaign_ids: list[int] | None = None,
) -> JudgeRun:
    """A derived run: `run`'s scores mapped onto the humans' by an isotonic fit.

    Per ordinal criterion, `sklearn.isotonic.IsotonicRegression` (increasing,
    clipped out of bounds, bounded to the scale) of the human mean score on the
    run's score (the median of its samples), fitted on the DEV split's items that
    both scored (humans of `campaign_ids`, default every pointwise campaign of the
    dataset); then every item's score, dev and test, is mapped through it and
    rounded half up to the scale. N/A stays N/A. The map from each judge score to
    its calibrated score, per criterion, is kept in `settings_snapshot`. Criteria
    without a dev item, and categorical ones, are left out (listed there too).

    Refuses (DomainError naming `run`, `campaign_ids` or `name`; nothing written):
    a run without criterion scores, a dataset without a split, no dev item scored
    by the humans and the run. Needs the researcher role. Side effects: one
    completed run of kind derived and its scores, in one transaction. Not
    idempotent: each call makes a new run.
    """
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
    dataset = run.dataset
    problems = []
    if problem := _score_run_problem(run, dataset):
        problems.append(Problem(problem, field="run"))
    split = EvalSplit.objects.filter(dataset=dataset).first()
    if split is None:
        what = "a calibration"
        problems.append(Problem(NO_SPLIT.format(what=what), field="run"))
    campaigns, more = _campaigns(dataset, campaign_ids)
    name, name_problems = _name(name, f"{_label(run)} calibrated (isotonic, dev split)")
    _refuse(CALIBRATION_REFUSED, problems + more + name_problems)
    values, criteria = run_item_values(runs=[run])
    own = values[run.pk]
    human = dev_human_means(dataset=dataset, campaign_ids=campaigns)
    parts = response_parts(dataset=dataset)
    fitted: dict[str, dict] = {}
    left_out: dict[str, str] = {}
    for key in sorted({item[1] for item in own}):
        scale = criteria[key].scale
        if not scale.is_ordinal:
            left_out[key] = "categorical: an isotonic fit needs numbers"
            continue
        dev = [
            (v, human[item])
            for item, v in own.items()
            if item[1] == key
            and v is not None
            and item in human
            and parts.get(item[0]) == "dev"
        ]
        if not dev:
            left_out[key] = "no development item scored by the humans and the run"
            continue
        x, y = (np.array(col, float) for col in zip(*dev, strict=True))
        curve = fit_isotonic(x, y, low=scale.low, high=scale.high)
        fitted[key] = {
            "n_dev_items": len(dev),
            "fitted": {str(v): f for v, f in curve.items()},
            "map": {
                str(v): to_scale(f, scale.low, scale.high) for v, f in curve.items()
            },
        }
    if not fitted:
        _refuse(
            CALIBRATION_REFUSED,
            [
                Problem(
                    "no item of the development split is scored by the humans and "
                    "by the run, so there is nothing to fit",
                    field="run",
                )
            ],
        )
    scores = {
        item: None if v is None else fitted[item[1]]["map"][str(v)]
        for item, v in own.items()
        if item[1] in fitted
    }
    snapshot = {
        "source": "calibration",
        "method": "isotonic",
        "runs": [run.pk],
        "split_id": split.pk,
        "campaigns": campaigns,
        "fitted_by": "sklearn.isotonic.IsotonicRegression(increasing=True, "
        "out_of_bounds='clip', y_min=low, y_max=high) of the human mean score on "
        "the run's score, development items only",
        "criteria": fitted,
        "left_out": left_out,
        "rounding": "half up, to the criterion's scale",
        "sample_rule": "the run's score of an item: the median of its samples",
    }
    n_dev = sum(c["n_dev_items"] for c in fitted.values())
    note = (
        f"{_label(run)} calibrated to the human mean score by an isotonic fit per "
        f"criterion on {n_dev} development items (split {split.pk}); rounded half up"
    )
    return _write(
        user=user,
        dataset=dataset,
        name=name,
        snapshot=snapshot,
        note=note,
        models=_models([run]),
        criteria=criteria,
        scores=scores,
    )
