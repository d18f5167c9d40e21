"""Probability-weighted scores (G-Eval): a criterion's expected score from the judge's
token log-probabilities. Pure functions, no Django, no I/O.

What the endpoint returns (OpenAI's ``choices[0].logprobs.content``): one entry per
output token, ``{"token", "logprob", "bytes", "top_logprobs": [{"token", "logprob",
"bytes"}, ...]}``. `judging.llm` hands that list on as it came (`ChatResult.
token_logprobs`; None when the endpoint returned none).

The rule, one home (`weigh_value`): for the value the parser read for a criterion
(its character span in the reply, `judging.parsing.score_spans`), take the first
output token that overlaps it and read each of that token's top alternatives as a
value of the criterion's scale (spaces, quotes, ``:``, ``*`` around it ignored:
``' 4'``, ``'"4'``, ``'4,'``). Alternatives that are no value of the scale (``'N'``,
``'6'`` on 1-5, a word) are left out. With p = exp(logprob):

- ``expected_score`` = sum(value x p) / sum(p) over the scale's values found
  (renormalised over them);
- ``mass`` = sum(p) over those values: how much of the token's probability the
  expected score stands on (1.0 when every alternative was a value).

A value written in several tokens (``"10"`` as ``"1"`` + ``"0"``, ``"-2"`` as ``"-"``
+ ``"2"``): the alternative that is the chosen first token stands for the whole
chosen value; every other alternative is read alone (``"9"`` is 9, ``"1"`` next to a
chosen ``"-"`` is 1), i.e. the continuation of a differing first token is assumed to
end the number. The chosen token is counted even when the endpoint left it out of
its top alternatives.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# Around a value inside one token: whitespace, JSON quotes, a key's colon, markdown.
_LEAD = " \t\r\n\"':=*`"
_TRAIL = " \t\r\n\"'.,;}*`)"
_INTEGER_RE = re.compile(r"[+-]?[0-9]+")

DEFAULT_TOP = 5  # top_logprobs when a request asks without a number
NO_LOGPROBS_NOTE = "the endpoint returned no token probabilities; integer scores only"


@dataclass(frozen=True)
class Weighted:
    """A criterion's probability-weighted value: `expected_score` (renormalised over
    the scale's values found among the top alternatives) and `mass` (their summed
    probability, 0..1)."""

    expected_score: float
    mass: float


def token_value(token: str, values: frozenset[int]) -> int | None:
    """The scale value a token's text stands for alone, or None (not a value)."""
    word = token.strip(_LEAD).rstrip(_TRAIL)
    if not _INTEGER_RE.fullmatch(word):
        return None
    value = int(word)
    return value if value in values else None


def _token_bytes(entry: dict) -> bytes:
    raw = entry.get("bytes")
    if isinstance(raw, list) and all(isinstance(b, int) and 0 <= b < 256 for b in raw):
        return bytes(raw)
    return str(entry.get("token") or "").encode("utf-8")


def _probability(entry: object) -> float | None:
    if not isinstance(entry, dict):
        return None
    logprob = entry.get("logprob")
    if isinstance(logprob, bool) or not isinstance(logprob, int | float):
        return None
    if math.isnan(logprob) or logprob > 0:
        return None if math.isnan(logprob) else 1.0
    return math.exp(logprob)


def first_token_at(tokens: list[dict], text: str, start: int) -> int | None:
    """The index of the first token that covers character `start` of `text`
    (offsets counted in UTF-8 bytes, from each token's ``bytes`` when given)."""
    target = len(text[:start].encode("utf-8"))
    at = 0
    for i, entry in enumerate(tokens):
        if not isinstance(entry, dict):
            return None
        at += len(_token_bytes(entry))
        if at > target:
            return i
    return None


def weigh_value(
    tokens: list[dict],
    text: str,
    span: tuple[int, int],
    chosen: int,
    values: tuple[int, ...],
) -> Weighted | None:
    """The expected score and covered mass of the value `chosen` the parser read at
    character `span` of `text`, from the endpoint's output `tokens`; None when the
    tokens do not reach the span or no alternative is a value of `values`."""
    i = first_token_at(tokens, text, span[0])
    if i is None:
        return None
    entry = tokens[i]
    allowed = frozenset(values)
    chosen_token = str(entry.get("token") or "")
    alternatives = entry.get("top_logprobs")
    alternatives = list(alternatives) if isinstance(alternatives, list) else []
    if not any(
        isinstance(a, dict) and a.get("token") == chosen_token for a in alternatives
    ):
        alternatives.append(entry)
    by_value: dict[int, float] = {}
    seen: set[str] = set()
    for alt in alternatives:
        p = _probability(alt)
        token = str(alt.get("token") or "") if isinstance(alt, dict) else ""
        if p is None or token in seen:
            continue
        seen.add(token)
        value = chosen if token == chosen_token else token_value(token, allowed)
        if value is None or value not in allowed:
            continue
        by_value[value] = by_value.get(value, 0.0) + p
    mass = sum(by_value.values())
    if mass <= 0:
        return None
    expected = sum(v * p for v, p in by_value.items()) / mass
    return Weighted(expected_score=expected, mass=min(1.0, mass))


def content_tokens(logprobs: object) -> list[dict] | None:
    """The token list of a reply's ``choices[0].logprobs`` (None when there is
    none: the endpoint returned no token probabilities)."""
    if not isinstance(logprobs, dict):
        return None
    content = logprobs.get("content")
    if not isinstance(content, list) or not content:
        return None
    return [t for t in content if isinstance(t, dict)]


def logprob_request_fields(*, logprobs: bool, top_logprobs: int | None) -> dict:
    """The request body's fields that ask for token probabilities ({} when not
    asked)."""
    if not logprobs:
        return {}
    return {"logprobs": True, "top_logprobs": int(top_logprobs or DEFAULT_TOP)}
