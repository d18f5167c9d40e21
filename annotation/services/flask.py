"""Importing the FLASK release: the evaluation set with model-output files, the
official rubric file as a new rubric version, FLASK-Hard marks; one transaction."""

from __future__ import annotations

from annotation.importers.base import (
    FileData,
    InstructionRecord,
    skill_lookup_for,
)
from annotation.importers.flask import parse_rubric
from annotation.models import (
    Dataset,
    ImportJob,
    Instruction,
    Rubric,
)
from annotation.services.hard import instruction_mark_hard, instruction_texts_matching
from annotation.services.imports import (
    ImportReport,
    check_size,
    dataset_named,
    dataset_parse_files,
    import_parsed,
    rubric_for,
    skill_lookup,
)
from annotation.services.rubrics import rubric_import
from flaskapp.errors import DomainError, Problem

# The rubric version that `import_flask --rubric FILE` creates from FLASK's own file.
IMPORTED_RUBRIC_NAME = "FLASK (imported)"


def dataset_import_flask(  # noqa: C901 - the FLASK release's files, each validated in order with its own message
    *,
    dataset_name: str,
    eval_files: list[tuple[str, FileData]],
    output_files: list[tuple[str, FileData]] | None = None,
    hard_files: list[tuple[str, FileData]] | None = None,
    rubric_file: tuple[str, bytes] | None = None,
    options: dict | None = None,
    user=None,
    dry_run: bool = False,
    workspace=None,
) -> ImportReport:
    """Import a FLASK release in one transaction: eval set, model outputs, FLASK-Hard,
    into dataset `dataset_name` of `workspace` (None: the default workspace).

    Every file is validated before anything is written, and everything is written in
    one transaction: a bad outputs file leaves no new dataset (nor rubric) behind.

    - `eval_files`: FLASK evaluation sets (current or legacy schema).
    - `output_files`: model outputs; responses may name instructions of `eval_files`
      or instructions already in the dataset. The model is the file's name, or
      `options["model"]` for a single file. Given as paths (`FileData`, as for
      every file but the rubric), they are read one at a time while the import is
      written (`import_parsed`).
    - `hard_files`: FLASK-Hard sets. Their instructions are matched to the dataset by
      exact instruction text and marked ``is_hard``; a hard instruction with no match
      is reported in `ImportReport.hard_unmatched`, not refused.
    - `rubric_file`: FLASK's ``skillset_description.json``; becomes a new version of
      the rubric ``FLASK (imported)`` (`options["rubric_name"]` overrides) and the
      new dataset's rubric. Refused when the dataset already exists.
    - `options`: ``hard`` (mark every instruction of `eval_files` FLASK-Hard, also
      ones already imported), ``model``, ``rubric_id``, ``description``.

    Raises `DomainError` listing every problem; then nothing is written. Idempotent:
    a re-import creates nothing. `dry_run` validates and counts, writing nothing.
    """
    options = dict(options or {})
    output_files = list(output_files or [])
    hard_files = list(hard_files or [])
    dataset_name, dataset = dataset_named(dataset_name, workspace)
    if not eval_files:
        raise DomainError(
            "no evaluation set given", [Problem("is missing", field="eval")]
        )
    if options.get("hard") and hard_files:
        raise DomainError(
            "mark the whole set FLASK-Hard or give a FLASK-Hard set to match, not both",
            [Problem("give one, not both", field="hard")],
        )
    check_size(
        [
            *eval_files,
            *output_files,
            *hard_files,
            *([rubric_file] if rubric_file else []),
        ]
    )

    rubric: Rubric | None = None
    rubric_factory = None
    if rubric_file is not None:
        rubric_name = options.get("rubric_name") or IMPORTED_RUBRIC_NAME
        if dataset is not None:
            raise DomainError(
                f"dataset {dataset_name!r} already exists with rubric {dataset.rubric}; "
                "a rubric file can only be given for a new dataset",
                [
                    Problem(
                        "only valid for a new dataset",
                        field="rubric",
                        file=rubric_file[0],
                    )
                ],
            )
        if options.get("rubric_id"):
            raise DomainError(
                "give a rubric file or a rubric id, not both",
                [Problem("give one, not both", field="rubric")],
            )
        skills, problems = parse_rubric(rubric_file[1], file=rubric_file[0])
        if problems:
            raise DomainError("the rubric was not imported", problems)
        lookup = skill_lookup_for([(s["key"], s["name"]) for s in skills])

        def rubric_factory() -> Rubric:
            return rubric_import(
                name=rubric_name,
                data=rubric_file[1],
                file=rubric_file[0],
                workspace=workspace,
            )
    else:
        rubric = rubric_for(dataset, options, workspace)
        lookup = skill_lookup(rubric)

    # Slim: the instruction texts are read again when written, not kept meanwhile.
    parsed = dataset_parse_files(
        fmt=ImportJob.Format.FLASK,
        files=eval_files,
        skill_lookup=lookup,
        options=options,
        slim=True,
    )
    if options.get("model") and len(output_files) > 1:
        raise DomainError(
            "--model names one model, but several output files were given"
        )
    hard_records: dict[str, InstructionRecord] = {}
    if hard_files:
        hard = dataset_parse_files(
            fmt=ImportJob.Format.FLASK,
            files=hard_files,
            skill_lookup=lookup,
            options={},
        )
        parsed.problems.extend(hard.problems)
        for record in hard.instructions:
            hard_records.setdefault(record.text, record)
    eval_ids = [r.external_id for r in parsed.instructions]
    hard_by_digest = {r.text_digest(): text for text, r in hard_records.items()}
    eval_hard_texts = {
        hard_by_digest[key]
        for key in (r.text_digest() for r in parsed.instructions)
        if key in hard_by_digest
    }

    def after_write(target: Dataset | None, report: ImportReport) -> None:
        if options.get("hard"):
            # New instructions were created hard; this also marks ones imported before.
            if not dry_run:
                for start in range(0, len(eval_ids), 500):
                    Instruction.objects.filter(
                        dataset=target,
                        external_id__in=eval_ids[start : start + 500],
                        is_hard=False,
                    ).update(is_hard=True)
            report.hard_marked = len(eval_ids)
        if not hard_records:
            return
        texts = list(hard_records)
        present = set(eval_hard_texts)
        if target is not None and target.pk is not None:
            present |= instruction_texts_matching(dataset=target, texts=texts)
        if not dry_run:
            instruction_mark_hard(dataset=target, texts=texts)
        report.hard_marked = len(present)
        report.hard_unmatched = [
            f"{r.file}, line {r.line} (id {r.external_id})"
            for text, r in hard_records.items()
            if text not in present
        ]

    report = import_parsed(
        dataset_name=dataset_name,
        dataset=dataset,
        rubric=rubric,
        parsed=parsed,
        options=options,
        user=user,
        dry_run=dry_run,
        rubric_factory=rubric_factory,
        workspace=workspace,
        after_write=after_write,
        output_files=output_files,
    )
    if rubric_file is not None and dry_run:
        report.rubric = (
            f"{options.get('rubric_name') or IMPORTED_RUBRIC_NAME} (new version)"
        )
    return report
