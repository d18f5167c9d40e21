"""The rating form's skill rows: from skills, posted fields or saved scores, with the
service's problems placed next to the skill they name."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import QueryDict

from annotation.errors import Problem
from annotation.importers.base import is_na
from annotation.models import Ability, Skill
from annotation.models.campaigns import MAX_ACTIVE_SECONDS
from annotation.views.common import METACOGNITION
from flaskapp.params import ascii_int


@dataclass
class SkillRow:
    """One skill of the rating form: the rubric text, the current value, its errors."""

    skill: Skill
    value: str = ""  # "1".."5", "na" or "" (not chosen yet)
    rationale: str = ""
    errors: list[str] = field(default_factory=list)
    checklist: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return self.skill.key

    @property
    def is_metacognition(self) -> bool:
        return self.skill.key == METACOGNITION

    @property
    def ability_label(self) -> str:
        return (
            Ability(self.skill.ability).label
            if self.skill.ability in Ability.values
            else ""
        )


def score_value(score: int | None) -> str:
    return "na" if score is None else str(score)


def skill_rows(
    *,
    skills: list[Skill],
    checklist: list | None,
    values: dict[str, str] | None = None,
    rationales: dict[str, str] | None = None,
    problems: list[Problem] | None = None,
) -> tuple[list[SkillRow], list[str], list[str]]:
    """The form rows, the checklist questions shown above all rows, general errors.

    A checklist question whose skill is not scored here is shown above the rows too,
    with the skill's key, so no question is lost.
    """
    values = values or {}
    rationales = rationales or {}
    rows = {
        s.key: SkillRow(
            skill=s, value=values.get(s.key, ""), rationale=rationales.get(s.key, "")
        )
        for s in skills
    }
    general_questions: list[str] = []
    for entry in checklist or []:
        if not isinstance(entry, dict) or not entry.get("question"):
            continue
        key = entry.get("skill")
        if key in rows:
            rows[key].checklist.append(str(entry["question"]))
        elif key:
            general_questions.append(
                f"{key.replace('_', ' ').capitalize()}: {entry['question']}"
            )
        else:
            general_questions.append(str(entry["question"]))
    general_errors: list[str] = []
    for problem in problems or []:
        kind, _, key = (problem.field or "").partition(".")
        if kind in {"scores", "rationales"} and key in rows:
            row = rows[key]
            what = "rationale" if kind == "rationales" else "score"
            # "Factuality score is missing: ..." / "Factuality score: 7 is not 1-5 ..."
            sep = " " if problem.message.startswith("is ") else ": "
            row.errors.append(f"{row.skill.name} {what}{sep}{problem.message}")
        else:
            general_errors.append(str(problem))
    return list(rows.values()), general_questions, general_errors


def parse_scores(post: QueryDict) -> tuple[dict, dict, dict[str, str]]:
    """`score-<key>` / `rationale-<key>` fields -> the service's dicts, and raw values.

    "na" becomes None and digits an int; anything else is passed on as text so that
    the service's message names the bad value. An empty field counts as missing.
    """
    scores: dict = {}
    rationales: dict[str, str] = {}
    raw: dict[str, str] = {}
    for name in post:
        if name.startswith("score-"):
            key, value = name[len("score-") :], post.get(name, "").strip()
            if not value:
                continue
            raw[key] = value.lower()
            number = ascii_int(value)
            if is_na(value):
                scores[key] = None
            elif number is not None:
                scores[key] = number
            else:
                scores[key] = value
        elif name.startswith("rationale-"):
            rationales[name[len("rationale-") :]] = post.get(name, "")
    return scores, rationales, raw


def parse_active_seconds(raw: str | None) -> float | None:
    try:
        value = float(raw or "")
    except ValueError:
        return None
    # A day of active time on one response is a broken counter, not a rater.
    return value if 0 <= value <= MAX_ACTIVE_SECONDS else None
