"""Human scores on the rows of a generic dataset file (CSV, JSON Lines, Parquet).

A row that holds a model's response may also hold the scores a person gave it, for
any criterion of the dataset's rubric. Which columns hold scores (the rule, in order):

1. ``--map score.KEY=COLUMN``: COLUMN holds the score of criterion KEY (its key, or
   its name in any case). KEY must be a criterion of the rubric.
2. A column named ``score.KEY`` (or ``scores.KEY``), or, in JSON Lines, a ``scores``
   object ``{"KEY": value, ...}``: the score of criterion KEY; a KEY that is not a
   criterion of the rubric is a problem naming the line and the column.
3. A column whose name is a criterion's key (exactly), unless it is one of the
   importer's own fields (`generic.FIELDS`) or a column mapped to one: such a
   criterion is scored through rule 1 or 2.

Values are read with the criterion's `Scale.parse` (an integer of an ordinal scale;
a label's key or name of a categorical criterion; an N/A word only where the
criterion allows N/A; a JSON or Parquet null is N/A). An empty CSV cell, or a key a
JSON row leaves out, means "not scored on this row": no score is stored.

``rater`` (mappable) names who gave the row's scores; without it, the scores are
the one rater "imported" of the import. ``rationale`` is the rater's text for every
score of the row, ``rationale.KEY`` for one criterion (it wins over ``rationale``).

Pure: no database access. The scales come from the caller.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from annotation.importers.base import normalise_name, type_name
from annotation.importers.fields import RowReader
from flaskapp import limits
from flaskapp.errors import Problem
from flaskapp.untrusted import text_problem

SCORE_PREFIXES = ("score.", "scores.")
RATIONALE_PREFIX = "rationale."
SCORES_OBJECT = "scores"
# Who gave a row's scores when the file has no rater column.
DEFAULT_RATER = "imported"
# A rater's account name is "import:<dataset id>:<rater>" (at most 150 characters).
MAX_RATER_LENGTH = 120
MAX_RATIONALE = limits.RATIONALE  # HumanScore.rationale


@dataclass(slots=True)
class ScoreRecord:
    """One human score of one criterion of one response, as a file gave it."""

    instruction_external_id: str
    model_name: str
    rater: str
    skill_key: str
    score: int | None  # the stored value (`annotation.scales`); None = N/A
    rationale: str
    line: int
    file: str
    field: str


def split_mapping(pairs) -> tuple[list[str] | dict[str, str], dict[str, str]]:
    """(the field specs, {"score.KEY" or "rationale.KEY": column}) of `--map` specs
    given as a list of ``FIELD=COLUMN`` or a dict; the second part is checked against
    the rubric by `ScoreColumns`."""
    if not pairs:
        return [], {}
    items = (
        list(pairs.items())
        if isinstance(pairs, dict)
        else [tuple(p.split("=", 1)) if "=" in p else (p, None) for p in pairs]
    )
    fields: list[str] = []
    scores: dict[str, str] = {}
    for name, column in items:
        name = str(name).strip()
        if column is not None and name.startswith(("score.", "rationale.")):
            scores[name] = str(column).strip()
        else:
            fields.append(name if column is None else f"{name}={column}")
    return fields, scores


class ScoreColumns:
    """Which columns of a row hold scores, and reading them (see the module doc).

    `scales`: criterion key -> `Scale` of the dataset's rubric; `lookup`: normalised
    criterion names and keys -> key; `field_columns`: the columns the importer's own
    fields are read from; `mapped`: the ``score.KEY`` / ``rationale.KEY`` specs of
    `split_mapping` (what is wrong with them is in `mapping_problems`); `csv`: an
    absent value is an empty cell (not scored), not a JSON null (N/A)."""

    def __init__(
        self,
        *,
        scales: dict[str, object],
        lookup: dict[str, str],
        field_columns: set[str],
        mapped: dict[str, str],
        rater_column: str,
        rationale_column: str,
        csv: bool = False,
    ):
        self.scales = scales
        self.csv = csv
        self.lookup = lookup
        self.rater_column = rater_column
        self.rationale_column = rationale_column
        self.mapping_problems: list[str] = []
        self.score_of: dict[str, str] = {}  # column -> criterion key
        self.rationale_of: dict[str, str] = {}
        for spec, column in mapped.items():
            prefix, _, name = spec.partition(".")
            key = self.key_of(name)
            if key is None:
                self.mapping_problems.append(
                    f"--map {spec}={column}: {self.unknown(name)}"
                )
            elif not column:
                self.mapping_problems.append(f"--map {spec}=: the column name is empty")
            elif prefix == "score":
                self.score_of[column] = key
            else:
                self.rationale_of[column] = key
        self.mapped_keys = set(self.score_of.values())
        # Rule 3: a column named as a criterion's key, unless a field reads it or the
        # criterion is mapped elsewhere.
        self.field_columns = field_columns
        for key in scales:
            if key not in field_columns and key not in self.mapped_keys:
                self.score_of.setdefault(key, key)

    @property
    def required_columns(self) -> dict[str, str]:
        """{"score.KEY": column} of the mapped columns a CSV header must have."""
        out = {}
        for column, key in self.score_of.items():
            if column != key or key in self.mapped_keys:
                out[f"score.{key}"] = column
        for column, key in self.rationale_of.items():
            out[f"rationale.{key}"] = column
        return out

    def key_of(self, name: str) -> str | None:
        name = str(name).strip()
        if name in self.scales:
            return name
        return self.lookup.get(normalise_name(name))

    def unknown(self, name: str) -> str:
        return f"unknown criterion {name!r}; the rubric's criteria are " + ", ".join(
            self.scales
        )

    def is_score_column(self, column: str) -> bool:
        """Whether `column` is read as a score or a rationale (not kept as metadata)."""
        return (
            column in self.score_of
            or column in self.rationale_of
            or column == SCORES_OBJECT
            or column.startswith(SCORE_PREFIXES)
            or column.startswith(RATIONALE_PREFIX)
        )

    def near_miss(self, column: str) -> str | None:
        """The criterion a column kept as metadata was probably meant to score (its
        name is a criterion's name, or a word of a criterion's key or name or the
        start of one, or close to one),
        for a warning; None when it looks like no criterion."""
        if self.is_score_column(column) or column in self.field_columns:
            return None
        name = normalise_name(column)
        if not name:
            return None
        if name in self.lookup:
            return self.lookup[name]
        for known, key in self.lookup.items():
            # a word of the criterion's key or name, or the start of one
            words = [w for w in known.split(" ") if len(w) >= 4]
            if len(name) >= 4 and any(w.startswith(name) for w in words):
                return key
        close = difflib.get_close_matches(name, list(self.lookup), n=1, cutoff=0.8)
        return self.lookup[close[0]] if close else None

    def near_miss_warnings(self, columns, file: str | None) -> list[Problem]:
        """A warning per column of the file that was kept as metadata but looks
        like a criterion (:meth:`near_miss`): it was not read as scores."""
        out = []
        for column in columns:
            key = self.near_miss(column)
            if key is not None:
                out.append(
                    Problem(
                        f"kept as instruction metadata, not read as scores of "
                        f"criterion {key!r}: only a column named exactly {key!r} or "
                        f"score.{key} is; to read it as scores, map it with "
                        f"score.{key}={column}",
                        field=column,
                        file=file,
                    )
                )
        return out

    def read(self, reader: RowReader) -> list[tuple[str, int | None, str, str]]:  # noqa: C901 - a score file's row, each column refused with its own field
        """(criterion key, stored value, rationale, field) of each score on the row;
        a bad value, an unknown criterion or a criterion scored twice on the row is
        recorded on `reader` (naming the line and the column)."""
        row = reader.row
        given: list[tuple[str, str, object]] = []  # (key, field, value)
        rationales: dict[str, str] = {}
        for column, value in row.items():
            if column in self.field_columns and column not in self.score_of:
                continue
            if column in self.score_of:
                given.append((self.score_of[column], column, value))
            elif column in self.rationale_of:
                text = self._rationale(reader, column)
                if text:
                    rationales[self.rationale_of[column]] = text
            elif column == SCORES_OBJECT and SCORES_OBJECT not in self.field_columns:
                given.extend(self._scores_object(reader, value))
            elif column.startswith(SCORE_PREFIXES):
                name = column.split(".", 1)[1]
                key = self.key_of(name)
                if key is None:
                    reader.fail(column, self.unknown(name))
                else:
                    given.append((key, column, value))
            elif column.startswith(RATIONALE_PREFIX):
                name = column.split(".", 1)[1]
                key = self.key_of(name)
                if key is None:
                    reader.fail(column, self.unknown(name))
                elif text := self._rationale(reader, column):
                    rationales[key] = text
        shared = self._rationale(reader, self.rationale_column)
        out: list[tuple[str, int | None, str, str]] = []
        seen: dict[str, str] = {}
        for key, field, value in given:
            if value is None and self.csv:
                continue  # an empty cell: not scored on this row
            if key in seen:
                reader.fail(field, f"criterion {key!r} is also scored by {seen[key]!r}")
                continue
            seen[key] = field
            ok, score, problem = self.scales[key].parse(value)
            if not ok:
                reader.fail(field, f"criterion {key!r}: {problem}")
                continue
            out.append((key, score, rationales.get(key, shared), field))
        return out

    def _scores_object(self, reader: RowReader, value) -> list[tuple[str, str, object]]:
        if value is None:
            return []
        if not isinstance(value, dict):
            reader.fail(
                SCORES_OBJECT,
                f"must be an object of criterion -> score, got {type_name(value)}",
            )
            return []
        out = []
        for name, score in value.items():
            field = f"{SCORES_OBJECT}.{name}"
            key = self.key_of(name)
            if key is None:
                reader.fail(field, self.unknown(name))
            else:
                out.append((key, field, score))
        return out

    def _rationale(self, reader: RowReader, column: str) -> str:
        value = reader.row.get(column)
        if value is None:
            return ""
        if not isinstance(value, str):
            reader.fail(column, f"must be a string, got {type_name(value)}")
            return ""
        if problem := text_problem(value):
            reader.fail(column, problem)
            return ""
        if len(value) > MAX_RATIONALE:
            reader.fail(
                column,
                f"is {len(value):,} characters long; the limit is {MAX_RATIONALE:,}",
            )
            return ""
        return value.strip()

    def rater(self, reader: RowReader) -> str | None:
        """The row's rater id (`DEFAULT_RATER` when the row names none)."""
        rater = reader.identifier(self.rater_column, required=False)
        if rater is None:
            return DEFAULT_RATER
        if len(rater) > MAX_RATER_LENGTH:
            reader.fail(
                self.rater_column,
                f"is {len(rater)} characters long; the limit is {MAX_RATER_LENGTH}",
            )
            return None
        return rater
