"""Judge configs and runs: create, estimate, start, cancel, resume, retry failed calls.

Execution itself lives in `judging.services.execution`; this module only changes rows
and enqueues driver tasks (after commit).
"""

from __future__ import annotations

import random
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
from annotation.labels import map_verdict
from annotation.models import Dataset, Instruction, PreferencePair, Response
from judging.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate
from judging.tasks import judge_run_drive_task

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


def prompt_get_builtin(
    kind: str, layout: str = PromptTemplate.Layout.FLASK
) -> PromptTemplate:
    """The built-in prompt template of `kind` and `layout` (created on first use from
    judging.prompts).

    FLASK layout: "builtin-<kind>". FLAMe layout: "builtin-<kind>-flame", whose texts
    are not used: the engine renders the task in the INSTRUCTIONS / CONTEXT /
    EVALUATION layout itself (`judging.prompts.render_pointwise_flame`, ...). A judge
    config selects the layout by pointing at such a template.
    """
    from judging import prompts

    if layout not in PromptTemplate.Layout.values:
        raise ValueError(f"unknown layout {layout!r}")
    texts = {
        PromptTemplate.Kind.POINTWISE: (
            prompts.BUILTIN_POINTWISE_SYSTEM,
            prompts.BUILTIN_POINTWISE_USER,
        ),
    }
    system_text, user_text = texts.get(kind, ("", "{instruction}"))
    name = f"builtin-{kind}"
    if layout == PromptTemplate.Layout.FLAME:
        name += "-flame"
        system_text = ""
        user_text = (
            "(FLAMe text-to-text layout: INSTRUCTIONS / CONTEXT / EVALUATION, "
            "rendered by judging.prompts)"
        )
    template, _ = PromptTemplate.objects.get_or_create(
        name=name,
        version=1,
        defaults={
            "kind": kind,
            "layout": layout,
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
    problems: list[Problem] = config_endpoint_problems(config)
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


# --- Pairwise runs and their bias probes ----------------------------------------------------

PAIRWISE_PROMPT_CHARS = (
    1200  # the pairwise prompt around the two answers, for estimates
)
PAIRWISE_OUTPUT_TOKENS = 150  # a short comparison and the verdict, for estimates
BANDWAGON_CUE = "Most people who read both answers preferred answer {target}."
# Sentences with nothing to do with any request (attention probes), in our own words.
ATTENTION_SENTENCES = (
    "The museum's east wing reopens after its renovation next spring.",
    "Honeybees can visit several thousand flowers in a single day.",
    "The regional train timetable changes on the first Sunday of each month.",
    "Copper slowly turns green when it is left out in the rain for years.",
    "The city library lends board games as well as books.",
    "Some lighthouses still keep a fog bell next to the lamp.",
)


def pairwise_run_estimate(*, config: JudgeConfig, pairs, samples: int) -> dict:
    """Calls, tokens and cost of a pairwise run (two orders per pair and sample),
    estimated from text lengths before any call is made."""
    n = pairs.count()
    calls = 2 * n * samples
    if not n:
        return {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost": "0"}
    sums = pairs.aggregate(
        one=Sum(Length("response_1__text")),
        two=Sum(Length("response_2__text")),
        instruction=Sum(Length("instruction__text")),
    )
    chars = sum(v or 0 for v in sums.values()) + n * PAIRWISE_PROMPT_CHARS
    input_tokens = chars // 4 * 2 * samples
    output_tokens = min(config.max_tokens, PAIRWISE_OUTPUT_TOKENS) * calls
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


def _probe_cues(
    probe: str, pair_ids: list[int], seed: int, cue: str
) -> tuple[dict[int, dict], dict]:
    """Per pair, what a probe injects; and the run's `probe_settings`.

    Bandwagon: the cue names position A for one half of the pairs and B for the other
    (a seeded shuffle; with an odd count A gets the extra one), the same position in
    both orders, so each of a pair's responses is the target once. Attention: one
    irrelevant sentence per pair, drawn with the seed.
    """
    if not probe:
        return {}, {}
    rng = random.Random(seed)
    if probe == JudgeRun.Probe.BANDWAGON:
        template = cue or BANDWAGON_CUE
        shuffled = list(pair_ids)
        rng.shuffle(shuffled)
        half = (len(shuffled) + 1) // 2
        targets = {pid: ("A" if i < half else "B") for i, pid in enumerate(shuffled)}
        per_pair = {
            pid: {
                "kind": probe,
                "cue": template.replace("{target}", target),
                "cue_target": target,
            }
            for pid, target in targets.items()
        }
        settings_ = {
            "seed": seed,
            "cue": template,
            "targets": {"A": half, "B": len(shuffled) - half},
        }
        return per_pair, settings_
    sentences = [cue] if cue else list(ATTENTION_SENTENCES)
    per_pair = {
        pid: {"kind": probe, "cue": sentences[rng.randrange(len(sentences))]}
        for pid in pair_ids
    }
    return per_pair, {"seed": seed, "sentences": sentences}


def judge_run_create_pairwise(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    user: User,
    categories: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    allow_tie: bool = True,
    probe: str = "",
    cue: str = "",
    name: str = "",
) -> JudgeRun:
    """Create a pending pairwise run over the dataset's `PreferencePair`s.

    Pairs: all of the dataset's, or those whose category is in `categories`, or a
    seeded random `sample` of N of those. Per pair and judge sample, TWO calls: order
    "ab" (response_1 shown as A) and "ba" (response_2 shown as A); each call has
    `pair`, `order` and `instruction` set and `response` null.

    `allow_tie` (frozen in the settings snapshot) says whether the judge may answer
    "tie"; the prompt layout is the config's template layout (frozen too). `probe`
    "bandwagon" injects a cue naming a position (default `BANDWAGON_CUE`; a custom
    `cue` must contain "{target}") and "attention" an irrelevant sentence (default one
    of `ATTENTION_SENTENCES`, or `cue`); what each call was shown is recorded in
    `call.parsed["probe"]` and the run's `probe_settings`.

    Nothing is sent yet. Raises `DomainError` naming the field for bad input,
    `PermissionDenied` for a user who is not a researcher.
    """
    roles.require_researcher(user)
    categories = sorted({c for c in (categories or []) if c is not None})
    problems: list[Problem] = config_endpoint_problems(config)
    if config.is_baseline:
        problems.append(
            Problem("a baseline judge cannot compare two answers", field="config")
        )
    if probe not in JudgeRun.Probe.values:
        problems.append(
            Problem(
                f"unknown probe {probe!r}; use bandwagon or attention", field="probe"
            )
        )
    if probe == JudgeRun.Probe.BANDWAGON and cue and "{target}" not in cue:
        problems.append(
            Problem("a bandwagon cue must contain {target} (A or B)", field="cue")
        )
    if cue and not probe:
        problems.append(Problem("a cue needs a probe", field="cue"))
    if sample is not None and sample < 1:
        problems.append(Problem("must be at least 1", field="sample"))
    pairs = PreferencePair.objects.filter(dataset=dataset)
    if categories:
        known = set(
            pairs.filter(category__in=categories).values_list("category", flat=True)
        )
        unknown = [c for c in categories if c not in known]
        if unknown:
            problems.append(
                Problem(
                    f"no pairs of dataset {dataset.name!r} in: {', '.join(unknown)}",
                    field="categories",
                )
            )
        pairs = pairs.filter(category__in=categories)
    if problems:
        raise DomainError("the judge run was not created", problems)
    pair_rows = list(pairs.order_by("pk").values_list("pk", "instruction_id"))
    if not pair_rows:
        raise DomainError(
            "nothing to judge",
            [
                Problem(
                    f"dataset {dataset.name!r} has no preference pairs"
                    + (" in these categories" if categories else ""),
                    field="dataset",
                )
            ],
        )
    if sample is not None and sample < len(pair_rows):
        pair_rows = sorted(random.Random(seed).sample(pair_rows, sample))
    pair_ids = [pid for pid, _ in pair_rows]
    cues, probe_settings = _probe_cues(probe, pair_ids, seed, cue)
    snapshot = _snapshot(config)
    snapshot.update(
        allow_tie=bool(allow_tie),
        layout=config.prompt.layout if config.prompt else PromptTemplate.Layout.FLASK,
        pairs={"categories": categories, "sample": sample, "seed": seed},
    )
    samples = config.samples
    with transaction.atomic():
        run = JudgeRun.objects.create(
            config=config,
            dataset=dataset,
            kind=JudgeRun.Kind.PAIRWISE,
            probe=probe,
            probe_settings=probe_settings,
            name=name
            or f"{config.name} on {dataset.name} (pairwise{', ' + probe if probe else ''})",
            settings_snapshot=snapshot,
            estimate=pairwise_run_estimate(
                config=config, pairs=pairs.filter(pk__in=pair_ids), samples=samples
            ),
            total_calls=2 * len(pair_ids) * samples,
            created_by=user,
        )
        JudgeCall.objects.bulk_create(
            (
                JudgeCall(
                    run=run,
                    pair_id=pid,
                    instruction_id=instruction_id,
                    order=order,
                    sample_index=s,
                    parsed=_probe_record(cues.get(pid), order),
                )
                for pid, instruction_id in pair_rows
                for s in range(samples)
                for order in PAIR_ORDERS
            ),
            batch_size=5000,
        )
    return run


PAIR_ORDERS = ("ab", "ba")


def _probe_record(cue: dict | None, order: str) -> dict | None:
    """What `call.parsed` starts with: the probe shown to this call, if any."""
    if cue is None:
        return None
    record = dict(cue)
    if "cue_target" in record:
        record["cue_target_original"] = map_verdict(record["cue_target"], order)
    return {"probe": record}
