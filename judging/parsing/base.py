"""What every judge-output parser shares: `ParseError`, label normalisation, finding
JSON in text, and "field: value" fields of the FLAMe layout. Pure, no Django."""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass

MAX_TEXT_CHARS = 200_000

# The key spellings judges use in their JSON, shared by every parser of the package.
WRAPPER_KEYS = (
    "scores",
    "score",
    "ratings",
    "rating",
    "skills",
    "results",
    "evaluation",
)
FEEDBACK_KEYS = ("feedback", "rationale", "reasoning", "explanation", "comment")
SCORE_KEYS = ("score", "rating", "value", "label")


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


def whole_json(text: str) -> object | None:
    """The object or list when the whole of `text` (code fences stripped) is one
    JSON or Python-literal value, else None."""
    body = _strip_fences(text)
    if not body.startswith(("{", "[")):
        return None
    return load_object(body)


def objects_from_end(text: str):
    """(start, parsed dict) for each balanced object that parses, last first."""
    for start, candidate in reversed(balanced_objects(text)):
        value = load_object(candidate)
        if isinstance(value, dict):
            yield start, value


def check_size(text: str) -> str:
    """`text` itself when it is a non-blank string of at most MAX_TEXT_CHARS;
    ParseError otherwise. Every parser calls it first."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("the judge returned an empty reply")
    if len(text) > MAX_TEXT_CHARS:
        raise ParseError(f"the reply is too long to parse ({len(text)} characters)")
    return text


RATIONALE_KEYS = ("rationale", "explanation", "reasoning", "reason", "feedback")
_FIELD_RE = re.compile(
    r"^[\s>*#\-]*[*`_]*\s*(?P<label>[A-Za-z][A-Za-z _-]{0,40}?)"
    r"\s*[*`_]*\s*:\s*(?P<rest>.*)$"
)


def field_text(text: str, name: str) -> str | None:
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
