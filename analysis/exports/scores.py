"""Score export: human and judge scores of a dataset in one long format, streamed.

One row per (response, skill, source), where the source is a rater (human), a
reviewer's adjudication (`human_adjudicated`: the settled value where a campaign's
raters disagreed, next to their scores, never in their place) or a judge run + sample
(DESIGN.md). Rows are read with two joined queries (humans, then judges),
each iterated in chunks (a server-side cursor on PostgreSQL), and encoded chunk by
chunk, so memory stays flat whatever the number of scores. Used by the `export`
command and the export API; lives in judging because it reads both apps' scores
(annotation never imports judging).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from types import SimpleNamespace

from analysis.exports import scores_sql
from analysis.exports.encoding import csv_dicts, csv_rows, parquet
from analysis.exports.encoding import jsonl as export_jsonl
from analysis.exports.labels import ExportLabels
from annotation.models import Adjudication, Campaign, Dataset, HumanScore, Skill
from annotation.scales import CATEGORICAL, Scale, scale_of
from annotation.selectors.exclusions import excluded_scores
from flaskapp import roles
from flaskapp.errors import DomainError, Problem
from flaskapp.optional import HUB, PARQUET
from judging.models import JudgeRun, JudgeScore, TestSplitLook
from judging.selectors.splits import eval_split_of, split_part_by_instruction
from judging.services.splits import eval_split_look_record

CHUNK_SIZE = 5000
# Rows per encoded chunk: large enough that a 200,000-row export is a few hundred
# writes, small enough that a chunk stays well under a megabyte.

FORMATS = ("csv", "jsonl", "parquet", "hf")
# Parquet and "hf" (a Hugging Face dataset directory, `analysis.exports.hub`; zipped
# for a download) need pyarrow, an optional package (flaskapp/optional.py).
_NEEDS = {"parquet": PARQUET, "hf": HUB}


def formats_available() -> tuple[str, ...]:
    """The export formats this server can write: `FORMATS`, without those whose
    optional package is not installed."""
    return tuple(f for f in FORMATS if f not in _NEEDS or _NEEDS[f].available())


def export_format_check(fmt: str) -> None:
    """`DomainError` naming `format` when `fmt` is not an export format, or is
    Parquet on a server without pyarrow (the message says how to enable it)."""
    if fmt not in FORMATS:
        raise DomainError(
            "Unknown export format",
            [
                Problem(
                    f"must be one of {', '.join(FORMATS)}, not {fmt!r}", field="format"
                )
            ],
        )
    if fmt not in formats_available():
        raise DomainError(
            "Export format not available",
            [Problem(_NEEDS[fmt].missing(), field="format")],
        )


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
    "synthetic",
    "rubric_name",
    "rubric_version",
    "skill_kind",
    "skill_group",
    "scale",
    "value",
    "gold",
    "excluded",
    "split",
    "expected_score",
    "expected_mass",
    "domain_labels",
    "difficulty_label",
)
# The columns after `synthetic` say what each score means on its own criterion
# (`annotation.scales`), so rows of different rubrics can share one file:
#
# - `rubric_name`, `rubric_version`: the rubric version the score was given on
#   (`rubric` is the same as "name vN");
# - `skill_kind`: "ordinal" (a score on a scale) or "categorical" (one of labels);
# - `skill_group`: the criterion's group key in its rubric (FLASK: its ability);
# - `scale`: an ordinal criterion's range ("0-4", "1-10") or a categorical one's label
#   keys in their order ("yes / no");
# - `value`: the score as written: the number (ordinal), the label key (categorical),
#   "N/A". `score` stays the stored integer: the point, or for a categorical criterion
#   the label's 0-based code in `scale` (use `value` for labels);
# - `gold`: true for a rater's score of a gold item or attention check (a known-answer
#   item served to measure the rater, `annotation.models.quality`; left out of the
#   agreement and the training export), false otherwise and on every judge row;
# - `excluded`: true for a score of a rater a researcher excluded from the analyses of
#   that campaign (`annotation.models.RaterExclusion`, open), false otherwise;
# - `split`: "dev" or "test", the part of the dataset's development / test split the
#   item's instruction is in (`judging.models.EvalSplit`), "" without a split;
# - `expected_score`, `expected_mass`: a judge score's probability-weighted value
#   and the probability mass it covered (`judging.logprobs`; a run with the
#   config's ``logprobs`` option on an endpoint that returns token probabilities);
#   empty on every other row. `score` stays the judge's integer;
# - `domain_labels`, `difficulty_label`: the labels of the row's domains and level
#   where the dataset declares its own taxonomy (`analysis.exports.labels`); empty
#   for a part it does not declare (FLASK's).
#
# Column types in Parquet (one type per column): ids and numbers int64, flags bool,
# `domains` and `domain_labels` lists of text, the rest text, `value` too ("4", "yes", "N/A").
_INTEGER_FIELDS = {
    "instruction_id",
    "response_id",
    "rater_id",
    "campaign_id",
    "run_id",
    "sample_index",
    "score",
    "difficulty",
    "rubric_version",
}
_BOOLEAN_FIELDS = {"is_na", "is_hard", "synthetic", "gold", "excluded"}
_FLOAT_FIELDS = {"expected_score", "expected_mass"}


def parquet_schema():
    """The `pyarrow.Schema` of the Parquet export: `FIELDS` with the types above."""
    import pyarrow as pa

    def kind(name: str):
        if name in _INTEGER_FIELDS:
            return pa.int64()
        if name in _BOOLEAN_FIELDS:
            return pa.bool_()
        if name in _FLOAT_FIELDS:
            return pa.float64()
        if name in ("domains", "domain_labels"):
            return pa.list_(pa.string())
        return pa.string()

    return pa.schema([pa.field(name, kind(name)) for name in FIELDS])


# `synthetic`: true for a human-side score of a synthetic account (`roles.SYNTHETIC`:
# generated by a program, e.g. the demo's example ratings), never a person's
# judgment; false for every other row (judge rows say what they are in source_type).

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
    "skill_id",
    "skill__kind",
    "skill__group",
    "skill__scale_min",
    "skill__scale_max",
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


@dataclass(frozen=True)
class TestRows:
    """Whether an export holds the rows of the dataset's locked test split.

    `has_split`: the dataset has a development / test split; `included`: its test
    rows are in the export (always true without a split: there is nothing to leave
    out); `look`: the logged look that let them in. `label` is what the export says
    of itself (the API's ``X-Test-Split`` header, the Parquet metadata, the command's
    summary)."""

    __test__ = False  # not a test class (pytest collects by name)

    has_split: bool
    included: bool
    look: TestSplitLook | None = None

    @property
    def label(self) -> str:
        if not self.has_split:
            return "no split"
        if not self.included:
            return "test rows left out"
        return f"test rows included (test look {self.look.pk})"


TEST_ROWS_LEFT_OUT = TestRows(has_split=True, included=False)


def export_test_rows(
    *,
    dataset: Dataset,
    user,
    include_test: bool,
    reason: str = "",
    run_ids: list[int] | None = None,
) -> TestRows:
    """Decide, before an export streams, whether it holds the test split's rows.

    A dataset with a development / test split exports its development rows only,
    unless `include_test` is asked for with a `reason`: that export is then a look at
    the test split, logged first as every look is (`eval_split_look_record`: the
    exporter, the reason, the time, the runs exported: `run_ids` or every run of the
    dataset), so test figures cannot be computed from an export unlogged (issue 34).
    `DomainError` naming ``reason`` when it is missing or refused; nothing is logged
    then. A dataset without a split exports every row and logs nothing."""
    split = eval_split_of(dataset=dataset)
    if split is None:
        return TestRows(has_split=False, included=True)
    if not include_test:
        return TEST_ROWS_LEFT_OUT
    if not (reason or "").strip():
        raise DomainError(
            "the test split's rows were not exported",
            [
                Problem(
                    "say why you look at the locked test split (required with "
                    "include_test; the export is logged as a test look)",
                    field="reason",
                )
            ],
        )
    if run_ids is None:
        run_ids = list(
            JudgeRun.objects.filter(dataset=dataset).values_list("pk", flat=True)
        )
    look = eval_split_look_record(
        split=split, user=user, run_ids=run_ids, reason=reason
    )
    return TestRows(has_split=True, included=True, look=look)


def score_rows(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    test_rows: TestRows = TEST_ROWS_LEFT_OUT,
) -> Iterator[dict]:
    """:func:`_score_rows` with each row's `split` part (one more query), without
    the test split's rows unless `test_rows.included` (`export_test_rows`)."""
    parts = split_part_by_instruction(dataset=dataset)
    labels = ExportLabels.of(dataset)
    for row in _score_rows(dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids):
        part = parts.get(row["instruction_id"], "")
        if part == "test" and not test_rows.included:
            continue
        row["split"] = part
        row["domain_labels"] = labels.domain_labels(row["domains"])
        row["difficulty_label"] = labels.difficulty_label(row["difficulty"])
        yield row


def _score_rows(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
) -> Iterator[dict]:
    """Yield every score of `dataset` as a long-format dict (keys: `FIELDS`).

    Human scores first (ordered by id), then adjudications (`human_adjudicated`,
    ordered by id; selected with the campaigns), then judge scores (ordered by id). With no
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
    skills = _SkillCells()
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
            "assignment__gold",
            "created_at",
            "updated_at",
            *_prefixed("assignment__"),
        )
        rows = (
            humans.annotate(
                synthetic=roles.synthetic_rater("assignment__rater_id"),
                excluded=excluded_scores(),
            )
            .order_by("pk")
            .values_list("synthetic", "excluded", *columns)
            .iterator(CHUNK_SIZE)
        )
        for (
            synthetic,
            excluded,
            username,
            rater_id,
            campaign_id,
            gold,
            created,
            updated,
            *common,
        ) in rows:
            yield _row(
                dataset_name,
                common,
                skills,
                source_type="human",
                source=username,
                rater_id=rater_id,
                campaign_id=campaign_id,
                run_id=None,
                sample_index=None,
                created_at=created,
                updated_at=updated,
                synthetic=synthetic,
                gold=gold,
                excluded=excluded,
            )
    if not filtered or campaign_ids:
        yield from _adjudicated_rows(dataset, campaign_ids, skills)
    if not filtered or run_ids:
        judges = JudgeScore.objects.filter(run__dataset=dataset)
        if run_ids:
            judges = judges.filter(run_id__in=run_ids)
        columns = (
            "run_id",
            "sample_index",
            "created_at",
            "expected_score",
            "expected_mass",
            *_prefixed(""),
        )
        rows = judges.order_by("pk").values_list(*columns).iterator(CHUNK_SIZE)
        for run_id, sample_index, created, expected, mass, *common in rows:
            yield _row(
                dataset_name,
                common,
                skills,
                source_type="judge",
                source=f"run:{run_id}/sample:{sample_index}",
                rater_id=None,
                campaign_id=None,
                run_id=run_id,
                sample_index=sample_index,
                created_at=created,
                # Judge scores are never edited: last change = creation.
                updated_at=created,
                synthetic=False,
                gold=False,
                excluded=False,
                expected_score=expected,
                expected_mass=mass,
            )


def _adjudicated_rows(dataset: Dataset, campaign_ids, skills) -> Iterator[dict]:
    """The "human, adjudicated" source: a reviewer's settled value of a disputed
    criterion (`annotation.models.Adjudication`), one row per (campaign, response,
    criterion); `source` is ``adjudicated:<reviewer>``, `rater_id` the reviewer's
    id, `rationale` the reviewer's note."""
    rows = Adjudication.objects.filter(campaign__dataset=dataset)
    if campaign_ids:
        rows = rows.filter(campaign_id__in=campaign_ids)
    common = tuple("note" if c == "rationale" else c for c in _prefixed(""))
    columns = ("updated_by__username", "updated_by_id", "campaign_id")
    for username, reviewer_id, campaign_id, created, updated, *cells in (
        rows.order_by("pk")
        .values_list(*columns, "created_at", "updated_at", *common)
        .iterator(CHUNK_SIZE)
    ):
        yield _row(
            dataset.name,
            cells,
            skills,
            source_type="human_adjudicated",
            source=f"adjudicated:{username or ''}",
            rater_id=reviewer_id,
            campaign_id=campaign_id,
            run_id=None,
            sample_index=None,
            created_at=created,
            updated_at=updated,
            synthetic=False,
            gold=False,
            excluded=False,
        )


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


class _SkillCells(dict):
    """The `Scale` of a score's skill: an ordinal one from the row's own range (no
    query), a categorical one's labels read once per skill (one small query the first
    time the skill is met), so FLASK's exports stay at two queries."""

    def scale(self, skill_id: int, kind: str, low: int | None, high: int | None):
        """(the `Scale`, its label), computed once per skill or range."""
        key = skill_id if kind == CATEGORICAL else (low, high)
        found = self.get(key)
        if found is None:
            if kind == CATEGORICAL:
                scale = scale_of(Skill.objects.get(pk=skill_id))
            else:
                scale = scale_of(SimpleNamespace(scale_min=low, scale_max=high))
            found = self[key] = (scale, scale.label)
        return found


def _value(scale: Scale, score: int | None) -> int | str | None:
    """The `value` cell: a number stays a number (CSV writes it untouched, JSON as a
    number); a label code becomes its key; N/A. A code no label has (never written
    by our services) gives None, as the SQL path's out-of-range array index does."""
    if score is None:
        return "N/A"
    if scale.is_ordinal:
        return score
    return scale.labels[score] if 0 <= score < len(scale.labels) else None


def _row(  # noqa: PLR0913 - one export row's columns, passed by name from the one streaming query
    dataset_name: str,
    common: list,
    skills: _SkillCells,
    *,
    source_type: str,
    source: str,
    rater_id: int | None,
    campaign_id: int | None,
    run_id: int | None,
    sample_index: int | None,
    created_at: datetime | None,
    updated_at: datetime | None,
    synthetic: bool,
    gold: bool,
    excluded: bool,
    expected_score: float | None = None,
    expected_mass: float | None = None,
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
        skill_id,
        kind,
        group,
        scale_min,
        scale_max,
        score,
        rationale,
        domain_1,
        domain_2,
        difficulty,
        is_hard,
        source_task,
    ) = common
    scale, scale_label = skills.scale(skill_id, kind, scale_min, scale_max)
    created = _iso(created_at)
    # A judge row's last change is its creation: the same value, written once.
    updated = created if updated_at is created_at else _iso(updated_at)
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
        "created_at": created,
        "updated_at": updated,
        "domains": [d for d in (domain_1, domain_2) if d],
        "difficulty": difficulty,
        "is_hard": is_hard,
        "source_task": source_task,
        "synthetic": synthetic,
        "rubric_name": rubric_name,
        "rubric_version": rubric_version,
        "skill_kind": scale.kind,
        "skill_group": group,
        "scale": scale_label,
        "value": _value(scale, score),
        "gold": gold,
        "excluded": excluded,
        "split": "",  # `score_rows` sets it (here: the columns' order)
        "expected_score": expected_score,
        "expected_mass": expected_mass,
        # `score_rows` sets the labels (here: the columns' order).
        "domain_labels": None,
        "difficulty_label": None,
    }


def export_csv(rows: Iterable[dict]) -> Iterator[str]:
    """Encode `rows` as CSV (header `FIELDS`) through the one CSV encoder
    (`analysis.exports.encoding`: null -> empty, booleans -> true/false, domains
    `;`-joined, formula-like text neutralised), yielding chunks of text."""
    return csv_dicts(FIELDS, rows)


def export_chunks(  # noqa: PLR0913 - the export's selection, format and counter, by name
    *,
    dataset: Dataset,
    fmt: str,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    counter: list[int] | None = None,
    test_rows: TestRows = TEST_ROWS_LEFT_OUT,
) -> Iterator[bytes]:
    """The export of `dataset`'s scores (selected as `score_rows` selects them) as
    chunks of UTF-8 in `fmt` (CSV, JSON Lines), or of one Parquet file
    (`parquet_schema`, streamed one row group at a time); adds the number of rows written to `counter[0]` when
    given. CSV on PostgreSQL is written by the database (`scores_sql`, the same bytes);
    otherwise `score_rows` through `export_encode`. `DomainError` on another format,
    and on Parquet without pyarrow (`export_format_check`).
    The test split's rows are left out unless `test_rows` (`export_test_rows`, which
    logged the look) lets them in; a Parquet file says which in its metadata
    (``flask_eval.test_rows``)."""
    export_format_check(fmt)
    if fmt == "csv" and scores_sql.enabled():
        return scores_sql.csv_chunks(
            dataset=dataset,
            header="".join(csv_rows(FIELDS, [])),
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            counter=counter if counter is not None else [0],
            with_test=test_rows.included,
        )
    rows = score_rows(
        dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids, test_rows=test_rows
    )
    if counter is not None:
        rows = _counted(rows, counter)
    if fmt == "parquet":
        schema = parquet_schema().with_metadata(
            {"flask_eval.test_rows": test_rows.label}
        )
        return parquet(rows, schema)
    return (chunk.encode() for chunk in export_encode(rows, fmt))


def _counted(rows: Iterable[dict], counter: list[int]) -> Iterator[dict]:
    for row in rows:
        counter[0] += 1
        yield row


def export_encode(rows: Iterable[dict], fmt: str) -> Iterator[str]:
    """`export_csv` or `export_jsonl` by name (text formats; Parquet is bytes, see
    `export_chunks`); `DomainError` on another format."""
    if fmt == "csv":
        return export_csv(rows)
    if fmt == "jsonl":
        return export_jsonl(rows)
    raise DomainError(
        "Unknown export format",
        [Problem(f"must be one of csv, jsonl, not {fmt!r}", field="format")],
    )
