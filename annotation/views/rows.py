"""The rating form's skill rows: from skills, posted fields or saved scores, with the
service's problems placed next to the skill they name.

Every row asks its criterion's `Scale` (`annotation.scales`) for its buttons, their
keyboard keys, the anchor texts and whether N/A is offered: no row spells "1-5". A
button posts the value as `Scale.parse` reads it: the point of an ordinal criterion,
the label key of a categorical one, "na" for N/A."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.http import QueryDict

from annotation.importers.base import is_na
from annotation.models import Ability, Skill
from annotation.models.campaigns import MAX_ACTIVE_SECONDS
from annotation.scales import Scale, scale_of
from annotation.views.common import METACOGNITION
from flaskapp.errors import Problem
from flaskapp.params import ascii_int


@dataclass(frozen=True)
class ScoreChoice:
    """One button of a row: the posted `value`, its `text` on the button, its keyboard
    `key` ("" for none) and the `anchor` text of what it means ("" for none)."""

    value: str
    text: str
    key: str = ""
    anchor: str = ""


def scale_choices(scale: Scale) -> list[ScoreChoice]:
    """The buttons of a criterion, in scale order (N/A is the row's own button)."""
    anchors = dict(scale.anchors)
    return [
        ScoreChoice(
            value=posted_value(scale, value),
            text=scale.name_of(value),
            key=scale.key_of(value),
            anchor=anchors.get(value, ""),
        )
        for value in scale.values
    ]


def posted_value(scale: Scale, value: int | None) -> str:
    """A stored value as the form posts it: "na", the point, or the label key."""
    return "na" if value is None else scale.label_of(value)


def key_hint(scale: Scale) -> str:
    """What the keys of a scale are, for hints: "1-5", "1-9, 0 for 10", "1 yes, 2 no"."""
    keys = scale.keys
    if scale.is_categorical:
        return ", ".join(f"{k} {scale.labels[v]}" for k, v in keys)
    plain = [(k, v) for k, v in keys if k == str(v)]
    other = [f"{k} for {v}" for k, v in keys if k != str(v)]
    if not plain and keys:
        plain, other = [keys[0]], other[1:]
    parts = [f"{plain[0][0]}-{plain[-1][0]}" if len(plain) > 1 else plain[0][0]]
    parts += other
    if len(keys) < scale.size:
        parts.append(
            "click " + ", ".join(str(v) for v in scale.values if not scale.key_of(v))
        )
    return ", ".join(parts)


@dataclass
class SkillRow:
    """One skill of the rating form: the rubric text, the current value, its errors."""

    skill: Skill
    value: str = ""  # a posted value (`posted_value`), "na" or "" (not chosen yet)
    rationale: str = ""
    errors: list[str] = field(default_factory=list)
    checklist: list[str] = field(default_factory=list)
    scale: Scale | None = None

    def __post_init__(self) -> None:
        if self.scale is None:
            self.scale = scale_of(self.skill)

    @property
    def key(self) -> str:
        return self.skill.key

    @property
    def choices(self) -> list[ScoreChoice]:
        return scale_choices(self.scale)

    @property
    def anchored(self) -> list[ScoreChoice]:
        """The choices that have an anchor text (a middle point may have none)."""
        return [c for c in self.choices if c.anchor]

    @property
    def allow_na(self) -> bool:
        return self.scale.allow_na

    @property
    def describe(self) -> str:
        """What the row accepts, for hints: "a whole number 1-10 or N/A"."""
        return self.scale.describe()

    @property
    def key_hint(self) -> str:
        """The row's keys, for hints: "1-9, 0 for 10, n for N/A"."""
        text = key_hint(self.scale)
        return text + (", n for N/A" if self.scale.allow_na else "")

    @property
    def value_text(self) -> str:
        """The current value as shown (the label's name for a categorical row)."""
        for choice in self.choices:
            if choice.value == self.value:
                return choice.text
        return "N/A" if self.value == "na" else self.value

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


def score_value(skill: Skill, score: int | None) -> str:
    """A saved score as the form posts it (`posted_value` of the skill's scale)."""
    return posted_value(scale_of(skill), score)


@dataclass
class HelpScale:
    """One line of the keyboard help: the criteria that share a scale and its keys."""

    names: list[str]
    scale: Scale

    @property
    def label(self) -> str:
        return self.scale.label

    @property
    def keys(self) -> list[tuple[str, str]]:
        """(key, what it chooses) for each value that has a key."""
        return [(k, self.scale.name_of(v)) for k, v in self.scale.keys]

    @property
    def unkeyed(self) -> list[str]:
        return [
            self.scale.name_of(v) for v in self.scale.values if not self.scale.key_of(v)
        ]

    @property
    def parts(self) -> list[tuple[str, str, str]]:
        """The keys as the help writes them: (first key, last key of a run or "",
        what it means or ""): 1-5 -> [("1", "5", "")]; 1-10 -> [("1", "9", ""),
        ("0", "", "10")]; yes/no -> [("1", "", "Yes"), ("2", "", "No")]."""
        if self.scale.is_categorical:
            return [(k, "", self.scale.name_of(v)) for k, v in self.scale.keys]
        plain = [k for k, v in self.scale.keys if k == str(v)]
        out = []
        if plain:
            out.append((plain[0], plain[-1] if len(plain) > 1 else "", ""))
        out += [(k, "", str(v)) for k, v in self.scale.keys if k != str(v)]
        return out


def help_context(skills: list[Skill]) -> dict:
    """What the keyboard help needs: `help_scales`, and `help_na` (some criterion
    allows N/A, or no criterion is known: then the key is explained anyway)."""
    scales = help_scales(skills)
    return {
        "help_scales": scales,
        "help_na": not scales or any(h.scale.allow_na for h in scales),
    }


def help_scales(skills: list[Skill]) -> list[HelpScale]:
    """The keyboard help's scale lines: criteria grouped by identical scales, in the
    order they first appear."""
    groups: dict[tuple, HelpScale] = {}
    for skill in skills:
        scale = scale_of(skill)
        ident = (scale.kind, scale.values, scale.labels, scale.names)
        if ident not in groups:
            groups[ident] = HelpScale(names=[], scale=scale)
        groups[ident].names.append(skill.name)
    return list(groups.values())


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
            message = problem.message
            if what == "score" and message.startswith("score "):
                # "Factuality score 7 is outside the scale; use ..."
                message = message[len("score ") :]
                sep = " "
            else:
                sep = " " if message.startswith("is ") else ": "
            row.errors.append(f"{row.skill.name} {what}{sep}{message}")
        else:
            general_errors.append(str(problem))
    return list(rows.values()), general_questions, general_errors


def parse_scores(post: QueryDict) -> tuple[dict, dict, dict[str, str]]:
    """`score-<key>` / `rationale-<key>` fields -> the service's dicts, and raw values.

    "na" becomes None and ASCII digits an int; anything else (a label key, a bad
    value) is passed on as text: the criterion's `Scale.parse` in the service reads
    it and names the bad value. An empty field counts as missing.
    """
    scores: dict = {}
    rationales: dict[str, str] = {}
    raw: dict[str, str] = {}
    for name in post:
        if name.startswith("score-"):
            key, value = name[len("score-") :], post.get(name, "").strip()
            if not value:
                continue
            raw[key] = "na" if is_na(value) else value
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


def critique_context(
    *, campaign, critique: str, problems: list[Problem] | None
) -> tuple[list[Problem], dict]:
    """The critique box of a rating form, and the problems left for the skill rows.

    Returns (problems not about `critique`, context): ``critique_asked`` (the campaign
    asks for one), ``critique_only`` (instead of scores), ``critique_min_length``,
    ``critique`` (the text to show), ``critique_errors``.
    """
    rest, errors = [], []
    for problem in problems or []:
        if problem.field == "critique":
            errors.append(f"Critique {problem.message}")
        else:
            rest.append(problem)
    mode = campaign.critique
    return rest, {
        "critique_asked": mode != "off",
        "critique_only": mode == "only",
        "critique_min_length": campaign.critique_min_length,
        "critique": critique,
        "critique_errors": errors,
    }
