"""Reads of a dataset's development / test split and of its test-look log."""

from __future__ import annotations

from django.db.models import Count, Q

from annotation.models import Dataset
from judging.models import EvalSplit, EvalSplitMember, TestSplitLook

DEV, TEST = EvalSplitMember.Part.DEV, EvalSplitMember.Part.TEST


def eval_split_of(*, dataset: Dataset) -> EvalSplit | None:
    """The dataset's split, or None when it has none."""
    return EvalSplit.objects.filter(dataset=dataset).first()


def eval_split_summary(*, dataset: Dataset) -> dict | None:
    """The split in figures: {"id", "seed", "test_fraction", "stratified_by",
    "created_at", "created_by", "instructions": {"dev": n, "test": n},
    "test_looks": n, "last_look": TestSplitLook or None}; None without a split.
    Three queries."""
    split = (
        EvalSplit.objects.filter(dataset=dataset).select_related("created_by").first()
    )
    if split is None:
        return None
    counts = split.members.aggregate(
        dev=Count("id", filter=Q(part=DEV)), test=Count("id", filter=Q(part=TEST))
    )
    looks = split.looks.select_related("user")
    return {
        "id": split.pk,
        "seed": split.seed,
        "test_fraction": split.test_fraction,
        "stratified_by": split.stratified_by,
        "created_at": split.created_at,
        "created_by": split.created_by.username if split.created_by else "",
        "instructions": counts,
        "test_looks": looks.count(),
        "last_look": looks.first(),
    }


def split_part_by_instruction(*, dataset: Dataset) -> dict[int, str]:
    """Instruction id -> "dev" or "test" (empty without a split). One query."""
    return dict(
        EvalSplitMember.objects.filter(split__dataset=dataset).values_list(
            "instruction_id", "part"
        )
    )


def test_look_list(*, split: EvalSplit, limit: int = 50) -> list[TestSplitLook]:
    """The latest looks at the test split, newest first, with their users."""
    return list(split.looks.select_related("user", "experiment")[:limit])
