"""The FLASK release formats: evaluation sets, model outputs and the rubric file.

Two schema versions of the evaluation set exist in the release; both are accepted, per
line: current (`idx`, `instruction`, `answer`, `task`, `skill`, `domain`, `difficulty`)
and legacy (`question_id`, `text`, `answer`, `task`, `metrics`, `domain_labeled`,
`difficulty_labeled`). Fields outside the schema are kept as instruction metadata.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePath

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.importers.base import (
    MAX_IDENTIFIER_LENGTH,
    PREVIEW_ROWS,
    FileData,
    InstructionRecord,
    ParseResult,
    ResponseRecord,
    duplicate_check,
    normalise_name,
    read_rows,
)
from annotation.importers.fields import RowReader
from flaskapp import limits
from flaskapp.errors import Problem
from flaskapp.untrusted import (
    LONG_INTEGER,
    MAX_JSON_DEPTH,
    JSONInputError,
    json_problem,
    json_problem_line,
)

CURRENT = {
    "id": "idx",
    "instruction": "instruction",
    "answer": "answer",
    "task": "task",
    "skills": "skill",
    "domains": "domain",
    "difficulty": "difficulty",
}
LEGACY = {
    "id": "question_id",
    "instruction": "text",
    "answer": "answer",
    "task": "task",
    "skills": "metrics",
    "domains": "domain_labeled",
    "difficulty": "difficulty_labeled",
}
CHECKLIST_FIELDS = ("checklist", "rubric_checklist", "instance_rubric")


def parse_eval_set(
    data: FileData,
    *,
    file: str,
    skill_lookup: dict[str, str],
    hard: bool = False,
    slim: bool = False,
) -> ParseResult:
    """Parse a FLASK evaluation set (current or legacy schema, FLASK-Hard included).

    `hard` marks every instruction as FLASK-Hard. Every problem is collected with its
    line and field; instructions with problems are not returned. `slim` keeps each
    instruction `slimmed` (without its texts; `iter_eval_set` reads them again).
    """
    result = ParseResult()
    for record in iter_eval_set(
        data, file=file, skill_lookup=skill_lookup, hard=hard, result=result
    ):
        result.instructions.append(record.slimmed() if slim else record)
    duplicate_check(
        result.instructions, lambda r: r.external_id, "instruction id", result.problems
    )
    return result


def iter_eval_set(
    data: FileData,
    *,
    file: str,
    skill_lookup: dict[str, str],
    hard: bool,
    result: ParseResult,
) -> Iterator[InstructionRecord]:
    """Yield the valid instructions of a FLASK evaluation set as they are read; rows,
    problems and the preview go to `result` (no duplicate check)."""
    for line, row in read_rows(data, file=file, fmt="jsonl", problems=result.problems):
        result.rows += 1
        schema = LEGACY if "question_id" in row and "idx" not in row else CURRENT
        reader = RowReader(row, line, file, result.problems)
        external_id = reader.identifier(schema["id"], integer=True)
        text = reader.text(
            schema["instruction"], required=True, max_length=limits.INSTRUCTION_TEXT
        )
        answer = reader.text(
            schema["answer"], required=False, max_length=limits.RESPONSE_TEXT
        )
        task = reader.text(
            schema["task"], required=False, max_length=MAX_IDENTIFIER_LENGTH
        )
        skills = reader.skills(schema["skills"], skill_lookup)
        domains = reader.domains(schema["domains"])
        difficulty = reader.difficulty(schema["difficulty"])
        checklist = None
        for name in CHECKLIST_FIELDS:
            if name in row:
                checklist = reader.checklist(name, skill_lookup)
        known = set(schema.values()) | set(CHECKLIST_FIELDS)
        metadata = reader.metadata({k: v for k, v in row.items() if k not in known})
        if len(result.preview) < PREVIEW_ROWS:
            result.preview.append(
                {
                    "line": line,
                    "id": external_id,
                    "instruction": text[:300],
                    "reference": (answer or "")[:300],
                    "task": task,
                    "skills": skills,
                    "domains": domains,
                    "difficulty": difficulty,
                }
            )
        if not reader.ok or external_id is None:
            continue
        yield InstructionRecord(
            external_id=external_id,
            text=text,
            line=line,
            file=file,
            reference_answer=answer,
            source_task=task,
            domains=domains,
            difficulty=difficulty,
            skills=skills,
            checklist=checklist,
            metadata=metadata,
            is_hard=hard,
        )


def model_name_from_file(file: str) -> str:
    """`outputs/gpt4.jsonl` -> `gpt4`; FLASK review files drop their `_review` suffix."""
    stem = PurePath(file).name
    for suffix in (".jsonl", ".json", ".csv"):
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
    return stem.removesuffix("_review")


def outputs_model(file: str, model_name: str | None = None) -> str:
    """The model an outputs file holds: `model_name` if given, else its file name's."""
    return (model_name or "").strip() or model_name_from_file(file)


def parse_outputs(
    data: FileData, *, file: str, model_name: str | None = None
) -> ParseResult:
    """Parse a FLASK model-output file: one `{"question_id": .., "text": ..}` per line.

    The model name is `model_name` if given, else taken from the file name. `idx` is
    accepted for `question_id`, `output`/`response` for `text`. Duplicate ids are
    problems; `iter_outputs` is the same without the duplicate check, one record at
    a time.
    """
    result = ParseResult()
    result.responses = list(
        iter_outputs(data, file=file, model_name=model_name, result=result)
    )
    duplicate_check(
        result.responses,
        lambda r: (r.instruction_external_id, r.model_name),
        "response for question id",
        result.problems,
    )
    return result


def iter_outputs(
    data: FileData, *, file: str, model_name: str | None, result: ParseResult
) -> Iterator[ResponseRecord]:
    """Yield the valid responses of a FLASK model-output file as they are read.

    Rows, problems, warnings and the preview go to `result` (its `responses` are left
    alone); a row with a problem is not yielded. Duplicate ids are not checked here.
    """
    model = outputs_model(file, model_name)
    if not model:
        result.problems.append(
            Problem("cannot tell the model's name; pass --model", file=file)
        )
        return
    if len(model) > MAX_IDENTIFIER_LENGTH:
        result.problems.append(
            Problem(
                f"the model name is {len(model)} characters long; the limit is "
                f"{MAX_IDENTIFIER_LENGTH}",
                field="model",
                file=file,
            )
        )
        return
    for line, row in read_rows(data, file=file, fmt="jsonl", problems=result.problems):
        result.rows += 1
        reader = RowReader(row, line, file, result.problems, result.warnings)
        id_field = "question_id" if "question_id" in row or "idx" not in row else "idx"
        text_field = next(
            (f for f in ("text", "output", "response") if f in row), "text"
        )
        external_id = reader.identifier(id_field, integer=True)
        # An empty text is a real (if poor) output: davinci_003 has 22 of them. A null or
        # absent one is a broken line.
        text = reader.text(text_field, required=False, max_length=limits.RESPONSE_TEXT)
        if row.get(text_field) is None:
            reader.fail(text_field, "is missing")
        elif not text.strip():
            reader.warn(text_field, "is empty: imported as an empty response")
        if len(result.preview) < PREVIEW_ROWS:
            result.preview.append(
                {
                    "line": line,
                    "id": external_id,
                    "model": model,
                    "response": text[:300],
                }
            )
        if not reader.ok or external_id is None:
            continue
        metadata = reader.metadata(
            {k: v for k, v in row.items() if k not in {id_field, text_field}}
        )
        if not reader.ok:
            continue
        yield ResponseRecord(
            instruction_external_id=external_id,
            model_name=model,
            text=text,
            line=line,
            file=file,
            metadata=metadata,
        )


ABILITY_BY_SKILL = {
    normalise_name(name): ability for _, name, ability, _, _ in BUILTIN_SKILLS
}
KEY_BY_SKILL = {normalise_name(name): key for key, name, _, _, _ in BUILTIN_SKILLS}


def _rubric_problem(text: str, items, bad: JSONInputError, file: str) -> Problem:
    """The problem of a rubric file holding unusable JSON, with its skill and line."""
    where = ""
    if isinstance(items, list):
        for position, item in enumerate(items):
            found = json_problem(item)
            if found is not None:
                where, bad = f"skill #{position + 1}: ", found
                break
    return Problem(
        where + bad.message, line=json_problem_line(text), field=bad.field, file=file
    )


def parse_rubric(data: bytes, *, file: str) -> tuple[list[dict], list[Problem]]:
    """Parse FLASK's `skillset_description.json`: `[{"Skill", "Criteria", "Scoring"}]`.

    Returns skill dicts (key, name, ability, criteria, anchor_1..anchor_5, position) in
    file order. Skill names must be FLASK skill names (to know their ability).
    """
    problems: list[Problem] = []
    long_integer = False
    try:
        text = data.decode("utf-8")
        items = json.loads(text)
    except UnicodeDecodeError:
        return [], [Problem("not valid UTF-8", file=file)]
    except json.JSONDecodeError as exc:
        return [], [Problem(f"invalid JSON ({exc.msg})", line=exc.lineno, file=file)]
    except RecursionError:
        items = None  # too deep: reported below, with the line
    except ValueError:  # a number past int()'s digit limit: reported below
        items, long_integer = None, True
    too_deep = f"is nested more than {MAX_JSON_DEPTH} levels deep"
    bad = (
        json_problem(items)
        if items is not None
        else JSONInputError(LONG_INTEGER if long_integer else too_deep)
    )
    if bad is not None:
        return [], [_rubric_problem(text, items, bad, file)]
    if not isinstance(items, list) or not items:
        return [], [Problem("expected a non-empty JSON array of skills", file=file)]
    skills: list[dict] = []
    for position, item in enumerate(items):
        where = f"skill #{position + 1}"
        if not isinstance(item, dict):
            problems.append(Problem(f"{where} must be an object", file=file))
            continue
        name = item.get("Skill")
        criteria = item.get("Criteria")
        scoring = item.get("Scoring")
        if not isinstance(name, str) or normalise_name(name) not in KEY_BY_SKILL:
            problems.append(
                Problem(f"{where}: unknown skill {name!r}", field="Skill", file=file)
            )
            continue
        if not isinstance(criteria, str) or not criteria.strip():
            problems.append(
                Problem(f"{where}: criteria is missing", field="Criteria", file=file)
            )
            continue
        if not isinstance(scoring, dict) or any(
            not isinstance(scoring.get(str(i)), str) for i in range(1, 6)
        ):
            problems.append(
                Problem(
                    f"{where}: needs anchors for scores 1-5", field="Scoring", file=file
                )
            )
            continue
        norm = normalise_name(name)
        skills.append(
            {
                "key": KEY_BY_SKILL[norm],
                "name": name.strip(),
                "ability": ABILITY_BY_SKILL[norm],
                "criteria": criteria.strip(),
                "position": position,
                **{f"anchor_{i}": scoring[str(i)].strip() for i in range(1, 6)},
            }
        )
    keys = [s["key"] for s in skills]
    for key in {k for k in keys if keys.count(k) > 1}:
        problems.append(Problem(f"skill {key!r} appears twice", file=file))
    return skills, problems
