"""The only code that talks to an LLM endpoint (any OpenAI-compatible chat API).

Retrying happens in this one layer: the `openai` client is built with
``max_retries=0`` and `JudgeClient.complete` retries transient failures with
exponential backoff and full jitter, honouring ``Retry-After``. What it raises:

============================================  ==========================  =========
failure                                       kind                        class
============================================  ==========================  =========
429                                           rate_limited                transient
5xx                                           server_error                transient
408 / no answer within ``timeout``            timeout                     transient
no answer within the hang deadline            timeout                     transient
409                                           conflict                    transient
connection refused / reset                    connection                  transient
200 without choices or content, or not JSON   invalid_response            transient
400, 413, 422                                 bad_request                 permanent
401, 403                                      auth                        permanent
404                                           not_found                   permanent
any other 4xx                                 client_error                permanent
3xx (redirects are never followed)            client_error                permanent
host not allowed, undeclared key variable     refused (nothing is sent)   permanent
stored key: host not in its allowed hosts     refused (nothing is sent)   permanent
stored key: cannot be decrypted or is gone    refused (nothing is sent)   permanent
a reply that holds any form of the key        echoed_credentials          permanent
============================================  ==========================  =========

A 400 that is the endpoint's documented refusal of one parameter (code
``unsupported_parameter`` or ``unsupported_value`` naming ``max_tokens`` or
``temperature``: reasoning models) is not a failure of the call: the client changes
exactly that parameter (`judging.reasoning.adapt`), sends the call again at once and
applies the change to every later call (`JudgeClient.adaptations`); a refused request
is never sent again unchanged, and any other 400 stays ``bad_request``.
Token probabilities: a `ChatRequest` with ``logprobs`` sends ``logprobs: true`` and
``top_logprobs``; the reply's ``choices[0].logprobs.content`` comes back as
`ChatResult.token_logprobs` (None when the endpoint returned none: not an error, the
run says so). What they mean is `judging.logprobs`'.

The hang deadline (`judging.deadlines.HangDeadline`, optional) cuts an attempt that
waits far longer than this client's recent answers took, long before ``timeout``; the
retry of a cut call gets twice the deadline.

What may be called is `judging.endpoints`' rule: the client refuses, before sending
anything, a base URL whose host ``JUDGE_ALLOWED_HOSTS`` does not allow, and
`api_key_from_env` reads declared key variables only. Redirects are not followed, so
an allowed host cannot forward a request (and its key) to one that is not.

A key stored for a workspace (`judging.models.StoredKey`) reaches this module only as
a `KeyGrant`: its name, the hosts its owner allowed and a function that decrypts it.
The client compares the base URL's host with those hosts first and calls that function
only when one matches, at call time (building the client in the worker); otherwise
every call fails with a permanent ``refused`` error naming the host, and nothing is
decrypted or sent.

Transport: by default the SDK's aiohttp transport (``openai.DefaultAioHttpClient``),
because httpx's connection pool spends CPU per request that grows with the number of
open connections; ``transport="httpx"`` selects an ``httpx.AsyncClient`` instead. Both
get ``max_connections`` and ``timeout``.

The API key is never logged and never part of an error message or a repr: messages
are built from status codes and the server's own error text with every form of the key
redacted (`judging.redaction`: verbatim, reversed, URL-encoded, hex, base64 inside any
text such as ``Bearer key`` or ``user:key``, and any 8 characters or more of these),
and a reply that reflects the key in any such form is not kept: the call fails with
``echoed_credentials`` (a debug proxy or gateway echoing our request headers).
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import logging
import math
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import httpx
import httpx2
import openai

from judging import endpoints, reasoning
from judging import logprobs as token_probs
from judging.deadlines import HangDeadline
from judging.redaction import holds_secret, scrub_secret

logger = logging.getLogger(__name__)

# A Retry-After longer than this is not slept in a worker; the error carries it so the
# caller can reschedule the call instead.
RETRY_AFTER_MAX = 120.0
_DETAIL_CHARS = 300
_SECRET_RE = re.compile(r"(sk-[A-Za-z0-9_\-*]{6,}|Bearer\s+\S+)")
ECHOED_CREDENTIALS = "the endpoint echoed the credentials; its reply was not kept"
TRANSPORTS = ("aiohttp", "httpx")
# How often a waiting attempt looks at its hang deadline again.
HANG_RECHECK_SECONDS = 0.25


@dataclass(frozen=True)
class ChatRequest:
    messages: list[dict]  # [{"role": "system" | "user", "content": str}]
    model: str
    temperature: float
    max_tokens: int
    response_format: dict | None = None  # {"type": "json_schema", "json_schema": {...}}
    seed: int | None = None  # sent when not None (the sample index)
    # Reasoning models and extra fields (`judging.reasoning`): which name the output
    # budget is sent under, whether a temperature is sent, the reasoning effort ("":
    # not sent) and the config's extra request fields (merged under ours).
    max_tokens_param: str = "max_tokens"  # or "max_completion_tokens"
    send_temperature: bool = True
    reasoning_effort: str = ""
    extra_body: dict | None = None
    # Token probabilities (`judging.logprobs`): sent as logprobs / top_logprobs.
    logprobs: bool = False
    top_logprobs: int | None = None


@dataclass(frozen=True)
class ChatResult:
    text: str
    input_tokens: int
    output_tokens: int
    latency_ms: int  # of the successful attempt
    attempts: int  # transport attempts used (1 = no retry)
    finish_reason: str = ""  # "stop", "length" (cut at max_tokens), ...
    estimated_usage: bool = False  # the server reported no usage; counts are estimates
    model: str = ""  # the model the endpoint says answered ("" when it did not say)
    system_fingerprint: str = ""  # the endpoint's backend configuration, if reported
    # choices[0].logprobs.content as the endpoint sent it, when the request asked for
    # it; None when not asked or the endpoint returned none.
    token_logprobs: list[dict] | None = None
    # Of `input_tokens`, those the provider served from its prompt cache
    # (usage.prompt_tokens_details.cached_tokens; 0 when not reported).
    cached_input_tokens: int = 0
    # Of `output_tokens`, a reasoning model's hidden reasoning
    # (usage.completion_tokens_details.reasoning_tokens; 0 when not reported).
    reasoning_tokens: int = 0


class JudgeError(Exception):
    """A failed call. `kind` is a stable machine-readable reason; str() is for people."""

    def __init__(
        self,
        kind: str,
        message: str,
        *,
        status_code: int | None = None,
        attempts: int = 1,
    ):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status_code = status_code
        self.attempts = attempts

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(kind={self.kind!r}, message={self.message!r})"


class TransientJudgeError(JudgeError):
    """Worth retrying later (rate limit, overload, timeout, network, garbled reply)."""

    def __init__(
        self, kind: str, message: str, *, retry_after: float | None = None, **kw
    ):
        super().__init__(kind, message, **kw)
        self.retry_after = retry_after


class PermanentJudgeError(JudgeError):
    """Retrying the same request cannot help (bad request, auth, unknown model)."""


class KeyUnavailable(Exception):
    """A stored key cannot be had (not decryptable, deleted). The message names no
    secret; the client turns it into a permanent ``refused`` error."""


@dataclass(frozen=True)
class KeyGrant:
    """Leave to send a workspace's stored key: `name` (for messages), `hosts` (host
    names or ``*.example.com`` patterns the key may go to), `reveal` (returns the
    plaintext, or raises `KeyUnavailable`; called by `JudgeClient` only, after the
    host check) and `refusal` (a reason to send nothing at all, "" when none)."""

    name: str
    hosts: tuple[str, ...]
    reveal: Callable[[], str] = dataclasses.field(repr=False)
    refusal: str = ""


def host_refusal_for_key(*, base_url: str, key_name: str, hosts: list[str]) -> str:
    """Why the stored key `key_name` may not be sent to `base_url` ("" when it may):
    the URL's host must match one of `hosts` (exactly, or a ``*.`` pattern for its
    subdomains), whatever the port. The message names the host, never the key."""
    host = endpoints.url_host(base_url)
    for pattern in hosts:
        pattern = pattern.lower()
        if host and (
            host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:]))
        ):
            return ""
    allowed = ", ".join(hosts) or "none"
    return (
        f"the stored key {key_name!r} may not be sent to the host {host or '(none)'!r} "
        f"(its allowed hosts: {allowed}); nothing was sent"
    )


class Limiter(Protocol):
    async def acquire(self, tokens: int) -> None: ...

    def release(self, used_tokens: int | None = None) -> None: ...


def api_key_from_env(var_name: str) -> str | None:
    """The key held in environment variable `var_name`, or None. Never logged.

    Only a declared key variable (`endpoints.key_env_declared`) is read: for any other
    name (``DJANGO_SECRET_KEY``, ``DATABASE_URL``) this is None, whatever it holds."""
    if not endpoints.key_env_declared(var_name):
        return None
    value = os.environ.get(var_name, "").strip()
    return value or None


def estimate_tokens(text: str) -> int:
    """About one token per four characters: for limits and cost estimates only."""
    return (len(text) + 3) // 4


def estimate_prompt_tokens(messages: list[dict]) -> int:
    # A few tokens of per-message framing, as chat APIs count them.
    return sum(estimate_tokens(str(m.get("content") or "")) + 4 for m in messages) + 2


def estimate_request_tokens(request: ChatRequest) -> int:
    """The most a request can use: its prompt plus the whole output budget."""
    return estimate_prompt_tokens(request.messages) + request.max_tokens


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds):
        return None
    return max(0.0, seconds)


class JudgeClient:
    """An OpenAI-compatible chat client with timeouts, typed errors and retries.

    One instance per event loop; its connection pool is reused by every call. Use it as
    ``async with JudgeClient(...) as client`` or call `aclose`.
    """

    def __init__(  # noqa: PLR0913 - the client's settings, keyword-only, one per JudgeConfig field
        self,
        *,
        base_url: str,
        api_key: str | None,
        timeout: float,
        max_retries: int = 5,
        backoff_base: float = 0.5,
        backoff_max: float = 30.0,
        max_connections: int = 256,
        limiter: Limiter | None = None,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        retry_after_max: float = RETRY_AFTER_MAX,
        transport: str = "aiohttp",
        hang_deadline: HangDeadline | None = None,
        refusal: str = "",
        key_grant: KeyGrant | None = None,
        adaptations: dict[str, str] | None = None,
    ):
        """`refusal`: a reason the caller found to send nothing to this endpoint
        (`endpoints.call_refusal`); every `complete` then raises it as a permanent
        ``refused`` error, as it does for a host ``JUDGE_ALLOWED_HOSTS`` refuses.

        `key_grant`: a workspace's stored key (instead of `api_key`), decrypted here
        only when `base_url`'s host is one of its hosts; otherwise, or when it
        cannot be decrypted, every call is refused with the reason.

        `adaptations`: the changes this endpoint asked for before (`judging.reasoning`:
        parameter -> what was done, in words), applied to every request. A call that
        meets a new documented refusal adds to `self.adaptations`."""
        if transport not in TRANSPORTS:
            raise ValueError(
                f"unknown transport {transport!r}; use one of {TRANSPORTS}"
            )
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        self.base_url = base_url
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self._limiter = limiter
        # Adaptive per-attempt deadlines (`judging.deadlines`); None: the timeout only.
        self._hang = hang_deadline
        # HTTP attempts under way right now (between the limiter's acquire and release).
        self.requests_in_flight = 0
        # Calls sleeping before a retry (backoff or Retry-After): they hold no request
        # slot, so a caller may start other calls meanwhile (see the run driver).
        self.calls_backing_off = 0
        self._rng = rng or random.Random()
        self._sleep = sleep
        self.adaptations: dict[str, str] = dict(adaptations or {})
        refusal = refusal or endpoints.host_refusal(base_url)
        if key_grant is not None:
            api_key, refusal = _granted_key(base_url, key_grant, refusal)
        # Kept only to scrub it from server-provided error text.
        self._secret = api_key or None
        # What messages and logs show: a key pasted into the URL is scrubbed too.
        self._url = self._scrub(base_url)
        self._refusal = refusal
        self._http = _http_client(transport, timeout, max_connections)
        self.transport = (
            "httpx" if isinstance(self._http, httpx.AsyncClient) else "aiohttp"
        )
        self._client = openai.AsyncOpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout,
            max_retries=0,
            http_client=self._http,
        )

    def __repr__(self) -> str:
        return (
            f"JudgeClient(base_url={self._url!r}, timeout={self.timeout}, "
            f"transport={self.transport!r})"
        )

    async def __aenter__(self) -> JudgeClient:
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._client.close()
        await self._http.aclose()

    async def complete(self, request: ChatRequest) -> ChatResult:
        """Send one chat request; retry transient failures; return the text and usage.

        The limiter (if any) is acquired before every attempt, with the request's
        worst-case token count, and released after it, with the tokens actually used
        when the server reported them (None otherwise).

        Raises `PermanentJudgeError` at once, or the last `TransientJudgeError` once
        `max_retries` retries are spent (or when the server asks for a wait longer
        than `retry_after_max`). Both carry `attempts`. A refused endpoint raises
        ``refused`` with `attempts` 0: no connection is opened.
        """
        if self._refusal:
            raise PermanentJudgeError("refused", self._refusal, attempts=0)
        request = reasoning.apply_adaptations(request, self.adaptations)
        kwargs = chat_request_body(request)
        reservation = estimate_request_tokens(request)
        attempt = 0
        cut = 0  # attempts of this call cut by the hang deadline
        while True:
            attempt += 1
            if self._limiter is not None:
                await self._limiter.acquire(reservation)
            used: int | None = None
            started = time.monotonic()
            self.requests_in_flight += 1
            try:
                result = await self._attempt(kwargs, request, cut)
                used = result.input_tokens + result.output_tokens
                elapsed = time.monotonic() - started
                if self._hang is not None:
                    self._hang.observe(elapsed)
                latency_ms = int(elapsed * 1000)
                return result.result(latency_ms=latency_ms, attempts=attempt)
            except JudgeError as exc:
                exc.attempts = attempt
                cut += isinstance(exc, _HungAttempt)
                if (adapted := self._adapt(exc, request)) is not None:
                    # The endpoint refused one parameter: send the call again with
                    # exactly that one changed (never unchanged), at once.
                    request, kwargs = adapted, chat_request_body(adapted)
                    continue
                if isinstance(exc, PermanentJudgeError) or attempt > self.max_retries:
                    raise
                retry_after = getattr(exc, "retry_after", None)
                if retry_after is not None and retry_after > self.retry_after_max:
                    raise
                delay = self._delay(attempt, retry_after)
                logger.warning(
                    "judge call to %s failed (attempt %d of %d): %s; retrying in %.2fs",
                    self._url,
                    attempt,
                    self.max_retries + 1,
                    exc,
                    delay,
                )
            finally:
                self.requests_in_flight -= 1
                if self._limiter is not None:
                    self._limiter.release(used)
            self.calls_backing_off += 1
            try:
                await self._sleep(delay)
            finally:
                self.calls_backing_off -= 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # Never earlier than asked; a little spread so that a crowd of callers
            # told "1 second" do not all come back in the same millisecond.
            return retry_after + self._rng.uniform(0, 0.1 * retry_after)
        cap = min(self.backoff_max, self.backoff_base * (2 ** (attempt - 1)))
        return self._rng.uniform(0, cap)  # "full jitter"

    def _adapt(self, exc: JudgeError, request: ChatRequest) -> ChatRequest | None:
        """The request changed as the endpoint's documented refusal in `exc` asks
        (recorded in `self.adaptations`), or None (not such a refusal, or the request
        does not send the refused parameter)."""
        param = getattr(exc, "refused_param", "")
        adapted = reasoning.adapt(request, param) if param else None
        if adapted is not None and param not in self.adaptations:
            self.adaptations[param] = reasoning.note(param)
            logger.info("judge endpoint %s: %s", self._url, reasoning.note(param))
        return adapted

    # --- for the Batch API path (`judging.llm_batch`): the same key, refusal, scrub
    # and reply reader as a synchronous call, without sending anything from here.

    @property
    def refusal(self) -> str:
        """Why nothing may be sent to this endpoint ("" when it may)."""
        return self._refusal

    def auth_headers(self) -> dict[str, str]:
        """The Authorization header of this client's key (never logged or shown)."""
        return {"Authorization": f"Bearer {self._secret or 'not-needed'}"}

    def scrub(self, text: str) -> str:
        """`text` with every form of the key redacted, cut to a message's length."""
        return self._scrub(text)

    def status_error(self, exc: openai.APIStatusError) -> JudgeError:
        """The typed error of an HTTP status answer, as a synchronous call gets it."""
        return self._status_error(exc)

    def read_reply(
        self, body: str, request: ChatRequest, *, latency_ms: int = 0
    ) -> ChatResult:
        """Read one reply body (a batch result line's ``response.body``) exactly as a
        synchronous call's reply is read (`_read_body`); raises `JudgeError`."""
        return self._read_body(body, request).result(latency_ms=latency_ms, attempts=1)

    async def _attempt(self, kwargs: dict, request: ChatRequest, cut: int) -> _Reply:
        """One HTTP attempt, bounded by the timeout and by the hang deadline (looked at
        again every `HANG_RECHECK_SECONDS` while waiting: it shrinks as answers come)."""
        body = dict(kwargs)
        post = asyncio.ensure_future(
            self._client.chat.completions.with_raw_response.create(
                model=body.pop("model"), messages=body.pop("messages"), extra_body=body
            )
        )
        started = time.monotonic()
        try:
            # A whole-attempt deadline on top of the transport's per-read timeout, so
            # that a server trickling bytes or a full pool cannot hold a worker forever.
            while not post.done():
                waited = time.monotonic() - started
                limit = self.timeout + 1.0
                hung = (
                    self._hang is not None and self._hang.deadline(cut) < self.timeout
                )
                if hung:
                    limit = min(limit, self._hang.deadline(cut))
                if waited >= limit:
                    if hung:
                        raise _HungAttempt(
                            f"no answer within {self._hang.describe(cut)}: "
                            "taken for hung and retried"
                        )
                    raise TransientJudgeError(
                        "timeout", f"no complete answer within {self.timeout:g}s"
                    )
                await asyncio.wait(
                    {post}, timeout=min(limit - waited, HANG_RECHECK_SECONDS)
                )
            raw = post.result()
            body = raw.text
        except TimeoutError:
            raise TransientJudgeError(
                "timeout", f"no complete answer within {self.timeout:g}s"
            ) from None
        except openai.APIConnectionError as exc:  # APITimeoutError included
            raise self._transport_error(exc) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        finally:
            if not post.done():
                post.cancel()
                await asyncio.gather(post, return_exceptions=True)
        return self._read_body(body, request)

    def _transport_error(self, exc: openai.APIConnectionError) -> TransientJudgeError:
        # The aiohttp adapter reports a refused or dropped connection as a connect
        # *timeout*; the exception chain tells what really happened.
        cause = _root_cause(exc)
        is_timeout = isinstance(exc, openai.APITimeoutError)
        if isinstance(cause, TimeoutError | aiohttp.ServerTimeoutError):
            is_timeout = True
        elif isinstance(cause, aiohttp.ClientConnectionError | OSError):
            is_timeout = False
        if is_timeout:
            return TransientJudgeError("timeout", f"no answer within {self.timeout:g}s")
        detail = self._scrub(str(cause) if cause is not None else str(exc))
        return TransientJudgeError("connection", f"cannot reach {self._url}: {detail}")

    def _scrub(self, text: str) -> str:
        text = _SECRET_RE.sub("[redacted]", scrub_secret(text, self._secret))
        return text[:_DETAIL_CHARS]

    def _status_error(self, exc: openai.APIStatusError) -> JudgeError:
        status = exc.status_code
        detail = self._scrub(_server_message(exc))
        message = f"HTTP {status} from {self._url}" + (f": {detail}" if detail else "")
        retry_after = None
        if status in (429, 503):
            headers = exc.response.headers
            retry_after = parse_retry_after(headers.get("retry-after"))
            if retry_after is None and headers.get("retry-after-ms"):
                ms = parse_retry_after(headers.get("retry-after-ms"))
                retry_after = None if ms is None else ms / 1000
        if status == 429:
            return TransientJudgeError(
                "rate_limited", message, retry_after=retry_after, status_code=status
            )
        if status >= 500:
            return TransientJudgeError(
                "server_error", message, retry_after=retry_after, status_code=status
            )
        if status == 408:
            return TransientJudgeError("timeout", message, status_code=status)
        if status == 409:
            return TransientJudgeError("conflict", message, status_code=status)
        if status in (401, 403):
            return PermanentJudgeError("auth", message, status_code=status)
        if status == 404:
            return PermanentJudgeError("not_found", message, status_code=status)
        if status in (400, 413, 422):
            error = PermanentJudgeError("bad_request", message, status_code=status)
            # A documented refusal of one parameter (`judging.reasoning`): adaptable.
            error.refused_param = (
                reasoning.refused_param(exc.body) if status == 400 else ""
            )
            return error
        return PermanentJudgeError("client_error", message, status_code=status)

    def _read_body(self, body: str, request: ChatRequest) -> _Reply:
        def invalid(why: str) -> TransientJudgeError:
            return TransientJudgeError(
                "invalid_response", f"{why} (from {self._url})", status_code=200
            )

        if holds_secret(body, self._secret):
            raise PermanentJudgeError(
                "echoed_credentials", f"{ECHOED_CREDENTIALS} (from {self._url})"
            )
        try:
            data = json.loads(body)
        except (ValueError, RecursionError):
            raise invalid(
                f"the reply is not JSON: {self._scrub(body[:80])!r}"
            ) from None
        if not isinstance(data, dict):
            raise invalid("the reply is not a JSON object")
        choices = data.get("choices")
        if (
            not isinstance(choices, list)
            or not choices
            or not isinstance(choices[0], dict)
        ):
            raise invalid("the reply has no choices")
        message = choices[0].get("message") or {}
        content = message.get("content") if isinstance(message, dict) else None
        finish_reason = str(choices[0].get("finish_reason") or "")
        if not isinstance(content, str) or not content.strip():
            refusal = message.get("refusal") if isinstance(message, dict) else None
            why = (
                f"the model refused: {self._scrub(str(refusal))}"
                if refusal
                else ("the reply has no content")
            )
            if finish_reason:
                why += f" (finish_reason={finish_reason})"
            raise invalid(why)
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        input_tokens = usage.get("prompt_tokens")
        output_tokens = usage.get("completion_tokens")
        estimated = not (
            isinstance(input_tokens, int) and isinstance(output_tokens, int)
        )
        if estimated:
            input_tokens = estimate_prompt_tokens(request.messages)
            output_tokens = estimate_tokens(content)
        cached_tokens, reasoning_tokens = usage_details(usage, int(input_tokens))
        return _Reply(
            content,
            int(input_tokens),
            int(output_tokens),
            finish_reason,
            estimated,
            *_reply_identity(data),
            _reply_logprobs(choices[0], request),
            cached_tokens,
            reasoning_tokens,
        )


def _granted_key(
    base_url: str, grant: KeyGrant, refusal: str
) -> tuple[str | None, str]:
    """(key, refusal) for a client of `base_url` given `grant`: the key decrypted
    only when nothing refuses the call and the host is one the grant allows."""
    refusal = refusal or grant.refusal
    if not refusal:
        refusal = host_refusal_for_key(
            base_url=base_url, key_name=grant.name, hosts=list(grant.hosts)
        )
    if refusal:
        return None, refusal
    try:
        return grant.reveal(), ""
    except KeyUnavailable as exc:
        return None, f"the stored key {grant.name!r}: {exc}; nothing was sent"


class _HungAttempt(TransientJudgeError):
    """An attempt cut by the hang deadline (`judging.deadlines`): kind ``timeout``."""

    def __init__(self, message: str) -> None:
        super().__init__("timeout", message)


@dataclass(frozen=True)
class _Reply:
    text: str
    input_tokens: int
    output_tokens: int
    finish_reason: str
    estimated_usage: bool
    model: str = ""
    system_fingerprint: str = ""
    token_logprobs: list[dict] | None = None
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    def result(self, *, latency_ms: int, attempts: int) -> ChatResult:
        """The call's `ChatResult`: this reply (every field of it is one of the
        result's), its latency and the attempts it took."""
        return ChatResult(
            latency_ms=latency_ms,
            attempts=attempts,
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)},
        )


def usage_details(usage: dict, input_tokens: int) -> tuple[int, int]:
    """(cached input tokens, reasoning tokens) of a reply's ``usage``, as OpenAI
    reports them (``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``); 0 for what is absent or not a
    non-negative integer. Cached tokens never exceed `input_tokens`."""

    def count(details_key: str, key: str) -> int:
        details = usage.get(details_key)
        value = details.get(key) if isinstance(details, dict) else None
        ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
        return value if ok else 0

    cached = min(count("prompt_tokens_details", "cached_tokens"), input_tokens)
    return cached, count("completion_tokens_details", "reasoning_tokens")


def _logprob_fields(request: ChatRequest) -> dict:
    """The body fields asking for token probabilities ({} when not asked)."""
    return token_probs.logprob_request_fields(
        logprobs=request.logprobs, top_logprobs=request.top_logprobs
    )


def _reply_logprobs(choice: dict, request: ChatRequest) -> list[dict] | None:
    """The reply's output tokens with their top alternatives, when asked for."""
    if not request.logprobs:
        return None
    return token_probs.content_tokens(choice.get("logprobs"))


def _reply_identity(data: dict) -> tuple[str, str]:
    """(model, system_fingerprint) as a reply reports them ("" when absent), cut to
    what `JudgeCall` keeps."""
    model = data.get("model")
    fingerprint = data.get("system_fingerprint")
    return (
        model[:200] if isinstance(model, str) else "",
        fingerprint[:100] if isinstance(fingerprint, str) else "",
    )


def chat_request_body(request: ChatRequest) -> dict:
    """The JSON body of a chat completions request: the one builder of the synchronous
    path (`JudgeClient.complete`) and of every Batch API line (`judging.llm_batch`).
    The config's extra fields first, then the fields the app
    controls over them; the output budget under `max_tokens_param`, a temperature
    only when `send_temperature`, ``reasoning_effort`` and ``seed`` when set."""
    body: dict[str, Any] = dict(request.extra_body or {})
    body["model"] = request.model
    body["messages"] = request.messages
    if request.send_temperature:
        body["temperature"] = request.temperature
    body[request.max_tokens_param] = request.max_tokens
    if request.reasoning_effort:
        body["reasoning_effort"] = request.reasoning_effort
    if request.seed is not None:
        body["seed"] = request.seed
    if request.response_format is not None:
        body["response_format"] = request.response_format
    body.update(_logprob_fields(request))
    return body


def _http_client(transport: str, timeout: float, max_connections: int):
    if transport == "httpx":
        return httpx.AsyncClient(
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_connections,
            ),
            timeout=timeout,
            follow_redirects=False,
        )
    # httpx's pool costs CPU per request that grows with the number of open
    # connections (encode/httpx#3215): at 200 concurrent calls it spends seconds
    # where the SDK's aiohttp transport spends milliseconds.
    try:
        return openai.DefaultAioHttpClient(
            limits=httpx2.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max_connections,
            ),
            timeout=timeout,
            follow_redirects=False,  # the SDK's default follows them
        )
    except RuntimeError:  # the SDK found no usable aiohttp
        logger.warning("aiohttp transport unavailable; using httpx (slower when busy)")
        return _http_client("httpx", timeout, max_connections)


def _root_cause(exc: BaseException) -> BaseException | None:
    """The innermost exception of the cause chain below `exc` (None if none)."""
    seen: set[int] = set()
    cause = exc.__cause__ or exc.__context__
    last = None
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        last = cause
        cause = cause.__cause__ or cause.__context__
    return last


def _server_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
    if isinstance(body, str):
        return body
    return ""
