"""Pairwise leaderboards of a dataset's evaluated models: data gathering.

Reads only. Counts the votes of one source in SQL (one query, grouped by the two
responses' model names and the label, plus the two lengths with length control) and
hands the groups to :func:`analysis.stats.leaderboard.pairwise_leaderboard` (whose
docstring holds the statistical conventions: Bradley-Terry, ties as half wins, the
Elo-like scale anchored at a mean of 1000, the bootstrap over votes, length control).

Sources

* ``"humans"``: every HumanPreference of the dataset's pairs (imported and campaign
  votes), except campaign votes of raters a researcher excluded (an open exclusion
  in the vote's campaign, ``annotation.selectors.exclusions``); ``exclusions`` lists
  them.
* a pairwise judge run id: its verdicts of sample 0 (the label conventions of
  :mod:`analysis.stats.pairwise`: mapped back to the original numbering). **Both
  orders count: the AB and the BA verdict of a pair are two votes**, each resampled on
  its own; a verdict without a usable label (``""``) is left out and counted in
  ``unusable``.

Lengths are characters of the response texts.
"""

from __future__ import annotations

import numpy as np
from django.db.models import Count, F
from django.db.models.functions import Length

from analysis.selectors.agreement.rows import result_dict
from analysis.selectors.agreement.sources import (
    AgreementError,
    check_resampling,
    run_label,
)
from analysis.selectors.metaeval import pairwise_runs
from analysis.stats import leaderboard as lb
from analysis.stats.pairwise import encode_labels
from annotation.models import Campaign, Dataset, HumanPreference
from annotation.selectors.exclusions import excluded_scores, exclusions_note
from flaskapp.params import ascii_int
from flaskapp.roles import synthetic_rater
from judging.models import JudgeRun, PairwiseVerdict

HUMANS = "humans"

CONVENTIONS = {
    "model": "Bradley-Terry: P(i beats j) = 1 / (1 + 10^((R_j - R_i) / 400))",
    "ties": "a tie is half a win to each side",
    "scale": "ratings = 400 / ln 10 x theta + 1000, anchored so that the mean "
    "rating is 1000",
    "judge_orders": "a judge's AB and BA verdicts on a pair are two votes",
    "bootstrap": "votes resampled with replacement; 95% percentile intervals",
    "length_control": "logistic fit with the normalised length difference "
    "(len_1 - len_2) / (len_1 + len_2), in standard deviations, as a covariate",
}


class LeaderboardError(AgreementError):
    """A bad parameter; the message starts with its name."""


def leaderboard_sources(dataset: Dataset) -> dict:
    """What a pairwise leaderboard of `dataset` can be built from: the number of
    human votes, split by where they come from (`vote_origins`), and the pairwise
    runs (newest first). Two queries."""
    origins = vote_origins(dataset)
    return {
        "human_votes": sum(origins.values()),
        "vote_origins": origins,
        "runs": [{"id": r.pk, "label": run_label(r)} for r in pairwise_runs(dataset)],
    }


def vote_origins(dataset: Dataset) -> dict[str, int]:
    """`dataset`'s human votes by origin: "real" (cast in a campaign by a person),
    "generated" (cast by a synthetic account) and "imported" (from a file, whose
    voters the app cannot vouch for). One query."""
    counts = (
        HumanPreference.objects.filter(pair__dataset=dataset)
        .annotate(generated=synthetic_rater("rater_id"))
        .values_list("origin", "generated")
        .annotate(n=Count("id"))
        .order_by()
    )
    out = {"real": 0, "generated": 0, "imported": 0}
    for origin, generated, n in counts:
        if origin == HumanPreference.Origin.IMPORTED:
            out["imported"] += n
        else:
            out["generated" if generated else "real"] += n
    return out


def _source(dataset: Dataset, source) -> JudgeRun | None:
    """None for the humans, else the run; LeaderboardError naming `source`."""
    if source == HUMANS:
        return None
    text = str(source).strip()
    run_id = ascii_int(text)  # "²".isdigit() and 5,000 digits both broke int()
    if run_id is None or run_id < 0:
        raise LeaderboardError(
            f"source: must be {HUMANS!r} or a pairwise judge run id, not {text[:40]!r}"
        )
    run = (
        JudgeRun.objects.filter(pk=run_id, dataset=dataset)
        .select_related("config")
        .first()
    )
    if run is None or not PairwiseVerdict.objects.filter(run=run).exists():
        raise LeaderboardError(
            f"source: run {text} has no pairwise verdicts on dataset {dataset.name!r}"
        )
    return run


def _grouped(qs, label: str, length_control: bool) -> list[dict]:
    names = {
        "m1": F("pair__response_1__model_name"),
        "m2": F("pair__response_2__model_name"),
    }
    if length_control:
        names["l1"] = Length("pair__response_1__text")
        names["l2"] = Length("pair__response_2__text")
    return list(qs.values(label, **names).annotate(n=Count("id")).order_by())


def _vote_groups(dataset: Dataset, run: JudgeRun | None, length_control: bool):
    """(groups, unusable verdicts): one query."""
    if run is None:
        qs = HumanPreference.objects.filter(pair__dataset=dataset).filter(
            ~excluded_scores()
        )
        return _grouped(qs, "label", length_control), 0
    qs = PairwiseVerdict.objects.filter(run=run, sample_index=0)
    rows = _grouped(qs, "verdict", length_control)
    unusable = sum(r["n"] for r in rows if r["verdict"] == "")
    return [
        {**r, "label": r.pop("verdict")} for r in rows if r["verdict"] != ""
    ], unusable


def _board(dataset, run, n_boot, seed, length_control):
    groups, unusable = _vote_groups(dataset, run, length_control)
    who = HUMANS if run is None else f"run {run.pk}"
    if not groups:
        raise LeaderboardError(f"source: {who} has no pairwise votes on this dataset")
    m1 = [g["m1"] for g in groups]
    m2 = [g["m2"] for g in groups]
    models, codes = np.unique(np.array(m1 + m2, dtype=object), return_inverse=True)
    codes = codes.ravel()
    lengths = {}
    if length_control:
        lengths = {
            "length_1": np.array([g["l1"] or 0 for g in groups], float),
            "length_2": np.array([g["l2"] or 0 for g in groups], float),
        }
    try:
        board = lb.pairwise_leaderboard(
            [str(m) for m in models],
            codes[: len(groups)],
            codes[len(groups) :],
            encode_labels([g["label"] for g in groups], "label", judge=False),
            np.array([g["n"] for g in groups], np.int64),
            length_control=length_control,
            n_boot=n_boot,
            seed=seed,
            **lengths,
        )
    except ValueError as exc:
        message = str(exc)
        if message.startswith(("models:", "votes:")):
            message = f"{message} (source: {who})"
        raise LeaderboardError(message) from exc
    return board, unusable


def _source_dict(run: JudgeRun | None) -> dict:
    if run is None:
        return {"kind": HUMANS, "id": None, "label": "Human votes"}
    return {"kind": "run", "id": run.pk, "label": run_label(run)}


def _matrix(values: np.ndarray, order: np.ndarray) -> list[list]:
    m = values[np.ix_(order, order)]
    return [[None if not np.isfinite(v) else float(v) for v in row] for row in m]


def board_dict(board: lb.Leaderboard) -> dict:
    """A fitted leaderboard as JSON: models by rank (then name), matrices in that
    order (rows and columns)."""
    order = np.lexsort((np.array(board.models, dtype=object), board.rank))
    lc = board.length
    rows = []
    for i in order:
        row = {
            "name": board.models[i],
            "rating": result_dict(board.rating[i]),
            "rank": int(board.rank[i]),
            "rank_ci": [int(round(v)) for v in board.rank_ci[i]],
            "wins": int(board.wins[i]),
            "losses": int(board.losses[i]),
            "ties": int(board.ties[i]),
            "votes": int(board.wins[i] + board.losses[i] + board.ties[i]),
            "unbounded": int(i) in board.unbounded,
            "length_controlled": None,
        }
        if lc is not None:
            row["length_controlled"] = {
                "rating": result_dict(lc["rating"][i]),
                "rank": int(lc["rank"][i]),
                "rank_ci": [int(round(v)) for v in lc["rank_ci"][i]],
            }
        rows.append(row)
    names = [board.models[i] for i in order]
    return {
        "votes": board.n_votes,
        "self_votes": board.self_votes,
        "models": rows,
        "order": names,
        "win_rate": _matrix(board.win_rate, order),
        "votes_between": _matrix(board.votes_between, order),
        "p_above": _matrix(board.p_above, order),
        "length": None
        if lc is None
        else {"beta": result_dict(lc["beta"]), "length_sd": lc["length_sd"]},
    }


def compare_seed(seed: int) -> int:
    """The seed of the other leaderboard of a rank comparison: derived from `seed`,
    so that the two sources' resamples are independent draws."""
    return int(np.random.SeedSequence([seed, 1]).generate_state(1)[0])


def pairwise_leaderboard(
    *,
    dataset: Dataset,
    source: str | int = HUMANS,
    n_boot: int = 1000,
    seed: int = 0,
    length_control: bool = False,
    compare: str | int | None = None,
) -> dict:
    """The Bradley-Terry leaderboard of one source of pairwise votes (module doc).

    Returns {"dataset", "source": {"kind", "id", "label"}, "n_boot", "seed",
    "conventions", "unusable", "exclusions", "votes", "self_votes", "models": [{"name",
    "rating" (result dict), "rank", "rank_ci", "wins", "losses", "ties", "votes",
    "unbounded", "length_controlled"}], "order", "win_rate", "votes_between",
    "p_above", "length", "comparison"}. With `compare` (another source), "comparison"
    holds the Spearman and Kendall tau-b of the two leaderboards' ratings over their
    common models with bootstrap CIs (the other board's resamples drawn with
    :func:`compare_seed`); else None.

    Raises LeaderboardError naming the parameter: `source` (unknown, or no votes),
    `models` (fewer than 2 models), `n_boot`, `seed`, `compare`, `length_control`.
    Queries: a constant number (about 3, plus 3 with `compare`), whatever the votes.
    """
    check_resampling(n_boot, seed, LeaderboardError)
    run = _source(dataset, source)
    board, unusable = _board(dataset, run, n_boot, seed, length_control)
    campaigns = Campaign.objects.filter(dataset=dataset).values_list("pk", flat=True)
    out = {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "source": _source_dict(run),
        "n_boot": n_boot,
        "seed": seed,
        "conventions": CONVENTIONS,
        "unusable": unusable,
        "exclusions": exclusions_note(campaigns) if run is None else [],
        **board_dict(board),
        "comparison": None,
    }
    if compare is not None and str(compare) != str(source):
        try:
            other_run = _source(dataset, compare)
            other, _ = _board(dataset, other_run, n_boot, compare_seed(seed), False)
        except LeaderboardError as exc:
            field, _, message = str(exc).partition(": ")
            raise LeaderboardError(f"compare: {message}") from exc
        agreement = lb.rank_agreement(board, other)
        out["comparison"] = {
            "source": _source_dict(other_run),
            "models": agreement["models"],
            "spearman": result_dict(agreement["spearman"]),
            "kendall": result_dict(agreement["kendall"]),
        }
    return out
