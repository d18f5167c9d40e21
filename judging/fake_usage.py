"""The fake judge server's usage report, as OpenAI documents it (a dev tool).

`PrefixCache` imitates provider prompt caching: a prompt's prefix is cached once a
call with it has been seen, in steps of `CACHE_STEP_TOKENS` from `CACHE_MIN_TOKENS`
on (OpenAI: "cache hits for prompts of 1,024 tokens or more, in increments of 128
tokens"); the model and the ``response_format`` are part of the prefix. Tokens are
counted as the server counts them everywhere: four characters of the joined message
contents (`fake_replies.prompt_text`) per token.

`usage_for` builds the ``usage`` object of a reply: ``prompt_tokens_details.
cached_tokens`` (always present, 0 without a cache hit, as OpenAI answers) and, when
the server is told to reason, ``completion_tokens_details.reasoning_tokens`` that are
part of ``completion_tokens``.
"""

from __future__ import annotations

import hashlib
import json

from judging.costs import PROMPT_CACHE_MIN_TOKENS, PROMPT_CACHE_STEP_TOKENS
from judging.fake_replies import prompt_text

CACHE_MIN_TOKENS = PROMPT_CACHE_MIN_TOKENS
CACHE_STEP_TOKENS = PROMPT_CACHE_STEP_TOKENS
CHARS_PER_TOKEN = 4


class PrefixCache:
    """Prefixes seen so far (hashes at every cacheable boundary)."""

    def __init__(self) -> None:
        self._seen: set[bytes] = set()

    def __len__(self) -> int:
        return len(self._seen)

    def clear(self) -> None:
        self._seen.clear()

    def lookup_and_store(self, body: dict) -> int:
        """The cached tokens of this request's prompt (the longest cacheable prefix
        a previous request shared; 0 when none), then remember its prefixes."""
        text = prompt_text(body).encode("utf-8", "surrogatepass")
        tokens = len(text) // CHARS_PER_TOKEN
        if tokens < CACHE_MIN_TOKENS:
            return 0
        hasher = hashlib.blake2b(digest_size=16)
        hasher.update(str(body.get("model") or "").encode() + b"\x00")
        fmt = body.get("response_format")
        hasher.update(json.dumps(fmt, sort_keys=True).encode() + b"\x00")
        cached = 0
        done = 0  # bytes of `text` fed to the hasher
        boundary = CACHE_MIN_TOKENS
        hit = True
        while boundary <= tokens:
            end = boundary * CHARS_PER_TOKEN
            hasher.update(text[done:end])
            done = end
            digest = hasher.copy().digest()
            if hit and digest in self._seen:
                cached = boundary
            else:
                hit = False
                self._seen.add(digest)
            boundary += CACHE_STEP_TOKENS
        return cached


def usage_for(
    body: dict,
    content: str,
    *,
    cache: PrefixCache | None,
    reasoning_tokens: int = 0,
) -> dict:
    """The ``usage`` of a reply with `content` to `body`. `cache`: None reports
    no ``prompt_tokens_details`` (the server's behaviour before caching existed).
    `reasoning_tokens` > 0 adds that many hidden reasoning tokens to the output."""
    prompt_tokens = len(prompt_text(body)) // CHARS_PER_TOKEN
    completion_tokens = len(content) // CHARS_PER_TOKEN + max(0, reasoning_tokens)
    usage: dict = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cache is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cache.lookup_and_store(body)}
    if reasoning_tokens > 0:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return usage
