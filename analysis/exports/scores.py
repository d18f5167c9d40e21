"""Score export: human and judge scores of a dataset in one long format, streamed.

One row per (response, skill, source), where the source is a rater (human) or a judge
run + sample (DESIGN.md). Rows are read with two joined queries (humans, then judges),
each iterated in chunks (a server-side cursor on PostgreSQL), and encoded chunk by
chunk, so memory stays flat whatever the number of scores. Used by the `export`
command and the export API; lives in judging because it reads both apps' scores
(annotation never imports judging).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from analysis.exports import scores_sql
from analysis.exports.encoding import csv_dicts, csv_rows
from analysis.exports.encoding import jsonl as export_jsonl
from annotation.errors import DomainError, Problem
from annotation.models import Campaign, Dataset, HumanScore
from judging.models import JudgeRun, JudgeScore

CHUNK_SIZE = 5000
# Rows per encoded chunk: large enough that a 200,000-row export is a few hundred
# writes, small enough that a chunk stays well under a megabyte.

FORMATS = ("csv", "jsonl")

FIELDS = (
    "dataset",
    "instruction_external_id",
    "instruction_id",
    "response_id",
    "model",
    "skill_key",
    "skill_name",
    "ability",
    "rubric",
    "source_type",
    "source",
    "rater_id",
    "campaign_id",
    "run_id",
    "sample_index",
    "score",
    "is_na",
    "rationale",
    "created_at",
    "updated_at",
    "domains",
    "difficulty",
    "is_hard",
    "source_task",
)

# Columns read for both sources, in this order, after the source-specific ones.
_COMMON = (
    "external_id",
    "instruction_id",
    "response_id",
    "model_name",
    "skill__key",
    "skill__name",
    "skill__ability",
    "skill__rubric__name",
    "skill__rubric__version",
    "score",
    "rationale",
    "domain_1",
    "domain_2",
    "difficulty",
    "is_hard",
    "source_task",
)


def _prefixed(prefix: str) -> tuple[str, ...]:
    instruction = f"{prefix}response__instruction__"
    mapping = {
        "external_id": f"{instruction}external_id",
        "instruction_id": f"{prefix}response__instruction_id",
        "response_id": f"{prefix}response_id",
        "model_name": f"{prefix}response__model_name",
        "domain_1": f"{instruction}domain_1",
        "domain_2": f"{instruction}domain_2",
        "difficulty": f"{instruction}difficulty",
        "is_hard": f"{instruction}is_hard",
        "source_task": f"{instruction}source_task",
    }
    return tuple(mapping.get(column, column) for column in _COMMON)


def export_filters_check(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
) -> None:
    """Refuse campaign or run ids that are not of `dataset` (one query per list given).

    Raises `DomainError` whose problems name the field (`campaign` / `run`) and the ids.
    """
    problems = []
    for field, model, ids in (
        ("campaign", Campaign, campaign_ids),
        ("run", JudgeRun, run_ids),
    ):
        if not ids:
            continue
        found = set(
            model.objects.filter(dataset=dataset, pk__in=ids).values_list(
                "pk", flat=True
            )
        )
        missing = sorted(set(ids) - found)
        if missing:
            problems.append(
                Problem(
                    f"no {field} {', '.join(map(str, missing))} in dataset "
                    f"{dataset.name!r}",
                    field=field,
                )
            )
    if problems:
        raise DomainError("Cannot export these scores", problems)


def score_rows(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
) -> Iterator[dict]:
    """Yield every score of `dataset` as a long-format dict (keys: `FIELDS`).

    Human scores first (ordered by id), then judge scores (ordered by id). With no
    filter, every campaign and every run is exported. A filter selects sources: with
    `campaign_ids` and/or `run_ids` given, only the named campaigns' human scores and
    the named runs' judge scores are exported (`campaign_ids=[1]` alone: no judge rows).
    Ids of other datasets select nothing; check them first with
    `export_filters_check` to tell the user.

    Read-only; two queries in all (one per source), each read in chunks of
    `CHUNK_SIZE` rows through a server-side cursor on PostgreSQL. No permission
    check: callers (the researcher-only API, the CLI) do it.
    """
    filtered = campaign_ids is not None or run_ids is not None
    dataset_name = dataset.name
    if not filtered or campaign_ids:
        humans = HumanScore.objects.filter(
            assignment__response__instruction__dataset=dataset
        )
        if campaign_ids:
            humans = humans.filter(assignment__campaign_id__in=campaign_ids)
        columns = (
            "assignment__rater__username",
            "assignment__rater_id",
            "assignment__campaign_id",
            "created_at",
            "updated_at",
            *_prefixed("assignment__"),
        )
        rows = humans.order_by("pk").values_list(*columns).iterator(CHUNK_SIZE)
        for username, rater_id, campaign_id, created, updated, *common in rows:
            yield _row(
                dataset_name,
                common,
                source_type="human",
                source=username,
                rater_id=rater_id,
                campaign_id=campaign_id,
                run_id=None,
                sample_index=None,
                created_at=created,
                updated_at=updated,
            )
    if not filtered or run_ids:
        judges = JudgeScore.objects.filter(run__dataset=dataset)
        if run_ids:
            judges = judges.filter(run_id__in=run_ids)
        columns = ("run_id", "sample_index", "created_at", *_prefixed(""))
        rows = judges.order_by("pk").values_list(*columns).iterator(CHUNK_SIZE)
        for run_id, sample_index, created, *common in rows:
            yield _row(
                dataset_name,
                common,
                source_type="judge",
                source=f"run:{run_id}/sample:{sample_index}",
                rater_id=None,
                campaign_id=None,
                run_id=run_id,
                sample_index=sample_index,
                created_at=created,
                # Judge scores are never edited: last change = creation.
                updated_at=created,
            )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _row(
    dataset_name: str,
    common: list,
    *,
    source_type: str,
    source: str,
    rater_id: int | None,
    campaign_id: int | None,
    run_id: int | None,
    sample_index: int | None,
    created_at: datetime | None,
    updated_at: datetime | None,
) -> dict:
    (
        external_id,
        instruction_id,
        response_id,
        model_name,
        skill_key,
        skill_name,
        ability,
        rubric_name,
        rubric_version,
        score,
        rationale,
        domain_1,
        domain_2,
        difficulty,
        is_hard,
        source_task,
    ) = common
    return {
        "dataset": dataset_name,
        "instruction_external_id": external_id,
        "instruction_id": instruction_id,
        "response_id": response_id,
        "model": model_name,
        "skill_key": skill_key,
        "skill_name": skill_name,
        "ability": ability,
        "rubric": f"{rubric_name} v{rubric_version}",
        "source_type": source_type,
        "source": source,
        "rater_id": rater_id,
        "campaign_id": campaign_id,
        "run_id": run_id,
        "sample_index": sample_index,
        "score": score,
        "is_na": score is None,
        "rationale": rationale,
        "created_at": _iso(created_at),
        "updated_at": _iso(updated_at),
        "domains": [d for d in (domain_1, domain_2) if d],
        "difficulty": difficulty,
        "is_hard": is_hard,
        "source_task": source_task,
    }


def export_csv(rows: Iterable[dict]) -> Iterator[str]:
    """Encode `rows` as CSV (header `FIELDS`) through the one CSV encoder
    (`analysis.exports.encoding`: null -> empty, booleans -> true/false, domains
    `;`-joined, formula-like text neutralised), yielding chunks of text."""
    return csv_dicts(FIELDS, rows)


def export_chunks(
    *,
    dataset: Dataset,
    fmt: str,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    counter: list[int] | None = None,
) -> Iterator[bytes]:
    """The export of `dataset`'s scores (selected as `score_rows` selects them) as
    chunks of UTF-8 in `fmt`; adds the number of rows written to `counter[0]` when
    given. CSV on PostgreSQL is written by the database (`scores_sql`, the same bytes);
    otherwise `score_rows` through `export_encode`. `DomainError` on another format."""
    if fmt == "csv" and scores_sql.enabled():
        return scores_sql.csv_chunks(
            dataset=dataset,
            header="".join(csv_rows(FIELDS, [])),
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            counter=counter if counter is not None else [0],
        )
    rows = score_rows(dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids)
    if counter is not None:
        rows = _counted(rows, counter)
    return (chunk.encode() for chunk in export_encode(rows, fmt))


def _counted(rows: Iterable[dict], counter: list[int]) -> Iterator[dict]:
    for row in rows:
        counter[0] += 1
        yield row


def export_encode(rows: Iterable[dict], fmt: str) -> Iterator[str]:
    """`export_csv` or `export_jsonl` by name; `DomainError` on another format."""
    if fmt == "csv":
        return export_csv(rows)
    if fmt == "jsonl":
        return export_jsonl(rows)
    raise DomainError(
        "Unknown export format",
        [Problem(f"must be one of {', '.join(FORMATS)}, not {fmt!r}", field="format")],
    )
