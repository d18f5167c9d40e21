"""Turn a judge's raw output into scores. Pure functions, no Django imports.

Strict about meaning, tolerant about form. A pointwise reply is read, in this order, as:

1. the whole text as JSON (code fences allowed): ``{key: {"feedback", "score"}}`` or
   ``{key: score}``;
2. the last balanced ``{...}`` in the text that parses as JSON or as a Python dict
   literal and names at least one requested skill;
3. ``Skill Name: n`` / ``skill_key: n`` lines (the last one per skill wins).

Skill labels match a requested skill's key or display name exactly once case, spaces,
hyphens and underscores are ignored: never by substring ("Logical" is not
"logical_correctness"). Without scales, scores are FLASK's 1-5 (``4``, ``"4"``, ``4.0``,
``"4/5"``) or N/A (``null`` or an N/A word: ``"N/A"``, ``"NA"``, ``"none"``, ...; the
one list is `annotation.importers.base.NA_WORDS`). With a criterion's
`annotation.scales.Scale` the value must be exactly one it accepts (`Scale.parse`:
a point of its scale, ``"3/4"`` only out of its top point; a label key or name, case
ignored; N/A only where allowed) and is returned as the Scale stores it (a label's
code). Anything else, or a requested skill that is missing, raises `ParseError`
with the reason. Unrequested keys are ignored.
"""

from __future__ import annotations

import re

from annotation.importers.base import is_na
from annotation.scales import Scale
from judging.parsing.base import (
    FEEDBACK_KEYS,
    SCORE_KEYS,
    WRAPPER_KEYS,
    ParseError,
    PointwiseParse,
    balanced_objects,
    check_size,
    field_text,
    load_object,
    normalize_label,
    objects_from_end,
    whole_json,
)


def score_value(skill: str, value: object) -> int | None:
    """1-5 as int, N/A as None; ParseError naming the skill and value otherwise."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParseError(f"skill {skill!r}: {value!r} is not a score (1-5 or N/A)")
    if isinstance(value, int) and 1 <= value <= 5:
        return value
    if isinstance(value, float) and value.is_integer() and 1 <= value <= 5:
        return int(value)
    if isinstance(value, str):
        word = value.strip().strip("*").strip()
        if is_na(word):
            return None
        m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)(?:\s*/\s*5)?", word)
        if m:
            number = float(m.group(1))
            if number.is_integer() and 1 <= number <= 5:
                return int(number)
    raise ParseError(f"skill {skill!r}: {value!r} is not a score (1-5 or N/A)")


def scale_value(skill: str, value: object, scale: Scale | None) -> int | None:
    """`value` as `scale` stores it (a point, a label's code; None = N/A);
    `ParseError` naming the skill and why otherwise. Without a scale, or for FLASK's
    own 1-5 with N/A, exactly `score_value`."""
    if scale is None or (scale.is_flask and scale.allow_na):
        return score_value(skill, value)
    if isinstance(value, str):
        value = value.strip().strip("*").strip()
        m = re.fullmatch(r"([+-]?[0-9]+(?:\.[0-9]+)?)\s*/\s*([0-9]+)", value)
        if m and scale.is_ordinal:
            if int(m.group(2)) != scale.high:
                raise ParseError(
                    f"skill {skill!r}: {value!r} is not out of {scale.high} "
                    f"(use {scale.describe()})"
                )
            value = m.group(1)
    ok, stored, problem = scale.parse(value)
    if not ok:
        raise ParseError(f"skill {skill!r}: {problem}")
    return stored


class _SkillIndex:
    def __init__(
        self, skills: list[tuple[str, str]], scales: dict[str, Scale] | None = None
    ):
        if not skills:
            raise ValueError("no skills requested")
        self.scales = scales or {}
        self.keys = [key for key, _ in skills]
        self.by_label: dict[str, str] = {}
        for key, name in skills:
            for label in (key, name):
                if label:
                    self.by_label.setdefault(normalize_label(label), key)
        self.names = {key: name or key for key, name in skills}

    def value(self, key: str, value: object) -> int | None:
        return scale_value(key, value, self.scales.get(key))

    def lookup(self, label: object) -> str | None:
        return self.by_label.get(normalize_label(str(label)))

    def mentioned(self, mapping: dict) -> bool:
        return any(self.lookup(k) for k in mapping)


def _score_mapping(obj: dict, index: _SkillIndex) -> tuple[dict, dict | None]:
    """The dict that holds the scores, and a separate feedback dict if there is one."""
    if index.mentioned(obj):
        return obj, None
    for key in WRAPPER_KEYS:
        for k, v in obj.items():
            if normalize_label(k) == key and isinstance(v, dict) and index.mentioned(v):
                feedback = next(
                    (
                        fv
                        for fk, fv in obj.items()
                        if normalize_label(fk) in FEEDBACK_KEYS and isinstance(fv, dict)
                    ),
                    None,
                )
                return v, feedback
    return obj, None


def _from_mapping(obj: dict, index: _SkillIndex) -> tuple[dict, dict]:
    mapping, feedback = _score_mapping(obj, index)
    scores: dict[str, int | None] = {}
    rationales: dict[str, str] = {}
    for label, value in mapping.items():
        key = index.lookup(label)
        if key is None:
            continue  # extra keys are not our business
        rationale = ""
        if isinstance(value, dict):
            entry = {normalize_label(k): v for k, v in value.items()}
            score_field = next((f for f in SCORE_KEYS if f in entry), None)
            if score_field is None:
                raise ParseError(f"skill {key!r}: the entry has no score")
            rationale = next((str(entry[f]) for f in FEEDBACK_KEYS if f in entry), "")
            value = entry[score_field]
        scores[key] = index.value(key, value)
        if feedback is not None:
            rationale = str(
                next((v for k, v in feedback.items() if index.lookup(k) == key), "")
            )
        rationales[key] = rationale
    return scores, rationales


_LINE_RE = re.compile(
    r"^[\s>*#\-\u2022]*(?:\d+[.)]\s+)?[*`_]*\s*(?P<label>[^:=\n]{1,100}?)\s*[*`]*\s*[:=]"
    r"\s*[*`]*\s*(?P<value>[Nn]\s*/\s*[Aa]|[^\s/*`,;()]+?)\s*(?:/\s*(?P<den>[0-9]+))?"
    r"\s*[*`]*\s*[.,;]?"
    r"\s*(?:\([^)\n]*\))?\s*$"
)
_HEADING_RE = re.compile(
    r"^[\s>*#\-\u2022]*(?:\d+[.)]\s+)?[*`_]*\s*(?P<label>[^:\n*`]{1,100}?)\s*[*`]*\s*(?::|$)"
)


def _from_lines(text: str, index: _SkillIndex) -> dict[str, int | None]:
    found: dict[str, object] = {}
    for line in text.splitlines():
        m = _LINE_RE.match(line)
        if not m:
            continue
        key = index.lookup(m.group("label").strip("*_` "))
        if key is not None:
            value = m.group("value")
            if m.group("den"):
                value = f"{value}/{m.group('den')}"
            found[key] = value  # the last occurrence wins
    return {key: index.value(key, value) for key, value in found.items()}


def _text_rationales(text: str, index: _SkillIndex) -> dict[str, str]:
    """Feedback paragraphs that start with a skill's name (or key), per skill."""
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        score_line = _LINE_RE.match(line)
        if score_line and index.lookup(score_line.group("label").strip("*_` ")):
            current = None  # a score line ends the feedback before it
            continue
        m = _HEADING_RE.match(line)
        key = index.lookup(m.group("label").strip("*_` ")) if m else None
        if key is not None:
            current = key
            sections[key] = []
            rest = line[m.end() :].strip().strip("*").strip() if m else ""
            if rest:
                sections[key].append(rest)
        elif current is not None:
            sections[current].append(line)
    return {k: "\n".join(v).strip() for k, v in sections.items()}


def _finish(
    scores: dict, rationales: dict, index: _SkillIndex, fmt: str
) -> PointwiseParse:
    missing = [k for k in index.keys if k not in scores]
    if missing:
        names = ", ".join(f"{index.names[k]} ({k})" for k in missing)
        raise ParseError(f"no score for {names}")
    return PointwiseParse(
        scores={k: scores[k] for k in index.keys},
        rationales={k: rationales.get(k, "") for k in index.keys},
        format=fmt,
    )


def parse_pointwise(
    text: str,
    skills: list[tuple[str, str]],
    scales: dict[str, Scale] | None = None,
) -> PointwiseParse:
    """Scores (None = N/A) for exactly the requested (key, display name) skills, each
    read against its `scales[key]` (FLASK's 1-5 when it has none) and returned as the
    Scale stores it (a point, or a categorical label's code)."""
    index = _SkillIndex(skills, scales)
    text = check_size(text)
    whole = whole_json(text)
    if isinstance(whole, dict):
        scores, rationales = _from_mapping(whole, index)
        return _finish(scores, rationales, index, "json")
    for start, obj in objects_from_end(text):
        if index.mentioned(obj) or index.mentioned(_score_mapping(obj, index)[0]):
            scores, rationales = _from_mapping(obj, index)
            prose = _text_rationales(text[:start], index)
            for key in scores:
                rationales[key] = rationales.get(key) or prose.get(key, "")
            return _finish(scores, rationales, index, "json_object_in_text")
    scores = _from_lines(text, index)
    if not scores:
        raise ParseError("found no scores (no JSON object and no 'Skill: n' lines)")
    return _finish(scores, _line_rationales(text, index), index, "lines")


def _line_rationales(text: str, index: _SkillIndex) -> dict[str, str]:
    """Rationales of a "lines" reply: paragraphs headed by a skill's name; in the FLAMe
    layout ("feedback: ..." then "skill_key: n" fields) the feedback field is split the
    same way, and a skill it does not name gets the whole feedback."""
    rationales = _text_rationales(text, index)
    feedback = field_text(text, "feedback")
    if feedback is None:
        return rationales
    kept = [
        line
        for line in feedback.splitlines()
        if not (
            (m := _LINE_RE.match(line)) and index.lookup(m.group("label").strip("*_` "))
        )
    ]
    feedback = "\n".join(kept).strip()
    split = _text_rationales(feedback, index)
    for key in index.keys:
        if not rationales.get(key):
            rationales[key] = split.get(key) or feedback
    return rationales


# --- Where each score sits in the text (for token probabilities) ----------------------

_STRING_RE = re.compile(r'"(?:[^"\\]|\\.)*"')
_COLON_RE = re.compile(r"\s*:\s*")
_BARE_VALUE_RE = re.compile(r"[^\s,}\]]+")


def score_spans(
    text: str, skills: list[tuple[str, str]], fmt: str
) -> dict[str, tuple[int, int]]:
    """Per skill key, the (start, end) character span in `text` of the value the
    parser read for it, for a reply `parse_pointwise` read as `fmt` (its
    `PointwiseParse.format`). A quoted value's span is inside its quotes. Skills whose
    value cannot be located are left out; never raises on any text."""
    index = _SkillIndex(skills)
    if fmt == "lines":
        return _line_spans(text, index)
    for start, candidate in reversed(balanced_objects(text)):
        value = load_object(candidate)
        if isinstance(value, dict) and (
            index.mentioned(value) or index.mentioned(_score_mapping(value, index)[0])
        ):
            return _object_spans(candidate, start, index)
    return {}


def _object_spans(obj: str, offset: int, index: _SkillIndex) -> dict:
    """Spans of the skills' values in the JSON object text `obj` (at `offset`):
    ``"skill": value`` or ``"skill": {..., "score": value}``; the last one wins, as
    a JSON reader keeps the last of a repeated key."""
    spans: dict[str, tuple[int, int]] = {}
    for m in _STRING_RE.finditer(obj):
        colon = _COLON_RE.match(obj, m.end())
        if not colon or not colon.group().strip():
            continue
        key = index.lookup(m.group()[1:-1])
        if key is None:
            continue
        at = colon.end()
        if obj.startswith("{", at):
            span = _entry_score_span(obj, at)
        else:
            span = _value_span(obj, at)
        if span is not None:
            spans[key] = (span[0] + offset, span[1] + offset)
    return spans


def _entry_score_span(obj: str, at: int) -> tuple[int, int] | None:
    inner = balanced_objects(obj[at:])
    inner_end = at + len(inner[0][1]) if inner and inner[0][0] == 0 else len(obj)
    found = None
    for m in _STRING_RE.finditer(obj, at, inner_end):
        colon = _COLON_RE.match(obj, m.end())
        if (
            colon
            and colon.group().strip()
            and normalize_label(m.group()[1:-1]) in (SCORE_KEYS)
        ):
            found = _value_span(obj, colon.end())
    return found


def _value_span(obj: str, at: int) -> tuple[int, int] | None:
    if obj.startswith('"', at):
        m = _STRING_RE.match(obj, at)
        return (at + 1, m.end() - 1) if m else None
    m = _BARE_VALUE_RE.match(obj, at)
    return m.span() if m else None


def _line_spans(text: str, index: _SkillIndex) -> dict[str, tuple[int, int]]:
    spans: dict[str, tuple[int, int]] = {}
    offset = 0
    for line in text.splitlines(keepends=True):
        m = _LINE_RE.match((line.splitlines() or [""])[0])
        if m:
            key = index.lookup(m.group("label").strip("*_` "))
            if key is not None:
                start, end = m.span("value")
                spans[key] = (offset + start, offset + end)  # the last one wins
        offset += len(line)
    return spans
