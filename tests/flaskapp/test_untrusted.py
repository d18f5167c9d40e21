"""`flaskapp.untrusted.json_loads` skips its walk over every string when the text
cannot hold a NUL, a lone surrogate or a too-deep value; it must refuse exactly what
the full walk refuses, for any text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flaskapp.untrusted import (
    LONG_INTEGER,
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    JSONInputError,
    json_loads,
    json_problem,
    json_problem_line,
)


def reference(text):
    """json.loads, then the full walk: what json_loads did before the shortcut."""
    try:
        value = json.loads(text)
    except RecursionError:
        return "error"
    except json.JSONDecodeError:
        return "syntax"
    except UnicodeDecodeError:
        return "syntax"
    problem = json_problem(value)
    return "error" if problem is not None else value


def ours(text):
    try:
        return json_loads(text, allow_nan=True)
    except JSONInputError:
        return "error"
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "syntax"


HOSTILE = [
    '{"a": "\\u0000"}',
    '{"a": "x\\ud800y"}',
    '{"\\udfff": 1}',
    '{"a": "\\\\u0000"}',  # an escaped backslash, then "u0000": harmless
    '{"a": "\ud800"}',  # a raw lone surrogate in the str
    "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1),
    "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH,
    '{"a": "' + "[" * 200 + '"}',  # brackets inside a string: not deep
    '{"a": "plain text, nothing to see"}',
    '"\\u00e9t\\u00e9"',
]


@pytest.mark.parametrize("text", HOSTILE)
def test_known_hostile_texts_are_refused_as_the_full_walk_refuses(text):
    assert ours(text) == reference(text)


@pytest.mark.parametrize("text", HOSTILE[:3] + HOSTILE[5:7])
def test_as_bytes_too(text):
    data = text.encode("utf-8")
    assert ours(data) == reference(data)


def test_utf8_encoded_surrogate_bytes_are_refused():
    # json.loads decodes bytes with surrogatepass: \xed\xa0\x80 becomes U+D800.
    data = b'{"a": "\xed\xa0\x80"}'
    assert reference(data) == "error"
    assert ours(data) == "error"


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(
        alphabet=st.characters(codec=None, min_codepoint=0, max_codepoint=0xFFFF)
    ),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=80,
)


@settings(max_examples=400, deadline=None)
@given(json_values, st.booleans())
def test_any_value_is_refused_exactly_when_the_full_walk_refuses_it(value, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert ours(text) == reference(text)


def test_an_integer_past_the_int_str_limit_is_refused_naming_its_field_and_line():
    long = "1" * (MAX_INT_DIGITS + 1)
    text = '{"a": 1,\n "b": [2, ' + long + "]}"
    with pytest.raises(JSONInputError) as refused:
        json_loads(text)
    assert (refused.value.field, refused.value.message) == ("b", LONG_INTEGER)
    assert json_problem_line(text) == 2
    # At the limit, as text, or as a float's long fraction: a value like any other.
    assert json_loads("-" + "9" * MAX_INT_DIGITS) == -int("9" * MAX_INT_DIGITS)
    assert json_loads(f'{{"a": "{long}", "b": 1.{long}}}')["a"] == long
    assert json_problem_line(f'{{"a": 1.{long},\n "b": [[[1]]]}}', max_depth=2) == 2
