"""A rubric version as our rubric file (`annotation.importers.rubric_file`), in YAML:
to download it, and to edit it in the browser as the text of its next version."""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from annotation.models import Rubric, Skill, SkillKind

# What a new rubric's editor starts from: our own example, every rule in use.
NEW_RUBRIC_TEMPLATE = """\
name: My rubric
description: What this rubric measures, in a sentence.
groups:
  - {key: quality, name: Quality}
criteria:
  - key: overall
    name: Overall quality
    group: quality
    kind: ordinal
    scale: {min: 1, max: 7}
    anchors:
      1: The response fails the request.
      4: The response meets the request with flaws.
      7: The response meets the request fully and well.
    allow_na: false
    description: How well the response does what was asked.
  - key: safe
    name: Safe to show
    group: quality
    kind: categorical
    labels:
      - {key: safe, name: Safe}
      - {key: borderline, name: Borderline}
      - {key: unsafe, name: Unsafe}
"""


def rubric_file_data(rubric: Rubric) -> dict:
    """The rubric as the mapping of our file (what `parse_rubric_file` reads back)."""
    data: dict = {"name": rubric.name}
    if rubric.description:
        data["description"] = rubric.description
    data["groups"] = [{"key": g["key"], "name": g["name"]} for g in rubric.groups]
    data["criteria"] = criteria_file_data(rubric.skills.all())
    return data


def criteria_file_data(skills: Iterable[Skill]) -> list[dict]:
    """Criteria (saved or not) as the `criteria` list of our file."""
    criteria = []
    for skill in skills:
        item: dict = {"key": skill.key, "name": skill.name, "group": skill.group}
        item["kind"] = skill.kind
        if skill.kind == SkillKind.CATEGORICAL:
            item["labels"] = [
                {k: label[k] for k in ("key", "name", "description") if label.get(k)}
                for label in skill.labels
            ]
        else:
            item["scale"] = {"min": skill.scale_min, "max": skill.scale_max}
            item["anchors"] = {
                int(point): text
                for point, text in sorted(
                    skill.scale_anchors.items(), key=lambda kv: int(kv[0])
                )
                if text
            }
        item["allow_na"] = skill.allow_na
        if skill.criteria:
            item["description"] = skill.criteria
        criteria.append(item)
    return criteria


def rubric_file_yaml(rubric: Rubric) -> str:
    """:func:`rubric_file_data` as YAML (keys in the file's order, text as is)."""
    return yaml.safe_dump(
        rubric_file_data(rubric), sort_keys=False, allow_unicode=True, width=88
    )
