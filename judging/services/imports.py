"""Judge results produced elsewhere, imported as a judge run of kind `imported`.

Two formats:

- `flask_review`: FLASK's GPT-4 review files, one per evaluated model (the model name
  comes from the file name, `gpt4_review.jsonl` -> `gpt4`, or is given). Each line is
  the eval-set record (`question_id` or `idx`, ...) plus the judge's raw `review` text
  and its parsed `score`: a dict keyed by skill name (`{"Logical Correctness": 4}`) or
  a list aligned with the record's skills (`skill`, legacy `metrics`).
- `jsonl` / `csv`: one score per row: instruction `id`, `model`, `skill`, `score`
  (a value of that skill: a point of its scale, a label, or N/A where allowed),
  optional `rationale`, `sample` index and raw `review` text. Other column names are
  mapped with `FIELD=COLUMN`. A `critique` column holds the judge's open-ended
  critique of the response (FLAMe's critique task; one per response and sample,
  stored as `JudgeCritique`); a row may carry only a critique (no `skill`, no
  `score`), so a file of critiques alone imports as a run of critiques.

Files are read with the importers' toolkit (`annotation.importers.base`); each value
is checked against its criterion's `annotation.scales.Scale` (`Scale.parse`): a
number or numeric string on its scale ("4", "4.0"), a label key or name (case
ignored; stored as its code), an N/A word ("N/A", "none", ...: `NA_WORDS`) only where
the criterion allows N/A. Every row is validated before anything is written; a bad
file changes nothing and each problem names its file, line and field (a score
outside the scale or an unknown label: the `score` field, with the skill's name).

Quirks of real published files are accepted and listed as warnings (file, line,
field), stored on the run (`settings_snapshot["warnings"]`, `["warning_count"]`): a
score repeated with the same value (kept once), a FLASK review line repeated with the
same scores (kept once), a score for a skill the instruction is not assigned, an empty
FLASK `review` text. With `strict` they refuse the import like problems. A repeated
score with another value is a conflict, always an error.
"""

from __future__ import annotations

from pathlib import PurePath

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.importers.base import (
    MAX_PROBLEMS,
    FileData,
    read_rows,
    refusal,
    type_name,
)
from annotation.importers.fields import RowReader
from annotation.importers.flask import model_name_from_file
from annotation.models import Dataset, Skill
from annotation.scales import Scale
from annotation.services.rubrics import rubric_freeze
from flaskapp import limits, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.limits import clip, too_long
from flaskapp.untrusted import text_problem
from judging.models import JudgeCall, JudgeCritique, JudgeRun, JudgeScore
from judging.services.import_rows import (
    GENERIC_FIELDS,
    CallRow,
    DatasetLookups,
    RowCollector,
    ScoreRow,
    line_ref,
    parse_mapping,
)

FORMATS = ("flask_review", "jsonl", "csv")
MAX_SAMPLE_INDEX = 1000


def _score_pairs(
    row: dict, scores, external_id: str, reader: RowReader, collector: RowCollector
) -> list[tuple[Skill, object]]:
    """(skill, raw value) of each score of a FLASK review record: `score` is a dict
    keyed by skill name, or a list aligned with the record's `skill` / `metrics`
    names or else with the instruction's assigned skills. Problems go to `reader`:
    an unknown skill name (left out), or a shape or length that does not fit (no
    pairs)."""
    pairs: list[tuple[Skill, object]] = []
    if isinstance(scores, dict):
        for name, value in scores.items():
            skill = collector.skill(reader, name, "score")
            if skill is not None:
                pairs.append((skill, value))
    elif isinstance(scores, list):
        names_field = next((f for f in ("skill", "metrics") if f in row), None)
        skills: list[Skill | None] = []
        if names_field is not None:
            names = reader.string_list(names_field) or []
            skills = [collector.skill(reader, n, names_field) for n in names]
        else:
            instruction_id = collector.lookups.instructions.get(external_id)
            by_id = {s.pk: s for s in collector.lookups.skill_by_name.values()}
            skills = [
                by_id[pk]
                for pk in collector.lookups.instruction_skills.get(instruction_id, [])
            ]
        if len(skills) != len(scores):
            reader.fail(
                "score",
                f"has {len(scores)} scores but the record lists {len(skills)} "
                f"skills{f' in `{names_field}`' if names_field else ''}; give "
                "a score per skill or a dict keyed by skill name",
            )
        else:
            pairs = [(s, v) for s, v in zip(skills, scores, strict=True) if s]
    else:
        reader.fail(
            "score",
            "must be a dict keyed by skill name or a list aligned with the "
            f"record's skills, got {type_name(scores)}",
        )
    return pairs


def _flask_review_file(
    data: FileData,
    file: str,
    model: str,
    collector: RowCollector,
    problems: list[Problem],
) -> None:
    for line, row in read_rows(data, file=file, fmt="jsonl", problems=problems):
        collector.rows += 1
        reader = collector.reader(row, line, file)
        id_field = "question_id" if "question_id" in row or "idx" not in row else "idx"
        external_id = reader.identifier(id_field)
        review = row.get("review", "")
        if not isinstance(review, str):
            reader.fail("review", f"must be the judge's text, got {type_name(review)}")
            review = ""
        elif why := text_problem(review) or too_long(review, limits.JUDGE_OUTPUT):
            reader.fail("review", why)
        elif "review" in row and not review.strip():
            reader.warn("review", "is empty: the scores are imported without it")
        scores = row.get("score")
        if scores is None:
            reader.fail("score", "is missing: expected the judge's parsed scores")
            continue
        if external_id is None:
            continue
        response_id = collector.response(reader, external_id, id_field, model, "model")
        pairs = _score_pairs(row, scores, external_id, reader, collector)
        parsed: list[tuple[Skill, int | None]] = []
        for skill, value in pairs:
            ok, score = collector.lookups.parse(reader, skill, value, "score")
            if ok:
                parsed.append((skill, score))
        if not reader.ok or response_id is None:
            continue
        call = collector.call(file, line, response_id, 0, model)
        if (call.file, call.line) != (file, line):
            where = line_ref(call.file, call.line, file)
            same = {(s.skill_id, s.score) for s in call.scores} == {
                (skill.pk, score) for skill, score in parsed
            }
            if same:
                reader.warn(id_field, f"duplicate of {where} (same scores): kept once")
            else:
                reader.fail(
                    id_field,
                    f"duplicate review of instruction {external_id!r} by model "
                    f"{model!r} with other scores (first on {where})",
                )
            continue
        call.review = review
        for skill, score in parsed:
            collector.add(
                call,
                ScoreRow(file, line, response_id, 0, skill.pk, score),
                "score",
            )


def _generic_file(
    data: FileData,
    file: str,
    fmt: str,
    column: dict[str, str],
    default_model: str | None,
    collector: RowCollector,
    problems: list[Problem],
) -> None:
    required = ["id"] + ([] if default_model else ["model"])
    rows = read_rows(
        data,
        file=file,
        fmt=fmt,
        problems=problems,
        header_columns={n: column[n] for n in required},
    )
    for line, row in rows:
        collector.rows += 1
        if len(problems) >= MAX_PROBLEMS:
            return
        reader = collector.reader(row, line, file)
        external_id = reader.identifier(column["id"])
        model = reader.identifier(column["model"], required=default_model is None)
        model = model or default_model
        critique = reader.text(
            column["critique"], required=False, max_length=limits.JUDGE_OUTPUT
        ).strip()
        critique_only = bool(critique) and row.get(column["skill"]) is None
        if critique_only and row.get(column["score"]) is not None:
            reader.fail(column["skill"], "is missing: a score needs its skill")
        skill_name = None if critique_only else reader.identifier(column["skill"])
        if not critique_only and column["score"] not in row:
            reader.fail(
                column["score"], "is missing; write a value of the skill or N/A"
            )
        rationale = reader.text(
            column["rationale"], required=False, max_length=limits.JUDGE_OUTPUT
        )
        review = reader.text(
            column["review"], required=False, max_length=limits.JUDGE_OUTPUT
        )
        sample = _sample_index(reader, row, column["sample"])
        if external_id is None or model is None:
            continue
        response_id = collector.response(
            reader, external_id, column["id"], model, column["model"]
        )
        skill = (
            collector.skill(reader, skill_name, column["skill"]) if skill_name else None
        )
        score = None
        if skill is not None and column["score"] in row:
            _, score = collector.lookups.parse(
                reader, skill, row[column["score"]], column["score"], fmt == "csv"
            )
        if not reader.ok or response_id is None:
            continue
        call = collector.call(file, line, response_id, sample, model)
        if review and not call.review:
            call.review = review
        if critique:
            collector.critique(call, critique, file, line, column["critique"])
        if skill is not None:
            collector.add(
                call,
                ScoreRow(file, line, response_id, sample, skill.pk, score, rationale),
                column["skill"],
            )


def _sample_index(reader, row: dict, field_name: str) -> int:
    """The row's sample index (0 when absent); a problem when it is not 0..MAX."""
    raw = row.get(field_name)
    if raw is None:
        return 0
    try:
        sample = int(str(raw).strip())
        if isinstance(raw, bool) or not 0 <= sample <= MAX_SAMPLE_INDEX:
            raise ValueError
    except ValueError:
        reader.fail(
            field_name,
            f"sample index {raw!r} must be a whole number 0-{MAX_SAMPLE_INDEX}",
        )
        return 0
    return sample


def _raw_output(
    call: CallRow, skill_names: dict[int, str], scales: dict[int, Scale]
) -> str:
    if call.review:
        return call.review
    lines = []
    for s in call.scores:
        value = scales[s.skill_id].label_of(s.score)
        note = f": {s.rationale}" if s.rationale else ""
        lines.append(f"{skill_names.get(s.skill_id, s.skill_id)} = {value}{note}")
    text = "\n".join(lines)
    if len(text) > limits.JUDGE_OUTPUT:
        # A summary of the scores' rationales, each stored whole with its score.
        cut = "\n[cut: each score keeps its whole rationale]"
        text = text[: limits.JUDGE_OUTPUT - len(cut)] + cut
    return text


def import_judge_results(
    *,
    dataset: Dataset,
    user: User,
    name: str = "",
    fmt: str,
    files: list[tuple[str, bytes]],
    model: str | None = None,
    mapping=None,
    strict: bool = False,
) -> JudgeRun:
    """Import judge results made elsewhere as a completed run of kind `imported`.

    Every row of every file is validated first (unknown instruction id, model response
    or skill; a value its skill does not accept: outside its scale, not one of its
    labels, N/A where it is not allowed; a duplicate (response, skill, sample) with
    another value). Any problem raises `DomainError` listing each with its file,
    line and field, and nothing is written. Warnings (see the module docstring) are
    accepted; with `strict` any warning raises `DomainError` listing them, and nothing
    is written. Otherwise, in one transaction: the run (status completed,
    `total_calls` = the calls written; `settings_snapshot["warning_count"]` and
    `["warnings"]`, the first `MAX_PROBLEMS` as `Problem.as_dict()`), one succeeded
    `JudgeCall` per (response, sample) whose raw output is the judge's review text, and
    one `JudgeScore` per score (a same-value duplicate once). Researchers and admins
    only. Not idempotent: importing twice makes two runs.
    """
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    if fmt not in FORMATS:
        raise DomainError(
            "the judge results were not imported",
            [Problem(f"must be one of {', '.join(FORMATS)}", field="format")],
        )
    if not files:
        raise DomainError(
            "the judge results were not imported",
            [Problem("no file was given", field="files")],
        )
    model = (model or "").strip() or None
    if fmt == "flask_review" and model and len(files) > 1:
        raise DomainError(
            "the judge results were not imported",
            [
                Problem(
                    "FLASK review files are one per model: give one file with a model "
                    "name, or leave the model empty to take it from each file name",
                    field="model",
                )
            ],
        )
    column = {n: n for n in GENERIC_FIELDS} | parse_mapping(mapping)
    lookups = DatasetLookups.load(dataset)
    problems: list[Problem] = []
    warnings: list[Problem] = []
    collector = RowCollector(lookups, problems, warnings)
    for file, data in files:
        if fmt == "flask_review":
            file_model = model or model_name_from_file(file)
            if not file_model:
                problems.append(
                    Problem(
                        "cannot tell the model's name; give it",
                        field="model",
                        file=file,
                    )
                )
                continue
            _flask_review_file(data, file, file_model, collector, problems)
        else:
            _generic_file(data, file, fmt, column, model, collector, problems)
    calls = [c for c in collector.calls.values() if c.scores or c.review or c.critique]
    if not problems and not calls:
        problems.append(
            Problem("no scores or critiques were found in the files", field="files")
        )
    if problems:
        raise refusal("the judge results were not imported", problems)
    if strict and warnings:
        raise DomainError(
            "the judge results were not imported: with strict, warnings are errors",
            warnings[:MAX_PROBLEMS],
        )

    now = timezone.now()
    names = [PurePath(f).name for f, _ in files]
    models = sorted({c.model for c in calls})
    skill_names = {s.pk: s.name for s in lookups.skill_by_name.values()}
    with transaction.atomic():
        rubric_freeze(rubric_id=dataset.rubric_id)  # the imported scores use it
        run = JudgeRun.objects.create(
            workspace_id=dataset.workspace_id,
            config=None,
            dataset=dataset,
            name=name.strip() or f"Imported {', '.join(models)} ({fmt})"[:200],
            kind=JudgeRun.Kind.IMPORTED,
            status=JudgeRun.Status.COMPLETED,
            models_included=models,
            settings_snapshot={
                "source": "import",
                "format": fmt,
                "files": names,
                "model": model or "",
                "mapping": {k: v for k, v in column.items() if k != v},
                "warning_count": len(warnings),
                "warnings": [w.as_dict() for w in warnings[:MAX_PROBLEMS]],
            },
            total_calls=len(calls),
            created_by=user,
            started_at=now,
            finished_at=now,
            source_note=clip(
                f"{fmt} import of {', '.join(names)} ({collector.rows} rows"
                + (
                    f", {len(warnings)} warning{'s' if len(warnings) != 1 else ''})"
                    if warnings
                    else ")"
                ),
                limits.DESCRIPTION,
            ),
        )
        created = JudgeCall.objects.bulk_create(
            [
                JudgeCall(
                    run=run,
                    response_id=c.response_id,
                    sample_index=c.sample,
                    status=JudgeCall.Status.SUCCEEDED,
                    raw_output=_raw_output(c, skill_names, lookups.scales),
                    parsed={
                        "scores": {skill_names[s.skill_id]: s.score for s in c.scores},
                        "format": fmt,
                        "source": f"{PurePath(c.file).name}:{c.line}",
                    },
                    started_at=now,
                    finished_at=now,
                )
                for c in calls
            ],
            batch_size=2000,
        )
        JudgeScore.objects.bulk_create(
            [
                JudgeScore(
                    run=run,
                    call_id=call_row.pk,
                    response_id=s.response_id,
                    skill_id=s.skill_id,
                    sample_index=s.sample,
                    score=s.score,
                    rationale=s.rationale,
                )
                for call_row, c in zip(created, calls, strict=True)
                for s in c.scores
            ],
            batch_size=5000,
        )
        JudgeCritique.objects.bulk_create(
            [
                JudgeCritique(
                    run=run,
                    call_id=call_row.pk,
                    response_id=c.response_id,
                    sample_index=c.sample,
                    text=c.critique,
                )
                for call_row, c in zip(created, calls, strict=True)
                if c.critique
            ],
            batch_size=2000,
        )
    return run
