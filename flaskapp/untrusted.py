"""Reading input nobody vouched for: JSON of bounded depth, text the database can store.

Three traps turned bad input into 500s, and this module is the one home of their rules:

- `json.loads` raises `RecursionError` (not `ValueError`) on deeply nested arrays such
  as ``[[[[...]]]]``; a value nested a few hundred levels deep that does parse can still
  overflow the stack later (validation, `json.dumps` into a JSON column). `json_loads`
  refuses both with `JSONInputError`, naming the top-level field that holds the value.
- PostgreSQL ``text`` and ``jsonb`` cannot hold NUL (``\\u0000``).
- A lone UTF-16 surrogate (JSON ``"\\ud800"``) is a Python string that cannot be
  encoded as UTF-8, so the database driver fails with `UnicodeEncodeError` on save.

- Python refuses to turn more than 4,300 digits into an int (a plain `ValueError`
  from `json.loads`, YAML's loader or `int()`, against quadratic-time conversion):
  `json_loads` refuses such a number with `JSONInputError` naming its field, and
  `int_text_problem` says so for a digit string before anyone calls `int()` on it.

`text_problem` says what is wrong with one string (or None); `json_problem` finds the
first such string, or a too-deep value, anywhere in a parsed JSON value. The API's JSON
parser (`flaskapp.api`), every importer and the services' text checks call them.
"""

from __future__ import annotations

import json
import re
from typing import Any

# Deeper than any JSON this application reads; far below Python's recursion limit.
MAX_JSON_DEPTH = 64
# Python's default int-str conversion limit (`sys.get_int_max_str_digits`): longer
# digit strings make `int()` raise ValueError, so they are refused before it is called.
MAX_INT_DIGITS = 4300
LONG_INTEGER = f"holds a whole number of more than {MAX_INT_DIGITS:,} digits"

_SURROGATE = re.compile("[\ud800-\udfff]")


class JSONInputError(ValueError):
    """JSON that parses but cannot be used; `field` is the top-level key, if any."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


def text_problem(value: str) -> str | None:
    """Why `value` cannot be stored as text (a NUL or a lone surrogate), else None."""
    if "\x00" in value:
        return "contains a NUL character (\\u0000), which cannot be stored"
    match = _SURROGATE.search(value)
    if match:
        return (
            f"contains a lone surrogate (\\u{ord(match.group()):04x}), which is not "
            "valid Unicode and cannot be stored"
        )
    return None


def int_text_problem(text: str) -> str | None:
    """Why the digit string `text` (an optional sign, then digits) cannot be read as
    an int (`LONG_INTEGER`), else None; call it before `int(text)` on untrusted text."""
    digits = text.strip().lstrip("+-")
    return LONG_INTEGER if len(digits) > MAX_INT_DIGITS else None


def json_syntax_error(exc: json.JSONDecodeError, *, with_line: bool = False) -> str:
    """`exc`'s message with where it happened: "Expecting value at column 7".

    Some of `json`'s messages already end with "at" ("Unterminated string starting
    at", "Invalid control character at"); the position follows them directly, so
    no message reads "at at". `with_line` adds the line ("at line 1 column 7").
    """
    where = (
        f"line {exc.lineno} column {exc.colno}" if with_line else f"column {exc.colno}"
    )
    if exc.msg.endswith(" at"):
        return f"{exc.msg} {where}"
    return f"{exc.msg} at {where}"


def printable(value: str | None) -> str | None:
    """`value` with NUL and lone surrogates escaped, safe to store in an error message."""
    if value is None or text_problem(value) is None:
        return value
    escaped = value.encode("utf-8", "backslashreplace").decode("utf-8")
    return escaped.replace("\x00", "\\u0000")


def json_problem(
    value: Any, *, max_depth: int = MAX_JSON_DEPTH
) -> JSONInputError | None:
    """The first reason a parsed JSON `value` cannot be used, else None.

    Walks the value without recursion (it may be deep): nesting beyond `max_depth`, or
    a string or key that `text_problem` refuses. The error's `field` is the top-level
    key under which the problem sits (None for a top-level array or scalar).
    """
    stack: list[tuple[Any, int, str | None]] = [(value, 1, None)]
    while stack:
        item, depth, field = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return JSONInputError(problem, field)
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > max_depth:
            return JSONInputError(f"is nested more than {max_depth} levels deep", field)
        if isinstance(item, dict):
            for key, child in item.items():
                problem = text_problem(key)
                child_field = key if depth == 1 else field
                if problem:
                    return JSONInputError(f"a key {problem}", printable(child_field))
                stack.append((child, depth + 1, child_field))
        else:
            stack.extend((child, depth + 1, field) for child in item)
    return None


def _no_constant(name: str):
    raise JSONInputError(f"holds {name}, which is not valid JSON")


def json_loads(
    text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH, allow_nan: bool = False
) -> Any:
    """`json.loads` for untrusted text: `json.JSONDecodeError` for bad syntax as usual,
    `JSONInputError` for a value `json_problem` refuses (or too deep to parse), and
    for NaN / Infinity unless `allow_nan` (the importers report those per field)."""
    try:
        value = json.loads(text, parse_constant=None if allow_nan else _no_constant)
    except RecursionError:
        raise JSONInputError(
            f"is nested more than {max_depth} levels deep", _deep_field(text, max_depth)
        ) from None
    except (JSONInputError, json.JSONDecodeError):
        raise
    except ValueError:
        # Not a syntax error: an integer past Python's int-str limit (no hook needed,
        # so ordinary numbers keep the C scanner's speed).
        field, line = _scan(text, max_depth)
        if line is None:
            raise
        raise JSONInputError(LONG_INTEGER, field) from None
    if _may_hold_a_problem(text, max_depth):
        problem = json_problem(value, max_depth=max_depth)
        if problem is not None:
            raise problem
    return value


def _may_hold_a_problem(text: str | bytes, max_depth: int) -> bool:
    """False when the JSON `text` that parsed cannot hold what `json_problem` refuses,
    so the walk over every string of the value can be skipped (the common case).

    A NUL or a lone surrogate in a parsed string comes either from the text itself
    (a NUL outside a string, or raw inside one, is a syntax error; a surrogate is in
    a `str` only if it was put there, not by strict UTF-8 decoding, and is looked
    for) or from a ``\\u`` escape; and a value cannot nest deeper than the number of
    ``[`` and ``{`` in its text.
    """
    if isinstance(text, bytes):
        # `json.loads` may decode bytes as UTF-16 or with surrogatepass: only plain
        # ASCII without NUL is known to be read as itself.
        return (
            not text.isascii()
            or b"\\u" in text
            or b"\x00" in text
            or text.count(b"[") + text.count(b"{") > max_depth
        )
    return (
        "\\u" in text
        or "\x00" in text
        or text.count("[") + text.count("{") > max_depth
        or _SURROGATE.search(text) is not None
    )


_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|[\[\]{}:]|-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?'
)


def _scan(text: str | bytes, max_depth: int) -> tuple[str | None, int | None]:
    """(top-level key, line) of the first place in JSON `text` that nests past
    `max_depth`, holds a string `text_problem` refuses or an integer longer than
    `MAX_INT_DIGITS`: a scan of the tokens, for
    text the parser cannot handle and to point at a line of a multi-line document."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    depth, key, last = 0, None, None
    for match in _TOKEN.finditer(text):
        token = match.group()
        string = _json_string(token) if token.startswith('"') else None
        bad = False
        if token in "[{":
            depth += 1
            bad = depth > max_depth
        elif token in "]}":
            depth -= 1
        elif token == ":" and depth == 1 and last is not None:
            key = last
        elif string is not None:
            bad = text_problem(string) is not None
        elif token[-1].isdigit() and token.lstrip("-").isdigit():  # an integer
            bad = int_text_problem(token) is not None
        if bad:
            return printable(key), text.count("\n", 0, match.start()) + 1
        last = string
    return None, None


def _json_string(token: str) -> str | None:
    """A JSON string token decoded (None when it does not decode)."""
    try:
        value = json.loads(token)
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _deep_field(text: str | bytes, max_depth: int) -> str | None:
    return _scan(text, max_depth)[0]


def json_problem_line(
    text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH
) -> int | None:
    """The line of JSON `text` where `json_loads` first finds a problem (see `_scan`)."""
    return _scan(text, max_depth)[1]
