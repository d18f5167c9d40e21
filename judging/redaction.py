"""Every form a secret (a judge's API key) may take in text an endpoint sends back.

An endpoint that reflects our request headers (a debug proxy, a gateway) returns the
key verbatim, base64-encoded inside ``Bearer key`` or ``user:key``, URL-encoded,
reversed or cut. `scrub_secret` redacts every such form from a text before it reaches
the database, a page or a log; `holds_secret` tells whether a text holds one (a reply
that does is not kept: `judging.llm`). A run of `SECRET_MIN_CHARS` characters of a
form counts as the secret; shorter runs are too common to mean anything.
"""

from __future__ import annotations

import base64
import functools
from urllib.parse import quote, quote_plus

# The shortest run of a key's characters (in any of its forms) taken for the key.
SECRET_MIN_CHARS = 8


@functools.lru_cache(maxsize=64)
def secret_forms(secret: str) -> tuple[str, ...]:
    """The texts a reflected `secret` may appear as: itself, reversed, URL-encoded,
    hex, and the part of its base64 (standard and URL-safe) that is the same whatever
    comes before and after it (three alignments), so ``Bearer key`` or ``user:key``
    encoded whole is found too."""
    raw = secret.encode("utf-8")
    forms = {secret, secret[::-1], quote(secret, safe=""), quote_plus(secret)}
    forms |= {raw.hex(), raw.hex().upper()}
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw + b"\0\0\0").decode()
        # Characters mixing the key with what surrounds it differ from text to text.
        start = -(-offset * 4 // 3) + (1 if offset else 0)
        stable = encoded[start : (offset + len(raw)) * 4 // 3]
        forms |= {stable, stable.replace("+", "-").replace("/", "_")}
    return tuple(
        sorted(f for f in forms if len(f) >= min(SECRET_MIN_CHARS, len(secret)))
    )


def _secret_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """The (start, end) of every run of `SECRET_MIN_CHARS` or more characters of a
    form of `secret` in `text` (the whole form when it is shorter). Any such run holds
    a whole aligned block of half that length: only those are searched for, then
    grown while the text goes on matching the form."""
    spans = []
    for form in secret_forms(secret):
        need = min(SECRET_MIN_CHARS, len(form))
        block = max(1, need // 2)
        for at in range(0, len(form) - block + 1, block):
            found = text.find(form[at : at + block])
            while found >= 0:
                start, end, i = found, found + block, at
                while start > 0 and i > 0 and text[start - 1] == form[i - 1]:
                    start, i = start - 1, i - 1
                j = at + block
                while end < len(text) and j < len(form) and text[end] == form[j]:
                    end, j = end + 1, j + 1
                if end - start >= need:
                    spans.append((start, end))
                found = text.find(form[at : at + block], found + 1)
    return spans


def scrub_secret(text: str, secret: str | None) -> str:
    """`text` with every form of `secret` (`secret_forms`, runs of 8 characters or
    more) replaced by ``[redacted]``."""
    if not secret or not text:
        return text
    spans = sorted(_secret_spans(text, secret))
    if not spans:
        return text
    out, last = [], 0
    for start, end in spans:
        if end <= last:
            continue
        out.append(text[last : max(start, last)] + "[redacted]")
        last = end
    out.append(text[last:])
    return "".join(out)


def holds_secret(text: str, secret: str | None) -> bool:
    """Whether `text` holds any form of `secret` (what `scrub_secret` would redact)."""
    return bool(secret and text and _secret_spans(text, secret))
