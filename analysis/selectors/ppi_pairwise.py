"""Prediction-powered win rates: human votes on a few pairs, a pairwise judge on all.

For every two models A and B (A before B by name) the question is A's win rate over
B as the humans would vote it (a win 1, a tie 1/2, a loss 0). One *item* is one
`PreferencePair` between the two models; its outcome is always read from A's side:

* the human outcome ``y``: the mean outcome of the pair's human votes (several
  raters on one pair average; votes of raters a researcher excluded are left out,
  as on the leaderboard);
* the judge outcome ``f``: the mean outcome of the run's usable verdicts of sample
  0, both presented orders (the position-bias swap averages out; a verdict without a
  label, ``""``, is left out and counted in ``unusable``);
* labelled items: pairs with a human outcome and a judge outcome; unlabelled: pairs
  the judge decided and no human voted on; pairs humans voted on and the judge did
  not decide are left out (PPI needs both on the labelled ones) and counted in
  ``human_only``.

The estimates are :func:`analysis.stats.ppi.ppi_win_rate` (humans only, judge only,
PPI++ with the tuned lam and classic PPI, the effective number of human votes), as
the means of `analysis.selectors.ppi`. The pairs humans voted on are taken as a
uniform sample of the dataset's pairs (no weights); a pair between two responses of
one model has no winner to speak of and is skipped.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import F

from analysis.selectors.agreement.sources import AgreementError, run_label
from analysis.selectors.metaeval import pairwise_runs
from analysis.selectors.ppi import MIN_LABELLED, estimates_dict
from analysis.stats.ppi import LOSS, TIE, WIN, ppi_win_rate
from annotation.models import Campaign, Dataset, HumanPreference
from annotation.selectors.exclusions import excluded_scores, exclusions_note
from judging.models import JudgeRun, PairwiseVerdict

# Fewer human-voted pairs than this: the normal interval of the 0 / 0.5 / 1 outcomes
# runs short (tests/analysis/test_ppi_win_rates.py: PPI++ covered 93.0-93.4% of a
# nominal 95% with 150 voted pairs, 94.5-94.7% with 500); such rows say so.
FEW_VOTES = 300

# A label in the pair's own numbering as the outcome of response 1's model.
OUTCOME = {"1": WIN, "2": LOSS, "tie": TIE}

NOTES = [
    "an item is one pair of responses of the two models to one instruction; its "
    "outcome is the first model's: a win 1, a tie 1/2, a loss 0",
    "humans only: the mean outcome of the human votes (several votes on a pair "
    "average) on the pairs the judge also decided (CLT interval)",
    "judge only: the run's mean outcome over every pair it decided, both presented "
    "orders averaged; biased by the judge's bias, so its interval is no confidence "
    "interval for the humans' win rate",
    "prediction-powered: the judge's win rate on the pairs without a human vote, "
    "corrected by its error on the pairs with one (PPI++, lam tuned; classic: lam 1)",
    "effective n: the human-voted pairs alone that would give the prediction-powered "
    "interval's width",
    f"few votes: with fewer than {FEW_VOTES} human-voted pairs the intervals run "
    "somewhat short (about 93% instead of 95% with 150 in our simulation)",
]


def _pairs(dataset: Dataset) -> dict[int, tuple[str, str]]:
    """pair id -> (model of response 1, model of response 2)."""
    rows = dataset.preference_pairs.values_list(
        "pk", "response_1__model_name", "response_2__model_name"
    )
    return {pk: (m1, m2) for pk, m1, m2 in rows}


def _mean_outcomes(rows) -> dict[int, float]:
    """(pair id, label) rows -> pair id -> mean outcome of response 1's model."""
    sums: dict[int, float] = defaultdict(float)
    counts: dict[int, int] = defaultdict(int)
    for pair_id, label in rows:
        sums[pair_id] += OUTCOME[label]
        counts[pair_id] += 1
    return {k: sums[k] / counts[k] for k in sums}


def _run(dataset: Dataset, runs: list[JudgeRun], run_id: int | None) -> JudgeRun:
    if not runs:
        raise AgreementError(
            "run: the dataset has no pairwise judge run with verdicts; PPI needs the "
            "judge's verdicts on the pairs"
        )
    if run_id is None:
        return runs[0]
    for run in runs:
        if run.pk == run_id:
            return run
    raise AgreementError(
        f"run: run {run_id} has no pairwise verdicts on dataset {dataset.name!r}"
    )


def prediction_powered_win_rates(
    *,
    dataset: Dataset,
    run_id: int | None = None,
    alpha: float = 0.05,
    lam: float | None = None,
) -> dict:
    """Per pair of models: the first's win rate from the human votes alone, from the
    judge alone and prediction-powered (module doc).

    run_id: a pairwise judge run of `dataset` (None: the newest). Returns
    {"dataset", "run": {"id", "label"}, "runs", "alpha", "lam", "unusable",
    "human_only", "exclusions", "pairs": [{"model_a", "model_b", "n_labelled",
    "n_unlabelled", "reason", and without a reason "humans", "judge", "ppi",
    "classic", "lam", "tuned", "effective_n", "few_votes" (fewer than `FEW_VOTES`
    voted pairs: the intervals run short)}], "notes"}.

    Raises AgreementError naming the parameter: `run` (no pairwise run, or not one
    of this dataset's), `campaign` (no human vote on a pair the run decided),
    `alpha`, `lam`. Read only; a constant number of queries (about six) whatever
    the number of votes.
    """
    if not 0 < alpha < 1:
        raise AgreementError(f"alpha: must be between 0 and 1, not {alpha}")
    if lam is not None and not 0 <= lam <= 1:
        raise AgreementError(f"lam: must be between 0 and 1, not {lam}")
    runs = pairwise_runs(dataset)
    run = _run(dataset, runs, run_id)
    pairs = _pairs(dataset)
    votes = (
        HumanPreference.objects.filter(pair__dataset=dataset)
        .filter(~excluded_scores())
        .values_list("pair_id", "label")
    )
    human = _mean_outcomes(votes)
    verdicts = list(
        PairwiseVerdict.objects.filter(run=run, sample_index=0).values_list(
            "pair_id", F("verdict")
        )
    )
    unusable = sum(1 for _, v in verdicts if v == "")
    judge = _mean_outcomes((p, v) for p, v in verdicts if v in OUTCOME)
    if not set(human) & set(judge):
        raise AgreementError(
            "campaign: no human vote on a pair the run decided; PPI needs human "
            "votes on some of the judge's pairs"
        )
    # (A, B) -> labelled [(y, f)], unlabelled [f], all from A's side.
    labelled: dict[tuple[str, str], list] = defaultdict(list)
    unlabelled: dict[tuple[str, str], list] = defaultdict(list)
    for pair_id, f in judge.items():
        m1, m2 = pairs[pair_id]
        if m1 == m2:
            continue
        flip = m2 < m1
        key = (m2, m1) if flip else (m1, m2)
        f = 1.0 - f if flip else f
        if pair_id in human:
            y = human[pair_id]
            labelled[key].append((1.0 - y if flip else y, f))
        else:
            unlabelled[key].append(f)
    rows = [
        _row(key, labelled[key], unlabelled[key], alpha, lam)
        for key in sorted(set(labelled) | set(unlabelled))
    ]
    campaigns = Campaign.objects.filter(dataset=dataset).values_list("pk", flat=True)
    return {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "run": {"id": run.pk, "label": run_label(run)},
        "runs": [{"id": r.pk, "label": run_label(r)} for r in runs],
        "alpha": alpha,
        "lam": "tuned (PPI++)" if lam is None else lam,
        "unusable": unusable,
        "human_only": len(set(human) - set(judge)),
        "exclusions": exclusions_note(campaigns),
        "pairs": rows,
        "notes": NOTES,
    }


def _row(key, labelled, unlabelled, alpha, lam) -> dict:
    row = {
        "model_a": key[0],
        "model_b": key[1],
        "n_labelled": len(labelled),
        "n_unlabelled": len(unlabelled),
    }
    if len(labelled) < MIN_LABELLED:
        row["reason"] = (
            f"{len(labelled)} human-voted pair(s) the run also decided; PPI needs "
            f"at least {MIN_LABELLED}"
        )
        return row
    if not unlabelled:
        row["reason"] = (
            "every pair the run decided has a human vote: the humans-only win rate "
            "is the answer and the judge adds nothing"
        )
        return row
    y = [a for a, _ in labelled]
    f = [b for _, b in labelled]
    row.update(estimates_dict(ppi_win_rate(y, f, unlabelled, alpha=alpha, lam=lam)))
    row["reason"] = ""
    row["few_votes"] = len(labelled) < FEW_VOTES
    return row
