"""Test a judge config's connection: one small chat request through `judging.llm`.

What a researcher presses on the judge's page before paying for a run: does the
endpoint answer, with this model and this key variable, and how fast. The request is
as cheap as a request can be (a one-line prompt, a few output tokens, no retry) and is
sent through the same client, key rules and host rules as a run's calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.contrib.auth.models import User

from flaskapp import workspaces
from judging import endpoints, llm, reasoning
from judging.models import JudgeConfig
from judging.services.configs import config_endpoint_problems
from judging.services.keys import stored_key_grant

# The test call: a prompt of a few tokens and an answer capped at a few more.
TEST_PROMPT = "This is a connection test. Reply with the single word: ready"
TEST_MAX_TOKENS = 8
# A test should tell quickly; a run's own timeout may be minutes.
TEST_TIMEOUT_SECONDS = 20.0
REPLY_CHARS = 200
NO_CHAT_API = "the endpoint did not answer like a chat API"
# Failures decided here, not by the endpoint: they name their reason.
OUR_REFUSALS = ("refused", "echoed_credentials")


@dataclass(frozen=True)
class ConnectionCheck:
    """The outcome of a connection test. `ok`: the endpoint answered. `message`: what
    to show a person (the reply's start, or the error with any key redacted)."""

    ok: bool
    message: str
    kind: str = ""  # the error kind of `judging.llm` ("auth", "connection", ...)
    latency_ms: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0


def judge_config_test_connection(*, user: User, config: JudgeConfig) -> ConnectionCheck:
    """Send one small chat request to `config`'s endpoint and model and report what
    happened. Needs the researcher role (`PermissionDenied`).

    Nothing is written to the database and nothing is retried: a failure of the
    endpoint is reported as `NO_CHAT_API` and nothing more (kind ``no_chat_api``),
    so the test tells nothing about what listens on a host's ports; a refusal of our
    own rules (`OUR_REFUSALS`) names its reason. A baseline judge, a
    config without an endpoint, or an endpoint today's rules refuse sends nothing and
    reports why. The key is read from the server's environment (declared variables
    only), or is the workspace's stored key (decrypted by the client, for its allowed
    hosts only; each test is a ``key.used`` audit row), and never appears in the
    result.
    """
    workspaces.require_object_role(user, config, workspaces.RESEARCHER)
    if config.is_baseline:
        return ConnectionCheck(
            ok=False,
            kind="baseline",
            message="A baseline judge calls no endpoint: there is nothing to test.",
        )
    problems = config_endpoint_problems(config)
    if problems:
        return ConnectionCheck(ok=False, kind="refused", message=problems[0].message)
    key = llm.api_key_from_env(config.api_key_env) if config.api_key_env else None
    grant = None
    if config.stored_key_id:
        grant = stored_key_grant(
            key_id=config.stored_key_id, base_url=config.base_url, actor=user
        )
    if config.api_key_env and key is None:
        return ConnectionCheck(
            ok=False,
            kind="no_key",
            message=(
                f"The environment variable {config.api_key_env} is not set on the "
                "server: nothing was sent."
            ),
        )
    request = llm.ChatRequest(
        messages=[{"role": "user", "content": TEST_PROMPT}],
        model=config.model,
        temperature=0.0,
        max_tokens=TEST_MAX_TOKENS,
        **reasoning.request_options(
            {
                "reasoning_model": config.reasoning_model,
                "reasoning_effort": config.reasoning_effort,
                "extra_body": config.extra_body,
            }
        ),
    )
    timeout = min(float(config.timeout_seconds), TEST_TIMEOUT_SECONDS)
    refusal = endpoints.call_refusal(config.base_url, config.api_key_env)
    try:
        result = async_to_sync(_send)(
            config.base_url, key, grant, timeout, refusal, request
        )
    except llm.JudgeError as exc:
        if exc.kind in OUR_REFUSALS:  # our own rule: nothing was sent
            return ConnectionCheck(ok=False, kind=exc.kind, message=exc.message)
        # No more than this: which error came back (refused, timed out, not HTTP,
        # 401) would tell a researcher whether a port answers (a port scanner).
        return ConnectionCheck(ok=False, kind="no_chat_api", message=NO_CHAT_API)
    reply = " ".join(result.text.split())[:REPLY_CHARS]
    return ConnectionCheck(
        ok=True,
        message=f"{config.model} answered: {reply}",
        latency_ms=result.latency_ms,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
    )


async def _send(
    base_url: str,
    key: str | None,
    grant: llm.KeyGrant | None,
    timeout: float,
    refusal: str,
    request: llm.ChatRequest,
) -> llm.ChatResult:
    async with llm.JudgeClient(
        base_url=base_url,
        api_key=key,
        timeout=timeout,
        max_retries=0,
        max_connections=1,
        refusal=refusal,
        key_grant=grant,
    ) as client:
        return await client.complete(request)
