"""Generic JSONL and CSV: rows of (instruction, reference, response, model, ...).

A field mapping (`--map instruction=prompt`) says which column holds which field; an
unmapped field is read from the column of the same name. One row may carry an
instruction only, or an instruction and one model's response; rows that share an
instruction id (or, without an `id` column, the same instruction text) are one
instruction with several responses.

A row with a response may also carry human scores for the rubric's criteria, with a
`rater` and a `rationale` (`annotation.importers.scores` has the rule for which
columns are scores). Several raters' rows for one response repeat the response (the
same text) or name it by `id` and `model` alone: a row with scores but without
`instruction` text refers by its `id` to an instruction already in the dataset (or
given on another row), and one with scores and a `model` but no `response` column
to that model's response already in the dataset. The import checks both
(`ParseResult.referenced*`).
"""

from __future__ import annotations

import hashlib

from annotation.importers.base import (
    MAX_IDENTIFIER_LENGTH,
    PREVIEW_ROWS,
    FileData,
    InstructionRecord,
    ParseResult,
    ResponseRecord,
    duplicate_check,
    parse_field_map,
    read_rows,
    type_name,
)
from annotation.importers.fields import RowReader
from annotation.importers.scores import ScoreColumns, ScoreRecord, split_mapping
from annotation.importers.taxonomy import FLASK, MAX_FACET_VALUES, Taxonomy
from flaskapp import limits
from flaskapp.errors import Problem

FIELDS = (
    "id",
    "instruction",
    "reference",
    "response",
    "model",
    "task",
    "domains",
    "difficulty",
    "skills",
    "checklist",
    "score_rubric",
    "rater",
    "rationale",
)
REQUIRED = ("instruction",)
# Fields of an instruction's content: a row that names its instruction by id only
# cannot give them (imported instructions are immutable).
CONTENT_FIELDS = (
    "reference",
    "task",
    "domains",
    "difficulty",
    "skills",
    "checklist",
    "score_rubric",
)


def parse_mapping(pairs: list[str] | dict[str, str] | None) -> dict[str, str]:
    """`["instruction=prompt", "score.helpfulness=h", ...]` -> {"instruction":
    "prompt", "score.helpfulness": "h"}; raises ValueError naming the spec. A
    ``score.KEY`` / ``rationale.KEY`` spec is checked against the rubric when the
    file is parsed (`parse_generic`)."""
    fields, scores = split_mapping(pairs)
    return {**parse_field_map(fields, FIELDS), **scores}


def derived_id(text: str) -> str:
    """A stable id for instructions given without one, so re-imports match."""
    return "sha1-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def _check_facets(
    taxonomy: Taxonomy,
    facet_values: dict[str, dict[str, int]],
    columns: dict[str, None],
    result: ParseResult,
    file: str,
) -> None:
    """Warn of a facet no row has (a misspelt column?), and refuse one with more
    values than a category has (an id column, a free text)."""
    if not result.rows:
        return
    for facet in taxonomy.facets:
        values = facet_values[facet.name]
        if facet.name not in columns:
            result.warnings.append(
                Problem(
                    f"the file has no column {facet.name!r} for the facet "
                    f"{facet.name!r}; its columns are: " + ", ".join(columns),
                    field="taxonomy",
                    file=file,
                )
            )
        elif len(values) > MAX_FACET_VALUES:
            line = sorted(values.values())[MAX_FACET_VALUES]
            result.problems.append(
                Problem(
                    f"facet {facet.name!r} has more than {MAX_FACET_VALUES} different "
                    "values; a facet is a category (channel, language), not an id "
                    "or a free text",
                    line=line,
                    field=facet.name,
                    file=file,
                )
            )


def parse_generic(  # noqa: C901 - the generic importer's one pass over a row, each optional column a guarded branch
    data: FileData,
    *,
    file: str,
    fmt: str,
    skill_lookup: dict[str, str],
    mapping: dict[str, str] | None = None,
    default_model: str | None = None,
    scales: dict[str, object] | None = None,
    taxonomy: Taxonomy = FLASK,
) -> ParseResult:
    """Parse a generic JSONL (`fmt="jsonl"`) or CSV (`fmt="csv"`) file.

    `default_model` names the model of every response on a row that names none (a
    file holding one model's responses, with no model column). `scales` (criterion
    key -> `Scale`) are the rubric's criteria that rows may score (none: a score
    column is kept as metadata, as before scores could be imported).
    """
    default_model = (default_model or "").strip() or None
    mapping = mapping or {}
    score_specs = {k: v for k, v in mapping.items() if "." in k}
    mapping = {k: v for k, v in mapping.items() if "." not in k}
    column = {name: mapping.get(name, name) for name in FIELDS}
    result = ParseResult()
    scoring = ScoreColumns(
        scales=scales or {},
        lookup=skill_lookup if scales else {},
        field_columns=set(column.values()),
        mapped=score_specs,
        rater_column=column["rater"],
        rationale_column=column["rationale"],
        csv=fmt == "csv",
    )
    for message in scoring.mapping_problems:
        result.problems.append(Problem(message, field="map", file=file))
    if result.problems:
        return result
    header = {n: column[n] for n in FIELDS if n in mapping}
    rows = read_rows(
        data,
        file=file,
        fmt=fmt,
        problems=result.problems,
        header_columns={**header, **scoring.required_columns},
    )
    use_scores = bool(scales)
    id_col, text_col = column["id"], column["instruction"]
    instructions: dict[str, InstructionRecord] = {}
    responses: dict[tuple[str, str], ResponseRecord] = {}
    scored: dict[tuple[str, str, str, str], int] = {}
    columns: dict[str, None] = {}  # every column of the file, in order
    facet_values: dict[str, dict[str, int]] = {f.name: {} for f in taxonomy.facets}
    for line, row in rows:
        columns.update(dict.fromkeys(row))
        if fmt == "csv" and not result.rows and not (row.keys() & {id_col, text_col}):
            result.problems.append(
                Problem(
                    f"the CSV header has no column `{text_col}` (for field "
                    f"`instruction`) nor `{id_col}` (for field `id`); its columns "
                    "are: " + ", ".join(row),
                    line=1,
                    file=file,
                )
            )
            break
        result.rows += 1
        reader = RowReader(row, line, file, result.problems, result.warnings)
        given_id = reader.identifier(column["id"], required=False)
        scores = scoring.read(reader) if use_scores else []
        # Only a row with scores names its instruction by id alone; any other row
        # without instruction text is missing it.
        by_id = (
            bool(scores)
            and given_id is not None
            and row.get(column["instruction"]) is None
        )
        text = (
            ""
            if by_id
            else reader.text(
                column["instruction"],
                required=True,
                max_length=limits.INSTRUCTION_TEXT,
            )
        )
        reference = reader.text(
            column["reference"], required=False, max_length=limits.RESPONSE_TEXT
        )
        response = row.get(column["response"])
        model = reader.identifier(column["model"], required=False)
        rater = scoring.rater(reader) if scores else None
        if response is None and column["response"] in row and model is not None:
            # The column is there but empty (a CSV cell, a JSON null or ""): an empty
            # model response is a real one (it should get low scores), not a gap.
            response = ""
        if model is None and (response is not None or scores):
            model = default_model
        if response is not None and not isinstance(response, str):
            reader.fail(
                column["response"], f"must be a string, got {type_name(response)}"
            )
        elif isinstance(response, str):
            response = (
                reader.text(
                    column["response"],
                    required=False,
                    max_length=limits.RESPONSE_TEXT,
                )
                if response
                else ""
            )
            if reader.ok and not response.strip() and model is not None:
                reader.warn(
                    column["response"], "is empty: imported as an empty response"
                )
        if scores and model is None:
            reader.fail(
                column["model"],
                "is missing; a row with scores must name the model of the response",
            )
        elif response is not None and model is None:
            reader.fail(
                column["model"], "is missing; a row with a response must name its model"
            )
        if model is not None and response is None and not scores:
            reader.fail(
                column["response"], "is missing; the row names a model but no response"
            )
        record = InstructionRecord(
            external_id=given_id or derived_id(text),
            text=text,
            line=line,
            file=file,
            reference_answer=reference,
            source_task=reader.text(
                column["task"], required=False, max_length=MAX_IDENTIFIER_LENGTH
            ),
            domains=reader.domains(column["domains"], taxonomy),
            difficulty=reader.difficulty(column["difficulty"], taxonomy),
            skills=reader.skills(column["skills"], skill_lookup),
            checklist=reader.checklist(column["checklist"], skill_lookup),
            instance_rubric=reader.score_rubric(column["score_rubric"]),
            metadata=reader.facets(
                reader.metadata(
                    {
                        k: v
                        for k, v in row.items()
                        if k not in set(column.values())
                        and not (use_scores and scoring.is_score_column(k))
                    }
                ),
                taxonomy,
            ),
        )
        for facet in taxonomy.facets:
            if record.metadata.get(facet.name) is not None:
                facet_values[facet.name].setdefault(record.metadata[facet.name], line)
        if len(result.preview) < PREVIEW_ROWS:
            result.preview.append(
                {
                    "line": line,
                    "id": record.external_id,
                    "instruction": text[:300],
                    # Every column the import reads is in the preview (issue 37,
                    # defect 24): the reference answer and the task too.
                    "reference": (record.reference_answer or "")[:300],
                    "task": record.source_task,
                    "model": model,
                    "response": (response or "")[:300]
                    if isinstance(response, str)
                    else "",
                    "skills": record.skills,
                    "domains": record.domains,
                    "difficulty": record.difficulty,
                    **(
                        {
                            "rater": rater,
                            "scores": {
                                key: scoring.scales[key].label_of(value)
                                for key, value, _, _ in scores
                            },
                        }
                        if scores
                        else {}
                    ),
                }
            )
        if not reader.ok:
            continue
        ext = record.external_id
        if by_id:
            content = next(
                (f for f in CONTENT_FIELDS if row.get(column[f]) is not None), None
            )
            result.referenced_instructions.setdefault(
                ext, (file, line, column[content] if content else column["id"], content)
            )
        else:
            seen = instructions.get(ext)
            if seen is None:
                instructions[ext] = record
            elif seen.content() != record.content():
                result.problems.append(
                    Problem(
                        f"instruction {ext!r} was given on line {seen.line} with "
                        "different text or metadata",
                        line=line,
                        file=file,
                    )
                )
                continue
        if model is not None and isinstance(response, str):
            new = ResponseRecord(
                instruction_external_id=ext,
                model_name=model,
                text=response,
                line=line,
                file=file,
            )
            first = responses.get((ext, model))
            if first is None:
                responses[(ext, model)] = new
                result.responses.append(new)
            elif not scores or first.text != response:
                result.responses.append(new)  # reported by duplicate_check below
        elif model is not None and scores:
            result.referenced.setdefault((ext, model), (file, line, column["model"]))
        for key, value, rationale, field_name in scores:
            where = (ext, model, rater, key)
            if where in scored:
                reader.fail(
                    field_name,
                    f"rater {rater!r} already scored criterion {key!r} of model "
                    f"{model!r}'s response to instruction {ext!r} on line "
                    f"{scored[where]}",
                )
                continue
            scored[where] = line
            result.scores.append(
                ScoreRecord(
                    instruction_external_id=ext,
                    model_name=model,
                    rater=rater,
                    skill_key=key,
                    score=value,
                    rationale=rationale,
                    line=line,
                    file=file,
                    field=field_name,
                )
            )
    result.instructions = list(instructions.values())
    _check_facets(taxonomy, facet_values, columns, result, file)
    if use_scores:
        result.warnings.extend(scoring.near_miss_warnings(columns, file))
    duplicate_check(
        result.responses,
        lambda r: (r.instruction_external_id, r.model_name),
        "response for instruction",
        result.problems,
    )
    return result
