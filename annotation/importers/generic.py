"""Generic JSONL and CSV: rows of (instruction, reference, response, model, ...).

A field mapping (`--map instruction=prompt`) says which column holds which field; an
unmapped field is read from the column of the same name. One row may carry an
instruction only, or an instruction and one model's response; rows that share an
instruction id (or, without an `id` column, the same instruction text) are one
instruction with several responses.
"""

from __future__ import annotations

import hashlib

from annotation.errors import Problem
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
)
REQUIRED = ("instruction",)


def parse_mapping(pairs: list[str] | dict[str, str] | None) -> dict[str, str]:
    """`["instruction=prompt", ...]` -> {"instruction": "prompt"}; raises ValueError."""
    return parse_field_map(pairs, FIELDS)


def derived_id(text: str) -> str:
    """A stable id for instructions given without one, so re-imports match."""
    return "sha1-" + hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


def parse_generic(
    data: FileData,
    *,
    file: str,
    fmt: str,
    skill_lookup: dict[str, str],
    mapping: dict[str, str] | None = None,
    default_model: str | None = None,
) -> ParseResult:
    """Parse a generic JSONL (`fmt="jsonl"`) or CSV (`fmt="csv"`) file.

    `default_model` names the model of every response on a row that names none (a
    file holding one model's responses, with no model column).
    """
    default_model = (default_model or "").strip() or None
    mapping = mapping or {}
    column = {name: mapping.get(name, name) for name in FIELDS}
    result = ParseResult()
    rows = read_rows(
        data,
        file=file,
        fmt=fmt,
        problems=result.problems,
        header_columns={n: column[n] for n in FIELDS if n in REQUIRED or n in mapping},
    )

    instructions: dict[str, InstructionRecord] = {}
    for line, row in rows:
        result.rows += 1
        reader = RowReader(row, line, file, result.problems, result.warnings)
        text = reader.text(column["instruction"], required=True)
        given_id = reader.identifier(column["id"], required=False)
        reference = reader.text(column["reference"], required=False)
        response = row.get(column["response"])
        model = reader.identifier(column["model"], required=False)
        if response is None and column["response"] in row and model is not None:
            # The column is there but empty (a CSV cell, a JSON null or ""): an empty
            # model response is a real one (it should get low scores), not a gap.
            response = ""
        if model is None and response is not None:
            model = default_model
        if response is not None and not isinstance(response, str):
            reader.fail(
                column["response"], f"must be a string, got {type_name(response)}"
            )
        elif isinstance(response, str):
            response = (
                reader.text(column["response"], required=False) if response else ""
            )
            if reader.ok and not response.strip() and model is not None:
                reader.warn(
                    column["response"], "is empty: imported as an empty response"
                )
        if response is not None and model is None:
            reader.fail(
                column["model"], "is missing; a row with a response must name its model"
            )
        if model is not None and response is None:
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
            domains=reader.domains(column["domains"]),
            difficulty=reader.difficulty(column["difficulty"]),
            skills=reader.skills(column["skills"], skill_lookup),
            checklist=reader.checklist(column["checklist"], skill_lookup),
            instance_rubric=reader.score_rubric(column["score_rubric"]),
            metadata=reader.metadata(
                {k: v for k, v in row.items() if k not in set(column.values())}
            ),
        )
        if len(result.preview) < PREVIEW_ROWS:
            result.preview.append(
                {
                    "line": line,
                    "id": record.external_id,
                    "instruction": text[:300],
                    "model": model,
                    "response": (response or "")[:300]
                    if isinstance(response, str)
                    else "",
                    "skills": record.skills,
                    "domains": record.domains,
                    "difficulty": record.difficulty,
                }
            )
        if not reader.ok:
            continue
        seen = instructions.get(record.external_id)
        if seen is None:
            instructions[record.external_id] = record
        elif seen.content() != record.content():
            result.problems.append(
                Problem(
                    f"instruction {record.external_id!r} was given on line {seen.line} with "
                    "different text or metadata",
                    line=line,
                    file=file,
                )
            )
            continue
        if model is not None and isinstance(response, str):
            result.responses.append(
                ResponseRecord(
                    instruction_external_id=record.external_id,
                    model_name=model,
                    text=response,
                    line=line,
                    file=file,
                )
            )
    result.instructions = list(instructions.values())
    duplicate_check(
        result.responses,
        lambda r: (r.instruction_external_id, r.model_name),
        "response for instruction",
        result.problems,
    )
    return result
