"""Reasoning models, extra request fields and the endpoint's documented refusals:
the one home of these rules (issue 36).

- A config may say it calls a reasoning model (`reasoning_model`): its requests send
  ``max_completion_tokens`` instead of ``max_tokens``, no ``temperature`` (such a
  config's temperature must be 1), and ``reasoning_effort`` when the config sets one
  (`EFFORTS`).
- A config that does not say so is adapted on the endpoint's documented 400 answer:
  ``{"error": {"code": "unsupported_parameter" | "unsupported_value", "param":
  "max_tokens" | "temperature", ...}}``. `adapt` changes exactly the refused
  parameter (`ADAPTABLE`) and returns None when nothing would change, so a refused
  request is never sent again unchanged. What was changed is kept in words (`note`)
  per parameter: the client (`judging.llm.JudgeClient`) applies it to every later
  call, the run driver stores it on the config (for its version) and on the run.
- `extra_body`: a JSON object of further request fields (e.g. ``top_k``), merged
  under the fields the app controls (`APP_CONTROLLED`, refused naming the field)
  and at most `EXTRA_BODY_MAX_CHARS` characters of JSON.

Pure functions: no database, no HTTP.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from flaskapp.errors import Problem

EFFORTS = ("minimal", "low", "medium", "high")
EXTRA_BODY_MAX_CHARS = 4000
EXTRA_BODY_MAX_KEYS = 50
# Request fields the app sets itself: extra_body may not set them.
APP_CONTROLLED = frozenset(
    {
        "messages",
        "model",
        "response_format",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "reasoning_effort",
        "seed",
        "logprobs",
        "top_logprobs",
        "n",
        "stream",
        "stream_options",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "functions",
        "function_call",
        "user",
        "store",
        "metadata",
    }
)
# The settings' values in a config version saved before they existed.
SNAPSHOT_DEFAULTS = {"reasoning_model": False, "reasoning_effort": "", "extra_body": {}}
REFUSAL_CODES = ("unsupported_parameter", "unsupported_value")
# The parameters adapted on a refusal: what is sent instead, in words.
ADAPTABLE = {
    "max_tokens": "sent max_completion_tokens: the endpoint refuses max_tokens",
    "temperature": "sent no temperature: the endpoint refuses any temperature but "
    "its default",
}


def note(param: str) -> str:
    """The words recording the adaptation of `param` (a key of `ADAPTABLE`)."""
    return ADAPTABLE[param]


def config_problems(fields: dict) -> list[Problem]:
    """The problems of a config's reasoning settings and extra request fields, each
    naming its field: `reasoning_effort` outside `EFFORTS` (or set without
    `reasoning_model`), a reasoning model's temperature other than 1, and
    `extra_body_problems`."""
    problems: list[Problem] = []
    reasoning = bool(fields.get("reasoning_model"))
    effort = fields.get("reasoning_effort") or ""
    if effort not in ("", *EFFORTS):
        problems.append(
            Problem(
                f"must be one of {', '.join(EFFORTS)} (or empty), not {effort!r}",
                field="reasoning_effort",
            )
        )
    elif effort and not reasoning:
        problems.append(
            Problem(
                "is sent to reasoning models only: set reasoning_model too",
                field="reasoning_effort",
            )
        )
    temperature = fields.get("temperature")
    if reasoning and temperature is not None and float(temperature) != 1.0:
        problems.append(
            Problem(
                f"must be 1 for a reasoning model (it takes no other; none is "
                f"sent), not {temperature:g}",
                field="temperature",
            )
        )
    return problems + extra_body_problems(fields.get("extra_body"))


def extra_body_problems(value: Any) -> list[Problem]:
    """An extra_body must be a JSON object (None or {} for none) of at most
    `EXTRA_BODY_MAX_KEYS` fields and `EXTRA_BODY_MAX_CHARS` characters of JSON, setting
    none of the fields the app controls (`APP_CONTROLLED`)."""
    if value is None or value == {}:
        return []
    if not isinstance(value, dict):
        return [
            Problem(
                f"must be a JSON object of request fields, not a "
                f"{type(value).__name__}",
                field="extra_body",
            )
        ]
    controlled = sorted(set(value) & APP_CONTROLLED)
    if controlled:
        return [
            Problem(
                f"may not set {', '.join(controlled)}: the app sets "
                f"{'it' if len(controlled) == 1 else 'them'} itself",
                field="extra_body",
            )
        ]
    if len(value) > EXTRA_BODY_MAX_KEYS:
        return [
            Problem(
                f"has {len(value)} fields; at most {EXTRA_BODY_MAX_KEYS}",
                field="extra_body",
            )
        ]
    try:
        size = len(json.dumps(value, ensure_ascii=False))
    except (TypeError, ValueError):
        return [Problem("is not JSON", field="extra_body")]
    if size > EXTRA_BODY_MAX_CHARS:
        return [
            Problem(
                f"is {size:,} characters of JSON; at most {EXTRA_BODY_MAX_CHARS:,}",
                field="extra_body",
            )
        ]
    return []


def parse_extra_body(text: str) -> tuple[dict | None, str]:
    """(object, "") from the JSON text of a form field or a command flag, or (None,
    why) when it is not a JSON object. Empty text is {}."""
    text = (text or "").strip()
    if not text:
        return {}, ""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return None, f"is not valid JSON ({exc.msg} at character {exc.pos})"
    if not isinstance(value, dict):
        return None, "must be a JSON object of request fields"
    return value, ""


def request_options(snapshot: dict) -> dict:
    """The `judging.llm.ChatRequest` fields of a run's frozen settings (or a config's
    `config_snapshot`) beyond the sampling ones; {} for a config that sets none (a
    snapshot frozen before these settings existed included)."""
    options: dict[str, Any] = {}
    if snapshot.get("reasoning_model"):
        options["max_tokens_param"] = "max_completion_tokens"
        options["send_temperature"] = False
        if snapshot.get("reasoning_effort"):
            options["reasoning_effort"] = snapshot["reasoning_effort"]
    if snapshot.get("extra_body"):
        options["extra_body"] = dict(snapshot["extra_body"])
    return options


def cache_params(snapshot: dict) -> dict:
    """What these settings add to a call's cache key: nothing for a config that
    sets none, so the keys of earlier runs stay valid."""
    params: dict[str, Any] = {}
    if snapshot.get("reasoning_model"):
        params["reasoning_effort"] = snapshot.get("reasoning_effort") or ""
    if snapshot.get("extra_body"):
        params["extra_body"] = snapshot["extra_body"]
    return params


def refused_param(body: Any) -> str:
    """The parameter an endpoint's 400 answer refuses, when it is the documented
    refusal of one we can adapt (`ADAPTABLE`): `body` is the error JSON, whole
    (``{"error": {...}}``) or its ``error`` object. "" otherwise."""
    if not isinstance(body, dict):
        return ""
    error = body.get("error", body)
    if not isinstance(error, dict):
        return ""
    param = error.get("param")
    if error.get("code") in REFUSAL_CODES and param in ADAPTABLE:
        return str(param)
    return ""


def adapt(request, param: str):
    """`request` (a `judging.llm.ChatRequest`) changed so that it no longer sends
    `param`, or None when it does not send it (nothing would change: the refusal
    stands)."""
    if param == "max_tokens" and request.max_tokens_param == "max_tokens":
        return dataclasses.replace(request, max_tokens_param="max_completion_tokens")
    if param == "temperature" and request.send_temperature:
        return dataclasses.replace(request, send_temperature=False)
    return None


def learnt_adaptations(
    snapshot: dict, stored: dict | None, made: dict | None
) -> dict[str, str]:
    """The changes (param -> words) a run's calls start with: those `stored` on its
    config (``JudgeConfig.adaptations``: {version, params}) for the version the run
    froze (``snapshot["config_version"]``), then those the run itself `made`."""
    learnt: dict[str, str] = {}
    stored = stored or {}
    version = snapshot.get("config_version")
    if version is not None and stored.get("version") == version:
        learnt.update(stored.get("params") or {})
    learnt.update(made or {})
    return learnt


def apply_adaptations(request, adaptations: dict[str, str]):
    """`request` with every adaptation already learnt (`adaptations`: param -> note)."""
    for param in adaptations:
        request = adapt(request, param) or request
    return request
