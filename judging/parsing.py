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

import ast
import json
import re
from dataclasses import dataclass

from annotation.importers.base import is_na
from annotation.scales import Scale

MAX_TEXT_CHARS = 200_000

_WRAPPER_KEYS = (
    "scores",
    "score",
    "ratings",
    "rating",
    "skills",
    "results",
    "evaluation",
)
_FEEDBACK_KEYS = ("feedback", "rationale", "reasoning", "explanation", "comment")
_SCORE_KEYS = ("score", "rating", "value", "label")


class ParseError(ValueError):
    """The output cannot be read as the requested answer; `reason` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class PointwiseParse:
    scores: dict[str, int | None]  # None = N/A
    rationales: dict[str, str]
    format: str  # "json" | "json_object_in_text" | "lines"


def normalize_label(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", str(text).strip().lower())


# --- Finding JSON in text -------------------------------------------------------------


def _strip_fences(text: str) -> str:
    text = text.strip()
    m = re.fullmatch(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?\s*```", text, re.DOTALL)
    return m.group(1).strip() if m else text


def _match_brace(text: str, start: int) -> int | None:
    """Index of the "}" closing the "{" at `start` (double-quoted strings skipped)."""
    depth = 0
    in_string = False
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return i
    return None


def balanced_objects(text: str) -> list[tuple[int, str]]:
    """Outermost balanced ``{...}`` spans as (start index, text), in order."""
    spans: list[tuple[int, str]] = []
    i = 0
    while True:
        i = text.find("{", i)
        if i < 0:
            return spans
        end = _match_brace(text, i)
        if end is None:
            i += 1
            continue
        spans.append((i, text[i : end + 1]))
        i = end + 1


def load_object(candidate: str) -> object | None:
    """JSON, else a Python literal (single quotes, None); None when neither parses."""
    try:
        return json.loads(candidate)
    except (ValueError, RecursionError):  # a reply nested too deep is unreadable too
        pass
    try:
        return ast.literal_eval(candidate)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _whole_json(text: str) -> object | None:
    body = _strip_fences(text)
    if not body.startswith(("{", "[")):
        return None
    return load_object(body)


def _objects_from_end(text: str):
    """(start, parsed dict) for each balanced object that parses, last first."""
    for start, candidate in reversed(balanced_objects(text)):
        value = load_object(candidate)
        if isinstance(value, dict):
            yield start, value


def _check_size(text: str) -> str:
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the judge returned an empty reply")
    if len(text) > MAX_TEXT_CHARS:
        raise ParseError(f"the reply is too long to parse ({len(text)} characters)")
    return text


# --- Pointwise --------------------------------------------------------------------------


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
    for key in _WRAPPER_KEYS:
        for k, v in obj.items():
            if normalize_label(k) == key and isinstance(v, dict) and index.mentioned(v):
                feedback = next(
                    (
                        fv
                        for fk, fv in obj.items()
                        if normalize_label(fk) in _FEEDBACK_KEYS
                        and isinstance(fv, dict)
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
            score_field = next((f for f in _SCORE_KEYS if f in entry), None)
            if score_field is None:
                raise ParseError(f"skill {key!r}: the entry has no score")
            rationale = next((str(entry[f]) for f in _FEEDBACK_KEYS if f in entry), "")
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
    text = _check_size(text)
    whole = _whole_json(text)
    if isinstance(whole, dict):
        scores, rationales = _from_mapping(whole, index)
        return _finish(scores, rationales, index, "json")
    for start, obj in _objects_from_end(text):
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
    feedback = _field_text(text, "feedback")
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


# --- Pairwise -----------------------------------------------------------------------------

_VERDICT_KEYS = (
    "winner",
    "verdict",
    "preference",
    "preferred",
    "better",
    "choice",
    "answer",
)
_RATIONALE_KEYS = ("rationale", "explanation", "reasoning", "reason", "feedback")
_VERDICT_LINE_RE = re.compile(
    r"^[\s>*#\-]*(?:final\s+)?(?:verdict|winner|preference|better answer)\s*[*]*\s*[:=]"
    r"\s*[*`\"'\[]*\s*(?P<value>[^\s*`\"'\].]+(?:\s+[ab])?)",
    re.IGNORECASE | re.MULTILINE,
)
_BRACKET_RE = re.compile(r"\[\[\s*(A|B|C|tie)\s*\]\]", re.IGNORECASE)


def _verdict_value(value: object, allow_tie: bool) -> str:
    word = normalize_label(str(value)).strip(".'\"[]")
    word = re.sub(r"^(answer|response|assistant|output)", "", word)
    if word in ("a", "b"):
        return word.upper()
    if word in ("tie", "draw", "equal", "c"):
        if not allow_tie:
            raise ParseError("the judge answered 'tie' but a tie is not allowed")
        return "tie"
    raise ParseError(f"{value!r} is not a verdict (A, B or tie)")


def parse_pairwise(text: str, *, allow_tie: bool) -> tuple[str, str]:
    """("A" | "B" | "tie", rationale)."""
    text = _check_size(text)
    whole = _whole_json(text)
    candidates = (
        [whole] if isinstance(whole, dict) else [o for _, o in _objects_from_end(text)]
    )
    for obj in candidates:
        entry = {normalize_label(k): v for k, v in obj.items()}
        field = next((k for k in _VERDICT_KEYS if k in entry), None)
        if field is None:
            continue
        rationale = next((str(entry[k]) for k in _RATIONALE_KEYS if k in entry), "")
        if not rationale and whole is None:
            rationale = text[: text.rfind("{")].strip()
        return _verdict_value(entry[field], allow_tie), rationale
    lines = list(_VERDICT_LINE_RE.finditer(text))
    if lines:
        last = lines[-1]
        return _verdict_value(last.group("value"), allow_tie), text[
            : last.start()
        ].strip()
    brackets = list(_BRACKET_RE.finditer(text))
    if brackets:
        last = brackets[-1]
        return _verdict_value(last.group(1), allow_tie), text[: last.start()].strip()
    raise ParseError("found no verdict (expected 'Verdict: A' or a JSON 'winner')")


# --- Classification and critique --------------------------------------------------------

_LABEL_KEYS = ("label", "classification", "class", "answer", "verdict")
_LABEL_LINE_RE = re.compile(
    r"^[\s>*#\-]*(?:final\s+)?(?:label|classification|class)\s*[*`]*\s*[:=]\s*"
    r"(?P<value>.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_FIELD_RE = re.compile(
    r"^[\s>*#\-]*[*`_]*\s*(?P<label>[A-Za-z][A-Za-z _-]{0,40}?)"
    r"\s*[*`_]*\s*:\s*(?P<rest>.*)$"
)


def _label_value(value: object, labels: list[str]) -> str:
    word = str(value).strip().strip("*`\"'[]().").strip()
    by_norm = {normalize_label(label): label for label in labels}
    found = by_norm.get(normalize_label(word))
    if found is None:
        raise ParseError(
            f"{str(value)[:80]!r} is not one of the labels {', '.join(labels)}"
        )
    return found


def _field_text(text: str, name: str) -> str | None:
    """The value of a "name: value" field, running on over the following lines until
    the next "field:" line that is not part of it; None when there is no such field."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _FIELD_RE.match(line)
        if m and normalize_label(m.group("label")) == normalize_label(name):
            out = [m.group("rest").lstrip("*`_ ")]
            for follow in lines[i + 1 :]:
                other = _FIELD_RE.match(follow)
                if other and normalize_label(other.group("label")) in _FLAME_FIELDS:
                    break
                out.append(follow)
            return "\n".join(out).strip()
    return None


_FLAME_FIELDS = {"label", "rationale", "critique", "feedback", "winner", "verdict"}


def parse_classification(text: str, *, labels: list[str]) -> tuple[str, str]:
    """(one of `labels`, rationale).

    Read from a JSON object's "label" (or "classification", "answer", "verdict"), else
    the last "label: <value>" line, else a reply that is nothing but a label. Labels
    match exactly once case, spaces, hyphens and underscores are ignored; a value that
    is not a label raises `ParseError` naming it.
    """
    if len(labels) < 2:
        raise ValueError("need at least two labels")
    text = _check_size(text)
    whole = _whole_json(text)
    candidates = (
        [whole] if isinstance(whole, dict) else [o for _, o in _objects_from_end(text)]
    )
    for obj in candidates:
        entry = {normalize_label(k): v for k, v in obj.items()}
        field = next((k for k in _LABEL_KEYS if k in entry), None)
        if field is None:
            continue
        rationale = next((str(entry[k]) for k in _RATIONALE_KEYS if k in entry), "")
        return _label_value(entry[field], labels), rationale
    lines = list(_LABEL_LINE_RE.finditer(text))
    if lines:
        last = lines[-1]
        rationale = _field_text(text, "rationale")
        if rationale is None:
            rationale = text[: last.start()].strip()
        return _label_value(last.group("value"), labels), rationale
    try:
        return _label_value(text, labels), ""
    except ParseError:
        raise ParseError(
            "found no label (expected 'label: <one of "
            + ", ".join(labels)
            + ">' or a JSON 'label')"
        ) from None


def parse_critique(text: str) -> str:
    """The critique text: a JSON object's "critique", else what follows a
    "critique:" field, else the whole reply. Empty critiques raise `ParseError`."""
    text = _check_size(text)
    whole = _whole_json(text)
    if isinstance(whole, dict):
        entry = {normalize_label(k): v for k, v in whole.items()}
        value = entry.get("critique", entry.get("feedback"))
        if not isinstance(value, str):
            raise ParseError("the JSON reply has no 'critique' text")
        critique = value.strip()
    else:
        field = _field_text(text, "critique")
        critique = (field if field is not None else text).strip()
    if not critique:
        raise ParseError("the critique is empty")
    return critique


# --- Metadata and checklist --------------------------------------------------------------


def _json_reply(text: str, wanted: tuple[str, ...]) -> dict:
    text = _check_size(text)
    whole = _whole_json(text)
    if isinstance(whole, dict):
        return whole
    for _, obj in _objects_from_end(text):
        if any(normalize_label(k) in wanted for k in obj):
            return obj
    raise ParseError("found no JSON object in the reply")


def _match_keys(values: object, allowed: list[str], what: str) -> list[str]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        raise ParseError(f"{what}: expected a list, got {values!r}")
    by_norm = {normalize_label(a): a for a in allowed}
    out: list[str] = []
    for value in values:
        key = by_norm.get(normalize_label(str(value)))
        if key is None:
            raise ParseError(f"{what}: {value!r} is not one of {', '.join(allowed)}")
        if key not in out:
            out.append(key)
    return out


def _difficulty(value: object) -> int | None:
    try:
        return score_value("difficulty", value)
    except ParseError:
        raise ParseError(f"difficulty: {value!r} is not a level from 1 to 5") from None


def parse_metadata(text: str, *, domains: list[str], skill_keys: list[str]) -> dict:
    """{"domains": 1-2 keys, "difficulty": 1-5 or None, "skills": 1-3 keys}."""
    obj = _json_reply(text, ("domains", "difficulty", "skills"))
    entry = {normalize_label(k): v for k, v in obj.items()}
    for field in ("domains", "difficulty", "skills"):
        if field not in entry:
            raise ParseError(f"the reply has no {field!r}")
    found_domains = _match_keys(entry["domains"], domains, "domains")
    if not 1 <= len(found_domains) <= 2:
        raise ParseError(f"domains: expected 1 or 2, got {len(found_domains)}")
    skills = _match_keys(entry["skills"], skill_keys, "skills")
    if not 1 <= len(skills) <= 3:
        raise ParseError(f"skills: expected 1 to 3, got {len(skills)}")
    return {
        "domains": found_domains,
        "difficulty": _difficulty(entry["difficulty"]),
        "skills": skills,
    }


def parse_checklist(text: str, *, skill_keys: list[str]) -> list[dict]:
    """[{"skill": key or None, "question": str}, ...] in the order given."""
    wanted = tuple(
        normalize_label(k) for k in [*skill_keys, "checklist", "items", "general"]
    )
    text = _check_size(text)
    whole = _whole_json(text)
    if isinstance(whole, list):
        obj: object = {"checklist": whole}
    elif isinstance(whole, dict):
        obj = whole
    else:
        obj = _json_reply(text, wanted + ("generalquestions",))
    assert isinstance(obj, dict)
    by_norm = {normalize_label(k): k for k in skill_keys}
    general = {"general", "generalquestions"}
    items: list[dict] = []

    def add(skill: object, question: object) -> None:
        if not isinstance(question, str):
            raise ParseError(f"checklist question {question!r} is not text")
        if not question.strip():
            return
        if skill is None or is_na(skill) or normalize_label(str(skill)) in general:
            items.append({"skill": None, "question": question.strip()})
            return
        key = by_norm.get(normalize_label(str(skill)))
        if key is None:
            raise ParseError(f"checklist: {skill!r} is not a requested skill")
        items.append({"skill": key, "question": question.strip()})

    listed = next(
        (v for k, v in obj.items() if normalize_label(k) in ("checklist", "items")),
        None,
    )
    if isinstance(listed, list):
        for item in listed:
            if not isinstance(item, dict) or "question" not in item:
                raise ParseError(f"checklist item {item!r} has no 'question'")
            add(item.get("skill"), item["question"])
    else:
        for label, questions in obj.items():
            if (
                normalize_label(label) not in by_norm
                and normalize_label(label) not in general
                and not is_na(label)
            ):
                continue
            for question in questions if isinstance(questions, list) else [questions]:
                add(label, question)
    if not items:
        raise ParseError("the checklist has no questions")
    return items
