"""Reads of pairwise judge runs: verdict counts for the run pages, the command and the
API, and the verdict list. No role checks here: callers get the run through
`judging.selectors.judge_run_get_for_user` first."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from judging.models import JudgeRun, PairwiseVerdict

VERDICT_KEYS = ("1", "2", "tie", "none")  # "none": a row without a usable verdict
RAW_KEYS = ("A", "B", "tie", "none")


def pairwise_verdict_counts(*, run: JudgeRun) -> dict:
    """Verdict counts of a run, in one query.

    Returns {"total": n, "by_order": {"ab": {"1", "2", "tie", "none"}, "ba": {...}},
    "by_verdict": {"1", "2", "tie", "none"} (original numbering, both orders),
    "by_raw": {"A", "B", "tie", "none"} (as presented, both orders)}. Failed calls
    have no verdict row and are not counted here (see the run's call counts).
    """
    by_order = {order: dict.fromkeys(VERDICT_KEYS, 0) for order in ("ab", "ba")}
    by_raw = dict.fromkeys(RAW_KEYS, 0)
    rows = (
        PairwiseVerdict.objects.filter(run_id=run.pk)
        .values_list("order", "verdict", "verdict_raw")
        .annotate(n=Count("id"))
        .order_by()
    )
    total = 0
    for order, verdict, raw, n in rows:
        by_order.setdefault(order, dict.fromkeys(VERDICT_KEYS, 0))
        by_order[order][verdict or "none"] += n
        by_raw[raw or "none"] += n
        total += n
    by_verdict = {
        key: sum(row[key] for row in by_order.values()) for key in VERDICT_KEYS
    }
    return {
        "total": total,
        "by_order": by_order,
        "by_verdict": by_verdict,
        "by_raw": by_raw,
    }


def pairwise_verdict_list(*, run: JudgeRun) -> QuerySet[PairwiseVerdict]:
    """A run's verdicts in (pair, order, sample) order, with the pair's instruction
    and both responses loaded."""
    return (
        PairwiseVerdict.objects.filter(run_id=run.pk)
        .select_related("pair__instruction", "pair__response_1", "pair__response_2")
        .order_by("pair_id", "order", "sample_index", "pk")
    )
