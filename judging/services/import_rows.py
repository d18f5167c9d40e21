"""The rows of a judge-results import while they are checked: validated scores and
calls, what the dataset offers (`DatasetLookups`: instructions, responses, skills and each
skill's `annotation.scales.Scale`) and the collector that reports unknown ids and
duplicates. Used by `judging.services.imports`; nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.importers.base import normalise_name, parse_field_map
from annotation.importers.fields import RowReader
from annotation.models import Dataset, Instruction, InstructionSkill, Response, Skill
from annotation.scales import Scale, scale_of
from flaskapp.errors import DomainError, Problem

GENERIC_FIELDS = (
    "id",
    "model",
    "skill",
    "score",
    "rationale",
    "sample",
    "review",
    "critique",
)


@dataclass
class ScoreRow:
    """One validated score: where it came from and what it says."""

    file: str
    line: int
    response_id: int
    sample: int
    skill_id: int
    score: int | None
    rationale: str = ""


@dataclass
class CallRow:
    """One imported call: a (response, sample) with its raw output and scores."""

    file: str
    line: int
    response_id: int
    sample: int
    model: str
    review: str = ""
    scores: list[ScoreRow] = field(default_factory=list)
    critique: str = ""
    critique_at: tuple[str, int] | None = None  # (file, line) of the critique


@dataclass
class DatasetLookups:
    """What validation needs to know about the dataset, loaded in a few queries
    (`load`); `parse` checks a value against a skill's scale."""

    dataset: Dataset
    instructions: dict[str, int]
    responses: dict[tuple[int, str], int]
    skill_by_name: dict[str, Skill]
    instruction_skills: dict[int, list[int]]
    scales: dict[int, Scale] = field(default_factory=dict)  # skill id -> Scale

    @classmethod
    def load(cls, dataset: Dataset) -> DatasetLookups:
        skills = list(Skill.objects.filter(rubric_id=dataset.rubric_id))
        by_name: dict[str, Skill] = {}
        for skill in skills:
            by_name[normalise_name(skill.name)] = skill
            by_name[normalise_name(skill.key)] = skill
        links: dict[int, list[int]] = {}
        for instruction_id, skill_id in (
            InstructionSkill.objects.filter(instruction__dataset=dataset)
            .order_by("instruction_id", "rank")
            .values_list("instruction_id", "skill_id")
        ):
            links.setdefault(instruction_id, []).append(skill_id)
        return cls(
            dataset=dataset,
            instructions=dict(
                Instruction.objects.filter(dataset=dataset).values_list(
                    "external_id", "pk"
                )
            ),
            responses={
                (instruction_id, model): pk
                for pk, instruction_id, model in Response.objects.filter(
                    instruction__dataset=dataset
                ).values_list("pk", "instruction_id", "model_name")
            },
            skill_by_name=by_name,
            instruction_skills=links,
            scales={s.pk: scale_of(s) for s in skills},
        )

    def parse(
        self, reader: RowReader, skill: Skill, value, field_name: str, csv_cell=False
    ) -> tuple[bool, int | None]:
        """`value` checked against `skill`'s scale or labels; a problem on
        `field_name` naming the skill otherwise."""
        ok, score, message = self.scales[skill.pk].parse(value, csv_cell=csv_cell)
        if not ok:
            reader.fail(field_name, f"{skill.name}: {message}")
        return ok, score


def parse_mapping(mapping) -> dict[str, str]:
    """`["score=rating", ...]` or {"score": "rating"} -> {"score": "rating"}.

    Raises `DomainError` whose one problem, on field `mapping`, names the bad spec.
    """
    try:
        return parse_field_map(mapping, GENERIC_FIELDS)
    except ValueError as exc:
        raise DomainError(
            "the field mapping is not valid", [Problem(str(exc), field="mapping")]
        ) from exc


def line_ref(file: str, line: int, other_file: str) -> str:
    """ "line N", plus " of FILE" when that line is in another file than `other_file`:
    how a problem message points at an earlier row."""
    return f"line {line}" + ("" if file == other_file else f" of {file}")


class RowCollector:
    """Collects calls and scores, reporting unknown ids, models and skills and
    conflicting duplicate (response, skill, sample) keys with the line of their first
    use; same-value duplicates and scores for unassigned skills go to `warnings`."""

    def __init__(
        self, lookups: DatasetLookups, problems: list[Problem], warnings: list[Problem]
    ):
        self.lookups = lookups
        self.problems = problems
        self.warnings = warnings
        self.calls: dict[tuple[int, int], CallRow] = {}
        # (response, skill, sample) -> (file, line, score) of its first score.
        self.seen: dict[tuple[int, int, int], tuple[str, int, int | None]] = {}
        # response id -> (instruction id, external id), for the assigned-skill check.
        self.instruction_of: dict[int, tuple[int, str]] = {}
        self.rows = 0

    def reader(self, row: dict, line: int, file: str) -> RowReader:
        return RowReader(row, line, file, self.problems, self.warnings)

    def response(
        self,
        reader: RowReader,
        external_id: str,
        id_field: str,
        model: str,
        model_field,
    ) -> int | None:
        instruction_id = self.lookups.instructions.get(external_id)
        if instruction_id is None:
            reader.fail(
                id_field,
                f"unknown instruction id {external_id!r}: dataset "
                f"{self.lookups.dataset.name!r} has no such instruction",
            )
            return None
        response_id = self.lookups.responses.get((instruction_id, model))
        if response_id is None:
            reader.fail(
                model_field,
                f"dataset {self.lookups.dataset.name!r} has no response of model "
                f"{model!r} to instruction {external_id!r}",
            )
        else:
            self.instruction_of[response_id] = (instruction_id, external_id)
        return response_id

    def skill(self, reader: RowReader, name, field_name: str) -> Skill | None:
        skill = self.lookups.skill_by_name.get(normalise_name(str(name)))
        if skill is None:
            reader.fail(
                field_name,
                f"unknown skill {name!r}; it is not in the dataset's rubric",
            )
        return skill

    def call(
        self, file: str, line: int, response_id: int, sample: int, model: str
    ) -> CallRow:
        key = (response_id, sample)
        if key not in self.calls:
            self.calls[key] = CallRow(
                file=file,
                line=line,
                response_id=response_id,
                sample=sample,
                model=model,
            )
        return self.calls[key]

    def critique(
        self, call: CallRow, text: str, file: str, line: int, field_name: str
    ) -> None:
        """Keep the critique of `call`'s (response, sample); the same text again is a
        warning (kept once), another text a problem (one critique per call)."""
        if call.critique_at is None:
            call.critique, call.critique_at = text, (file, line)
            return
        where = line_ref(*call.critique_at, file)
        if call.critique == text:
            self.warnings.append(
                Problem(
                    f"duplicate of {where} (same critique): kept once",
                    line=line,
                    field=field_name,
                    file=file,
                )
            )
        else:
            self.problems.append(
                Problem(
                    "another critique of the same response and sample than on "
                    f"{where}: give one critique per response and sample",
                    line=line,
                    field=field_name,
                    file=file,
                )
            )

    def add(self, call: CallRow, score: ScoreRow, field_name: str) -> None:
        """Keep `score` in `call`, unless its (response, skill, sample) was given
        before: the same value is a warning (kept once), another value a problem."""
        key = (score.response_id, score.skill_id, score.sample)
        first = self.seen.get(key)
        if first is not None:
            where = line_ref(first[0], first[1], score.file)
            scale = self.lookups.scales[score.skill_id]
            if first[2] == score.score:
                self.warnings.append(
                    Problem(
                        f"duplicate of {where} (same score): kept once",
                        line=score.line,
                        field=field_name,
                        file=score.file,
                    )
                )
            else:
                self.problems.append(
                    Problem(
                        f"conflicting duplicate score for the same response, skill "
                        f"and sample: {scale.label_of(score.score)} here, "
                        f"{scale.label_of(first[2])} on {where}",
                        line=score.line,
                        field=field_name,
                        file=score.file,
                    )
                )
            return
        self.seen[key] = (score.file, score.line, score.score)
        self._check_assigned(score, field_name)
        call.scores.append(score)

    def _check_assigned(self, score: ScoreRow, field_name: str) -> None:
        """Warn when the instruction has assigned skills and this is not one of
        them (the score is still imported: the judge did score it)."""
        instruction_id, external_id = self.instruction_of[score.response_id]
        assigned = self.lookups.instruction_skills.get(instruction_id)
        if not assigned or score.skill_id in assigned:
            return
        by_id = {s.pk: s.name for s in self.lookups.skill_by_name.values()}
        self.warnings.append(
            Problem(
                f"skill {by_id[score.skill_id]!r} is not among the skills of "
                f"instruction {external_id!r} "
                f"({', '.join(by_id[pk] for pk in assigned)}): imported anyway",
                line=score.line,
                field=field_name,
                file=score.file,
            )
        )
