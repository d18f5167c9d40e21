"""Whole numbers from query strings and form fields: one parser for every view and API.

`str.isdigit()` is true for "²" and other Unicode digits that `int()` refuses, so
``int(raw) if raw.isdigit()`` was a 500 waiting for a superscript. Everything here
accepts ASCII digits only (an optional leading minus), and refuses anything else with
`BadParameter`, a `DomainError` that names the parameter: the DRF exception handler
(`flaskapp.api`) answers it with a 400 JSON body, `flaskapp.middleware` with a 400 page.

Bounds come from the caller, usually a `flaskapp.bounds.Bound`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from flaskapp.errors import DomainError, Problem

_INT = re.compile(r"-?[0-9]+")
# Longer than any id or count; also keeps int() far from its digit limit.
_MAX_DIGITS = 30


class BadParameter(DomainError):
    """A query or form parameter that does not parse or is out of bounds (a 400)."""

    def __init__(self, name: str, message: str):
        super().__init__(f"bad parameter `{name}`", [Problem(message, field=name)])
        self.name = name


def ascii_int(raw: object) -> int | None:
    """The int written in ASCII digits (optional minus) in `raw`, else None."""
    text = str(raw).strip() if raw is not None else ""
    if len(text) > _MAX_DIGITS or not _INT.fullmatch(text):
        return None
    return int(text)


def parse_int(
    raw: object,
    name: str,
    *,
    min_value: int | None = None,
    max_value: int | None = None,
) -> int:
    """`raw` as an int within [min_value, max_value]; `BadParameter` naming `name`."""
    value = ascii_int(raw)
    if value is None:
        text = str(raw).strip()
        if _INT.fullmatch(text):  # a whole number, but longer than any id or count
            too_many = f"is a whole number of {len(text.lstrip('-')):,} digits"
            if min_value is None and max_value is None:
                raise BadParameter(name, f"{too_many}, too many")
            raise BadParameter(
                name, f"{too_many}; it {_range_message(min_value, max_value)}"
            )
        raise BadParameter(name, f"{text[:40]!r} is not a whole number")
    if min_value is not None and value < min_value:
        raise BadParameter(name, _range_message(min_value, max_value))
    if max_value is not None and value > max_value:
        raise BadParameter(name, _range_message(min_value, max_value))
    return value


def _range_message(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"must be a whole number from {low} to {high}"
    if low is not None:
        return f"must be at least {low}"
    return f"must be at most {high}"


def int_param(
    params: Mapping,
    name: str,
    default: int | None = None,
    *,
    min_value: int | None = None,
    max_value: int | None = None,
) -> int | None:
    """`params[name]` (`request.GET`, `request.POST`, `request.query_params`) as an
    int; `default` when absent or blank; `BadParameter` when it is not a whole number
    within the bounds."""
    raw = params.get(name)
    if raw is None or not str(raw).strip():
        return default
    return parse_int(raw, name, min_value=min_value, max_value=max_value)


def int_list_param(
    params, name: str, *, min_value: int | None = 1, max_value: int | None = None
) -> list[int]:
    """Every int of a repeatable parameter (``?run=1&run=2`` or ``?run=1,2``), in
    order, without repeats; `BadParameter` for a value that is not one."""
    values: list[int] = []
    for raw in params.getlist(name):
        for part in str(raw).split(","):
            if part.strip():
                value = parse_int(part, name, min_value=min_value, max_value=max_value)
                if value not in values:
                    values.append(value)
    return values
