"""Judge configs: create, change and validate, reuse an identical one, freeze into runs.

A config names its endpoint (base URL, model) and the NAME of the environment variable
holding the API key, or a key stored for its workspace (`stored_key`, kept encrypted:
`judging.services.keys`), never the key itself. A config without an endpoint is a
placeholder that only holds imported results and can never be run.

Which key variables and hosts a config may name, and who may set them, is decided in
`judging.endpoints`; `endpoint_rights_problems` below applies it to every create and
change, whatever the interface (page, API, command).
"""

from __future__ import annotations

from decimal import Decimal
from urllib.parse import urlparse

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction

from flaskapp import bounds, workspaces
from flaskapp.errors import DomainError, Problem
from judging import endpoints, reasoning
from judging.models import JudgeConfig, JudgeConfigVersion, PromptTemplate, StoredKey
from judging.selectors.runs import judge_endpoint_list
from judging.services import keys
from judging.services.prompts import prompt_get_builtin

ENV_NAME = endpoints.ENV_NAME
PRICE_PLACES = Decimal("0.0001")  # JudgeConfig.price_*_per_m: decimal_places=4

# The fields a person may set on a config (create and change).
EDITABLE_FIELDS = (
    "name",
    "backend",
    "base_url",
    "model",
    "model_family",
    "api_key_env",
    "stored_key",
    "temperature",
    "max_tokens",
    "samples",
    "prompt",
    "include_reference",
    "output_mode",
    "max_parse_retries",
    "price_input_per_m",
    "price_output_per_m",
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "timeout_seconds",
    "is_dev_server",
    "reasoning_model",
    "reasoning_effort",
    "extra_body",
    "batch_max_retries",
    "logprobs",
    "top_logprobs",
    "price_cached_input_per_m",
    "batch_discount_percent",
    "default_budget",
    "prompt_layout",
)
NEW_ENDPOINT_PROBLEM = (
    "is not one of the configured endpoints: a new endpoint (base URL and key "
    "variable) is set by an admin or a researcher with the judging.manage_endpoints "
    "permission; choose a configured endpoint"
)


def judge_config_create(
    *, user: User, operator: bool = False, workspace=None, **fields
) -> JudgeConfig:
    """Create a judge config after validating every field (errors name the field).

    `api_key_env` must be the NAME of a declared key variable (`judging.endpoints`),
    never a key: values that look like secrets are refused so they cannot reach the
    database. A new endpoint needs endpoint rights (`endpoint_rights_problems`);
    `operator=True` is the command line, whose operator has them. Writes the config
    and its version 1 (`JudgeConfigVersion`) or, on any problem, nothing
    (`DomainError`). The config belongs to `workspace` (None: the user's first
    workspace as researcher; 404 / 403 when the user is not a researcher there).
    """
    if workspace is None:
        workspace = workspaces.workspace_for_create(user)
    else:
        workspaces.require_workspace_role(user, workspace.pk, workspaces.RESEARCHER)
    _unknown_fields(fields)
    problems = judge_config_problems(fields, workspace_id=workspace.pk)
    problems += stored_key_problems(user=user, fields=fields, workspace_id=workspace.pk)
    rights, approver = endpoint_rights_problems(
        user=user,
        operator=operator,
        base_url=fields.get("base_url") or "",
        api_key_env=fields.get("api_key_env") or "",
        stored_key=fields.get("stored_key"),
    )
    problems += rights
    problems += _prompt_workspace_problems(fields.get("prompt"), workspace.pk)
    if problems:
        raise DomainError("the judge config was not saved", problems)
    if fields.get("prompt") is None and fields.get("backend", "openai") == "openai":
        fields["prompt"] = prompt_get_builtin(PromptTemplate.Kind.POINTWISE)
    with transaction.atomic():
        config = JudgeConfig(
            workspace=workspace,
            created_by=user,
            endpoint_approved_by=approver,
            **fields,
        )
        _save_named(config)
        _version_record(config, user)
    return config


def _prompt_workspace_problems(prompt, workspace_id: int) -> list[Problem]:
    """A config uses a built-in prompt template or one of its own workspace."""
    if prompt is None or prompt.workspace_id in (None, workspace_id):
        return []
    return [Problem("no such prompt template in this workspace", field="prompt_id")]


def judge_config_update(
    *, user: User, config: JudgeConfig, operator: bool = False, **fields
) -> JudgeConfig:
    """Change the given `fields` of `config` (the others keep their values), validated
    like `judge_config_create` on the result. Changing the endpoint (base URL or key
    variable) to a pair that is not a configured endpoint needs endpoint rights; the
    judging parameters (prompt, sampling, prices, limits) any researcher may change.

    A change that alters a setting makes a new version: `config.version` goes up by
    one and a `JudgeConfigVersion` row keeps the new settings (the earlier versions'
    rows stay as they were). Saving unchanged settings writes nothing new.

    Locks the config row; writes it or, on any problem, nothing (`DomainError`). Runs
    already made keep the settings (and version number) they froze. Idempotent.
    """
    workspaces.require_object_role(user, config, workspaces.RESEARCHER)
    _unknown_fields(fields)
    with transaction.atomic():
        config = JudgeConfig.objects.select_for_update().get(pk=config.pk)
        merged = {name: getattr(config, name) for name in EDITABLE_FIELDS}
        merged.update(fields)
        problems = judge_config_problems(
            merged, workspace_id=config.workspace_id, exclude_pk=config.pk
        )
        if "stored_key" in fields or merged["stored_key"] is not None:
            problems += stored_key_problems(
                user=user,
                fields=merged,
                workspace_id=config.workspace_id,
                unchanged=merged["stored_key"] == config.stored_key
                and merged["base_url"] == config.base_url,
            )
        rights, approver = endpoint_rights_problems(
            user=user,
            operator=operator,
            base_url=merged["base_url"] or "",
            api_key_env=merged["api_key_env"] or "",
            current=config,
            stored_key=merged["stored_key"],
        )
        problems += rights
        problems += _prompt_workspace_problems(
            merged.get("prompt"), config.workspace_id
        )
        if problems:
            raise DomainError("the judge config was not saved", problems)
        if merged["prompt"] is None and merged["backend"] == "openai":
            merged["prompt"] = prompt_get_builtin(PromptTemplate.Kind.POINTWISE)
        before = config_version_snapshot(config)
        for name, value in merged.items():
            setattr(config, name, value)
        config.endpoint_approved_by = approver
        changed = config_version_snapshot(config) != before
        if changed:
            config.version += 1
        _save_named(config)
        if changed:
            _version_record(config, user)
    return config


def _save_named(config: JudgeConfig) -> None:
    """Save `config`; a name another save took in its workspace since the check (a
    race) is the `DomainError` naming `name` the check gives, never an IntegrityError."""
    try:
        with transaction.atomic():
            config.save()
    except IntegrityError as exc:
        if "judge_config_name_unique_in_workspace" not in str(exc):
            raise
        raise DomainError(
            "the judge config was not saved",
            [Problem(f"a judge config named {config.name!r} exists", field="name")],
        ) from exc


def config_version_snapshot(config: JudgeConfig) -> dict:
    """What one version of `config` records: its name, model family and every setting
    a run freezes (`config_snapshot`, without the version number). JSON-ready; holds
    the key variable's name, never a key."""
    snapshot = config_snapshot(config)
    snapshot.pop("config_version")
    # Prices as stored (4 places), so "2.5" typed and "2.5000" read back are one value.
    for field_name in ("price_input_per_m", "price_output_per_m"):
        snapshot[field_name] = str(Decimal(snapshot[field_name]).quantize(PRICE_PLACES))
    for field_name in ("price_cached_input_per_m", "default_budget"):
        if snapshot[field_name] is not None:
            snapshot[field_name] = str(
                Decimal(snapshot[field_name]).quantize(PRICE_PLACES)
            )
    return {"name": config.name, "model_family": config.model_family, **snapshot}


def _version_record(config: JudgeConfig, user: User | None) -> JudgeConfigVersion:
    return JudgeConfigVersion.objects.create(
        config=config,
        version=config.version,
        snapshot=config_version_snapshot(config),
        created_by=user,
    )


def endpoint_rights_problems(
    *,
    user: User,
    operator: bool,
    base_url: str,
    api_key_env: str,
    current: JudgeConfig | None = None,
    stored_key: StoredKey | None = None,
) -> tuple[list[Problem], User | None]:
    """Whether `user` may give a config the endpoint (`base_url`, `api_key_env`): the
    one place the endpoint-rights rule is applied. Returns (problems, approver), the
    approver being who the endpoint is then recorded as approved by.

    Allowed: no endpoint at all; the endpoint `current` already has (unchanged); any
    endpoint for the command-line operator and for `endpoints.can_manage_endpoints`
    users; otherwise only a configured endpoint (`judge_endpoint_list`), keeping the
    approver who configured it. A refusal names `base_url`, or `api_key_env` when the
    URL is a configured one (or unchanged) and only the key variable is new.

    A config sending a key stored for the workspace (`stored_key`, no key variable)
    needs no endpoint rights: no secret of the server leaves it, and the key goes
    only to the hosts the key's owner allowed (`stored_key_problems`).
    """
    pair = (base_url, api_key_env)
    if pair == ("", ""):
        return [], None
    if stored_key is not None and not api_key_env:
        return [], user
    if current is not None and pair == (current.base_url, current.api_key_env):
        return [], current.endpoint_approved_by
    if operator or endpoints.can_manage_endpoints(user):
        return [], user
    configured = {(e.base_url, e.api_key_env): e for e in judge_endpoint_list()}
    if pair in configured:
        approver_id = configured[pair].approved_by_id
        return [], User.objects.filter(pk=approver_id).first()
    known_urls = {url for url, _ in configured}
    if current is not None:
        known_urls.add(current.base_url)
    field = "api_key_env" if base_url in known_urls else "base_url"
    return [Problem(NEW_ENDPOINT_PROBLEM, field=field)], None


def stored_key_problems(
    *, user: User, fields: dict, workspace_id: int, unchanged: bool = False
) -> list[Problem]:
    """The problems of the stored key a config of workspace `workspace_id` names
    (`fields["stored_key"]`, a `StoredKey` or None), each naming ``stored_key``: not
    with a key variable too; one `user` may use (`keys.stored_key_for_config`: a
    researcher of its workspace, which must be the config's); a base URL whose host
    the key may be sent to. `unchanged` (the key and URL the config already has): only the
    host is checked again."""
    key = fields.get("stored_key")
    if key is None:
        return []
    if (fields.get("api_key_env") or "").strip():
        return [
            Problem(
                "name either a key variable (api_key_env) or a stored key, not both",
                field="stored_key",
            )
        ]
    if not unchanged:
        found, problems = keys.stored_key_for_config(
            user=user,
            key_id=key.pk,
            config_workspace_id=workspace_id,
        )
        if problems:
            return problems
    refusal = keys.stored_key_host_refusal(key, fields.get("base_url") or "")
    if refusal and fields.get("base_url"):
        return [Problem(refusal.removesuffix("; nothing was sent"), field="stored_key")]
    return []


def judge_config_problems(
    fields: dict, *, workspace_id: int, exclude_pk: int | None = None
) -> list[Problem]:
    """Every problem of a config of workspace `workspace_id` with these `fields`, each
    naming its field. A name is taken only by a config of the same workspace (names
    are unique per workspace: another workspace's configs are neither revealed nor
    in the way)."""
    problems: list[Problem] = []
    name = (fields.get("name") or "").strip()
    taken = JudgeConfig.objects.filter(workspace_id=workspace_id, name=name).exclude(
        pk=exclude_pk
    )
    if not name:
        problems.append(Problem("is empty", field="name"))
    elif taken.exists():
        problems.append(Problem(f"a judge config named {name!r} exists", field="name"))
    backend = fields.get("backend", JudgeConfig.Backend.OPENAI)
    if backend not in JudgeConfig.Backend.values:
        problems.append(Problem(f"unknown backend {backend!r}", field="backend"))
    endpoint = endpoints.endpoint_problems(
        fields.get("base_url") or "", fields.get("api_key_env") or ""
    )
    if backend == JudgeConfig.Backend.OPENAI:
        if not fields.get("base_url"):
            endpoint.setdefault("base_url", endpoints.URL_PROBLEM)
        if not (fields.get("model") or "").strip():
            problems.append(Problem("is empty", field="model"))
    problems += [Problem(message, field=f) for f, message in endpoint.items()]
    checks = {
        "temperature": bounds.TEMPERATURE,
        "samples": bounds.SAMPLES,
        "max_tokens": bounds.MAX_TOKENS,
        "max_concurrency": bounds.MAX_CONCURRENCY,
        "max_parse_retries": bounds.MAX_PARSE_RETRIES,
        "timeout_seconds": bounds.TIMEOUT_SECONDS,
        "requests_per_minute": bounds.REQUESTS_PER_MINUTE,
        "tokens_per_minute": bounds.TOKENS_PER_MINUTE,
        "batch_discount_percent": bounds.BATCH_DISCOUNT_PERCENT,
    }
    for field_name, bound in checks.items():
        if problem := bound.problem(fields.get(field_name), field_name, optional=True):
            problems.append(problem)
    for field_name in ("price_input_per_m", "price_output_per_m"):
        value = fields.get(field_name)
        if value is not None and Decimal(str(value)) < 0:
            problems.append(Problem("must not be negative", field=field_name))
    problems += reasoning.config_problems(fields)
    problems += logprob_problems(fields)
    problems += cost_field_problems(fields)
    return problems


def cost_field_problems(fields: dict) -> list[Problem]:
    """The cached-input price (blank, or not negative), the default budget (blank,
    or more than 0) and the prompt layout (one of `JudgeConfig.PromptLayout`)."""
    problems = []
    cached = fields.get("price_cached_input_per_m")
    if cached not in (None, "") and Decimal(str(cached)) < 0:
        problems.append(
            Problem("must not be negative", field="price_cached_input_per_m")
        )
    budget = fields.get("default_budget")
    if budget not in (None, "") and Decimal(str(budget)) <= 0:
        problems.append(
            Problem("must be more than 0 (blank: no cap)", field="default_budget")
        )
    layout = fields.get("prompt_layout")
    if layout is not None and layout not in JudgeConfig.PromptLayout.values:
        choices = ", ".join(JudgeConfig.PromptLayout.values)
        problems.append(Problem(f"must be one of {choices}", field="prompt_layout"))
    return problems


def logprob_problems(fields: dict) -> list[Problem]:
    """Token probabilities: `top_logprobs` within `bounds.TOP_LOGPROBS`, and only an
    LLM judge can return them."""
    problems: list[Problem] = []
    top = fields.get("top_logprobs")
    if problem := bounds.TOP_LOGPROBS.problem(top, "top_logprobs", optional=True):
        problems.append(problem)
    backend = fields.get("backend", JudgeConfig.Backend.OPENAI)
    if fields.get("logprobs") and backend != JudgeConfig.Backend.OPENAI:
        problems.append(
            Problem(
                "a baseline judge has no token probabilities; choose an LLM judge",
                field="logprobs",
            )
        )
    return problems


def _unknown_fields(fields: dict) -> None:
    unknown = sorted(set(fields) - set(EDITABLE_FIELDS))
    if unknown:
        raise TypeError(f"not judge config fields: {', '.join(unknown)}")


def config_snapshot(config: JudgeConfig) -> dict:
    """The settings a run freezes from its config (its `settings_snapshot`), with the
    config's version number (`config_version`)."""
    return {
        "config_version": config.version,
        "backend": config.backend,
        "base_url": config.base_url,
        "model": config.model,
        "api_key_env": config.api_key_env,
        "stored_key_id": config.stored_key_id,
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
        "reasoning_model": config.reasoning_model,
        "reasoning_effort": config.reasoning_effort,
        "extra_body": config.extra_body or {},
        "logprobs": config.logprobs,
        "top_logprobs": config.top_logprobs,
        # A Batch API run's retry limit of failed lines (`batch_settings`): part of
        # the version, so changing it makes a new one.
        "batch_max_retries": config.batch_max_retries,
        **cost_snapshot(config),
    }


def cost_snapshot(config: JudgeConfig) -> dict:
    """What a run freezes of a config's cost settings (`judging.costs.Prices`,
    the default budget) and its prompt layout."""
    cached = config.price_cached_input_per_m
    budget = config.default_budget
    return {
        "price_cached_input_per_m": None if cached is None else str(cached),
        "batch_discount_percent": config.batch_discount_percent,
        "default_budget": None if budget is None else str(budget),
        "prompt_layout": config.prompt_layout,
    }


def config_endpoint_problems(config: JudgeConfig) -> list[Problem]:
    """A config that cannot be called: an LLM backend without a base URL or model
    (e.g. the placeholder `import_preferences --judge` creates for imported verdicts),
    or whose endpoint today's rules refuse (`endpoints.endpoint_problems`: an
    undeclared key variable, a host judges may not call)."""
    if config.is_baseline:
        return []
    if not config.has_endpoint:
        return [
            Problem(
                f"judge {config.name!r} has no endpoint (base URL and model): it only "
                "holds imported results; configure a judge to run it",
                field="config",
            )
        ]
    return snapshot_endpoint_problems(
        {
            "base_url": config.base_url,
            "api_key_env": config.api_key_env,
            "stored_key_id": config.stored_key_id,
        },
        name=config.name,
    )


def snapshot_endpoint_problems(snapshot: dict, *, name: str) -> list[Problem]:
    """The endpoint problems of a run's frozen settings (or a config's), naming the
    run's `config`, so a run is never created or started against a refused endpoint."""
    found = endpoints.endpoint_problems(
        snapshot.get("base_url") or "", snapshot.get("api_key_env") or ""
    )
    if key_id := snapshot.get("stored_key_id"):
        key = StoredKey.objects.filter(pk=key_id).first()
        if key is None:
            found["stored_key"] = "was deleted"
        elif refusal := keys.stored_key_host_refusal(key, snapshot.get("base_url")):
            found["stored_key"] = refusal.removesuffix("; nothing was sent")
    return [
        Problem(f"judge {name!r} is refused: its {field} {message}", field="config")
        for field, message in found.items()
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
    "reasoning_model",
    "reasoning_effort",
    "extra_body",
    "logprobs",
    "top_logprobs",
    "price_cached_input_per_m",
    "batch_discount_percent",
    "prompt_layout",
)


def judge_config_get_or_create(
    *,
    user: User,
    name: str | None = None,
    operator: bool = False,
    workspace=None,
    **fields,
) -> tuple[JudgeConfig, bool]:
    """The config with exactly these settings (`fields`, and the `IDENTITY_FIELDS` not
    given at their defaults), reused if one exists; otherwise created, validated like
    `judge_config_create` (`operator=True`: the command line), under `name` or one
    made from the model and host (with " #2", " #3", ... when taken). Returns
    (config, created). A reused config is not re-validated here: starting a run
    checks its endpoint (`config_endpoint_problems`). Only configs of `workspace`
    (None: the default workspace) are reused; a new one is made there."""
    workspace = workspace or workspaces.default_workspace()
    wanted = {
        f.name: f.get_default()
        for f in JudgeConfig._meta.concrete_fields
        if f.name in IDENTITY_FIELDS
    }
    wanted.update(fields)
    existing = (
        JudgeConfig.objects.filter(workspace=workspace, **wanted).order_by("pk").first()
    )
    if existing is not None:
        return existing, False
    if name is None:
        host = urlparse(wanted["base_url"]).netloc or wanted["base_url"]
        name = f"{wanted['model']} @ {host}"[:90]
    base_name, n = name, 1
    while JudgeConfig.objects.filter(workspace=workspace, name=name).exists():
        n += 1
        name = f"{base_name} #{n}"
    config = judge_config_create(
        user=user, operator=operator, name=name, workspace=workspace, **wanted
    )
    return config, True
