"""Judge configs and runs: create, estimate, start, cancel, resume, retry failed calls.

Execution itself lives in `judging.services.execution`; this module only changes rows
and enqueues driver tasks (after commit).
"""

from __future__ import annotations

import re
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Sum
from django.db.models.functions import Length
from django.utils import timezone

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.models import Dataset, Instruction, Response
from judging.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
RUBRIC_CHARS_PER_SKILL = 900  # criteria + five anchors, for the estimate
OUTPUT_TOKENS_PER_SKILL = 90  # feedback paragraph + score, for the estimate


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
    checks = [
        ("temperature", 0, 2),
        ("samples", 1, 20),
        ("max_tokens", 1, 200_000),
        ("max_concurrency", 1, 4096),
        ("max_parse_retries", 0, 10),
        ("timeout_seconds", 1, 3600),
    ]
    for field_name, low, high in checks:
        value = fields.get(field_name)
        if value is not None and not (low <= value <= high):
            problems.append(
                Problem(f"must be between {low} and {high}", field=field_name)
            )
    for field_name in ("requests_per_minute", "tokens_per_minute"):
        value = fields.get(field_name)
        if value is not None and value < 1:
            problems.append(Problem("must be at least 1 when given", field=field_name))
    for field_name in ("price_input_per_m", "price_output_per_m"):
        value = fields.get(field_name)
        if value is not None and Decimal(str(value)) < 0:
            problems.append(Problem("must not be negative", field=field_name))
    return problems


def prompt_get_builtin(kind: str) -> PromptTemplate:
    """The built-in prompt template of `kind` (created on first use from judging.prompts)."""
    from judging import prompts

    texts = {
        PromptTemplate.Kind.POINTWISE: (
            prompts.BUILTIN_POINTWISE_SYSTEM,
            prompts.BUILTIN_POINTWISE_USER,
        ),
    }
    system_text, user_text = texts.get(kind, ("", "{instruction}"))
    template, _ = PromptTemplate.objects.get_or_create(
        name=f"builtin-{kind}",
        version=1,
        defaults={
            "kind": kind,
            "system_text": system_text,
            "user_text": user_text,
            "is_builtin": True,
        },
    )
    return template


def _responses_for(dataset: Dataset, models: list[str], instruction_limit: int | None):
    responses = Response.objects.filter(instruction__dataset=dataset)
    if models:
        responses = responses.filter(model_name__in=models)
    if instruction_limit:
        first = Instruction.objects.filter(dataset=dataset).order_by("position", "id")
        ids = list(first.values_list("pk", flat=True)[:instruction_limit])
        responses = responses.filter(instruction_id__in=ids)
    return responses


def judge_run_estimate(*, config: JudgeConfig, responses) -> dict:
    """Calls, tokens and cost a run would need, from text lengths (before any call)."""
    n = responses.count()
    calls = n * config.samples
    if config.is_baseline or not n:
        return {"calls": calls, "input_tokens": 0, "output_tokens": 0, "cost": "0"}
    sums = responses.aggregate(
        response_chars=Sum(Length("text")),
        instruction_chars=Sum(Length("instruction__text")),
        reference_chars=Sum(Length("instruction__reference_answer")),
    )
    chars = (sums["response_chars"] or 0) + (sums["instruction_chars"] or 0)
    if config.include_reference:
        chars += sums["reference_chars"] or 0
    skills = 3
    template_chars = (
        len(config.prompt.user_text) + len(config.prompt.system_text)
        if config.prompt
        else 1500
    )
    chars += n * (template_chars + skills * RUBRIC_CHARS_PER_SKILL)
    input_tokens = chars // 4 * config.samples
    output_tokens = min(config.max_tokens, skills * OUTPUT_TOKENS_PER_SKILL) * calls
    cost = (
        Decimal(input_tokens) * config.price_input_per_m
        + Decimal(output_tokens) * config.price_output_per_m
    ) / Decimal(1_000_000)
    return {
        "calls": calls,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": str(cost.quantize(Decimal("0.0001"))),
    }


def _snapshot(config: JudgeConfig) -> dict:
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


def judge_run_create(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    user: User,
    models: list[str] | None = None,
    instruction_limit: int | None = None,
    name: str = "",
) -> JudgeRun:
    """Create a pending pointwise run and its calls (one per response and sample).

    Nothing is sent yet: the run records an estimate (calls, tokens, cost) and a frozen
    copy of the config. Raises `DomainError` naming the field for bad input.
    """
    roles.require_researcher(user)
    models = sorted(set(models or []))
    problems: list[Problem] = []
    available = set(
        Response.objects.filter(instruction__dataset=dataset)
        .values_list("model_name", flat=True)
        .distinct()
    )
    unknown = [m for m in models if m not in available]
    if unknown:
        problems.append(
            Problem(
                f"not in dataset {dataset.name!r}: {', '.join(unknown)}", field="models"
            )
        )
    if instruction_limit is not None and instruction_limit < 1:
        problems.append(Problem("must be at least 1", field="limit"))
    if problems:
        raise DomainError("the judge run was not created", problems)
    responses = _responses_for(dataset, models, instruction_limit)
    response_ids = list(
        responses.order_by("instruction__position", "pk").values_list("pk", flat=True)
    )
    if not response_ids:
        raise DomainError(
            "nothing to judge", [Problem("no responses match", field="models")]
        )
    with transaction.atomic():
        run = JudgeRun.objects.create(
            config=config,
            dataset=dataset,
            kind=JudgeRun.Kind.POINTWISE,
            models_included=models,
            instruction_limit=instruction_limit,
            name=name or f"{config.name} on {dataset.name}",
            settings_snapshot=_snapshot(config),
            estimate=judge_run_estimate(config=config, responses=responses),
            total_calls=len(response_ids) * config.samples,
            created_by=user,
        )
        JudgeCall.objects.bulk_create(
            (
                JudgeCall(run=run, response_id=rid, sample_index=s)
                for rid in response_ids
                for s in range(config.samples)
            ),
            batch_size=5000,
        )
    return run


def drivers_for(run: JudgeRun) -> int:
    """How many driver tasks to start: one per worker process expected (settings)."""
    if run.config and run.config.is_baseline:
        return 1
    return max(1, settings.JUDGE_DRIVERS_PER_RUN)


def _enqueue_drivers(run: JudgeRun) -> None:
    from judging.tasks import judge_run_drive_task

    n = drivers_for(run)
    transaction.on_commit(
        lambda: [
            judge_run_drive_task.apply_async((run.pk,), queue="judge") for _ in range(n)
        ]
    )


def judge_run_start(*, run: JudgeRun, user: User) -> JudgeRun:
    """Start (or resume) a run: status running, driver tasks enqueued after commit.

    Idempotent for a running run (enqueues nothing new). A completed run with nothing
    pending stays completed.
    """
    roles.require_researcher(user)
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if run.status == JudgeRun.Status.RUNNING:
            return run
        if run.kind == JudgeRun.Kind.IMPORTED:
            raise DomainError("an imported run has nothing to execute")
        if not run.calls.filter(status=JudgeCall.Status.PENDING).exists():
            return run
        run.status = JudgeRun.Status.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.finished_at = None
        run.heartbeat_at = timezone.now()
        run.save(update_fields=["status", "started_at", "finished_at", "heartbeat_at"])
        _enqueue_drivers(run)
    return run


def judge_run_cancel(*, run: JudgeRun, user: User) -> JudgeRun:
    """Stop a run: drivers stop claiming within a second; calls in flight finish and are
    stored; pending calls stay pending so that the run can be resumed."""
    roles.require_researcher(user)
    JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.RUNNING).update(
        status=JudgeRun.Status.CANCELLED, finished_at=timezone.now()
    )
    run.refresh_from_db()
    return run


def judge_run_retry_failed(*, run: JudgeRun, user: User) -> int:
    """Put failed calls back to pending (good ones untouched) and start the run.

    Returns how many calls will be retried.
    """
    roles.require_researcher(user)
    with transaction.atomic():
        n = run.calls.filter(status=JudgeCall.Status.FAILED).update(
            status=JudgeCall.Status.PENDING,
            claim_token="",
            lease_until=None,
            parse_failures=0,
        )
        if n:
            JudgeRun.objects.filter(pk=run.pk).exclude(
                status=JudgeRun.Status.RUNNING
            ).update(status=JudgeRun.Status.PENDING)
    if n:
        run.refresh_from_db()
        judge_run_start(run=run, user=user)
    return n
