"""The fake judge's token log-probabilities (`judging.fake_server`'s
``logprobs_spread`` setting): known distributions, so tests can assert exact
probability-weighted scores. Pure functions, no HTTP.

The reply is cut into tokens as a tokenizer might (a number with its leading space
and sign, a word with its leading space, each punctuation character, runs of
whitespace). Every number token gets the spread: ``{"0": p0, "+1": p1, "-2": p2,
"other": po}`` gives the chosen number probability p0 and the numbers chosen+1 and
chosen-2 (written like it, e.g. ``' 4'``) p1 and p2, and a token that is no number
(``' N'``) po; the top alternatives are these, most likely first, cut to the
request's ``top_logprobs``. Every other token is certain (logprob 0).
"""

from __future__ import annotations

import math
import re

_TOKEN_RE = re.compile(r" ?-?\d+| ?[^\W\d]+|\s+|[^\w\s]|.", re.DOTALL)
_NUMBER_RE = re.compile(r"( ?)(-?\d+)")


def tokens_of(text: str) -> list[str]:
    """`text` cut into tokens whose concatenation is `text`."""
    return _TOKEN_RE.findall(text)


def _entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": list(token.encode("utf-8"))}


def _alternatives(token: str, spread: dict, top: int) -> tuple[float, list[dict]]:
    m = _NUMBER_RE.fullmatch(token)
    if not m:
        return 0.0, [_entry(token, 0.0)]
    space, chosen = m.group(1), int(m.group(2))
    options: list[tuple[str, float]] = []
    for offset, p in spread.items():
        if p <= 0:
            continue
        if offset == "other":
            options.append((f"{space}N", p))
        else:
            options.append((f"{space}{chosen + int(offset)}", p))
    options.sort(key=lambda o: -o[1])
    own = float(spread.get("0", 1.0))
    alternatives = [_entry(t, math.log(p)) for t, p in options[:top]]
    return (math.log(own) if own > 0 else -100.0), alternatives


def token_logprobs(content: str, body: dict, spread: dict | None) -> dict | None:
    """The ``logprobs`` object of a choice answering `content` to the request
    `body`: None when the request did not ask for it or the server has no spread
    (an endpoint that returns none)."""
    if spread is None or not body.get("logprobs"):
        return None
    top = body.get("top_logprobs")
    top = top if isinstance(top, int) and top > 0 else 0
    out = []
    for token in tokens_of(content):
        logprob, alternatives = _alternatives(token, spread, top)
        entry = _entry(token, logprob)
        entry["top_logprobs"] = alternatives[:top]
        out.append(entry)
    return {"content": out, "refusal": None}
