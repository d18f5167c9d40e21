"""A fake OpenAI-compatible judge: real HTTP, configurable latency and failures.

A development and test tool, not a judge. It answers ``POST /v1/chat/completions`` in
kind: it reads the task from the request (``response_format``'s schema when present,
otherwise the machine-readable lines that `judging.prompts` writes: ``Task type:``,
``Skill key:``, ``Scale:``, ``Labels:``, ``Domain:``; a ``Skills to score:`` line, when
present, names the skills to score among those the rubric shows) and replies with output
that `judging.parsing` accepts. A pointwise reply gives each skill a value it allows: one
of its schema enum's values when the request has a schema, else of the scale or
labels its prompt block states (FLASK's 1-5 when it states none). Values are
derived from a hash of (response text, skill key) plus a small,
deterministic preference for longer responses (and, in pairwise prompts, for answer
A) so that bias probes have something to find. Settings can script it instead:
``pairwise_verdict`` ("A" for a perfectly position-biased judge), ``cue_follow`` (the
share of bandwagon-cued prompts whose verdict follows the cue) and
``classification_label``. ``logprobs_spread`` returns token log-probabilities with a
known spread around every number (`judging.fake_logprobs`) to requests that ask for
them; without it none are returned. Prompts in the FLAMe layout are answered with "field: value"
lines, as that layout asks; classification and critique prompts are answered too.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /stats``,
``GET /last_request``, ``GET /requests`` (the bodies of the last
`RECENT_REQUESTS` chat requests, oldest first), ``POST /reset``, ``POST /script`` (force the next outcomes:
``["rate_limit", "server_error", "timeout", "malformed", "out_of_scale", "garbage",
"empty", "ok", 404, ...]``; "out_of_scale" answers a pointwise value the skill does
not allow: one past its top point, or the label "undecided") and ``POST /config`` (change a setting of the running server).
The Batch API (``/v1/files``, ``/v1/batches``, ``GET /batch_stats``) is
`judging.fake_batches`'.

Reasoning models and drift (`FakeServerConfig.reasoning_model_prefix`,
``answer_models``, ``system_fingerprints``): a model named ``reasoning-...`` refuses
``max_tokens`` and a temperature other than 1 with OpenAI's documented 400 bodies and
reports ``completion_tokens_details.reasoning_tokens``; ``/stats`` counts the refused
bodies and the requests that sent one again unchanged (``repeated_refusals``).

Each request costs a JSON decode, a few regex scans and a JSON encode; waiting is
``asyncio.sleep``, so one process holds hundreds of concurrent keep-alive connections.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from urllib.parse import quote

from aiohttp import web

from judging.fake_batches import add_batch_routes
from judging.fake_logprobs import token_logprobs
from judging.fake_replies import build_reply, fake_score
from judging.fake_usage import PrefixCache, usage_for

__all__ = [
    "OUTCOMES",
    "FakeServerConfig",
    "build_reply",
    "fake_score",
    "make_app",
    "run_fake_server",
    "start_fake_server_in_thread",
]

OUTCOMES = (
    "ok",
    "rate_limit",
    "server_error",
    "timeout",
    "malformed",
    "out_of_scale",
    "garbage",
    "empty",
)
RECENT_REQUESTS = 1000  # chat request bodies kept for ``GET /requests``


@dataclasses.dataclass
class FakeServerConfig:
    latency_ms: float = 500.0  # mean latency of an answer
    latency_jitter_ms: float = 0.0  # uniform +/- around the mean
    rate_limit: float = 0.0  # share of requests answered 429
    server_error: float = 0.0  # ... answered 500 (after the latency)
    timeout: float = 0.0  # ... held for `hold_seconds` (longer than any client timeout)
    malformed: float = 0.0  # ... answered 200 with a reply the parser rejects
    retry_after: float = 1.0  # the Retry-After header of a 429, in seconds
    seed: int = 0
    require_api_key: str | None = dataclasses.field(default=None, repr=False)
    # Put the presented key in the 401 message, as some providers do (partly): lets
    # tests prove that the client scrubs it.
    echo_key_in_errors: bool = False
    # Reflect the request's Authorization header in every reply, as a debug proxy or
    # a gateway might: "" (never), or how (`ECHO_FORMS`: "verbatim", "base64",
    # "basic", "urlencoded", "reversed", "partial"). Lets tests prove the client
    # keeps no reply that holds the key, in any of these forms.
    echo_authorization: str = ""
    hold_seconds: float = 600.0
    length_bias: float = 0.3  # weight of normalised length in a score, 0..1
    position_bias: float = 0.05  # bonus for answer A in pairwise prompts
    # Pairwise: answer this verdict ("A", "B" or "tie") to every prompt instead of
    # deriving it, e.g. "A" for a perfectly position-biased judge. "" = derived.
    pairwise_verdict: str = ""
    # Pairwise: share of prompts whose note names an answer ("... preferred answer B")
    # where the verdict follows that answer (a bandwagon-prone judge), 0..1.
    cue_follow: float = 0.0
    # Classification: answer this label to every prompt. "" = derived from a hash.
    classification_label: str = ""
    model: str = "fake-judge"
    # Append this many spaces to every reply (it still parses), whatever max_tokens
    # says: an endless answer from a server that ignores the limit.
    pad_chars: int = 0
    # Reasoning models (`_reasoning_refusal`): a request for a model whose name starts
    # with this prefix is refused, with OpenAI's documented 400 bodies, when it sends
    # max_tokens or a temperature other than 1 (or an unknown reasoning_effort); its
    # answers report `reasoning_model_tokens` reasoning tokens (unless
    # `reasoning_tokens` below sets every reply's) in completion_tokens_details. "" = none.
    reasoning_model_prefix: str = "reasoning-"
    reasoning_model_tokens: int = 48
    # Judge drift: the `model` and `system_fingerprint` the n-th answer reports are
    # entry n (mod length) of these lists; empty: the request's model, no fingerprint.
    answer_models: list = dataclasses.field(default_factory=list)
    system_fingerprints: list = dataclasses.field(default_factory=list)
    # The Batch API (`judging.fake_batches`): the wait before a batch's lines are
    # answered, the share of custom_ids whose lines fail (their first
    # `batch_fail_times` submissions), the limits of one input file, how many lines
    # are answered at once, and stray result lines for custom_ids never sent.
    batch_delay_seconds: float = 0.0
    batch_fail_share: float = 0.0
    batch_fail_times: int = 1
    batch_max_lines: int = 50_000
    batch_max_bytes: int = 200 * 1024 * 1024
    batch_concurrency: int = 64
    batch_unknown_ids: int = 0
    # Batches after the first `batch_hold_after` (None: none) wait, after their
    # delay, until ``POST /batch_release``: a test sees what the app does while
    # they are still in flight, with no clock involved.
    batch_hold_after: int | None = None
    # Token log-probabilities (`judging.fake_logprobs`) for requests that ask for
    # them: the spread of every number token, e.g. {"0": 0.6, "+1": 0.3, "-1": 0.1}.
    # None: none are returned, as by an endpoint without logprobs.
    logprobs_spread: dict | None = None
    # Report cached prompt tokens as OpenAI does (`judging.fake_usage.PrefixCache`:
    # prefixes of 1,024 tokens and more, in 128-token steps, once seen).
    prefix_cache: bool = False
    # Report this many reasoning tokens per reply (part of completion_tokens).
    reasoning_tokens: int = 0


class _State:
    def __init__(self, config: FakeServerConfig):
        self.config = config
        self.reset()

    def reset(self) -> None:
        self.rng = random.Random(self.config.seed)
        self.requests = 0
        self.by_status: Counter[str] = Counter()
        self.by_outcome: Counter[str] = Counter()
        self.in_flight = 0
        self.max_in_flight = 0
        self.last_request: dict | None = None
        # The bodies of the last `RECENT_REQUESTS` chat requests (``GET /requests``).
        self.recent: deque = deque(maxlen=RECENT_REQUESTS)
        self.script: deque = deque()
        # Refused (400) request bodies, canonical JSON, and how many requests sent
        # one of them again unchanged: what a client that adapts must keep at 0.
        self.refused_bodies: set[str] = set()
        self.repeated_refusals = 0
        self.answers = 0
        self.prefix_cache = PrefixCache()

    def draw_outcome(self) -> str | int:
        if self.script:
            return self.script.popleft()
        c = self.config
        u = self.rng.random()
        for outcome, rate in (
            ("rate_limit", c.rate_limit),
            ("server_error", c.server_error),
            ("timeout", c.timeout),
            ("malformed", c.malformed),
        ):
            if u < rate:
                return outcome
            u -= rate
        return "ok"

    def latency(self) -> float:
        c = self.config
        jitter = self.rng.uniform(-c.latency_jitter_ms, c.latency_jitter_ms)
        return max(0.0, c.latency_ms + jitter) / 1000.0


STATE = web.AppKey("state", _State)


# --- HTTP -----------------------------------------------------------------------------------


def _error(
    status: int, message: str, kind: str, headers: dict | None = None
) -> web.Response:
    payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.json_response(payload, status=status, headers=headers)


REASONING_EFFORTS = ("minimal", "low", "medium", "high")


def _refusal(param: str, code: str, message: str) -> web.Response:
    """OpenAI's documented 400 body for a parameter a model does not take."""
    payload = {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": param,
            "code": code,
        }
    }
    return web.json_response(payload, status=400)


def _reasoning_refusal(body: dict, config: FakeServerConfig) -> web.Response | None:
    """The 400 a reasoning model answers to a parameter it does not take, or None."""
    prefix = config.reasoning_model_prefix
    if not prefix or not str(body.get("model", "")).startswith(prefix):
        return None
    if "max_tokens" in body:
        return _refusal(
            "max_tokens",
            "unsupported_parameter",
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        )
    temperature = body.get("temperature")
    if temperature is not None and temperature != 1:
        return _refusal(
            "temperature",
            "unsupported_value",
            f"Unsupported value: 'temperature' does not support {temperature} with "
            "this model. Only the default (1) value is supported.",
        )
    effort = body.get("reasoning_effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        return _refusal(
            "reasoning_effort",
            "unsupported_value",
            f"Unsupported value: 'reasoning_effort' does not support {effort!r}.",
        )
    return None


def _identity(body: dict, state: _State) -> dict:
    """The `model` (and `system_fingerprint`) this answer reports (drift)."""
    config = state.config
    n = state.answers
    state.answers += 1
    found = {"model": body.get("model") or config.model}
    if config.answer_models:
        found["model"] = config.answer_models[n % len(config.answer_models)]
    if config.system_fingerprints:
        fingerprints = config.system_fingerprints
        found["system_fingerprint"] = fingerprints[n % len(fingerprints)]
    return found


def _completion(body: dict, state: _State, content: str) -> web.Response:
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    finish = "stop"
    if isinstance(max_tokens, int) and max_tokens > 0 and len(content) > 4 * max_tokens:
        content, finish = content[: 4 * max_tokens], "length"
    content += " " * state.config.pad_chars  # past max_tokens: a server that ignores it
    logprobs = token_logprobs(content, body, state.config.logprobs_spread)
    payload = {
        "id": f"chatcmpl-fake-{state.requests}",
        "object": "chat.completion",
        "created": int(time.time()),
        **_identity(body, state),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
                **({"logprobs": logprobs} if logprobs is not None else {}),
            }
        ],
        "usage": usage_for(
            body,
            content,
            cache=state.prefix_cache if state.config.prefix_cache else None,
            reasoning_tokens=state.config.reasoning_tokens,
        ),
    }
    prefix = state.config.reasoning_model_prefix
    reasoning_model = prefix and str(body.get("model", "")).startswith(prefix)
    if reasoning_model and not state.config.reasoning_tokens:
        usage = payload["usage"]
        reasoning = state.config.reasoning_model_tokens
        usage["completion_tokens"] += reasoning
        usage["total_tokens"] += reasoning
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return web.Response(body=json.dumps(payload), content_type="application/json")


def _bearer(header: str) -> str:
    return header.removeprefix("Bearer ")


ECHO_FORMS: dict[str, Callable[[str], str]] = {
    "verbatim": lambda h: h,
    "base64": lambda h: base64.b64encode(h.encode()).decode(),
    "basic": lambda h: base64.b64encode(f"user:{_bearer(h)}".encode()).decode(),
    "urlencoded": lambda h: quote(h, safe=""),
    "reversed": lambda h: h[::-1],
    "partial": lambda h: _bearer(h)[3:15],
}


async def _answer(request: web.Request, state: _State) -> web.Response:
    config = state.config
    if config.require_api_key:
        presented = request.headers.get("Authorization", "")
        if presented != f"Bearer {config.require_api_key}":
            shown = (
                presented.removeprefix("Bearer ") if config.echo_key_in_errors else ""
            )
            message = f"Incorrect API key provided: {shown}".strip()
            return _error(401, message, "invalid_request_error")
    try:
        body = await request.json()
    except ValueError:
        return _error(400, "The body is not valid JSON.", "invalid_request_error")
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return _error(400, "'messages' is required.", "invalid_request_error")
    if not body["messages"] or not body.get("model"):
        return _error(
            400, "'messages' and 'model' must not be empty.", "invalid_request_error"
        )
    state.last_request = body
    state.recent.append(body)
    if (refused := _reasoning_refusal(body, config)) is not None:
        canonical = hashlib.sha256(
            json.dumps(body, sort_keys=True).encode()
        ).hexdigest()
        state.repeated_refusals += canonical in state.refused_bodies
        state.refused_bodies.add(canonical)
        return refused
    outcome = state.draw_outcome()
    state.by_outcome[str(outcome)] += 1
    if outcome == "rate_limit":
        after = config.retry_after
        value = str(int(after)) if float(after).is_integer() else str(after)
        return _error(
            429, "Rate limit reached.", "rate_limit_error", {"Retry-After": value}
        )
    if outcome == "timeout":
        await asyncio.sleep(config.hold_seconds)
    await asyncio.sleep(state.latency())
    if outcome == "server_error":
        return _error(500, "The fake server had an error.", "server_error")
    if isinstance(outcome, int):
        headers = {"Retry-After": str(config.retry_after)} if outcome == 503 else None
        return _error(outcome, f"Forced status {outcome}.", "forced_error", headers)
    if outcome == "garbage":
        return web.Response(text="<html>Bad gateway</html>", content_type="text/html")
    if outcome == "empty":
        return web.json_response({"id": "chatcmpl-fake-empty", "choices": []})
    reply = build_reply(
        body,
        config,
        malformed=outcome == "malformed",
        out_of_scale=outcome == "out_of_scale",
    )
    if config.echo_authorization:
        shown = ECHO_FORMS[config.echo_authorization](
            request.headers.get("Authorization", "")
        )
        reply = f"{reply}\n[debug: authorization {shown}]"
    return _completion(body, state, reply)


async def chat_completions(request: web.Request) -> web.Response:
    state = request.app[STATE]
    state.requests += 1
    state.in_flight += 1
    state.max_in_flight = max(state.max_in_flight, state.in_flight)
    try:
        response = await _answer(request, state)
    finally:
        state.in_flight -= 1
    state.by_status[str(response.status)] += 1
    return response


async def list_models(request: web.Request) -> web.Response:
    model = request.app[STATE].config.model
    data = [{"id": model, "object": "model", "created": 0, "owned_by": "flask-eval"}]
    return web.json_response({"object": "list", "data": data})


async def stats(request: web.Request) -> web.Response:
    state = request.app[STATE]
    return web.json_response(
        {
            "requests": state.requests,
            "by_status": dict(state.by_status),
            "by_outcome": dict(state.by_outcome),
            "in_flight": state.in_flight,
            "max_in_flight": state.max_in_flight,
            "refused_bodies": len(state.refused_bodies),
            "repeated_refusals": state.repeated_refusals,
        }
    )


async def last_request(request: web.Request) -> web.Response:
    return web.json_response({"body": request.app[STATE].last_request})


async def recent_requests(request: web.Request) -> web.Response:
    return web.json_response({"bodies": list(request.app[STATE].recent)})


async def _json_or_empty(request: web.Request) -> dict:
    if not request.can_read_body:
        return {}
    try:
        data = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="body must be JSON") from None
    return data if isinstance(data, dict) else {}


async def reset(request: web.Request) -> web.Response:
    """Zero the counters, clear the script, reseed; settings in the body are applied."""
    state = request.app[STATE]
    _apply_settings(state, await _json_or_empty(request))
    state.reset()
    return web.json_response({"ok": True})


async def script(request: web.Request) -> web.Response:
    outcomes = (await _json_or_empty(request)).get("outcomes", [])
    bad = [o for o in outcomes if not isinstance(o, int) and o not in OUTCOMES]
    if bad:
        raise web.HTTPBadRequest(
            text=f"unknown outcomes {bad}; use {OUTCOMES} or a status"
        )
    request.app[STATE].script.extend(outcomes)
    return web.json_response({"queued": len(request.app[STATE].script)})


def _apply_settings(state: _State, data: dict) -> None:
    names = {f.name for f in dataclasses.fields(FakeServerConfig)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise web.HTTPBadRequest(
            text=f"unknown settings {unknown}; known: {sorted(names)}"
        )
    state.config = dataclasses.replace(state.config, **data)


async def update_config(request: web.Request) -> web.Response:
    """Change settings of the running server (counters are kept)."""
    _apply_settings(request.app[STATE], await _json_or_empty(request))
    return web.json_response({"ok": True})


def make_app(config: FakeServerConfig | None = None) -> web.Application:
    # Judge prompts with long responses exceed aiohttp's 1 MB default body limit.
    app = web.Application(client_max_size=32 * 1024 * 1024)
    app[STATE] = _State(dataclasses.replace(config or FakeServerConfig()))
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", list_models)
    app.router.add_get("/stats", stats)
    app.router.add_get("/last_request", last_request)
    app.router.add_get("/requests", recent_requests)
    app.router.add_post("/reset", reset)
    app.router.add_post("/script", script)
    app.router.add_post("/config", update_config)
    add_batch_routes(app, chat=chat_completions, config_of=lambda a: a[STATE].config)
    return app


async def _start(
    config: FakeServerConfig | None, host: str, port: int
) -> web.AppRunner:
    runner = web.AppRunner(
        make_app(config),
        access_log=None,  # a log line per request costs more CPU than the request
        handler_cancellation=True,  # a client that hangs up frees its held handler
        shutdown_timeout=0.5,
    )
    await runner.setup()
    site = web.TCPSite(runner, host, port, backlog=1024)
    await site.start()
    return runner


def run_fake_server(
    config: FakeServerConfig | None = None,
    host: str = "127.0.0.1",
    port: int = 8089,
    *,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve in the foreground until interrupted; `on_ready` gets the base URL."""

    async def main() -> None:
        runner = await _start(config, host, port)
        try:
            if on_ready is not None:
                on_ready(f"http://{host}:{runner.addresses[0][1]}/v1")
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass


def start_fake_server_in_thread(
    config: FakeServerConfig | None = None, host: str = "127.0.0.1"
) -> tuple[str, Callable[[], None]]:
    """Run the server on a free port in a background thread with its own event loop.

    Returns (base URL ending in /v1, stop). `stop` is idempotent and waits for the
    thread to finish.
    """
    started = threading.Event()
    box: dict = {}

    def serve() -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            runner = loop.run_until_complete(_start(config, host, 0))
        except BaseException as exc:  # reported to the caller below
            box["error"] = exc
            started.set()
            loop.close()
            return
        box["loop"], box["port"] = loop, runner.addresses[0][1]
        started.set()
        try:
            loop.run_forever()
        finally:
            loop.run_until_complete(runner.cleanup())
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()

    thread = threading.Thread(target=serve, name="fake-judge-server", daemon=True)
    thread.start()
    if not started.wait(10):
        raise RuntimeError("the fake judge server did not start within 10s")
    if "error" in box:
        raise RuntimeError(f"the fake judge server did not start: {box['error']}")
    loop: asyncio.AbstractEventLoop = box["loop"]

    def stop() -> None:
        try:
            loop.call_soon_threadsafe(loop.stop)
        except RuntimeError:  # already stopped and closed
            pass
        thread.join(10)

    return f"http://{host}:{box['port']}/v1", stop
