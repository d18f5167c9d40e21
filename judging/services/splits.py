"""The development / test split of a dataset's instructions, and its test-look log.

A judge is tuned on the development split; the test split is held out and looked at
on purpose. So the split is made once per dataset and never moves, and every
evaluation on the test split is a `TestSplitLook` row (who, when, which runs, why),
written by :func:`eval_split_look_record` before the figures are computed.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from annotation.models import Dataset, Instruction
from flaskapp import limits, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.untrusted import text_problem
from judging.models import EvalSplit, EvalSplitMember, Experiment, TestSplitLook

MAX_SEED = 2**31 - 1
MAX_REASON = limits.NOTE  # TestSplitLook.reason


def _fraction(value) -> float:
    try:
        fraction = float(value)
    except (TypeError, ValueError):
        raise DomainError(
            "the split was not made",
            [
                Problem(
                    f"must be a number between 0 and 1, not {value!r}",
                    field="test_fraction",
                )
            ],
        ) from None
    if not (0 < fraction < 1) or math.isnan(fraction):
        raise DomainError(
            "the split was not made",
            [
                Problem(
                    f"must be strictly between 0 and 1 (a share of the instructions), "
                    f"not {value!r}",
                    field="test_fraction",
                )
            ],
        )
    return fraction


def split_assign(strata: list[tuple], fraction: float, seed: int) -> list[bool]:
    """Whether each item (given by its stratum key) goes to the test part.

    Within each stratum the items are shuffled (seeded) and every 1/fraction-th one
    is taken from a random start (systematic sampling), so each stratum gets the
    floor or the ceiling of fraction x its size and the whole about fraction x n.
    Pure; the same strata, fraction and seed give the same answer.
    """
    rng = np.random.default_rng(seed)
    by_stratum: dict[tuple, list[int]] = defaultdict(list)
    for i, key in enumerate(strata):
        by_stratum[key].append(i)
    test = [False] * len(strata)
    for key in sorted(by_stratum, key=repr):
        members = by_stratum[key]
        order = rng.permutation(len(members))
        start = rng.random()
        for rank, j in enumerate(order):
            if math.floor((rank + 1) * fraction + start) > math.floor(
                rank * fraction + start
            ):
                test[members[j]] = True
    return test


def eval_split_create(
    *, dataset: Dataset, user: User, test_fraction, seed: int = 0
) -> EvalSplit:
    """Make the dataset's development / test split of its instructions.

    Stratified by domain and difficulty where the dataset knows them (an instruction
    with neither is its own stratum "unknown"). Refuses (DomainError naming the
    field) a fraction outside (0, 1), a seed out of range, a dataset without
    instructions, and a dataset that already has a split: a split is fixed, since a
    test split that moves is not held out. Side effects: one EvalSplit and one
    member row per instruction, in one transaction.
    """
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    fraction = _fraction(test_fraction)
    try:
        seed = int(seed)
    except (TypeError, ValueError):
        seed = -1
    if not 0 <= seed <= MAX_SEED:
        raise DomainError(
            "the split was not made",
            [Problem(f"must be an integer from 0 to {MAX_SEED}", field="seed")],
        )
    rows = list(
        Instruction.objects.filter(dataset=dataset)
        .order_by("id")
        .values_list("id", "domain_1", "difficulty")
    )
    if not rows:
        raise DomainError(
            "the split was not made",
            [Problem("the dataset has no instructions", field="dataset")],
        )
    stratified = [
        name
        for name, col in (("domain", 1), ("difficulty", 2))
        if any(r[col] for r in rows)
    ]
    strata = [
        tuple(
            r[col] or ""
            for name, col in (("domain", 1), ("difficulty", 2))
            if name in stratified
        )
        for r in rows
    ]
    test = split_assign(strata, fraction, seed)
    try:
        with transaction.atomic():
            split = EvalSplit.objects.create(
                workspace_id=dataset.workspace_id,
                dataset=dataset,
                seed=seed,
                test_fraction=fraction,
                stratified_by=stratified,
                created_by=user,
            )
            EvalSplitMember.objects.bulk_create(
                EvalSplitMember(
                    split=split,
                    instruction_id=r[0],
                    part=EvalSplitMember.Part.TEST if t else EvalSplitMember.Part.DEV,
                )
                for r, t in zip(rows, test, strict=True)
            )
    except IntegrityError:
        raise DomainError(
            "the split was not made",
            [
                Problem(
                    "the dataset already has a development / test split; a split is "
                    "fixed, so that the test figures stay held out",
                    field="dataset",
                )
            ],
        ) from None
    return split


def eval_split_look_record(
    *,
    split: EvalSplit,
    user: User,
    run_ids: list[int],
    experiment: Experiment | None = None,
    reason: str = "",
) -> TestSplitLook:
    """Log one evaluation on the test split, before its figures are computed (a
    `TestSplitLook` and an audit row ``test_split.looked``, together).

    The caller then computes the figures; the look counts whether or not the
    caller shows them. Refuses an empty reason, one with control characters or
    one over MAX_REASON characters (DomainError naming `reason`). Not idempotent: every
    call is a look.
    """
    workspaces.require_object_role(user, split, workspaces.RESEARCHER)
    reason = (reason or "").strip()
    # A look without a reason is a look nobody can account for later (issue 37).
    problem = (
        ("is empty: say why you evaluate on the test split now" if not reason else None)
        or text_problem(reason)
        or (
            f"is longer than {MAX_REASON} characters"
            if len(reason) > MAX_REASON
            else None
        )
    )
    if problem:
        raise DomainError(
            "the test split was not evaluated", [Problem(problem, field="reason")]
        )
    with transaction.atomic():
        look = TestSplitLook.objects.create(
            split=split,
            user=user,
            run_ids=sorted({int(r) for r in run_ids}),
            experiment=experiment,
            reason=reason,
        )
        workspaces.audit_record(
            action="test_split.looked",
            actor=user,
            workspace=split.workspace_id,
            target=split,
            after={"runs": look.run_ids, "reason": reason,
                   "experiment": experiment.pk if experiment else None},
        )  # fmt: skip
    return look
