"""JudgeClient against a real local HTTP server (the fake judge), no mocks of our code."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import socket
import time
import traceback

import pytest

from judging import prompts
from judging.fake_server import ECHO_FORMS
from judging.llm import (
    ChatRequest,
    JudgeClient,
    PermanentJudgeError,
    TransientJudgeError,
    api_key_from_env,
    estimate_request_tokens,
    estimate_tokens,
    parse_retry_after,
)
from judging.parsing import parse_pointwise
from judging.redaction import holds_secret, scrub_secret
from tests.judging import FakeJudge

SKILL = prompts.SkillSpec(
    "logical_correctness",
    "Logical Correctness",
    "Is the final answer correct?",
    ("wrong", "mostly wrong", "partly right", "nearly right", "right"),
)
INPUT = prompts.PointwiseInput("What is 2 + 2?", "It is 4.", "4", (SKILL,))


def _request(**overrides) -> ChatRequest:
    fields = {
        "messages": prompts.render_pointwise(
            INPUT,
            system_text=prompts.BUILTIN_POINTWISE_SYSTEM,
            user_text=prompts.BUILTIN_POINTWISE_USER,
            include_reference=True,
            output_mode="text",
        ),
        "model": "judge-model",
        "temperature": 0.0,
        "max_tokens": 256,
    }
    fields.update(overrides)
    return ChatRequest(**fields)


@pytest.fixture
def fake_judge_factory(fake_server):
    """`fake_judge_factory(**config)` -> a FakeJudge (no latency unless asked)."""

    def start(**config) -> FakeJudge:
        config.setdefault("latency_ms", 0)
        return FakeJudge(fake_server(**config))

    return start


@pytest.fixture
def fake_judge(fake_judge_factory) -> FakeJudge:
    return fake_judge_factory()


class SleepRecorder:
    def __init__(self):
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def _complete(base_url: str, request: ChatRequest | None = None, **client_kwargs):
    """Run one call to completion; return (result or error, the client's sleep log)."""
    sleep = client_kwargs.pop("sleep", SleepRecorder())
    client_kwargs.setdefault("timeout", 5.0)
    client_kwargs.setdefault("api_key", None)

    async def main():
        async with JudgeClient(
            base_url=base_url, sleep=sleep, **client_kwargs
        ) as client:
            return await client.complete(request or _request())

    try:
        return asyncio.run(main()), sleep
    except (TransientJudgeError, PermanentJudgeError) as exc:
        return exc, sleep


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_complete_returns_text_and_token_counts(fake_judge_factory, transport):
    judge = fake_judge_factory(latency_ms=50)
    result, _ = _complete(judge.base_url, transport=transport)
    parsed = parse_pointwise(result.text, [(SKILL.key, SKILL.name)])
    assert parsed.scores[SKILL.key] in {1, 2, 3, 4, 5}
    assert result.input_tokens > 100 and result.output_tokens > 5
    assert not result.estimated_usage
    assert result.attempts == 1
    assert result.latency_ms >= 50
    assert result.finish_reason == "stop"


def test_sampling_parameters_and_response_format_are_sent(fake_judge):
    response_format = prompts.pointwise_response_format([SKILL.key])
    request = _request(
        temperature=0.7, max_tokens=321, seed=3, response_format=response_format
    )
    result, _ = _complete(fake_judge.base_url, request)
    body = fake_judge.last_request()
    assert body["temperature"] == 0.7
    assert body["max_tokens"] == 321
    assert body["seed"] == 3
    assert body["response_format"] == response_format
    assert body["model"] == "judge-model"
    assert body["messages"] == request.messages
    assert parse_pointwise(result.text, [(SKILL.key, SKILL.name)]).format == "json"


def test_seed_and_response_format_are_left_out_when_not_set(fake_judge):
    _complete(fake_judge.base_url)
    body = fake_judge.last_request()
    assert "seed" not in body and "response_format" not in body


def test_rate_limit_is_retried_after_the_retry_after_header(fake_judge_factory):
    judge = fake_judge_factory(retry_after=2)
    judge.script("rate_limit")
    result, sleep = _complete(judge.base_url)
    assert result.attempts == 2
    assert len(sleep.delays) == 1
    assert 2.0 <= sleep.delays[0] <= 2.2  # never earlier than asked, a little jitter
    assert judge.stats()["by_status"] == {"429": 1, "200": 1}


def test_a_retry_after_beyond_the_cap_is_not_slept_in_the_worker(fake_judge_factory):
    judge = fake_judge_factory(retry_after=600)
    judge.script("rate_limit")
    error, sleep = _complete(judge.base_url, retry_after_max=60)
    assert isinstance(error, TransientJudgeError)
    assert (error.kind, error.retry_after, error.attempts) == ("rate_limited", 600, 1)
    assert sleep.delays == []


def test_parse_retry_after_reads_seconds_and_http_dates():
    now = time.time()
    in_30s = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after("1") == 1.0
    assert parse_retry_after("0.5") == 0.5
    assert 28 <= parse_retry_after(in_30s, now=now) <= 31
    assert parse_retry_after(email.utils.formatdate(now - 60, usegmt=True)) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_server_error_is_retried_with_full_jitter_then_succeeds(fake_judge):
    fake_judge.script("server_error", "server_error")
    result, sleep = _complete(fake_judge.base_url, backoff_base=0.5, backoff_max=30)
    assert result.attempts == 3
    assert len(sleep.delays) == 2
    assert 0 <= sleep.delays[0] <= 0.5 and 0 <= sleep.delays[1] <= 1.0


def test_persistent_server_error_gives_up_after_max_retries(fake_judge_factory):
    judge = fake_judge_factory(server_error=1.0)
    error, sleep = _complete(judge.base_url, max_retries=3)
    assert isinstance(error, TransientJudgeError)
    assert error.kind == "server_error" and error.status_code == 500
    assert error.attempts == 4
    assert len(sleep.delays) == 3
    assert judge.stats()["requests"] == 4


@pytest.mark.parametrize(
    ("status", "kind"),
    [(400, "bad_request"), (422, "bad_request"), (404, "not_found"), (403, "auth")],
)
def test_client_errors_are_permanent_and_not_retried(fake_judge, status, kind):
    fake_judge.script(status)
    error, sleep = _complete(fake_judge.base_url)
    assert isinstance(error, PermanentJudgeError)
    assert (error.kind, error.status_code, error.attempts) == (kind, status, 1)
    assert sleep.delays == []
    assert fake_judge.stats()["requests"] == 1


def test_auth_failure_never_reveals_the_api_key(fake_judge_factory, caplog):
    secret = "sk-test-Very-Secret-Key-0123456789"
    judge = fake_judge_factory(
        require_api_key="sk-the-right-one", echo_key_in_errors=True
    )
    caplog.set_level(logging.DEBUG)
    error, _ = _complete(judge.base_url, api_key=secret)
    assert isinstance(error, PermanentJudgeError)
    assert error.kind == "auth" and error.attempts == 1
    shown = [str(error), repr(error), "".join(traceback.format_exception(error))]
    assert all(secret not in text for text in shown)
    assert "[redacted]" in str(error)  # the server did echo it; we scrubbed it
    assert secret not in caplog.text


def test_retry_logs_never_contain_the_api_key(fake_judge_factory, caplog):
    secret = "sk-test-Another-Secret-Key-98765"
    judge = fake_judge_factory(require_api_key=secret)
    judge.script("server_error", "rate_limit")
    caplog.set_level(logging.DEBUG)
    result, _ = _complete(judge.base_url, api_key=secret)
    assert result.attempts == 3
    assert "retrying" in caplog.text  # the retries were logged ...
    assert secret not in caplog.text  # ... without the key
    assert secret not in repr(
        JudgeClient(base_url=judge.base_url, api_key=secret, timeout=1)
    )


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_held_request_times_out_as_a_transient_error(fake_judge_factory, transport):
    judge = fake_judge_factory(timeout=1.0)
    started = time.monotonic()
    error, sleep = _complete(
        judge.base_url, timeout=0.3, max_retries=1, transport=transport
    )
    assert isinstance(error, TransientJudgeError)
    assert (error.kind, error.attempts) == ("timeout", 2)
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_nothing_listening_is_a_transient_connection_error(transport):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # free, and nothing listens on it after this
    error, _ = _complete(
        f"http://127.0.0.1:{port}/v1", max_retries=0, transport=transport
    )
    assert isinstance(error, TransientJudgeError)
    assert error.kind == "connection"


def test_a_200_without_usable_content_is_retried(fake_judge):
    fake_judge.script("garbage", "empty")
    result, sleep = _complete(fake_judge.base_url)
    assert result.attempts == 3 and len(sleep.delays) == 2


def test_a_persistently_unusable_200_is_invalid_response(fake_judge):
    fake_judge.script("garbage")
    error, _ = _complete(fake_judge.base_url, max_retries=0)
    assert isinstance(error, TransientJudgeError)
    assert error.kind == "invalid_response"
    assert "not JSON" in error.message


def test_output_cut_at_max_tokens_reports_finish_reason_length(fake_judge):
    result, _ = _complete(fake_judge.base_url, _request(max_tokens=5))
    assert result.finish_reason == "length"
    assert len(result.text) == 20


class RecordingLimiter:
    def __init__(self):
        self.events: list[tuple[str, int | None]] = []

    async def acquire(self, tokens: int) -> None:
        self.events.append(("acquire", tokens))

    def release(self, used_tokens: int | None = None) -> None:
        self.events.append(("release", used_tokens))


def test_limiter_is_acquired_and_released_once_per_attempt(fake_judge):
    fake_judge.script("server_error", "rate_limit")
    limiter = RecordingLimiter()
    request = _request()
    result, _ = _complete(fake_judge.base_url, request, limiter=limiter)
    reservation = estimate_request_tokens(request)
    assert limiter.events == [
        ("acquire", reservation),
        ("release", None),
        ("acquire", reservation),
        ("release", None),
        ("acquire", reservation),
        ("release", result.input_tokens + result.output_tokens),
    ]
    assert reservation >= request.max_tokens


def test_limiter_is_released_after_a_permanent_error(fake_judge):
    fake_judge.script(400)
    limiter = RecordingLimiter()
    _complete(fake_judge.base_url, limiter=limiter)
    assert [name for name, _ in limiter.events] == ["acquire", "release"]


def test_api_key_from_env(monkeypatch):
    monkeypatch.setenv("JUDGE_KEY_FLASK_TEST", " sk-abc ")
    monkeypatch.setenv("JUDGE_KEY_FLASK_EMPTY", "")
    monkeypatch.delenv("JUDGE_KEY_FLASK_MISSING", raising=False)
    monkeypatch.setenv("FLASK_TEST_UNDECLARED_KEY", "sk-abc")
    assert api_key_from_env("JUDGE_KEY_FLASK_TEST") == "sk-abc"
    assert api_key_from_env("JUDGE_KEY_FLASK_EMPTY") is None
    assert api_key_from_env("JUDGE_KEY_FLASK_MISSING") is None
    assert api_key_from_env("") is None
    # Set, but not a declared key variable (JUDGE_KEY_ENV_ALLOWED): never read.
    assert api_key_from_env("FLASK_TEST_UNDECLARED_KEY") is None


def test_estimate_tokens_is_about_a_quarter_of_the_characters():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("a" * 401) == 101


def test_client_rejects_a_nonsense_configuration():
    with pytest.raises(ValueError):
        JudgeClient(base_url="http://x/v1", api_key=None, timeout=0)
    with pytest.raises(ValueError):
        JudgeClient(
            base_url="http://x/v1", api_key=None, timeout=1, transport="carrier-pigeon"
        )


@pytest.mark.parametrize("transport", ["aiohttp", "httpx"])
def test_a_redirect_is_not_followed_so_the_key_stays_with_the_allowed_host(
    fake_judge_factory, transport
):
    """An endpoint answering 307 elsewhere gets a permanent client error: the client
    never sends the request (and its Authorization header) to the new location."""
    import http.server
    import threading

    elsewhere = fake_judge_factory()

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(307)
            self.send_header("Location", elsewhere.base_url + "/chat/completions")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}/v1"
        error, _ = _complete(base, api_key="sk-test-secret", transport=transport)
    finally:
        server.shutdown()
    assert isinstance(error, PermanentJudgeError), error
    assert error.kind == "client_error"
    assert elsewhere.stats()["requests"] == 0


def test_a_call_sleeping_before_its_retry_is_counted_as_backing_off(
    fake_judge_factory,
):
    """While a call waits out a 429's Retry-After it holds no request: the client says
    so (`calls_backing_off`), so the run driver can start another call meanwhile."""
    judge = fake_judge_factory(retry_after=1)
    judge.script("rate_limit")
    seen = []

    async def main():
        async with JudgeClient(
            base_url=judge.base_url, api_key=None, timeout=5.0, sleep=record
        ) as client:
            holder.append(client)
            result = await client.complete(_request())
            return result, client.calls_backing_off

    holder: list[JudgeClient] = []

    async def record(delay: float) -> None:
        client = holder[0]
        seen.append((client.calls_backing_off, client.requests_in_flight))

    result, after = asyncio.run(main())
    assert result.attempts == 2
    assert seen == [(1, 0)]  # sleeping: backing off, no request in flight
    assert after == 0


# --- Any form of the key, reflected by the endpoint ---------------------------------------

ECHO_SECRET = "sk-test-Reflected-Key-5f3a9c0e7b21d4"


@pytest.mark.parametrize("form", sorted(ECHO_FORMS))
def test_every_form_of_the_key_is_scrubbed_from_text(form):
    shown = ECHO_FORMS[form](f"Bearer {ECHO_SECRET}")
    text = f"upstream said: {shown} (end)"
    assert holds_secret(text, ECHO_SECRET)
    scrubbed = scrub_secret(text, ECHO_SECRET)
    assert "[redacted]" in scrubbed and "(end)" in scrubbed
    assert not holds_secret(scrubbed, ECHO_SECRET)
    assert shown not in scrubbed and ECHO_SECRET[3:11] not in scrubbed
    plain = "a reply with sk-test and other words, nothing of the key"
    assert scrub_secret(plain, ECHO_SECRET) == plain and not holds_secret(
        plain, ECHO_SECRET
    )


@pytest.mark.parametrize("form", sorted(ECHO_FORMS))
def test_a_reply_echoing_the_key_in_any_form_is_not_kept(
    fake_judge_factory, caplog, form
):
    judge = fake_judge_factory(echo_authorization=form)
    caplog.set_level(logging.DEBUG)
    error, sleep = _complete(judge.base_url, api_key=ECHO_SECRET)
    assert isinstance(error, PermanentJudgeError)
    assert (error.kind, error.attempts) == ("echoed_credentials", 1)
    assert "the endpoint echoed the credentials" in error.message
    shown = [str(error), repr(error), caplog.text]
    assert not any(holds_secret(text, ECHO_SECRET) for text in shown)
    assert sleep.delays == [] and judge.stats()["requests"] == 1
    # Without a key nothing can be echoed: the same endpoint's reply is kept.
    result, _ = _complete(judge.base_url, api_key=None)
    assert "[debug: authorization" in result.text
