"""Import pairwise preference data (human votes, optionally a judge's verdicts).

File -> `annotation.importers.preferences` (every row validated) -> a check against the
stored dataset (every conflict collected) -> one transaction. A bad file changes
nothing and each problem names its line and field. Re-importing the same rows is a
no-op (see `source_key` in the importer).

Judge verdicts in the same file belong to the judging app. This service does not
import it: the caller passes a `VerdictWriter` factory (`judging.services.verdicts`
provides the one the command, the API and the demo use), and the service calls it
inside its transaction, so that votes and verdicts from one file are written together
or not at all.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Protocol

from django.db import IntegrityError, transaction
from django.db.models import Max

from annotation.importers.base import (
    MAX_IDENTIFIER_LENGTH,
    MAX_PROBLEMS,
    FileData,
    file_size,
    refusal,
)
from annotation.importers.preferences import (
    FORMATS,
    LABEL_SCHEMES,
    PreferenceRow,
    derived_instruction_id,
    parse_mapping,
    parse_preferences,
)
from annotation.models import (
    Dataset,
    HumanPreference,
    Instruction,
    PreferencePair,
    Response,
)
from annotation.services.imports import import_check_sizes
from annotation.services.rubrics import rubric_get_default
from flaskapp import roles, workspaces
from flaskapp.errors import DomainError, Problem

log = logging.getLogger(__name__)

BATCH = 2000
IN_CHUNK = 500
JUDGE_NAME_MAX = 100  # JudgeConfig.name


@dataclass
class PreferenceImportReport:
    """What a preference import did (or, for a dry run, would do)."""

    dataset: str
    file: str
    file_sha256: str
    dry_run: bool = False
    rows: int = 0
    dataset_created: bool = False
    created_instructions: int = 0
    reused_instructions: int = 0
    created_responses: int = 0
    reused_responses: int = 0
    created_pairs: int = 0
    reused_pairs: int = 0
    created_preferences: int = 0
    unchanged_preferences: int = 0
    labels: dict[str, int] = field(default_factory=dict)
    judge: str = ""
    judge_config_created: bool = False
    run_id: int | None = None
    run_created: bool = False
    created_verdicts: int = 0
    unchanged_verdicts: int = 0
    unusable_verdicts: int = 0
    ignored_verdicts: int = 0
    # Accepted but worth a look (empty or identical responses, repeated votes): each
    # `Problem.as_dict()` with its line and field.
    warnings: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


class VerdictWriter(Protocol):
    """Stores the judge verdicts of one preference file (see `preferences_import`).

    Made by a `VerdictWriterFactory` inside the import's transaction. `count` fills the
    verdict fields of the report (also for a dry run); `write` stores what `count`
    counted as new, after the pairs exist. `pair_id` maps a row to its stored pair id
    (None while the pair is new: only before `write`).
    """

    def count(
        self,
        *,
        rows: list[PreferenceRow],
        pair_id: Callable[[PreferenceRow], int | None],
        report: PreferenceImportReport,
    ) -> None: ...

    def write(
        self,
        *,
        dataset: Dataset,
        rows: list[PreferenceRow],
        pair_id: Callable[[PreferenceRow], int | None],
        report: PreferenceImportReport,
        user,
        fmt: str,
    ) -> None: ...


# (judge name, dataset or None when new, import key) -> writer
VerdictWriterFactory = Callable[..., VerdictWriter]


def _chunks(values: list, size: int = IN_CHUNK):
    for start in range(0, len(values), size):
        yield values[start : start + size]


def _refuse(problems: list[Problem]) -> DomainError:
    return refusal("the preferences were not imported", problems)


def _check_options(
    *,
    dataset_name: str,
    fmt: str,
    label_scheme: str,
    judge: str,
    swapped_mapped_back: bool,
    mapping,
) -> tuple[list[Problem], dict[str, str]]:
    problems: list[Problem] = []
    if not dataset_name:
        problems.append(Problem("is empty", field="dataset"))
    elif len(dataset_name) > MAX_IDENTIFIER_LENGTH:
        problems.append(
            Problem(
                f"is {len(dataset_name)} characters long; the limit is "
                f"{MAX_IDENTIFIER_LENGTH}",
                field="dataset",
            )
        )
    if fmt not in FORMATS:
        problems.append(Problem(f"must be one of {', '.join(FORMATS)}", field="format"))
    if label_scheme not in LABEL_SCHEMES:
        problems.append(
            Problem(f"must be one of {', '.join(LABEL_SCHEMES)}", field="label_scheme")
        )
    if len(judge) > JUDGE_NAME_MAX:
        problems.append(
            Problem(
                f"is {len(judge)} characters long; the limit is {JUDGE_NAME_MAX}",
                field="judge",
            )
        )
    if swapped_mapped_back and not judge:
        problems.append(
            Problem(
                "only applies to judge verdicts; name the judge too",
                field="swapped_mapped_back",
            )
        )
    try:
        parsed_mapping = parse_mapping(mapping)
    except ValueError as exc:
        problems.append(Problem(str(exc), field="map"))
        parsed_mapping = {}
    return problems, parsed_mapping


@dataclass
class _Plan:
    """What the rows need, resolved against the stored dataset (keys are texts/names)."""

    instruction_ids: dict[str, int] = field(default_factory=dict)  # prompt -> pk
    new_instructions: dict[str, str] = field(default_factory=dict)  # prompt -> ext id
    response_ids: dict[tuple[str, str], int] = field(default_factory=dict)
    new_responses: dict[tuple[str, str], str] = field(default_factory=dict)  # -> text
    pair_ids: dict[tuple[str, str, str], int] = field(default_factory=dict)
    new_pairs: dict[tuple[str, str, str], PreferenceRow] = field(default_factory=dict)
    pair_fills: dict[int, dict[str, str]] = field(default_factory=dict)
    stored_keys: set[tuple[int, str]] = field(default_factory=set)
    problems: list[Problem] = field(default_factory=list)


def _pair_key(row: PreferenceRow) -> tuple[str, str, str]:
    return (row.prompt, row.model_1, row.model_2)


def _plan(dataset: Dataset | None, rows: list[PreferenceRow], file: str) -> _Plan:  # noqa: C901 - the whole file is validated before one transaction; each check names its line
    """Match rows to stored instructions, responses, pairs and votes; list conflicts."""
    plan = _Plan()
    prompts = list(dict.fromkeys(r.prompt for r in rows))
    if dataset is not None:
        for chunk in _chunks(prompts):
            # The oldest instruction wins when a dataset holds the same text twice.
            for pk, text in (
                Instruction.objects.filter(dataset=dataset, text__in=chunk)
                .order_by("-id")
                .values_list("pk", "text")
            ):
                plan.instruction_ids[text] = pk
    # A new prompt's external id: the first `id` given with it, else a hash of it.
    first_row: dict[str, PreferenceRow] = {}
    for row in rows:
        if row.prompt in plan.instruction_ids:
            continue
        first = first_row.setdefault(row.prompt, row)
        if row.row_id and not first.row_id:
            first_row[row.prompt] = row
    for prompt, row in first_row.items():
        plan.new_instructions[prompt] = row.row_id or derived_instruction_id(prompt)
    if dataset is not None and plan.new_instructions:
        wanted = {ext: prompt for prompt, ext in plan.new_instructions.items()}
        for chunk in _chunks(list(wanted)):
            for ext in Instruction.objects.filter(
                dataset=dataset, external_id__in=chunk
            ).values_list("external_id", flat=True):
                row = first_row[wanted[ext]]
                plan.problems.append(
                    Problem(
                        f"dataset {dataset.name!r} already has an instruction with id "
                        f"{ext!r} and a different prompt",
                        line=row.line,
                        field="id" if row.row_id else "prompt",
                        file=file,
                    )
                )

    stored: dict[tuple[int, str], tuple[int, str]] = {}
    known = list(set(plan.instruction_ids.values()))
    for chunk in _chunks(known):
        for pk, instruction_id, model, text in Response.objects.filter(
            instruction_id__in=chunk
        ).values_list("pk", "instruction_id", "model_name", "text"):
            stored[(instruction_id, model)] = (pk, text)
    for row in rows:
        instruction_id = plan.instruction_ids.get(row.prompt)
        for model, text, name in (
            (row.model_1, row.response_1, "model_1"),
            (row.model_2, row.response_2, "model_2"),
        ):
            key = (row.prompt, model)
            hit = stored.get((instruction_id, model)) if instruction_id else None
            if hit is None:
                plan.new_responses[key] = text
            elif hit[1] != text:
                plan.problems.append(
                    Problem(
                        f"model {model!r} already has a different response to this "
                        f"prompt in dataset {dataset.name!r}; a model has one "
                        "response per prompt",
                        line=row.line,
                        field=name,
                        file=file,
                    )
                )
            else:
                plan.response_ids[key] = hit[0]

    stored_pairs: dict[tuple[int, int], tuple[int, str, str]] = {}
    for chunk in _chunks(known):
        for pk, r1, r2, category, source in PreferencePair.objects.filter(
            dataset=dataset, instruction_id__in=chunk
        ).values_list("pk", "response_1_id", "response_2_id", "category", "source"):
            stored_pairs[(r1, r2)] = (pk, category, source)
    for row in rows:
        key = _pair_key(row)
        r1 = plan.response_ids.get((row.prompt, row.model_1))
        r2 = plan.response_ids.get((row.prompt, row.model_2))
        hit = stored_pairs.get((r1, r2)) if r1 and r2 else None
        if hit is None:
            plan.new_pairs.setdefault(key, row)
            continue
        pk, category, source = hit
        plan.pair_ids[key] = pk
        for name, old, new in (
            ("category", category, row.category),
            ("source", source, row.source),
        ):
            if old and new and old != new:
                plan.problems.append(
                    Problem(
                        f"this pair is already stored with {name} {old!r}",
                        line=row.line,
                        field=name,
                        file=file,
                    )
                )
            elif new and not old:
                plan.pair_fills.setdefault(pk, {})[name] = new

    pair_pks = list(set(plan.pair_ids.values()))
    for chunk in _chunks(pair_pks):
        plan.stored_keys.update(
            HumanPreference.objects.filter(pair_id__in=chunk)
            .exclude(source_key="")
            .values_list("pair_id", "source_key")
        )
    return plan


def _import_key(digest: str, options: dict) -> str:
    """One imported judge run per file content and the options that shape its verdicts."""
    payload = json.dumps([digest, options], sort_keys=True)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def import_preference_file(  # noqa: PLR0913 - keyword-only options of the import, one per page and API field
    *,
    dataset_name: str,
    file: str,
    data: FileData,
    fmt: str,
    mapping: list[str] | dict[str, str] | None = None,
    label_scheme: str = "one-based",
    judge: str | None = None,
    swapped_mapped_back: bool = False,
    user=None,
    dry_run: bool = False,
    verdict_writer: VerdictWriterFactory | None = None,
    strict: bool = False,
    workspace=None,
) -> PreferenceImportReport:
    """Import a JSONL/CSV preference file into dataset `dataset_name` of `workspace`
    (None: the default workspace; created there if new).

    Fields, accepted values and defaults: see `annotation.importers.preferences`.
    Each distinct prompt becomes an instruction (reused when the dataset already has one
    with the same text), each (prompt, model) a response (reused when the text is the
    same; a different text is an error), each (response_1, response_2) a
    `PreferencePair` (reused; a stored blank category/source is filled in, a different
    one is an error), and each row with a label a `HumanPreference` (origin
    "imported", the row's voter). With `judge`: the `JudgeConfig` of that name (created
    as a placeholder without an endpoint when missing) and one `JudgeRun` of kind
    "imported" per file content and options, holding a `PairwiseVerdict` per pair and
    order ("ab" from `verdict`, "ba" from `verdict_swapped`); `swapped_mapped_back`
    says `verdict_swapped` already uses the original numbering. Verdicts are stored by
    `verdict_writer(judge=, dataset=, import_key=, workspace=)`; `judge` without one is refused.

    Warnings (empty or identical responses, a voter voting twice on a pair) are listed
    in the report's `warnings`; with `strict` they refuse the file like problems.

    `user` None means a trusted caller (the command line); otherwise researchers and
    admins only, and only admins may create the dataset (`roles.can_create_dataset`,
    the dataset import's rule; else `PermissionDenied`, also for a dry run). Raises
    `DomainError` listing every problem (line, field); then nothing is written. Idempotent: rows imported before are counted as unchanged and a
    repeated file adds no vote, pair or verdict. One transaction, holding a row lock
    on the dataset so that concurrent imports into it queue. `dry_run` checks
    everything and writes nothing.
    """
    workspace = workspace or workspaces.default_workspace()
    if user is not None:
        # Not a member: the workspace does not exist for them (404); the role
        # needed is checked below, as the dataset import does.
        workspaces.require_workspace_role(user, workspace.pk, workspaces.RATER)
    import_check_sizes(sizes=[(file, file_size(data))])
    dataset_name = (dataset_name or "").strip()
    judge = (judge or "").strip()
    problems, column_map = _check_options(
        dataset_name=dataset_name,
        fmt=fmt,
        label_scheme=label_scheme,
        judge=judge,
        swapped_mapped_back=swapped_mapped_back,
        mapping=mapping,
    )
    if judge and verdict_writer is None:
        problems.append(
            Problem("judge verdicts cannot be stored by this caller", field="judge")
        )
    if problems:
        raise _refuse(problems)
    parsed = parse_preferences(
        data,
        file=file,
        fmt=fmt,
        mapping=column_map,
        label_scheme=label_scheme,
        with_judge=bool(judge),
        swapped_mapped_back=swapped_mapped_back,
    )
    if parsed.problems:
        raise _refuse(parsed.problems)
    if strict and parsed.warnings:
        raise DomainError(
            "the preferences were not imported: with strict, warnings are errors",
            parsed.warnings[:MAX_PROBLEMS],
        )
    rows = parsed.rows
    report = PreferenceImportReport(
        dataset=dataset_name,
        file=file,
        file_sha256=parsed.file_sha256,
        dry_run=dry_run,
        rows=parsed.total,
        judge=judge,
        ignored_verdicts=parsed.ignored_verdicts,
        warnings=[w.as_dict() for w in parsed.warnings[:MAX_PROBLEMS]],
    )
    with transaction.atomic():
        dataset = (
            Dataset.objects.select_for_update()
            .filter(name=dataset_name, workspace=workspace)
            .first()
        )
        if dataset is None and user is not None:
            # The dataset import's rule (researchers of the workspace).
            roles.require_dataset_creator(user, dataset_name, workspace.pk)
        elif user is not None:
            workspaces.require_workspace_role(user, workspace.pk, workspaces.RESEARCHER)
        if dataset is None and not dry_run:
            try:
                with transaction.atomic():
                    dataset = Dataset.objects.create(
                        workspace=workspace,
                        name=dataset_name,
                        rubric=rubric_get_default(),
                        created_by=user,
                    )
            except IntegrityError as exc:
                raise DomainError(
                    f"dataset {dataset_name!r} was created by another import "
                    "meanwhile; run this import again"
                ) from exc
            report.dataset_created = True
        elif dataset is None:
            report.dataset_created = True
        plan = _plan(dataset, rows, file)
        if plan.problems:
            raise _refuse(plan.problems)
        judging = None
        if judge:
            judging = verdict_writer(
                judge=judge,
                dataset=None if report.dataset_created else dataset,
                workspace=workspace,
                import_key=_import_key(
                    parsed.file_sha256,
                    {
                        "label_scheme": label_scheme,
                        "mapping": column_map,
                        "swapped_mapped_back": swapped_mapped_back,
                    },
                ),
            )
        _count(report, plan, rows, judging)
        if not dry_run:
            _write(dataset, plan, rows, report, judging, user=user, fmt=fmt)
    log.info("preference import into %s: %s", dataset_name, report.as_dict())
    return report


def _count(
    report: PreferenceImportReport,
    plan: _Plan,
    rows: list[PreferenceRow],
    judging: VerdictWriter | None,
) -> None:
    report.created_instructions = len(plan.new_instructions)
    report.reused_instructions = len({r.prompt for r in rows}) - len(
        plan.new_instructions
    )
    report.created_responses = len(plan.new_responses)
    report.reused_responses = len(set(plan.response_ids))
    report.created_pairs = len(plan.new_pairs)
    report.reused_pairs = len(set(plan.pair_ids))
    for row in rows:
        if row.label is None:
            continue
        pair_id = plan.pair_ids.get(_pair_key(row))
        if pair_id is not None and (pair_id, row.source_key) in plan.stored_keys:
            report.unchanged_preferences += 1
        else:
            report.created_preferences += 1
            report.labels[row.label] = report.labels.get(row.label, 0) + 1
    if judging is not None:
        judging.count(
            rows=rows, pair_id=lambda r: plan.pair_ids.get(_pair_key(r)), report=report
        )


def _write(
    dataset: Dataset,
    plan: _Plan,
    rows: list[PreferenceRow],
    report: PreferenceImportReport,
    judging: VerdictWriter | None,
    *,
    user,
    fmt: str,
) -> None:
    """Write what `_plan` found missing. Inside the caller's transaction."""
    position = Instruction.objects.filter(dataset=dataset).aggregate(m=Max("position"))[
        "m"
    ]
    start = 0 if position is None else position + 1
    created = Instruction.objects.bulk_create(
        [
            Instruction(
                dataset=dataset, external_id=ext, text=prompt, position=start + i
            )
            for i, (prompt, ext) in enumerate(plan.new_instructions.items())
        ],
        batch_size=BATCH,
    )
    for instruction in created:
        plan.instruction_ids[instruction.text] = instruction.pk
    new_responses = list(plan.new_responses.items())
    created = Response.objects.bulk_create(
        [
            Response(
                instruction_id=plan.instruction_ids[prompt], model_name=model, text=text
            )
            for (prompt, model), text in new_responses
        ],
        batch_size=BATCH,
    )
    for (key, _), response in zip(new_responses, created, strict=True):
        plan.response_ids[key] = response.pk
    new_pairs = list(plan.new_pairs.items())
    created = PreferencePair.objects.bulk_create(
        [
            PreferencePair(
                dataset=dataset,
                instruction_id=plan.instruction_ids[row.prompt],
                response_1_id=plan.response_ids[(row.prompt, row.model_1)],
                response_2_id=plan.response_ids[(row.prompt, row.model_2)],
                category=row.category,
                source=row.source,
                external_id=row.row_id,
            )
            for _, row in new_pairs
        ],
        batch_size=BATCH,
    )
    for (key, _), pair in zip(new_pairs, created, strict=True):
        plan.pair_ids[key] = pair.pk
    for pk, fill in plan.pair_fills.items():
        PreferencePair.objects.filter(pk=pk).update(**fill)
    HumanPreference.objects.bulk_create(
        [
            HumanPreference(
                pair_id=plan.pair_ids[_pair_key(row)],
                label=row.label,
                rationale=row.rationale,
                origin=HumanPreference.Origin.IMPORTED,
                voter=row.voter,
                source_key=row.source_key,
            )
            for row in rows
            if row.label is not None
            and (plan.pair_ids[_pair_key(row)], row.source_key) not in plan.stored_keys
        ],
        batch_size=BATCH,
    )
    if judging is not None:
        judging.write(
            dataset=dataset,
            rows=rows,
            pair_id=lambda r: plan.pair_ids[_pair_key(r)],
            report=report,
            user=user,
            fmt=fmt,
        )
