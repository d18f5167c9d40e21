"""Rubric reads and writes that other services share, and the rubric import (our
rubric file in JSON or YAML, or FLASK's `skillset_description.json`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from annotation.builtin_rubric import BUILTIN_RUBRIC_NAME, BUILTIN_RUBRIC_VERSION
from annotation.importers.flask import parse_rubric
from annotation.importers.rubric_file import looks_like_rubric_file, parse_rubric_file
from annotation.models import FLASK_GROUPS, Ability, Rubric, Skill, SkillKind
from flaskapp.errors import DomainError, Problem
from flaskapp.limits import model_text_problems
from flaskapp.workspaces import default_workspace

# A FLASK file uploaded without a name becomes a version of this rubric.
FLASK_FILE_DEFAULT_NAME = "FLASK official"
MAX_RUBRIC_FILE_BYTES = 1_000_000
SKILL_TEXTS = ("criteria", *(f"anchor_{i}" for i in range(1, 6)))


def rubric_get_default() -> Rubric:
    """The built-in FLASK rubric (created by migration 0002)."""
    return Rubric.objects.get(
        workspace__isnull=True,
        name=BUILTIN_RUBRIC_NAME,
        version=BUILTIN_RUBRIC_VERSION,
    )


def rubric_freeze(*, rubric_id: int) -> None:
    """Mark a rubric version read-only. Idempotent; called when a score first uses it."""
    Rubric.objects.filter(pk=rubric_id, frozen_at__isnull=True).update(
        frozen_at=timezone.now()
    )


def _flask_skill(skill: dict) -> dict:
    """A skill of FLASK's file, with the fields of any rubric filled from it."""
    return {
        **skill,
        "kind": SkillKind.ORDINAL,
        "scale_min": 1,
        "scale_max": 5,
        "scale_anchors": {str(i): skill[f"anchor_{i}"] for i in range(1, 6)},
        "labels": [],
        "allow_na": True,
        "group": skill["ability"],
    }


def _criterion_skill(criterion: dict) -> dict:
    """A criterion of our file, with FLASK's fields filled when it is FLASK-shaped
    (ordinal 1-5 in a FLASK ability) and left empty otherwise."""
    skill = {**criterion, "ability": "", **{f"anchor_{i}": "" for i in range(1, 6)}}
    if (
        criterion["kind"] == SkillKind.ORDINAL
        and (criterion["scale_min"], criterion["scale_max"]) == (1, 5)
        and criterion["group"] in Ability.values
    ):
        skill["ability"] = criterion["group"]
        for i in range(1, 6):
            skill[f"anchor_{i}"] = criterion["scale_anchors"].get(str(i), "")
    return skill


@dataclass(frozen=True)
class RubricDraft:
    """A rubric file read and checked, not stored: what `rubric_import` writes and
    the editor's preview shows. `skills`: the fields of each `Skill`, in order."""

    name: str
    description: str
    groups: list[dict]
    skills: list[dict]
    given_description: str = ""  # the file's own (`description` falls back to a note)

    def unsaved_skills(self) -> list[Skill]:
        """The criteria as `Skill` objects that are not saved (the preview's rows)."""
        return [Skill(**s) for s in self.skills]


def rubric_check(*, name: str | None = None, data: bytes, file: str) -> RubricDraft:
    """Read and check a rubric file (ours, JSON or YAML, or FLASK's
    `skillset_description.json`) as `rubric_import` does, writing nothing: the one
    validator of the import, the editor's save and its live preview. Raises
    `DomainError` listing every problem with its line and field."""
    name = (name or "").strip()
    if len(name) > 100:
        raise DomainError(
            "the rubric was not imported",
            [Problem("is longer than 100 characters", field="name")],
        )
    if len(data) > MAX_RUBRIC_FILE_BYTES:
        raise DomainError(
            "the rubric was not imported",
            [
                Problem(
                    f"the file is {len(data):,} bytes; the limit for a rubric is "
                    f"{MAX_RUBRIC_FILE_BYTES:,}",
                    file=file,
                )
            ],
        )
    text_start = data[:200].decode("utf-8", errors="ignore")
    if looks_like_rubric_file(text_start):
        parsed, problems = parse_rubric_file(data, file=file)
        if parsed is not None and not (name or parsed.name):
            problems = [Problem("is missing: name the rubric", field="name", file=file)]
        if problems:
            raise DomainError("the rubric was not imported", problems)
        name = name or parsed.name
        description = parsed.description or f"Imported from {Path(file).name}"
        groups = parsed.groups
        skills = [_criterion_skill(c) for c in parsed.criteria]
        given = parsed.description
    else:
        flask_skills, problems = parse_rubric(data, file=file)
        if problems:
            raise DomainError("the rubric was not imported", problems)
        name = name or FLASK_FILE_DEFAULT_NAME
        description = f"Imported from {Path(file).name}"
        groups = FLASK_GROUPS
        skills = [_flask_skill(s) for s in flask_skills]
        given = ""
    # Both file formats check their texts; this is the models' own limit, for all.
    problems = [
        problem
        for skill in skills
        for problem in model_text_problems(
            Skill,
            {f: skill.get(f, "") for f in SKILL_TEXTS},
            names={f: f"{skill.get('key')}.{f}" for f in SKILL_TEXTS},
            file=file,
        )
    ]
    if problems:
        raise DomainError("the rubric was not imported", problems)
    return RubricDraft(name, description, groups, skills, given)


def rubric_import(
    *, name: str | None = None, data: bytes, file: str, workspace=None
) -> Rubric:
    """Create a new version of a rubric from a file: ours (JSON or YAML, see
    `annotation.importers.rubric_file`) or FLASK's `skillset_description.json`
    (a JSON array; recognised by content), checked by `rubric_check`.

    The rubric's name is `name` if given, else the file's `name` (FLASK's file:
    "FLASK official"). The rubric belongs to `workspace` (None: the default
    workspace). Versions count up from the highest existing one. Raises
    `DomainError` listing every problem; then nothing is written.
    """
    draft = rubric_check(name=name, data=data, file=file)
    name, description, groups, skills = (
        draft.name,
        draft.description,
        draft.groups,
        draft.skills,
    )
    workspace = workspace or default_workspace()
    with transaction.atomic():
        # Versions count on among the rubrics the workspace sees (its own and the
        # built-ins), never another workspace's: a name's versions reveal nothing.
        last = (
            Rubric.objects.select_for_update()
            .filter(name=name)
            .filter(Q(workspace=workspace) | Q(workspace__isnull=True))
            .order_by("-version")
            .first()
        )
        version = (last.version + 1) if last else 1
        try:
            with transaction.atomic():
                rubric = Rubric.objects.create(
                    workspace=workspace,
                    name=name,
                    version=version,
                    description=description,
                    groups=groups,
                )
        except IntegrityError as exc:  # another import took this version meanwhile
            raise DomainError(
                "the rubric was not imported",
                [
                    Problem(
                        f"version {version} of rubric {name!r} was imported by "
                        "another upload meanwhile; import again",
                        field="name",
                    )
                ],
            ) from exc
        Skill.objects.bulk_create([Skill(rubric=rubric, **s) for s in skills])
    return rubric
