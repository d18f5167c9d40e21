"""FLASK-Hard: marking a dataset's instructions as part of the expert-level subset."""

from __future__ import annotations

from collections.abc import Iterable

from django.db import transaction

from annotation.models import Dataset, Instruction

# Texts per query: instruction texts are long, and SQLite limits bound parameters.
CHUNK = 500


def instruction_texts_matching(*, dataset: Dataset, texts: Iterable[str]) -> set[str]:
    """The subset of `texts` that are, exactly, the text of an instruction of `dataset`."""
    wanted = list(dict.fromkeys(texts))
    found: set[str] = set()
    for start in range(0, len(wanted), CHUNK):
        found.update(
            Instruction.objects.filter(
                dataset=dataset, text__in=wanted[start : start + CHUNK]
            ).values_list("text", flat=True)
        )
    return found


def instruction_mark_hard(*, dataset: Dataset, texts: Iterable[str]) -> int:
    """Mark as FLASK-Hard every instruction of `dataset` whose text is one of `texts`.

    FLASK-Hard instances are copies of main-set instances with their own ids, so they
    are matched by exact instruction text (no trimming or case folding: a near match
    is a different instruction). Texts with no match are ignored; the caller reports
    them (`instruction_texts_matching`). Returns how many instructions of the dataset
    match, whether or not they were already marked. Idempotent; only instructions not
    yet marked are updated. Runs in its own transaction (a savepoint in the caller's).
    """
    wanted = list(dict.fromkeys(texts))
    matched = 0
    with transaction.atomic():
        for start in range(0, len(wanted), CHUNK):
            chunk = Instruction.objects.filter(
                dataset=dataset, text__in=wanted[start : start + CHUNK]
            )
            matched += chunk.count()
            chunk.filter(is_hard=False).update(is_hard=True)
    return matched
