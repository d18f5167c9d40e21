"""Reading the fields of one parsed row: `RowReader` checks each field's type and
range and collects problems with their line and field (used by every importer)."""

from __future__ import annotations

import ast
import json
import math
import re
from typing import Any

from django.conf import settings

from annotation.importers.base import (
    DIFFICULTY_BY_NAME,
    MAX_DOMAINS,
    MAX_IDENTIFIER_LENGTH,
    SIGNED_INTEGER,
    is_unknown,
    normalise_name,
    type_name,
)
from annotation.importers.rubric_file import MAX_POINTS, MIN_POINTS
from annotation.importers.taxonomy import FLASK, Taxonomy
from flaskapp import limits
from flaskapp.errors import Problem
from flaskapp.limits import too_long
from flaskapp.untrusted import (
    JSONInputError,
    int_text_problem,
    json_loads,
    printable,
    text_problem,
)

_ASCII_DIGITS = re.compile(r"[0-9]+")
# Per-instance rubrics and checklists (Prometheus / BiGGen-Bench): what a judge prompt
# and a rating page can show next to the skill rubric.
MAX_CHECKLIST_ITEMS = 20
MAX_RUBRIC_TEXT = limits.RUBRIC_TEXT


class RowReader:
    """Typed access to one input row that records a `Problem` for each bad field."""

    def __init__(
        self,
        row: dict,
        line: int,
        file: str,
        problems: list[Problem],
        warnings: list[Problem] | None = None,
    ):
        self.row = row
        self.line = line
        self.file = file
        self.problems = problems
        self.warnings = warnings if warnings is not None else []
        self.ok = True

    def warn(self, field_name: str | None, message: str) -> None:
        """Record something accepted but worth a look (the import report lists it)."""
        self.warnings.append(
            Problem(message, line=self.line, field=field_name, file=self.file)
        )

    def fail(self, field_name: str | None, message: str) -> None:
        self.ok = False
        self.problems.append(
            Problem(message, line=self.line, field=field_name, file=self.file)
        )

    def identifier(
        self, column: str, *, required: bool = True, integer: bool = False
    ) -> str | None:
        """A string or integer id, as text. `integer`: it must be a whole number (a
        JSON integer, or text of ASCII digits), as the FLASK formats number items."""
        value = self.row.get(column)
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                self.fail(column, "is missing or empty")
            return None
        if isinstance(value, bool) or not isinstance(value, int | str):
            kind = "an integer" if integer else "a string or an integer"
            self.fail(column, f"must be {kind}, got {type_name(value)}")
            return None
        if (
            integer
            and isinstance(value, str)
            and not _ASCII_DIGITS.fullmatch(value.strip())
        ):
            self.fail(
                column, f"must be an integer, got {printable(value.strip()[:40])!r}"
            )
            return None
        value = str(value).strip()
        if problem := text_problem(value):
            self.fail(column, problem)
            return None
        if len(value) > MAX_IDENTIFIER_LENGTH:
            self.fail(
                column,
                f"is {len(value)} characters long; the limit is {MAX_IDENTIFIER_LENGTH}",
            )
            return None
        return value

    def text(
        self,
        column: str,
        *,
        required: bool,
        max_length: int | None = None,
        allow_empty: bool = False,
    ) -> str:
        """A text field. `required`: it must be present; and, unless `allow_empty`,
        not blank (a CSV's empty cell reads as absent: with `allow_empty` it is "")."""
        value = self.row.get(column)
        if value is None:
            if required and not (allow_empty and column in self.row):
                self.fail(column, "is missing")
            return ""
        if not isinstance(value, str):
            self.fail(column, f"must be a string, got {type_name(value)}")
            return ""
        if required and not allow_empty and not value.strip():
            self.fail(column, "is empty")
        if (
            len(value) * 4 > settings.IMPORT_MAX_FIELD_BYTES
            and (size := len(value.encode("utf-8", "surrogatepass")))
            > settings.IMPORT_MAX_FIELD_BYTES
        ):
            self.fail(
                column,
                f"is {size:,} bytes long; the limit is "
                f"{settings.IMPORT_MAX_FIELD_BYTES:,} (IMPORT_MAX_FIELD_BYTES)",
            )
            return ""
        if problem := text_problem(value):
            # PostgreSQL text cannot hold NUL; without this the import dies on COPY.
            self.fail(column, problem)
            return ""
        if max_length is not None and (why := too_long(value, max_length)):
            self.fail(column, why)
            return ""
        return value

    def metadata(self, extra: dict[str, Any]) -> dict[str, Any]:
        """Extra fields kept as JSON metadata, refusing what a JSON column cannot store."""
        if not extra:
            return {}
        try:
            encoded = json.dumps(extra, allow_nan=False)
        except ValueError:
            self.fail(
                None, "an extra field holds NaN or Infinity, which is not valid JSON"
            )
            return {}
        if "\\u0000" in encoded:
            self.fail(None, "an extra field contains a NUL character (\\u0000)")
            return {}
        return extra

    def facets(self, metadata: dict[str, Any], taxonomy: Taxonomy) -> dict[str, Any]:
        """`metadata` with each of `taxonomy`'s facets checked and stored as text
        (the declared spelling when values are declared); a bad value is a problem
        naming the facet's column."""
        for facet in taxonomy.facets:
            if facet.name not in metadata:
                continue
            value, problem = taxonomy.facet_value(facet, metadata[facet.name])
            if problem:
                self.fail(facet.name, problem)
                metadata.pop(facet.name)
            elif value is None:
                metadata.pop(facet.name)
            else:
                metadata[facet.name] = value
        return metadata

    def string_list(self, column: str) -> list[str] | None:
        """A list of strings; a CSV/string cell may hold a JSON list or `a|b` / `a;b`."""
        value = self.row.get(column)
        if value is None:
            return None
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("{"):
                self.fail(
                    column, "must be a list of strings, got a string holding an object"
                )
                return None
            if stripped.startswith("["):
                value = _list_literal(stripped)
                if value is None:
                    self.fail(column, "looks like a JSON list but does not parse")
                    return None
            else:
                return [p.strip() for p in re.split(r"[|;]", stripped) if p.strip()]
        if isinstance(value, int) and not isinstance(value, bool):
            return [str(value)]
        if not isinstance(value, list):
            self.fail(column, f"must be a list of strings, got {type_name(value)}")
            return None
        out = []
        for item in value:
            if isinstance(item, int) and not isinstance(item, bool):
                item = str(item)
            if not isinstance(item, str):
                self.fail(column, f"must be a list of strings, found {type_name(item)}")
                return None
            if problem := text_problem(item):
                self.fail(column, problem)
                return None
            out.append(item)
        return out

    def domains(self, column: str, taxonomy: Taxonomy = FLASK) -> list[str]:
        """The row's 0-2 domains, as keys of `taxonomy`'s domains (FLASK's ten
        unless the dataset declares its own)."""
        values = self.string_list(column)
        if not values:
            return []
        out: list[str] = []
        for raw in values:
            if is_unknown(raw):
                continue
            key, problem = taxonomy.domain_key(raw)
            if key is None:
                self.fail(column, problem)
                continue
            if key not in out:
                out.append(key)
        if len(out) > MAX_DOMAINS:
            self.fail(
                column,
                f"has {len(out)} domains; an instruction has at most {MAX_DOMAINS}",
            )
            return out[:MAX_DOMAINS]
        return out

    def difficulty(self, column: str, taxonomy: Taxonomy = FLASK) -> int | None:
        """The row's level: FLASK's 1-5 or names, or the dataset's declared levels
        and labels (`taxonomy`); None when unknown."""
        value = self.row.get(column)
        if value is None:
            return None
        if taxonomy.difficulty is not None:
            level, problem = taxonomy.difficulty_level(value)
            if problem:
                self.fail(column, problem)
            return level
        if isinstance(value, bool):
            self.fail(
                column, "must be a level 1-5 or a FLASK difficulty name, got boolean"
            )
            return None
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            value = int(value)
        if isinstance(value, int):
            if value == -1:
                return None
            if 1 <= value <= 5:
                return value
            self.fail(column, f"difficulty {value} is out of range 1-5")
            return None
        if isinstance(value, str):
            if is_unknown(value):
                return None
            # Numbers first: normalise_name would turn "-2" into "2".
            if SIGNED_INTEGER.fullmatch(value.strip()) and not int_text_problem(value):
                level = int(value.strip())
                if 1 <= level <= 5:
                    return level
                self.fail(column, f"difficulty {level} is out of range 1-5")
                return None
            name = normalise_name(value)
            if name in DIFFICULTY_BY_NAME:
                return DIFFICULTY_BY_NAME[name]
            allowed = "; ".join(f"{n} = {lv}" for n, lv in DIFFICULTY_BY_NAME.items())
            self.fail(
                column,
                f"unknown difficulty {value!r}; expected 1-5 or one of: {allowed}",
            )
            return None
        self.fail(
            column, f"must be a level 1-5 or a difficulty name, got {type_name(value)}"
        )
        return None

    def skills(self, column: str, lookup: dict[str, str]) -> list[str]:
        values = self.string_list(column)
        if not values:
            return []
        out: list[str] = []
        for raw in values:
            key = lookup.get(normalise_name(raw))
            if key is None:
                self.fail(
                    column, f"unknown skill {raw!r}; it is not in the dataset's rubric"
                )
                continue
            if key in out:
                self.fail(column, f"skill {raw!r} is listed twice")
                continue
            out.append(key)
        return out

    def checklist(self, column: str, lookup: dict[str, str]) -> list[dict] | None:
        """A checklist: a list of questions, or of ``{"skill": name, "question": text}``."""
        value = self.row.get(column)
        if value is None:
            return None
        if isinstance(value, str):
            try:
                value = (
                    json_loads(value, allow_nan=True)
                    if value.strip().startswith("[")
                    else [value]
                )
            except JSONInputError as exc:
                self.fail(column, exc.message)
                return None
            except json.JSONDecodeError:
                self.fail(column, "looks like a JSON list but does not parse")
                return None
        if not isinstance(value, list):
            self.fail(column, f"must be a list of questions, got {type_name(value)}")
            return None
        items = []
        for entry in value:
            if isinstance(entry, str) and entry.strip():
                items.append({"skill": None, "question": entry.strip()})
            elif (
                isinstance(entry, dict)
                and isinstance(entry.get("question"), str)
                and entry["question"].strip()
            ):
                skill = entry.get("skill")
                key = None
                if skill is not None:
                    key = lookup.get(normalise_name(str(skill)))
                    if key is None:
                        self.fail(column, f"checklist names unknown skill {skill!r}")
                        continue
                items.append({"skill": key, "question": entry["question"].strip()})
            else:
                self.fail(
                    column,
                    "each checklist entry must be a question string or "
                    '{"skill": ..., "question": ...}',
                )
                return None
        if any("\x00" in item["question"] for item in items):
            self.fail(column, "a question contains a NUL character (\\u0000)")
            return None
        if len(items) > MAX_CHECKLIST_ITEMS:
            self.fail(
                column,
                f"has {len(items)} items; a checklist has at most {MAX_CHECKLIST_ITEMS}",
            )
            return None
        for n, item in enumerate(items, 1):
            if len(item["question"]) > MAX_RUBRIC_TEXT:
                self.fail(column, f"item {n} {_too_long(item['question'])}")
                return None
        return items or None

    def score_rubric(self, column: str) -> dict[str, Any]:  # noqa: C901 - every shape an instance rubric may take in a row, each refused with its own field
        """This instruction's own score rubric, as ``{"criteria", "scores": {"1": ...}}``.

        Read from Prometheus's ``{criteria, score1_description, ...}`` or from ``{criteria,
        scores: {"1": ...}}``; a CSV cell holds it as JSON text. Absent: ``{}``. The
        scores are whole numbers forming one range of 2-11 points (1-5, 0-4, 1-10, or
        -2..2 written ``"-2"``), each with its text, stored in numeric order."""
        value = self.row.get(column)
        if value is None:
            return {}
        if isinstance(value, str):
            if not value.strip():
                return {}
            try:
                value = json_loads(value)
            except (JSONInputError, json.JSONDecodeError):
                self.fail(column, "must be a JSON object, and this text does not parse")
                return {}
        if not isinstance(value, dict):
            self.fail(column, f"must be an object, got {type_name(value)}")
            return {}
        criteria = value.get("criteria")
        if not isinstance(criteria, str) or not criteria.strip():
            self.fail(column, "has no `criteria` text")
            return {}
        scores: dict[str, Any] = {}
        if "scores" in value:
            given = value["scores"]
            if not isinstance(given, dict):
                self.fail(column, f"`scores` must be an object, got {type_name(given)}")
                return {}
            scores = {str(k).strip(): v for k, v in given.items()}
        for key in value:
            if re.fullmatch(r"score(\d+)_description", key):
                scores[key[5:-12]] = value[key]
            elif key not in ("criteria", "scores"):
                self.warn(column, f"key {key!r} is not part of a score rubric: ignored")
        points = self._rubric_points(column, scores)
        if points is None:
            return {}
        out = {"criteria": criteria.strip(), "scores": {}}
        for point, text in points.items():
            if not isinstance(text, str) or not text.strip():
                self.fail(column, f"has no description for score {point}")
                return {}
            out["scores"][str(point)] = text.strip()
        for text in [out["criteria"], *out["scores"].values()]:
            if problem := text_problem(text):
                self.fail(column, problem)
                return {}
            if len(text) > MAX_RUBRIC_TEXT:
                self.fail(column, f"has a text that {_too_long(text)}")
                return {}
        return out

    def _rubric_points(self, column: str, scores: dict) -> dict[int, Any] | None:
        """A per-instance rubric's texts by integer point, in numeric order, or None
        (with a problem) when a key is not a whole number, a point is given twice,
        there are too few or too many, or the range has a gap."""
        by_point: dict[int, Any] = {}
        for key, text in scores.items():
            if not re.fullmatch(r"-?[0-9]+", key):
                self.fail(
                    column, f"describes score {key!r}, which is not a whole number"
                )
                return None
            if problem := int_text_problem(key):
                self.fail(column, f"describes a score that {problem}")
                return None
            if int(key) in by_point:
                self.fail(column, f"describes score {int(key)} twice")
                return None
            by_point[int(key)] = text
        points = sorted(by_point)
        if len(points) < MIN_POINTS:
            self.fail(
                column, f"describes {len(points)} score(s); a scale needs {MIN_POINTS}"
            )
            return None
        if len(points) > MAX_POINTS:
            self.fail(
                column, f"describes {len(points)} scores; the limit is {MAX_POINTS}"
            )
            return None
        missing = sorted(set(range(points[0], points[-1] + 1)) - set(points))
        if missing:
            self.fail(
                column,
                f"has no description for score {missing[0]} (it describes scores "
                f"{points[0]}-{points[-1]}; a scale is one range of whole numbers)",
            )
            return None
        return {point: by_point[point] for point in points}


def _too_long(text: str) -> str:
    return f"is {len(text):,} characters long; the limit is {MAX_RUBRIC_TEXT:,}"


def _list_literal(text: str) -> list | None:
    """A JSON list, or a Python list literal (`['a', 'b']`, as pandas writes to CSV)."""
    try:
        value = json_loads(text, allow_nan=True)
    except JSONInputError:
        return None
    except json.JSONDecodeError:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    return value if isinstance(value, list) else None
