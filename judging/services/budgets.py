"""Spend caps of judge runs: one home for the rule.

A run may have a `budget` (`JudgeRun.budget`; a new run gets its config's
`default_budget` unless it is given one). The driver starts a call only when

    spent + (calls in flight + 1) x call estimate <= budget

where `spent` is the recorded cost of the run's finished calls and the call estimate
(`call_estimate`) is a call's worst case: the run's average input tokens per call at
the full input price plus the whole output budget (`max_tokens`) at the output
price, with no cache and no batch discount. Claims are counted under a lock on the
run row (`execution.store.claim_calls_within_budget`), so several drivers of one run share the cap.
A call in flight is thus counted at its estimate until its actual cost is stored;
since the estimate is a worst case, the spent cost stays within the cap, and it can
exceed it by no more than the calls in flight (a call costing more than its
estimate). When no further call fits and none is in flight, the run ends "stopped
at its budget" (`judge_run_stop_at_budget`) with its pending calls kept; it is
resumed with a higher cap (`judging.services.runs.judge_run_start(budget=...)`).
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, Decimal

from django.db import transaction
from django.db.models import Sum
from django.utils import timezone

from flaskapp.errors import DomainError, Problem
from judging import costs
from judging.models import JudgeCall, JudgeRun

FINISHED = (JudgeCall.Status.SUCCEEDED, JudgeCall.Status.FAILED)


def call_estimate(*, snapshot: dict, estimate: dict) -> Decimal:
    """The worst-case cost of one call of a run (see the module): from the run's
    frozen settings and its stored estimate (`judging.services.estimates`)."""
    calls = int(estimate.get("calls") or 0)
    if str(snapshot.get("backend", "")).startswith("baseline") or not calls:
        return Decimal(0)
    input_per_call = math.ceil(int(estimate.get("input_tokens") or 0) / calls)
    return costs.call_cost(
        prices=costs.Prices.from_snapshot(snapshot),
        input_tokens=input_per_call,
        output_tokens=int(snapshot.get("max_tokens") or 0),
        batch=bool(snapshot.get("batch")),  # a Batch API run: at its discount
    )


def run_call_estimate(run: JudgeRun) -> Decimal:
    return call_estimate(snapshot=run.settings_snapshot or {}, estimate=run.estimate)


def budget_problems(*, budget, per_call: Decimal, spent: Decimal) -> list[Problem]:
    """A cap must leave room for at least one more call at its estimate (so a cap
    below one call's estimate is refused at creation), naming `budget`."""
    if budget is None:
        return []
    try:
        budget = Decimal(str(budget))
    except ArithmeticError:
        return [Problem("must be a number", field="budget")]
    if not budget.is_finite() or budget <= 0:
        return [Problem("must be more than 0", field="budget")]
    if budget < spent + per_call:
        return [
            Problem(
                f"{budget} leaves no room for one call: spent {spent:.4f}, one call "
                f"is estimated at up to {per_call:.6f} (its prompt at the input "
                "price and max_tokens at the output price)",
                field="budget",
            )
        ]
    return []


def run_spent(run_id: int) -> Decimal:
    """The recorded cost of a run's finished calls."""
    total = JudgeCall.objects.filter(run_id=run_id, status__in=FINISHED).aggregate(
        s=Sum("cost")
    )["s"]
    return total or Decimal(0)


def budget_room(run: JudgeRun, n: int, per_call: Decimal) -> int:
    """How many of `n` more calls run `run` may start (the module's rule: spent +
    calls in flight at `per_call` + the new ones at `per_call` <= the cap); `n` when
    it has no cap. Call under a lock on the run row."""
    if run.budget is None or per_call <= 0:
        return n
    running = JudgeCall.objects.filter(
        run_id=run.pk, status=JudgeCall.Status.RUNNING
    ).count()
    room = run.budget - run_spent(run.pk) - running * per_call
    return max(0, min(n, int(room // per_call)))


def judge_run_stop_at_budget(*, run_id: int) -> str:
    """Mark a running run "stopped at its budget" when its cap leaves no room for
    another call, none is in flight and calls are still pending (kept for a resume
    with a higher cap). Otherwise nothing changes. Idempotent; returns the status."""
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != JudgeRun.Status.RUNNING or run.budget is None:
            return run.status if run else ""
        calls = run.calls
        if calls.filter(status=JudgeCall.Status.RUNNING).exists():
            return run.status
        if not calls.filter(status=JudgeCall.Status.PENDING).exists():
            return run.status
        if run.budget - run_spent(run_id) >= run_call_estimate(run):
            return run.status
        run.status = JudgeRun.Status.STOPPED_BUDGET
        run.finished_at = timezone.now()
        run.save(update_fields=["status", "finished_at"])
        return run.status


def budget_for_start(*, run: JudgeRun, budget) -> Decimal | None:
    """The cap a run starts (or resumes) with: `budget` when given (validated: room
    for one more call), else its own. A run stopped at its budget cannot resume
    without a higher one. Raises `DomainError` naming `budget`."""
    per_call = run_call_estimate(run)
    spent = run_spent(run.pk)
    if budget is not None:
        problems = budget_problems(budget=budget, per_call=per_call, spent=spent)
        if problems:
            raise DomainError("the run was not started", problems)
        return Decimal(str(budget))
    if run.budget is not None and run.budget - spent < per_call:
        raise DomainError(
            "the run was not started",
            [
                Problem(
                    f"the run's budget {run.budget} is spent ({spent:.4f}); "
                    "resume it with a higher budget",
                    field="budget",
                )
            ],
        )
    return run.budget


def budget_summary(
    run: JudgeRun, *, spent: Decimal | None = None, pending: int | None = None
) -> dict | None:
    """What the run page says of a capped run: cap, spent, left (None: no cap), and
    for a resume: `to_finish`, the worst-case cost of its `pending` calls at one
    call's estimate, and `suggested`, a cap that would let them all run (spent plus
    that, rounded up to the cent). `spent` / `pending`: the run's recorded cost and
    pending calls when the caller has them (no query then)."""
    if run.budget is None:
        return None
    spent = run_spent(run.pk) if spent is None else spent
    if pending is None:
        pending = run.calls.filter(status=JudgeCall.Status.PENDING).count()
    to_finish = run_call_estimate(run) * pending
    return {
        "budget": run.budget,
        "spent": spent,
        "left": max(Decimal(0), run.budget - spent),
        "stopped": run.status == JudgeRun.Status.STOPPED_BUDGET,
        "pending": pending,
        "to_finish": to_finish,
        "suggested": max(
            run.budget, (spent + to_finish).quantize(Decimal("0.01"), ROUND_CEILING)
        ),
    }
