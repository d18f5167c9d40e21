"""A criterion's value domain: the one home for what a score of a skill may be.

Every place that reads, writes, shows or asks for a score of a criterion (the rating
page and its keyboard, the rating API, imports of human scores and of judge results,
judge prompts and their JSON schema, the parser of judge replies, agreement, exports)
asks `scale_of(skill)` and uses the `Scale` it returns; none of them spells "1-5".

Storage convention (`HumanScore.score`, `JudgeScore.score`, a nullable small integer):

* ordinal criterion: the score itself, an integer in ``scale_min..scale_max``;
* categorical criterion: the label's **code**, its 0-based position in
  ``Skill.labels``. A rubric version is frozen once a score uses it, so a code keeps
  its meaning; exports and pages write the label key (`Scale.label_of`);
* null: N/A (only where the criterion allows N/A).

Keyboard (`Scale.keys`): one key per value, for scales of up to 10 values. An ordinal
scale whose values all lie in 0..9 uses each value's own digit (0-4 -> "0".."4");
otherwise (1-10, -2..2) the n-th value gets the digit n, and the tenth gets "0". A
categorical criterion's labels get 1, 2, ... in their order (0 for a tenth). An
11-point scale (0-10) has digits for 0-9 and no key for 10 (click it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from annotation.importers.base import is_na, type_name

ORDINAL = "ordinal"
CATEGORICAL = "categorical"


@dataclass(frozen=True)
class Scale:
    """What one criterion accepts. `values` are the stored integers in order (ordinal:
    the points; categorical: the codes 0..n-1); `labels` the label keys (categorical
    only), `names` their display names; `anchors` maps a value to its anchor text."""

    kind: str
    values: tuple[int, ...]
    labels: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    allow_na: bool = True
    anchors: tuple[tuple[int, str], ...] = ()

    # --- descriptions -------------------------------------------------------------
    @property
    def is_ordinal(self) -> bool:
        return self.kind == ORDINAL

    @property
    def is_categorical(self) -> bool:
        return self.kind == CATEGORICAL

    @property
    def low(self) -> int:
        return self.values[0]

    @property
    def high(self) -> int:
        return self.values[-1]

    @property
    def size(self) -> int:
        return len(self.values)

    @property
    def is_flask(self) -> bool:
        """An ordinal 1-5 scale: FLASK's own."""
        return self.is_ordinal and self.values == (1, 2, 3, 4, 5)

    @property
    def label(self) -> str:
        """ "1-5", "0-4", or "yes / no" (the label keys)."""
        if self.is_ordinal:
            return f"{self.low}-{self.high}"
        return " / ".join(self.labels)

    def describe(self) -> str:
        """What a value must be, for error messages: "0-4 or N/A", "yes or no"."""
        if self.is_ordinal:
            text = f"a whole number {self.low}-{self.high}"
        elif len(self.labels) == 2:
            text = f"{self.labels[0]!r} or {self.labels[1]!r}"
        else:
            text = "one of " + ", ".join(repr(k) for k in self.labels)
        return text + (" or N/A" if self.allow_na else "")

    def label_of(self, value: int | None) -> str:
        """The stored value as written in exports and pages: "4", "yes", "N/A"."""
        if value is None:
            return "N/A"
        if self.is_categorical:
            return self.labels[value]
        return str(value)

    def name_of(self, value: int | None) -> str:
        """The display name of a value ("Yes"; the number for an ordinal scale)."""
        if value is not None and self.is_categorical:
            return self.names[value]
        return self.label_of(value)

    def normalised(self, value: float) -> float:
        """An ordinal value mapped onto 0..1 (low -> 0, high -> 1), for charts that put
        criteria on different scales side by side."""
        return (value - self.low) / (self.high - self.low)

    @property
    def keys(self) -> tuple[tuple[str, int], ...]:
        """(keyboard key, value) for the values that have a key (see module doc)."""
        if self.is_ordinal and self.low >= 0 and self.high <= 9:
            return tuple((str(v), v) for v in self.values)
        return tuple(
            (str((i + 1) % 10), v) for i, v in enumerate(self.values) if i < 10
        )

    def key_of(self, value: int) -> str:
        """The keyboard key of `value`, or "" when it has none."""
        return next((k for k, v in self.keys if v == value), "")

    # --- parsing ------------------------------------------------------------------
    def parse(
        self, value: object, *, csv_cell: bool = False
    ) -> tuple[bool, int | None, str]:
        """(ok, stored value or None for N/A, problem text) for one value as a file, a
        form, an API body or a judge wrote it.

        Ordinal: an integer or integer-valued number or numeric string ("4", "4.0").
        Categorical: a label key or display name (case and surrounding space ignored),
        never a code. N/A: None (JSON null) or an N/A word, only if the criterion
        allows it; an empty CSV cell (`csv_cell`) is refused (write N/A).
        """
        if value is None or (isinstance(value, str) and is_na(value)):
            if value is None and csv_cell:
                return False, None, f"is empty; write {self.describe()}"
            if not self.allow_na:
                return False, None, f"N/A is not allowed here; write {self._bare()}"
            return True, None, ""
        if isinstance(value, bool):
            return False, None, f"must be {self.describe()}, got a boolean"
        if self.is_categorical:
            return self._parse_label(value)
        return self._parse_number(value)

    def _bare(self) -> str:
        return Scale(self.kind, self.values, self.labels, self.names, False).describe()

    def _parse_label(self, value: object) -> tuple[bool, int | None, str]:
        if not isinstance(value, str):
            return False, None, f"must be {self.describe()}, got {type_name(value)}"
        wanted = value.strip().strip("'\"").strip().casefold()
        for code, (key, name) in enumerate(zip(self.labels, self.names, strict=True)):
            if wanted in (key.casefold(), name.casefold()):
                return True, code, ""
        return False, None, f"{value!r} is not a label here; use {self.describe()}"

    def _parse_number(self, value: object) -> tuple[bool, int | None, str]:
        if isinstance(value, str):
            text = value.strip().strip("'\"").strip()
            try:
                value = float(text)
            except ValueError:
                return False, None, f"score {text!r} is not {self.describe()}"
        if not isinstance(value, int | float):
            return False, None, f"must be {self.describe()}, got {type_name(value)}"
        if not math.isfinite(value) or not float(value).is_integer():
            return False, None, f"score {value!r} is not {self.describe()}"
        score = int(value)
        if score not in self.values:
            return (
                False,
                None,
                f"score {score} is outside the scale; use {self.describe()}",
            )
        return True, score, ""

    def accepts(self, value: int | None) -> bool:
        """Whether a STORED value (a code, a point, None) is valid for this criterion."""
        if value is None:
            return self.allow_na
        return not isinstance(value, bool) and value in self.values

    def matches(self, expected: int | None, given: int | None, tolerance: int) -> bool:
        """The one rule of a right answer to a known-answer (gold) item: N/A only
        matches N/A; a label must be the expected one; a point within `tolerance`."""
        if expected is None or given is None:
            return expected is None and given is None
        if self.is_categorical:
            return given == expected
        return abs(given - expected) <= tolerance


FLASK_SCALE = Scale(
    ORDINAL, (1, 2, 3, 4, 5), anchors=tuple((v, "") for v in range(1, 6))
)


def scale_of(skill, *, anchors: bool = True) -> Scale:
    """The `Scale` of a `Skill` (or of anything with its fields: kind, scale_min,
    scale_max, scale_anchors, labels, allow_na).

    `anchors=False` leaves an ordinal scale's anchor texts empty and reads neither
    `scale_anchors` nor `anchor_1..5`: for validating values on a hot path that
    loaded only the value fields (the anchors' columns stay deferred, unqueried)."""
    kind = getattr(skill, "kind", ORDINAL) or ORDINAL
    allow_na = bool(getattr(skill, "allow_na", True))
    if kind == CATEGORICAL:
        labels = list(skill.labels or [])
        return Scale(
            CATEGORICAL,
            tuple(range(len(labels))),
            labels=tuple(str(lab["key"]) for lab in labels),
            names=tuple(str(lab.get("name") or lab["key"]) for lab in labels),
            allow_na=allow_na,
            anchors=tuple(
                (i, str(lab.get("description") or "")) for i, lab in enumerate(labels)
            ),
        )
    low = 1 if skill.scale_min is None else int(skill.scale_min)
    high = 5 if skill.scale_max is None else int(skill.scale_max)
    texts = dict(getattr(skill, "scale_anchors", None) or {}) if anchors else {}
    if anchors and not texts and hasattr(skill, "anchor_1") and (low, high) == (1, 5):
        texts = {str(i): getattr(skill, f"anchor_{i}") or "" for i in range(1, 6)}
    return Scale(
        ORDINAL,
        tuple(range(low, high + 1)),
        allow_na=allow_na,
        anchors=tuple((v, str(texts.get(str(v), ""))) for v in range(low, high + 1)),
    )


def scales_of(skills) -> dict[str, Scale]:
    """skill key -> `Scale`, for a list of skills."""
    return {s.key: scale_of(s) for s in skills}


def instance_rubric_points(rubric: dict | None) -> list[tuple[str, str]]:
    """An instruction's own score rubric's ``(point, text)`` pairs in numeric order
    ("2" before "10", "-1" before "0"), whatever order its JSON storage keeps; keys
    that are not whole numbers (never written by the importer) sort last."""
    scores = (rubric or {}).get("scores") or {}

    def order(key: str) -> tuple[int, int | str]:
        try:
            return (0, int(key))
        except ValueError:
            return (1, key)

    return [(key, scores[key]) for key in sorted(scores, key=order)]
