"""Reads of pairwise preference data: pairs, human votes, categories.

Querysets come with their joins applied, so a caller iterating them issues a constant
number of queries. No permission checks here: callers are services, commands and
views that have checked the role already (the `*_for_user` selectors do it for pages).
"""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from annotation.models import (
    Dataset,
    EvaluatedModel,
    HumanPreference,
    PreferencePair,
)


def pairs_for_dataset(
    dataset: Dataset, *, category: str | None = None
) -> QuerySet[PreferencePair]:
    """The dataset's pairs (optionally one category), with instruction and both
    responses joined and `votes` / `ties` annotated (counts of human preferences)."""
    qs = (
        PreferencePair.objects.filter(dataset=dataset)
        .select_related("instruction", "response_1", "response_2")
        .annotate(
            votes=Count("human_preferences"),
            ties=Count("human_preferences", filter=Q(human_preferences__label="tie")),
        )
        .order_by("id")
    )
    if category is not None:
        qs = qs.filter(category=category)
    return qs


def human_preferences_for_dataset(dataset: Dataset) -> QuerySet[HumanPreference]:
    """Every human preference on the dataset's pairs, with the pair joined, ordered by
    pair then id (votes of one pair are adjacent)."""
    return (
        HumanPreference.objects.filter(pair__dataset=dataset)
        .select_related("pair")
        .order_by("pair_id", "id")
    )


def human_labels_by_pair(dataset: Dataset) -> dict[int, list[str]]:
    """{pair id: [label, ...]} of every human vote (imported and campaign), labels in
    the original numbering ("1", "2", "tie"), in the order they were recorded."""
    out: dict[int, list[str]] = {}
    for pair_id, label in (
        HumanPreference.objects.filter(pair__dataset=dataset)
        .order_by("pair_id", "id")
        .values_list("pair_id", "label")
    ):
        out.setdefault(pair_id, []).append(label)
    return out


def pair_categories(dataset: Dataset) -> list[tuple[str, int]]:
    """[(category, number of pairs)] of the dataset, by category name ("" = none)."""
    return list(
        PreferencePair.objects.filter(dataset=dataset)
        .values_list("category")
        .annotate(n=Count("id"))
        .order_by("category")
        .values_list("category", "n")
    )


def evaluated_model_families(workspace_id: int, names: set[str]) -> dict[str, str]:
    """The family of each evaluated model in `names` that workspace `workspace_id`
    maps (`EvaluatedModel`, per workspace), by model name; a name it does not map, or
    maps to no family, is absent. Another workspace's mapping is never read."""
    return dict(
        EvaluatedModel.objects.filter(workspace_id=workspace_id, name__in=names)
        .exclude(family="")
        .values_list("name", "family")
    )
