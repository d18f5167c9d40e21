"""Preference export: human preferences and judge verdicts of a dataset, one long format.

One row per human preference (imported or from a campaign) and per judge verdict (one
per run, pair, order and sample), in the pair's ORIGINAL numbering (`label` is "1",
"2", "tie", or "" for a judge answer that gave no usable verdict). What the source was
shown is kept too: `shown_order` ("12": response 1 shown first, "21": response 2
first, "" when unknown, i.e. imported votes) and `presented_label` (the same choice in
presented terms, "A"/"B"/"tie"). Judge rows also carry the run's `order` ("ab"/"ba").

Raters appear only as `rater`, the pseudonym of `analysis.exports.training.rater_anon_id`
(the same one the training export uses); imported voter ids are pseudonymised the same
way. Rows are read with two queries (humans, then judges), each in chunks, and encoded
chunk by chunk: memory stays flat. Read-only; no permission check (callers do it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from analysis.exports.encoding import csv_dicts
from analysis.exports.scores import export_jsonl
from analysis.exports.training import rater_anon_id
from annotation.labels import unmap_verdict
from annotation.models import Dataset, HumanPreference, ShownOrder
from flaskapp.errors import DomainError, Problem
from judging.models import JudgeRun, PairOrder, PairwiseVerdict

CHUNK_SIZE = 5000
FORMATS = ("csv", "jsonl")

FIELDS = (
    "dataset",
    "pair_id",
    "pair_external_id",
    "instruction_external_id",
    "instruction_id",
    "response_1_id",
    "response_2_id",
    "model_1",
    "model_2",
    "category",
    "pair_source",
    "source_kind",
    "origin",
    "rater",
    "campaign_id",
    "assignment_id",
    "preference_id",
    "run_id",
    "run_name",
    "run_probe",
    "order",
    "sample_index",
    "shown_order",
    "label",
    "presented_label",
    "skill_labels",
    "rationale",
    "created_at",
    "submitted_at",
)

_PAIR_COLUMNS = (
    "pair_id",
    "pair__external_id",
    "pair__instruction__external_id",
    "pair__instruction_id",
    "pair__response_1_id",
    "pair__response_2_id",
    "pair__response_1__model_name",
    "pair__response_2__model_name",
    "pair__category",
    "pair__source",
)

# A judge's presented order in the humans' vocabulary.
_SHOWN = {PairOrder.AB: ShownOrder.ORIGINAL, PairOrder.BA: ShownOrder.SWAPPED}
_ORDER = {ShownOrder.ORIGINAL: PairOrder.AB, ShownOrder.SWAPPED: PairOrder.BA}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _pair_fields(dataset_name: str, values) -> dict:
    (
        pair_id,
        pair_external_id,
        instruction_external_id,
        instruction_id,
        response_1_id,
        response_2_id,
        model_1,
        model_2,
        category,
        pair_source,
    ) = values
    return {
        "dataset": dataset_name,
        "pair_id": pair_id,
        "pair_external_id": pair_external_id,
        "instruction_external_id": instruction_external_id,
        "instruction_id": instruction_id,
        "response_1_id": response_1_id,
        "response_2_id": response_2_id,
        "model_1": model_1,
        "model_2": model_2,
        "category": category,
        "pair_source": pair_source,
    }


def preference_rows(*, dataset: Dataset) -> Iterator[dict]:
    """Yield every human preference, then every judge verdict, of `dataset` (keys:
    `FIELDS`), each ordered by id. Two queries, read in chunks of `CHUNK_SIZE`."""
    name = dataset.name
    humans = (
        HumanPreference.objects.filter(pair__dataset=dataset)
        .order_by("pk")
        .values_list(
            "pk",
            "origin",
            "voter",
            "rater_id",
            "assignment_id",
            "assignment__campaign_id",
            "assignment__submitted_at",
            "shown_order",
            "label",
            "skill_labels",
            "rationale",
            "created_at",
            *_PAIR_COLUMNS,
        )
        .iterator(CHUNK_SIZE)
    )
    for (
        pk,
        origin,
        voter,
        rater_id,
        assignment_id,
        campaign_id,
        submitted_at,
        shown_order,
        label,
        skill_labels,
        rationale,
        created_at,
        *pair,
    ) in humans:
        order = _ORDER.get(shown_order, "")
        yield _pair_fields(name, pair) | {
            "source_kind": "human",
            "origin": origin,
            "rater": rater_anon_id(
                dataset_id=dataset.pk, user_id=rater_id, voter=voter
            ),
            "campaign_id": campaign_id,
            "assignment_id": assignment_id,
            "preference_id": pk,
            "run_id": None,
            "run_name": None,
            "run_probe": None,
            "order": "",
            "sample_index": None,
            "shown_order": shown_order,
            "label": label,
            "presented_label": unmap_verdict(label, order) if order else "",
            "skill_labels": skill_labels or {},
            "rationale": rationale,
            "created_at": _iso(created_at),
            "submitted_at": _iso(submitted_at),
        }
    verdicts = (
        PairwiseVerdict.objects.filter(pair__dataset=dataset)
        .order_by("pk")
        .values_list(
            "run_id",
            "run__name",
            "run__kind",
            "run__probe",
            "order",
            "sample_index",
            "verdict",
            "verdict_raw",
            "rationale",
            "created_at",
            *_PAIR_COLUMNS,
        )
        .iterator(CHUNK_SIZE)
    )
    for (
        run_id,
        run_name,
        run_kind,
        probe,
        order,
        sample_index,
        verdict,
        verdict_raw,
        rationale,
        created_at,
        *pair,
    ) in verdicts:
        yield _pair_fields(name, pair) | {
            "source_kind": "judge",
            "origin": "imported" if run_kind == JudgeRun.Kind.IMPORTED else "run",
            "rater": None,
            "campaign_id": None,
            "assignment_id": None,
            "preference_id": None,
            "run_id": run_id,
            "run_name": run_name or f"run {run_id}",
            "run_probe": probe,
            "order": order,
            "sample_index": sample_index,
            "shown_order": _SHOWN.get(order, ""),
            "label": verdict,
            "presented_label": verdict_raw,
            "skill_labels": {},
            "rationale": rationale,
            "created_at": _iso(created_at),
            "submitted_at": None,
        }


def preferences_csv(rows: Iterable[dict]) -> Iterator[str]:
    """Encode `rows` as CSV (header `FIELDS`; null -> empty; `skill_labels` as a JSON
    object, empty when there are none; formula-like text neutralised by the one CSV
    encoder), yielding chunks of text."""
    return csv_dicts(FIELDS, rows)


def preferences_encode(rows: Iterable[dict], fmt: str) -> Iterator[str]:
    """CSV or JSON Lines by name; `DomainError` naming `format` for another name."""
    if fmt == "csv":
        return preferences_csv(rows)
    if fmt == "jsonl":
        return export_jsonl(rows)
    raise DomainError(
        "Unknown export format",
        [Problem(f"must be one of {', '.join(FORMATS)}, not {fmt!r}", field="format")],
    )
