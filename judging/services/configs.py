"""Judge configs: create and validate, reuse an identical one, freeze into runs.

A config names its endpoint (base URL, model) and the NAME of the environment variable
holding the API key, never the key itself. A config without an endpoint is a
placeholder that only holds imported results and can never be run.
"""

from __future__ import annotations

import re
from decimal import Decimal
from urllib.parse import urlparse

from django.contrib.auth.models import User

from annotation import roles
from annotation.errors import DomainError, Problem
from flaskapp import bounds
from judging.models import JudgeConfig, PromptTemplate
from judging.services.prompts import prompt_get_builtin

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


def judge_config_create(*, user: User, **fields) -> JudgeConfig:
    """Create a judge config after validating every field (errors name the field).

    `api_key_env` must be the NAME of an environment variable (e.g. OPENAI_API_KEY),
    never a key: values that look like secrets are refused so they cannot reach the
    database.
    """
    roles.require_researcher(user)
    problems = judge_config_problems(fields)
    if problems:
        raise DomainError("the judge config was not saved", problems)
    if fields.get("prompt") is None and fields.get("backend", "openai") == "openai":
        fields["prompt"] = prompt_get_builtin(PromptTemplate.Kind.POINTWISE)
    config = JudgeConfig(created_by=user, **fields)
    config.save()
    return config


def judge_config_problems(fields: dict) -> list[Problem]:
    problems: list[Problem] = []
    name = (fields.get("name") or "").strip()
    if not name:
        problems.append(Problem("is empty", field="name"))
    elif JudgeConfig.objects.filter(name=name).exists():
        problems.append(Problem(f"a judge config named {name!r} exists", field="name"))
    backend = fields.get("backend", JudgeConfig.Backend.OPENAI)
    if backend not in JudgeConfig.Backend.values:
        problems.append(Problem(f"unknown backend {backend!r}", field="backend"))
    if backend == JudgeConfig.Backend.OPENAI:
        url = fields.get("base_url") or ""
        if not url.startswith(("http://", "https://")):
            problems.append(
                Problem(
                    "must be an http(s) URL, e.g. https://api.openai.com/v1",
                    field="base_url",
                )
            )
        if not (fields.get("model") or "").strip():
            problems.append(Problem("is empty", field="model"))
    env = fields.get("api_key_env") or ""
    if env and not ENV_NAME.match(env):
        problems.append(
            Problem(
                "must be the NAME of an environment variable (like OPENAI_API_KEY), not "
                "the key itself; keys are never stored",
                field="api_key_env",
            )
        )
    checks = {
        "temperature": bounds.TEMPERATURE,
        "samples": bounds.SAMPLES,
        "max_tokens": bounds.MAX_TOKENS,
        "max_concurrency": bounds.MAX_CONCURRENCY,
        "max_parse_retries": bounds.MAX_PARSE_RETRIES,
        "timeout_seconds": bounds.TIMEOUT_SECONDS,
        "requests_per_minute": bounds.REQUESTS_PER_MINUTE,
        "tokens_per_minute": bounds.TOKENS_PER_MINUTE,
    }
    for field_name, bound in checks.items():
        if problem := bound.problem(fields.get(field_name), field_name, optional=True):
            problems.append(problem)
    for field_name in ("price_input_per_m", "price_output_per_m"):
        value = fields.get(field_name)
        if value is not None and Decimal(str(value)) < 0:
            problems.append(Problem("must not be negative", field=field_name))
    return problems


def config_snapshot(config: JudgeConfig) -> dict:
    """The settings a run freezes from its config (its `settings_snapshot`)."""
    return {
        "backend": config.backend,
        "base_url": config.base_url,
        "model": config.model,
        "api_key_env": config.api_key_env,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
        "samples": config.samples,
        "prompt_id": config.prompt_id,
        "prompt": str(config.prompt) if config.prompt else "",
        "include_reference": config.include_reference,
        "output_mode": config.output_mode,
        "max_parse_retries": config.max_parse_retries,
        "price_input_per_m": str(config.price_input_per_m),
        "price_output_per_m": str(config.price_output_per_m),
        "max_concurrency": config.max_concurrency,
        "requests_per_minute": config.requests_per_minute,
        "tokens_per_minute": config.tokens_per_minute,
        "timeout_seconds": config.timeout_seconds,
        "is_dev_server": config.is_dev_server,
    }


def config_endpoint_problems(config: JudgeConfig) -> list[Problem]:
    """A config that cannot be called: an LLM backend without a base URL or model
    (e.g. the placeholder `import_preferences --judge` creates for imported verdicts)."""
    if config.is_baseline or (config.base_url and config.model):
        return []
    return [
        Problem(
            f"judge {config.name!r} has no endpoint (base URL and model): it only "
            "holds imported results; configure a judge to run it",
            field="config",
        )
    ]


# The fields that make two configs "the same judge" for `judge_config_get_or_create`.
IDENTITY_FIELDS = (
    "backend",
    "base_url",
    "model",
    "api_key_env",
    "temperature",
    "max_tokens",
    "samples",
    "output_mode",
    "price_input_per_m",
    "price_output_per_m",
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "is_dev_server",
)


def judge_config_get_or_create(
    *, user: User | None, name: str | None = None, **fields
) -> tuple[JudgeConfig, bool]:
    """The config with exactly these settings (`fields`, and the `IDENTITY_FIELDS` not
    given at their defaults), reused if one exists; otherwise created, validated like
    `judge_config_create`, under `name` or one made from the model and host (with
    " #2", " #3", ... when taken). Returns (config, created). `user` None is a trusted
    caller (the command line)."""
    wanted = {
        f.name: f.get_default()
        for f in JudgeConfig._meta.concrete_fields
        if f.name in IDENTITY_FIELDS
    }
    wanted.update(fields)
    existing = JudgeConfig.objects.filter(**wanted).order_by("pk").first()
    if existing is not None:
        return existing, False
    if name is None:
        host = urlparse(wanted["base_url"]).netloc or wanted["base_url"]
        name = f"{wanted['model']} @ {host}"[:90]
    base_name, n = name, 1
    while JudgeConfig.objects.filter(name=name).exists():
        n += 1
        name = f"{base_name} #{n}"
    return judge_config_create(user=user, name=name, **wanted), True
