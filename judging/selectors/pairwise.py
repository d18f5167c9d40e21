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


PAIRWISE_TEMPLATE_CHARS = 1200  # task text, reply instructions, labels
PAIRWISE_OUTPUT_TOKENS = 250  # a short comparison and the verdict


def pairwise_run_estimate(*, config, dataset) -> dict:
    """Calls, tokens and cost of a pairwise run over every pair of `dataset` (both
    orders, the config's samples), from text lengths; nothing is sent."""
    from decimal import Decimal

    from django.db.models import Sum
    from django.db.models.functions import Length

    from annotation.models import PreferencePair

    pairs = PreferencePair.objects.filter(dataset=dataset)
    n = pairs.count()
    calls = n * 2 * max(config.samples, 1)
    if config.is_baseline or not n:
        return {"calls": calls, "input_tokens": 0, "output_tokens": 0, "cost": "0",
                "items": n}  # fmt: skip
    sums = pairs.aggregate(
        a=Sum(Length("response_1__text")),
        b=Sum(Length("response_2__text")),
        i=Sum(Length("instruction__text")),
    )
    chars = sum(v or 0 for v in sums.values()) + n * PAIRWISE_TEMPLATE_CHARS
    input_tokens = chars // 4 * 2 * max(config.samples, 1)
    output_tokens = min(config.max_tokens, PAIRWISE_OUTPUT_TOKENS) * calls
    cost = (
        Decimal(input_tokens) * config.price_input_per_m
        + Decimal(output_tokens) * config.price_output_per_m
    ) / Decimal(1_000_000)
    return {
        "calls": calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": str(cost.quantize(Decimal("0.0001"))),
        "items": n,
    }
