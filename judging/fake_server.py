"""A fake OpenAI-compatible judge: real HTTP, configurable latency and failures.

A development and test tool, not a judge. It answers ``POST /v1/chat/completions`` in
kind: it reads the task from the request (``response_format``'s schema when present,
otherwise the machine-readable lines that `judging.prompts` writes: ``Task type:``,
``Skill key:``, ``Domain:``) and replies with output that `judging.parsing` accepts,
with scores derived from a hash of (response text, skill key) plus a small,
deterministic preference for longer responses (and, in pairwise prompts, for answer
A) so that bias probes have something to find. Settings can script it instead:
``pairwise_verdict`` ("A" for a perfectly position-biased judge), ``cue_follow`` (the
share of bandwagon-cued prompts whose verdict follows the cue) and
``classification_label``. Prompts in the FLAMe layout are answered with "field: value"
lines, as that layout asks; classification and critique prompts are answered too.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /stats``,
``GET /last_request``, ``POST /reset``, ``POST /script`` (force the next outcomes:
``["rate_limit", "server_error", "timeout", "malformed", "garbage", "empty", "ok",
404, ...]``) and ``POST /config`` (change a setting of the running server).

Each request costs a JSON decode, a few regex scans and a JSON encode; waiting is
``asyncio.sleep``, so one process holds hundreds of concurrent keep-alive connections.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import random
import re
import threading
import time
from collections import Counter, deque
from collections.abc import Callable

from aiohttp import web

from judging import prompts

OUTCOMES = (
    "ok",
    "rate_limit",
    "server_error",
    "timeout",
    "malformed",
    "garbage",
    "empty",
)


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
        self.script: deque = deque()

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


# --- Replies ------------------------------------------------------------------------------


def _unit(*parts: str) -> float:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _length_unit(text: str) -> float:
    return min(1.0, len(text) / 2000.0)


def fake_score(response: str, skill_key: str, length_bias: float = 0.3) -> int:
    """The deterministic 1-5 score the fake judge gives (a longer answer scores a bit higher)."""
    mixed = (1 - length_bias) * _unit(response, skill_key) + length_bias * _length_unit(
        response
    )
    return 1 + min(4, int(mixed * 5))


def _between(text: str, start: str, end: str) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    i += len(start)
    j = text.find(end, i)
    return text[i:j] if j >= 0 else None


def _prompt_text(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])


def _schema(body: dict) -> tuple[str | None, dict]:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return spec.get("name"), spec.get("schema") or {}
    return None, {}


def _task_kind(schema_name: str | None, text: str) -> str:
    by_schema = {
        prompts.SCHEMA_POINTWISE: "pointwise",
        prompts.SCHEMA_PAIRWISE: "pairwise",
        prompts.SCHEMA_METADATA: "metadata",
        prompts.SCHEMA_CHECKLIST: "checklist",
        prompts.SCHEMA_CLASSIFICATION: "classification",
    }
    if schema_name in by_schema:
        return by_schema[schema_name]
    m = re.search(r"^Task type: (\w+)", text, re.MULTILINE)
    return m.group(1) if m else "pointwise"


def _keys(text: str, label: str) -> list[str]:
    found = re.findall(rf"^{label}: ([A-Za-z0-9_\-]+)", text, re.MULTILINE)
    return list(dict.fromkeys(found))


def _enum(schema: dict, prop: str) -> list[str]:
    return list(
        schema.get("properties", {}).get(prop, {}).get("items", {}).get("enum", [])
    )


def _is_flame(text: str) -> bool:
    return text.startswith("INSTRUCTIONS:\n")


def _pointwise_reply(body, text, schema, config, malformed) -> str:
    keys = list(schema.get("properties", {})) if schema else _keys(text, "Skill key")
    response = (
        _between(text, prompts.ANSWER_START + "\n", "\n" + prompts.ANSWER_END)
        or _between(text, "\nresponse: ", "\n\nEVALUATION:")
        or text
    )
    if malformed:
        keys = keys[:-1]  # a requested skill goes missing
    scores = {k: fake_score(response, k, config.length_bias) for k in keys}
    feedback = {
        k: f"Fake feedback on {k}: a deterministic verdict for testing, no real review."
        for k in keys
    }
    if schema:
        return json.dumps(
            {k: {"feedback": feedback[k], "score": scores[k]} for k in keys}
        )
    if _is_flame(text) and keys:
        # FLAMe layout: "field: value" lines, as its EVALUATION block asks.
        lines = ["feedback: " + " ".join(feedback[k] for k in keys)]
        return "\n".join(lines + [f"{k}: {scores[k]}" for k in keys])
    paragraphs = "\n\n".join(f"**{k}**\n{feedback[k]}" for k in keys)
    return f"{paragraphs}\n\n{json.dumps(scores)}" if keys else "Nothing to score."


def _pairwise_reply(body, text, schema, config, malformed) -> str:
    winners = (
        schema.get("properties", {}).get("winner", {}).get("enum") if schema else None
    )
    allow_tie = "tie" in winners if winners else '"Verdict: tie"' in text
    a = _between(text, "### Answer A\n", "\n\n### Answer B\n") or _between(
        text, "\nresponse A: ", "\nresponse B: "
    )
    b = _between(text, "### Answer B\n", "\n### End of answers") or _between(
        text, "\nresponse B: ", "\n\nEVALUATION:"
    )
    a, b = a or text, b or ""
    bias = config.length_bias

    def merit(answer: str) -> float:
        return (1 - bias) * _unit(answer, "pairwise") + bias * _length_unit(answer)

    diff = merit(a) + config.position_bias - merit(b)
    winner = "tie" if allow_tie and abs(diff) < 0.03 else ("A" if diff > 0 else "B")
    cued = _cue_target(text)
    if cued and _unit(text, "cue") < config.cue_follow:
        winner = cued
    if config.pairwise_verdict:
        winner = config.pairwise_verdict
    rationale = "Fake comparison: a deterministic verdict for testing."
    if schema:
        return json.dumps(
            {"rationale": rationale}
            if malformed
            else {"rationale": rationale, "winner": winner}
        )
    if malformed:
        return "Both answers have merits."
    if _is_flame(text):
        return f"rationale: {rationale}\nwinner: {winner}"
    return f"{rationale}\nVerdict: {winner}"


def _cue_target(text: str) -> str | None:
    """ "A" or "B" when the prompt's note names one answer (a bandwagon cue)."""
    note = _between(text, "### Note\n", "\n\n") or _between(
        text, "\nnote: ", "\nresponse A: "
    )
    m = re.search(r"\b(?:answer|response) ([AB])\b", note or "")
    return m.group(1) if m else None


def _classification_reply(body, text, schema, config, malformed) -> str:
    labels = (
        schema.get("properties", {}).get("label", {}).get("enum") if schema else None
    )
    if not labels:
        m = re.search(rf"^{prompts.LABELS_LINE}(.+)$", text, re.MULTILINE)
        labels = m.group(1).split(prompts.LABELS_SEPARATOR) if m else ["yes", "no"]
    response = (
        _between(text, prompts.ANSWER_START + "\n", "\n" + prompts.ANSWER_END)
        or _between(text, "\nresponse: ", "\n\nEVALUATION:")
        or text
    )
    label = (
        config.classification_label
        or labels[int(_unit(response, "classification") * len(labels))]
    )
    if malformed:
        label = "undecided"
    rationale = "Fake label: deterministic, for testing."
    if schema:
        return json.dumps({"rationale": rationale, "label": label})
    if _is_flame(text):
        return f"rationale: {rationale}\nlabel: {label}"
    return f"{rationale}\nLabel: {label}"


def _critique_reply(body, text, schema, config, malformed) -> str:
    if malformed:
        return "critique:"
    response = (
        _between(text, prompts.ANSWER_START + "\n", "\n" + prompts.ANSWER_END)
        or _between(text, "\nresponse: ", "\n\nEVALUATION:")
        or ""
    )
    critique = (
        f"The response has {len(response)} characters. Fake critique: it states "
        "its main point but gives no evidence for it."
    )
    label = "critique" if _is_flame(text) else "Critique"
    return f"{label}: {critique}"


def _metadata_reply(body, text, schema, config, malformed) -> str:
    domains = _enum(schema, "domains") or re.findall(r"^Domain: (.+?)\s*$", text, re.M)
    domains = domains or ["humanities"]
    skills = _enum(schema, "skills") or _keys(text, "Skill key")
    request = _between(text, "### Request\n", "\n\n### How to reply") or text
    top = sorted(skills, key=lambda k: _unit(request, k))[:3]
    reply = {
        "rationale": "Fake labels: deterministic, for testing.",
        "domains": [domains[int(_unit(request, "domain") * len(domains))]],
        "difficulty": 9 if malformed else 1 + int(_unit(request, "difficulty") * 5),
        "skills": top,
    }
    return json.dumps(reply)


def _checklist_reply(body, text, schema, config, malformed) -> str:
    keys = [k for k in schema.get("properties", {})] if schema else None
    keys = keys or [*_keys(text, "Skill key"), prompts.CHECKLIST_GENERAL_KEY]
    if malformed:
        return "{}"
    reply = {
        k: []
        if k == prompts.CHECKLIST_GENERAL_KEY
        else [f"Does the answer meet the {k} criteria for this request?"]
        for k in keys
    }
    return json.dumps(reply)


_REPLIES = {
    "pointwise": _pointwise_reply,
    "pairwise": _pairwise_reply,
    "metadata": _metadata_reply,
    "checklist": _checklist_reply,
    "classification": _classification_reply,
    "critique": _critique_reply,
}


def build_reply(
    body: dict, config: FakeServerConfig, *, malformed: bool = False
) -> str:
    """The assistant text the fake judge answers `body` (a chat-completions request) with."""
    text = _prompt_text(body)
    name, schema = _schema(body)
    kind = _task_kind(name, text)
    reply = _REPLIES.get(kind)
    if reply is None:
        return f"The fake judge does not handle {kind!r} tasks."
    return reply(body, text, schema, config, malformed)


# --- HTTP -----------------------------------------------------------------------------------


def _error(
    status: int, message: str, kind: str, headers: dict | None = None
) -> web.Response:
    payload = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return web.json_response(payload, status=status, headers=headers)


def _completion(body: dict, state: _State, content: str) -> web.Response:
    max_tokens = body.get("max_tokens") or body.get("max_completion_tokens")
    finish = "stop"
    if isinstance(max_tokens, int) and max_tokens > 0 and len(content) > 4 * max_tokens:
        content, finish = content[: 4 * max_tokens], "length"
    payload = {
        "id": f"chatcmpl-fake-{state.requests}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model") or state.config.model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
        "usage": {
            "prompt_tokens": len(_prompt_text(body)) // 4,
            "completion_tokens": len(content) // 4,
            "total_tokens": len(_prompt_text(body)) // 4 + len(content) // 4,
        },
    }
    return web.Response(body=json.dumps(payload), content_type="application/json")


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
    return _completion(
        body, state, build_reply(body, config, malformed=outcome == "malformed")
    )


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
        }
    )


async def last_request(request: web.Request) -> web.Response:
    return web.json_response({"body": request.app[STATE].last_request})


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
    app.router.add_post("/reset", reset)
    app.router.add_post("/script", script)
    app.router.add_post("/config", update_config)
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
