"""Judge configurations, runs, calls and scores (re-exported by judging.models)."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Dataset, Instruction, PreferencePair, Response, Skill
from flaskapp import bounds, limits
from flaskapp.models import default_workspace_pk


class PromptTemplate(models.Model):
    """A versioned judge prompt. Frozen once a run uses it (edits make a new version)."""

    class Kind(models.TextChoices):
        POINTWISE = "pointwise", "Pointwise skill scores (FLASK)"
        PAIRWISE = "pairwise", "Pairwise preference"
        CLASSIFICATION = "classification", "Classification"
        CRITIQUE = "critique", "Open-ended critique"
        METADATA = "metadata", "Instruction metadata (domains, difficulty, skills)"
        CHECKLIST = "checklist", "Instance checklist suggestions"

    class Layout(models.TextChoices):
        FLASK = "flask", "FLASK"
        FLAME = "flame", "FLAMe text-to-text (INSTRUCTIONS / CONTEXT / EVALUATION)"

    # NULL: a built-in template, shared read-only by every workspace.
    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        default=default_workspace_pk,
        related_name="prompt_templates",
    )
    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.POINTWISE)
    layout = models.CharField(
        max_length=10, choices=Layout.choices, default=Layout.FLASK
    )
    system_text = models.TextField(max_length=limits.PROMPT_TEMPLATE, blank=True)
    user_text = models.TextField(
        max_length=limits.PROMPT_TEMPLATE,
        help_text="Template with {placeholders}; see judging.prompts",
    )
    is_builtin = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            # Per workspace; the built-ins (workspace NULL) once among themselves.
            # Two partial indexes rather than nulls_distinct=False, which only
            # PostgreSQL 15+ enforces (SQLite would let built-ins repeat).
            models.UniqueConstraint(
                fields=["workspace", "name", "version"],
                condition=Q(workspace__isnull=False),
                name="prompt_name_version_unique_in_workspace",
            ),
            models.UniqueConstraint(
                fields=["name", "version"],
                condition=Q(workspace__isnull=True),
                name="prompt_builtin_name_version_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class JudgeConfig(models.Model):
    """How to call one judge: endpoint, model, sampling, prompt, prices and limits."""

    class Backend(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible endpoint"
        BASELINE_ROUGE = "baseline_rouge", "Baseline: ROUGE-L vs reference (no LLM)"
        BASELINE_LENGTH = "baseline_length", "Baseline: response length (no LLM)"

    class OutputMode(models.TextChoices):
        JSON_SCHEMA = "json_schema", "JSON schema (response_format)"
        TEXT = "text", "Free text"

    class PromptLayout(models.TextChoices):
        # What is the same across calls first, the response last, so that provider
        # prefix caching applies (`judging.prompts`); configs made before it existed
        # keep the template's own order (their migration), so their prompts do not
        # change under them.
        CACHE_FRIENDLY = "cache_friendly", "Cache-friendly (shared text first)"
        TEMPLATE = "template", "As the template is written"

    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="judge_configs",
    )
    # Unique within its workspace (`judge_config_named` resolves a name there).
    name = models.CharField(max_length=100)
    backend = models.CharField(
        max_length=20, choices=Backend.choices, default=Backend.OPENAI
    )
    base_url = models.URLField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    model_family = models.CharField(
        max_length=100, blank=True, help_text="For self-preference probes, e.g. 'gpt'."
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key (never the key).",
    )
    # Or a key stored for the workspace (encrypted; sent only to its allowed hosts).
    # A config names one or the other, never both (`services.configs`).
    stored_key = models.ForeignKey(
        "judging.StoredKey",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="configs",
    )
    # Bounds: flaskapp.bounds, shared with the forms, serializers and services.
    temperature = models.FloatField(
        default=0.0, validators=bounds.TEMPERATURE.validators()
    )
    max_tokens = models.PositiveIntegerField(
        default=1024, validators=bounds.MAX_TOKENS.validators()
    )
    samples = models.PositiveSmallIntegerField(
        default=1, validators=bounds.SAMPLES.validators()
    )
    prompt = models.ForeignKey(
        PromptTemplate, null=True, blank=True, on_delete=models.PROTECT
    )
    include_reference = models.BooleanField(default=True)
    output_mode = models.CharField(
        max_length=20, choices=OutputMode.choices, default=OutputMode.JSON_SCHEMA
    )
    max_parse_retries = models.PositiveSmallIntegerField(
        default=2, validators=bounds.MAX_PARSE_RETRIES.validators()
    )
    price_input_per_m = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    price_output_per_m = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    max_concurrency = models.PositiveIntegerField(
        default=16, validators=bounds.MAX_CONCURRENCY.validators()
    )
    requests_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=bounds.REQUESTS_PER_MINUTE.validators()
    )
    tokens_per_minute = models.PositiveIntegerField(
        null=True, blank=True, validators=bounds.TOKENS_PER_MINUTE.validators()
    )
    timeout_seconds = models.FloatField(
        default=120.0, validators=bounds.TIMEOUT_SECONDS.validators()
    )
    is_dev_server = models.BooleanField(
        default=False,
        help_text="Points at the built-in fake judge server (a dev tool).",
    )
    # Costs and budgets (`judging.costs`): cached input tokens at their own price
    # (blank: the input price), the Batch API's discount, the cap a new run gets.
    price_cached_input_per_m = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Price per million cached input tokens; blank: the input price.",
    )
    batch_discount_percent = models.PositiveSmallIntegerField(
        default=50,
        validators=bounds.BATCH_DISCOUNT_PERCENT.validators(),
        help_text="Discount on calls made through the Batch API, 0-100 %.",
    )
    default_budget = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="Spend cap a new run of this judge gets; blank: no cap.",
    )
    prompt_layout = models.CharField(
        max_length=20,
        choices=PromptLayout.choices,
        default=PromptLayout.CACHE_FRIENDLY,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Who decided this endpoint (base URL and key variable) may be used: the admin or
    # endpoint manager who set it, also when a researcher reuses it (judging.endpoints).
    endpoint_approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Every saved change makes a new version (`JudgeConfigVersion` keeps each one's
    # settings); a run records the version it froze (`settings_snapshot`).
    version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(auto_now_add=True)
    # Reasoning models and extra request fields (`judging.reasoning`).
    reasoning_model = models.BooleanField(
        default=False,
        help_text="Send max_completion_tokens and no temperature (reasoning models).",
    )
    reasoning_effort = models.CharField(max_length=10, blank=True)
    extra_body = models.JSONField(default=dict, blank=True)
    # What the endpoint asked to change (its documented 400s), for one version:
    # {"version": n, "params": {param: what was done, in words}}. Written by the run
    # driver, applied to every later call of that version (not a setting).
    adaptations = models.JSONField(default=dict, blank=True)
    # Batch API runs: how many follow-up batches retry the lines that failed.
    batch_max_retries = models.PositiveSmallIntegerField(default=2)
    # Probability-weighted scores (`judging.logprobs`): ask for the top_logprobs most
    # likely alternatives of every output token and store each score's expected value.
    logprobs = models.BooleanField(default=False)
    top_logprobs = models.PositiveSmallIntegerField(
        default=5, validators=bounds.TOP_LOGPROBS.validators()
    )

    class Meta:
        ordering = ["name"]
        permissions = [
            (
                "manage_endpoints",
                "Can create and change judge endpoints (base URL and key variable)",
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"],
                name="judge_config_name_unique_in_workspace",
            ),
            models.CheckConstraint(
                condition=Q(samples__gte=1), name="judge_samples_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1), name="judge_concurrency_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(temperature__gte=0) & Q(temperature__lte=2),
                name="judge_temperature_0_2",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_baseline(self) -> bool:
        return self.backend != self.Backend.OPENAI

    @property
    def has_endpoint(self) -> bool:
        """Whether the judge can be run at all: a baseline, or an LLM backend with a
        base URL and a model. The placeholder an import of verdicts creates has
        neither; it only holds imported results (no "New run", no estimate)."""
        return self.is_baseline or bool(self.base_url and self.model)


class JudgeConfigVersion(models.Model):
    """The settings of one version of a judge config, as saved (never changed after).

    Version 1 is the config as created; each change that alters a setting adds the
    next. Holds the key variable's name only, never a key."""

    config = models.ForeignKey(
        JudgeConfig, on_delete=models.CASCADE, related_name="versions"
    )
    version = models.PositiveIntegerField()
    snapshot = models.JSONField(default=dict)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["config_id", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["config", "version"], name="judge_config_version_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.config_id} v{self.version}"


class JudgeRun(models.Model):
    """One judge config applied to (part of) a dataset."""

    class Kind(models.TextChoices):
        POINTWISE = "pointwise", "Pointwise skill scores"
        PAIRWISE = "pairwise", "Pairwise preferences"
        METADATA = "metadata", "Metadata annotation"
        CHECKLIST = "checklist", "Checklist suggestions"
        CRITIQUE = "critique", "Open-ended critiques"
        IMPORTED = "imported", "Imported results"
        DERIVED = "derived", "Derived from other runs (panel or calibration)"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        CANCELLED = "cancelled", "Cancelled"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Completed with failures"
        STOPPED_BUDGET = "stopped_budget", "Stopped at its budget"

    class Probe(models.TextChoices):
        NONE = "", "None"
        BANDWAGON = "bandwagon", "Bandwagon cue"
        ATTENTION = "attention", "Irrelevant sentence (attention)"

    # Always its dataset's workspace (the run services check).
    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="judge_runs",
    )
    config = models.ForeignKey(
        JudgeConfig,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
    )
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, related_name="judge_runs"
    )
    name = models.CharField(max_length=200, blank=True)
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.POINTWISE)
    models_included = models.JSONField(default=list, blank=True)
    # Bias probe variant of a pairwise run, and its settings (e.g. {"cue_target": "A"}).
    probe = models.CharField(
        max_length=20, choices=Probe.choices, default=Probe.NONE, blank=True
    )
    probe_settings = models.JSONField(default=dict, blank=True)
    instruction_limit = models.PositiveIntegerField(
        null=True, blank=True, validators=bounds.INSTRUCTION_LIMIT.validators()
    )
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.PENDING
    )
    # Frozen copy of what the run was made with (config and prompt may change later).
    settings_snapshot = models.JSONField(default=dict, blank=True)
    estimate = models.JSONField(default=dict, blank=True)
    total_calls = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of a worker driving it."
    )
    source_note = models.TextField(
        max_length=limits.DESCRIPTION,
        blank=True,
        help_text="For imported runs: where from.",
    )
    # Few-shot examples the prompt showed (judging.fewshot): the rule that drew them
    # and each example's response, criterion, human score and rationale. A run is
    # never evaluated on an item among its examples.
    few_shot = models.JSONField(default=dict, blank=True)
    # What the client changed on the endpoint's documented refusals during this run
    # (`judging.reasoning`): {param: what was done, in words}.
    adaptations = models.JSONField(default=dict, blank=True)
    # Set when a run that asked for token probabilities got an answer without them
    # (`judging.logprobs.NO_LOGPROBS_NOTE`): its scores are integers only.
    logprobs_note = models.CharField(max_length=200, blank=True)
    # Spend cap (`judging.services.budgets`): no call starts that could take the
    # spent cost past it. Null: no cap.
    budget = models.DecimalField(max_digits=12, decimal_places=4, null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"run {self.pk}"


class PairOrder(models.TextChoices):
    """The order a pair was shown to a judge, as (A, B)."""

    AB = "ab", "Response 1 as A"
    BA = "ba", "Response 2 as A"


class JudgeCall(models.Model):
    """One request to the judge: one (response or instruction, sample index) of a run.

    `status`: pending -> running -> succeeded | failed (| cancelled). Every attempt's
    outcome is kept: `error` holds the last reason, `attempts` the count; the raw output
    is kept even when it could not be parsed.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="calls")
    response = models.ForeignKey(
        Response, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    instruction = models.ForeignKey(
        Instruction, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    # Pairwise calls: the pair and the order shown ("ab": response_1 as A, "ba":
    # response_2 as A); `response` stays null and `instruction` is pair.instruction.
    pair = models.ForeignKey(
        PreferencePair,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="+",
    )
    order = models.CharField(max_length=2, choices=PairOrder.choices, blank=True)
    sample_index = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.PENDING
    )
    prompt_hash = models.CharField(max_length=64, blank=True)
    raw_output = models.TextField(max_length=limits.JUDGE_OUTPUT, blank=True)
    parsed = models.JSONField(null=True, blank=True)
    error = models.TextField(max_length=limits.CALL_ERROR, blank=True)
    error_kind = models.CharField(max_length=40, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    parse_failures = models.PositiveSmallIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    cached = models.BooleanField(default=False)
    # Of input_tokens, those the provider's prompt cache served; of output_tokens, a
    # reasoning model's reasoning (as reported; `judging.costs` prices them).
    cached_input_tokens = models.PositiveIntegerField(default=0)
    reasoning_tokens = models.PositiveIntegerField(default=0)
    # Who holds a running call and until when: a claim whose lease ran out (its worker
    # died) goes back to pending, and a result is only written under the current claim.
    claim_token = models.CharField(max_length=32, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    # The `JudgeDriver` that claimed it: when that driver's heartbeat goes stale (its
    # worker died), its running calls go back to pending at once, lease or not.
    driver_token = models.CharField(max_length=32, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # Who answered, as the endpoint said (judge drift): "" when it did not say.
    reply_model = models.CharField(max_length=200, blank=True)
    system_fingerprint = models.CharField(max_length=100, blank=True)
    # The Batch API path (`judging.services.execution.batch`): the provider batch that
    # holds this call's key now, and whether its result came through a batch (priced
    # at the config's batch discount: `CallResult.batch`, `judging.costs`).
    batch = models.ForeignKey(
        "judging.JudgeBatch",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="calls",
    )
    via_batch = models.BooleanField(default=False)

    class Meta:
        ordering = ["run_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "response", "sample_index"],
                condition=Q(response__isnull=False),
                name="judge_call_run_response_sample_unique",
            ),
            models.UniqueConstraint(
                fields=["run", "instruction", "sample_index"],
                condition=Q(response__isnull=True, pair__isnull=True),
                name="judge_call_run_instruction_sample_unique",
            ),
            models.UniqueConstraint(
                fields=["run", "pair", "order", "sample_index"],
                condition=Q(pair__isnull=False),
                name="judge_call_run_pair_order_sample_unique",
            ),
            models.CheckConstraint(
                condition=Q(order__in=["", "ab", "ba"]),
                name="judge_call_order_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            models.Index(
                fields=["status", "lease_until"],
                condition=Q(status="running"),
                name="judge_call_running_lease_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"call {self.pk} ({self.status})"


class JudgeDriver(models.Model):
    """A driver (`judging.services.execution.Driver`) alive in some worker process.

    Registered when it starts, its `beat_at` renewed every `JUDGE_DRIVER_BEAT_SECONDS`,
    deleted when it ends. A row whose beat is older than `JUDGE_DRIVER_STALE_SECONDS`
    is a dead driver (its worker was killed): `judge_runs_recover` returns its claimed
    calls to pending and starts a new driver for the run.
    """

    token = models.CharField(max_length=32, primary_key=True)
    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="drivers")
    host = models.CharField(max_length=255, blank=True)
    pid = models.PositiveIntegerField(default=0)
    started_at = models.DateTimeField()
    beat_at = models.DateTimeField(db_index=True)
    # HTTP requests this driver had open at its last beat (claimed calls waiting for a
    # slot, a retry or the database are not requests): what the run page shows.
    in_flight = models.PositiveIntegerField(default=0)

    def __str__(self) -> str:
        return f"driver {self.token[:8]} of run {self.run_id} ({self.host}:{self.pid})"


class JudgeCache(models.Model):
    """A paid answer, keyed by everything that determines it, so it is never paid twice
    within one workspace.

    Key: sha256 of (base URL, model, rendered messages, temperature, max tokens, output
    mode, sample index), the call's `prompt_hash`. Unique per workspace: the answer
    a workspace paid for is served only to its own runs (another workspace asking the
    same prompt pays and sees its own call), so the cache is no side channel.
    """

    workspace = models.ForeignKey(
        "flaskapp.Workspace", on_delete=models.CASCADE, related_name="+"
    )
    key = models.CharField(max_length=64)
    raw_output = models.TextField(
        max_length=limits.JUDGE_OUTPUT,
    )
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "key"], name="judge_cache_key_unique_in_workspace"
            )
        ]

    def __str__(self) -> str:
        return self.key[:12]


class JudgeScore(models.Model):
    """A judge's score for one skill of one response (null score = N/A); `score` is
    stored as `annotation.scales` says (a point, or a categorical label's code)."""

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="scores")
    call = models.ForeignKey(
        JudgeCall,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="scores",
    )
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    sample_index = models.PositiveSmallIntegerField(default=0)
    score = models.SmallIntegerField(null=True, blank=True)
    rationale = models.TextField(max_length=limits.JUDGE_OUTPUT, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Probability-weighted (`judging.logprobs`): the expected value over the scale's
    # values among the score token's top alternatives, renormalised, and the
    # probability mass they covered. Null: not asked, or no probabilities.
    expected_score = models.FloatField(null=True, blank=True)
    expected_mass = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["run_id", "response_id", "skill_id", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "response", "skill", "sample_index"],
                name="judge_score_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill_id}={'N/A' if self.score is None else self.score}"


class JudgeCritique(models.Model):
    """A judge's open-ended critique of one response (a run of kind critique, or an
    imported one); kept verbatim, shown next to the raters' critiques."""

    run = models.ForeignKey(
        JudgeRun, on_delete=models.CASCADE, related_name="critiques"
    )
    call = models.ForeignKey(
        JudgeCall,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="critiques",
    )
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    sample_index = models.PositiveSmallIntegerField(default=0)
    text = models.TextField(
        max_length=limits.JUDGE_OUTPUT,
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "response_id", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "response", "sample_index"],
                name="judge_critique_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"critique of response {self.response_id} by run {self.run_id}"


class PairwiseVerdict(models.Model):
    """A judge's preference on a pair in one presented order.

    `verdict_raw` is what the judge said in presented terms ("A", "B", "tie"; "" when
    there was no usable verdict); `verdict` is the same mapped back to the ORIGINAL
    numbering ("1", "2", "tie", "") by `annotation.labels.map_verdict`. Imported runs
    have no `call`.
    """

    class Raw(models.TextChoices):
        A = "A", "A"
        B = "B", "B"
        TIE = "tie", "Tie"
        NONE = "", "No usable verdict"

    class Verdict(models.TextChoices):
        RESPONSE_1 = "1", "Response 1"
        RESPONSE_2 = "2", "Response 2"
        TIE = "tie", "Tie"
        NONE = "", "No usable verdict"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="verdicts")
    pair = models.ForeignKey(PreferencePair, on_delete=models.CASCADE, related_name="+")
    order = models.CharField(max_length=2, choices=PairOrder.choices)
    sample_index = models.PositiveSmallIntegerField(default=0)
    verdict_raw = models.CharField(max_length=8, choices=Raw.choices, blank=True)
    verdict = models.CharField(max_length=8, choices=Verdict.choices, blank=True)
    rationale = models.TextField(max_length=limits.JUDGE_OUTPUT, blank=True)
    call = models.ForeignKey(
        JudgeCall,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="verdicts",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run_id", "pair_id", "order", "sample_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "pair", "order", "sample_index"],
                name="pairwise_verdict_unique",
            ),
            models.CheckConstraint(
                condition=Q(order__in=["ab", "ba"]),
                name="pairwise_verdict_order_valid",
            ),
            models.CheckConstraint(
                condition=Q(verdict_raw__in=["A", "B", "tie", ""]),
                name="pairwise_verdict_raw_valid",
            ),
            models.CheckConstraint(
                condition=Q(verdict__in=["1", "2", "tie", ""]),
                name="pairwise_verdict_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"pair {self.pair_id} {self.order}: {self.verdict_raw or '-'}"


class MetadataSuggestion(models.Model):
    """A judge's suggestion for an instruction's metadata or checklist, for an admin."""

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    run = models.ForeignKey(
        JudgeRun, on_delete=models.CASCADE, related_name="suggestions"
    )
    instruction = models.ForeignKey(
        Instruction, on_delete=models.CASCADE, related_name="+"
    )
    domains = models.JSONField(default=list, blank=True)
    difficulty = models.PositiveSmallIntegerField(null=True, blank=True)
    skills = models.JSONField(default=list, blank=True)
    checklist = models.JSONField(null=True, blank=True)
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.PROPOSED
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "instruction"], name="metadata_suggestion_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"suggestion for {self.instruction_id} ({self.status})"
