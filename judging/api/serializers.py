"""Input and output shapes of the judging API. Parsing and rendering only.

No shape holds an API key: configs carry the NAME of the environment variable and a
boolean saying whether the server's environment has it set, or the id and name of a
key stored for the workspace; stored keys are written here (`value`, write-only) and
shown by name, hosts and dates only.
"""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation.api.serializers.datasets import ImportProblemOutputSerializer
from annotation.scales import scale_of
from flaskapp import bounds
from judging import kinds
from judging.models import JudgeCall, JudgeConfig, JudgeRun
from judging.selectors import criteria as criteria_selectors
from judging.selectors import runs as selectors
from judging.selectors.fewshot import few_shot_shown
from judging.services.imports import FORMATS

# --- Judge configs ------------------------------------------------------------------------


class PromptRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()


class StoredKeyRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class JudgeConfigOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    backend = serializers.CharField()
    is_baseline = serializers.BooleanField()
    is_dev_server = serializers.BooleanField()
    base_url = serializers.CharField()
    model = serializers.CharField()
    model_family = serializers.CharField()
    api_key_env = serializers.CharField(
        help_text="Name of the environment variable holding the key (never the key)."
    )
    api_key_set = serializers.SerializerMethodField(
        help_text="Whether the server's environment has that variable set; null "
        "unless it is a declared key variable (JUDGE_KEY_ENV_ALLOWED)."
    )
    stored_key = StoredKeyRefOutputSerializer(
        allow_null=True,
        help_text="The workspace's stored key the judge sends (its name, never "
        "its value), or null.",
    )
    temperature = serializers.FloatField()
    max_tokens = serializers.IntegerField()
    samples = serializers.IntegerField()
    prompt = PromptRefOutputSerializer(allow_null=True)
    include_reference = serializers.BooleanField()
    output_mode = serializers.CharField()
    max_parse_retries = serializers.IntegerField()
    batch_max_retries = serializers.IntegerField()
    price_input_per_m = serializers.DecimalField(max_digits=10, decimal_places=4)
    price_output_per_m = serializers.DecimalField(max_digits=10, decimal_places=4)
    max_concurrency = serializers.IntegerField()
    requests_per_minute = serializers.IntegerField(allow_null=True)
    tokens_per_minute = serializers.IntegerField(allow_null=True)
    timeout_seconds = serializers.FloatField()
    reasoning_model = serializers.BooleanField()
    reasoning_effort = serializers.CharField()
    extra_body = serializers.JSONField(
        help_text="Extra request fields merged into every request."
    )
    adaptations = serializers.JSONField(
        help_text="What the endpoint asked to change (its documented 400s) for one "
        'version: {"version": n, "params": {param: what was done, in words}}.'
    )
    logprobs = serializers.BooleanField(
        help_text="Whether runs ask for token log-probabilities and store each "
        "score's probability-weighted value (expected_score)."
    )
    top_logprobs = serializers.IntegerField()
    price_cached_input_per_m = serializers.DecimalField(
        max_digits=10, decimal_places=4, allow_null=True
    )
    batch_discount_percent = serializers.IntegerField()
    default_budget = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True
    )
    prompt_layout = serializers.CharField()
    run_count = serializers.IntegerField(required=False)
    version = serializers.IntegerField(
        help_text="Goes up by one with every saved change of a setting; each run "
        "records the version it used (settings_snapshot.config_version)."
    )
    created_at = serializers.DateTimeField()

    @extend_schema_field(serializers.BooleanField(allow_null=True))
    def get_api_key_set(self, config: JudgeConfig) -> bool | None:
        return selectors.api_key_is_set(config.api_key_env)


class JudgeConfigCreateInputSerializer(serializers.Serializer):
    """Types only; the service checks ranges and rules and names the field."""

    name = serializers.CharField(max_length=100)
    backend = serializers.ChoiceField(
        choices=JudgeConfig.Backend.choices, default=JudgeConfig.Backend.OPENAI
    )
    base_url = serializers.CharField(max_length=500, required=False, allow_blank=True)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    model_family = serializers.CharField(
        max_length=100, required=False, allow_blank=True
    )
    api_key_env = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="The NAME of a declared key variable (JUDGE_KEY_ENV_ALLOWED), e.g. "
        "OPENAI_API_KEY. A new endpoint (base_url, api_key_env) needs endpoint rights.",
    )
    stored_key_id = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="A key stored for the workspace (/api/keys/), sent instead of a key "
        "variable's; the base URL's host must be one of its allowed hosts.",
        **bounds.ID.field_kwargs(),
    )
    # Bounds: flaskapp.bounds (the model fields and the service use the same).
    temperature = serializers.FloatField(
        required=False, **bounds.TEMPERATURE.field_kwargs()
    )
    max_tokens = serializers.IntegerField(
        required=False, **bounds.MAX_TOKENS.field_kwargs()
    )
    samples = serializers.IntegerField(required=False, **bounds.SAMPLES.field_kwargs())
    prompt_id = serializers.IntegerField(
        required=False, allow_null=True, **bounds.ID.field_kwargs()
    )
    include_reference = serializers.BooleanField(required=False)
    output_mode = serializers.ChoiceField(
        choices=JudgeConfig.OutputMode.choices, required=False
    )
    max_parse_retries = serializers.IntegerField(
        required=False, **bounds.MAX_PARSE_RETRIES.field_kwargs()
    )
    batch_max_retries = serializers.IntegerField(
        required=False,
        min_value=0,
        max_value=10,
        help_text="Batch API runs: follow-up batches that retry failed lines.",
    )
    price_input_per_m = serializers.DecimalField(
        max_digits=10, decimal_places=4, required=False
    )
    price_output_per_m = serializers.DecimalField(
        max_digits=10, decimal_places=4, required=False
    )
    max_concurrency = serializers.IntegerField(
        required=False, **bounds.MAX_CONCURRENCY.field_kwargs()
    )
    requests_per_minute = serializers.IntegerField(
        required=False, allow_null=True, **bounds.REQUESTS_PER_MINUTE.field_kwargs()
    )
    tokens_per_minute = serializers.IntegerField(
        required=False, allow_null=True, **bounds.TOKENS_PER_MINUTE.field_kwargs()
    )
    timeout_seconds = serializers.FloatField(
        required=False, **bounds.TIMEOUT_SECONDS.field_kwargs()
    )
    is_dev_server = serializers.BooleanField(required=False)
    reasoning_model = serializers.BooleanField(
        required=False,
        help_text="A reasoning model: requests send max_completion_tokens and no "
        "temperature (the config's temperature must be 1).",
    )
    reasoning_effort = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20,
        help_text="minimal, low, medium, high, or empty (not sent); reasoning "
        "models only.",
    )
    extra_body = serializers.JSONField(
        required=False,
        help_text='A JSON object of extra request fields (e.g. {"top_k": 20}); it '
        "may not set what the app sets (messages, model, response_format, "
        "max_tokens, temperature, logprobs, n, stream, tools, ...).",
    )
    logprobs = serializers.BooleanField(required=False)
    top_logprobs = serializers.IntegerField(
        required=False,
        help_text="Alternatives asked for per output token (1-20; default 5).",
    )
    # Costs and budgets (`judging.costs`, `judging.services.budgets`).
    price_cached_input_per_m = serializers.DecimalField(
        max_digits=10,
        decimal_places=4,
        required=False,
        allow_null=True,
        help_text="Price per million cached input tokens; null: the input price.",
    )
    batch_discount_percent = serializers.IntegerField(
        required=False, **bounds.BATCH_DISCOUNT_PERCENT.field_kwargs()
    )
    default_budget = serializers.DecimalField(
        max_digits=12,
        decimal_places=4,
        required=False,
        allow_null=True,
        help_text="The spend cap a new run of this judge gets; null: none.",
    )
    prompt_layout = serializers.ChoiceField(
        choices=JudgeConfig.PromptLayout.choices, required=False
    )


class JudgeConfigUpdateInputSerializer(JudgeConfigCreateInputSerializer):
    """The fields to change (use with ``partial=True``: none is required and none
    defaults). Changing base_url or api_key_env to an endpoint that is not configured
    needs endpoint rights; the judging parameters any researcher may change."""


# --- Runs ---------------------------------------------------------------------------------


class RefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class RunCountsOutputSerializer(serializers.Serializer):
    total = serializers.IntegerField()
    pending = serializers.IntegerField()
    running = serializers.IntegerField()
    succeeded = serializers.IntegerField()
    failed = serializers.IntegerField()
    cancelled = serializers.IntegerField()
    cached = serializers.IntegerField()


class RunTokensOutputSerializer(serializers.Serializer):
    input = serializers.IntegerField(source="input_tokens")
    output = serializers.IntegerField(source="output_tokens")
    total = serializers.IntegerField(source="tokens")


class RunEstimateOutputSerializer(serializers.Serializer):
    calls = serializers.IntegerField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.CharField()


class RunTimingOutputSerializer(serializers.Serializer):
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    elapsed_seconds = serializers.IntegerField(allow_null=True)
    calls_per_second = serializers.FloatField()
    eta_seconds = serializers.IntegerField(allow_null=True)
    requests_in_flight = serializers.IntegerField(
        allow_null=True,
        help_text="HTTP requests open now (null unless running); counts.running is "
        "the calls claimed, which includes calls waiting for a slot or a retry.",
    )


class JudgeRunOutputSerializer(serializers.Serializer):
    """A run with its counts; `context["counts"]` maps run id -> `RunCounts`, and
    `context["progress"]` (detail only) adds the live timing."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    config = RefOutputSerializer(allow_null=True)
    dataset = RefOutputSerializer()
    models = serializers.ListField(
        child=serializers.CharField(), source="models_included"
    )
    instruction_limit = serializers.IntegerField(allow_null=True)
    is_dev_server = serializers.SerializerMethodField()
    is_baseline = serializers.SerializerMethodField()
    is_classification = serializers.SerializerMethodField(
        help_text="Whether every criterion of the run's rubric is categorical (the "
        "judge answered labels): pages call such a run a classification."
    )
    counts = serializers.SerializerMethodField()
    tokens = serializers.SerializerMethodField()
    cost = serializers.SerializerMethodField()
    estimate = serializers.JSONField()
    budget = serializers.DecimalField(
        max_digits=12,
        decimal_places=4,
        allow_null=True,
        help_text="The run's spend cap (null: none). A run that reached it is "
        '"stopped_budget"; POST start with a higher budget resumes it.',
    )
    timing = serializers.SerializerMethodField()
    source_note = serializers.CharField()
    logprobs_note = serializers.CharField(
        help_text='"" or why the run\'s scores have no probability-weighted values '
        "(the endpoint returned no token probabilities)."
    )
    probe = serializers.CharField(help_text='"" (none), "bandwagon" or "attention".')
    probe_settings = serializers.JSONField()
    adaptations = serializers.JSONField(
        help_text="What the client changed on the endpoint's documented refusals "
        'during the run: {param: what was done, in words}, e.g. {"max_tokens": '
        '"sent max_completion_tokens: the endpoint refuses max_tokens"}.'
    )
    request_settings = serializers.SerializerMethodField(
        help_text="What each call sends besides its messages (null: a run that calls "
        "no endpoint): {fields: {name: value}, not_sent: [name], adaptations: "
        "[words], samples, text}; a reasoning model's fields hold "
        "max_completion_tokens and reasoning_effort, and not_sent names temperature. "
        "The run page's Request row shows the same text."
    )
    warning_count = serializers.SerializerMethodField()
    warnings = serializers.SerializerMethodField()
    few_shot = serializers.SerializerMethodField(
        help_text="The rule and the human-scored examples the judge was shown (null: "
        "none): {rule, k, seed, split_id, criteria, left_out, examples: [{response_id, "
        "instruction_id, instruction_external_id, model, skill, score, rationale}]}. "
        "The run never judges these responses."
    )

    def _counts(self, run: JudgeRun) -> selectors.RunCounts:
        progress = self.context.get("progress")
        if progress is not None:
            return progress.counts
        return self.context["counts"].get(run.pk) or selectors.RunCounts()

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_is_dev_server(self, run: JudgeRun) -> bool:
        return bool((run.settings_snapshot or {}).get("is_dev_server"))

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_is_baseline(self, run: JudgeRun) -> bool:
        return str((run.settings_snapshot or {}).get("backend", "")).startswith(
            "baseline"
        )

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_is_classification(self, run: JudgeRun) -> bool:
        return run.pk in criteria_selectors.classification_run_ids([run])

    @extend_schema_field(OpenApiTypes.INT)
    def get_warning_count(self, run: JudgeRun) -> int:
        """Imported runs: the warnings the import accepted (0 for other runs)."""
        return int((run.settings_snapshot or {}).get("warning_count", 0))

    @extend_schema_field({"type": "object", "nullable": True})
    def get_few_shot(self, run: JudgeRun) -> dict | None:
        return few_shot_shown(run=run)

    @extend_schema_field({"type": "object", "nullable": True})
    def get_request_settings(self, run: JudgeRun) -> dict | None:
        return selectors.run_request_settings(run)

    @extend_schema_field(ImportProblemOutputSerializer(many=True))
    def get_warnings(self, run: JudgeRun) -> list:
        """Imported runs: the first of those warnings, with file, line and field."""
        return list((run.settings_snapshot or {}).get("warnings", []))

    @extend_schema_field(RunCountsOutputSerializer)
    def get_counts(self, run: JudgeRun) -> dict:
        return RunCountsOutputSerializer(self._counts(run)).data

    @extend_schema_field(RunTokensOutputSerializer)
    def get_tokens(self, run: JudgeRun) -> dict:
        return RunTokensOutputSerializer(self._counts(run)).data

    @extend_schema_field(OpenApiTypes.STR)
    def get_cost(self, run: JudgeRun) -> str:
        return str(self._counts(run).cost)

    @extend_schema_field(RunTimingOutputSerializer)
    def get_timing(self, run: JudgeRun) -> dict:
        progress = self.context.get("progress")
        return {
            "created_at": serializers.DateTimeField().to_representation(run.created_at),
            "started_at": serializers.DateTimeField().to_representation(run.started_at)
            if run.started_at
            else None,
            "finished_at": serializers.DateTimeField().to_representation(
                run.finished_at
            )
            if run.finished_at
            else None,
            "elapsed_seconds": progress.elapsed_seconds if progress else None,
            "calls_per_second": progress.calls_per_second if progress else 0.0,
            "eta_seconds": progress.eta_seconds if progress else None,
            "requests_in_flight": progress.requests_in_flight if progress else None,
        }


class JudgeRunStartInputSerializer(serializers.Serializer):
    budget = serializers.DecimalField(
        max_digits=12,
        decimal_places=4,
        required=False,
        allow_null=True,
        help_text="A new spend cap (e.g. higher, to resume a run stopped at its "
        "budget); omitted: the run's own.",
    )


class JudgeRunCreateInputSerializer(serializers.Serializer):
    config = serializers.IntegerField(
        help_text="Judge config id.", **bounds.ID.field_kwargs()
    )
    dataset = serializers.IntegerField(
        help_text="Dataset id.", **bounds.ID.field_kwargs()
    )
    # Choices: the creatable kinds of `judging.kinds.REGISTRY` (refreshed per use).
    kind = serializers.ChoiceField(
        choices=[k.key for k in kinds.creatable()], default=JudgeRun.Kind.POINTWISE
    )
    models = serializers.ListField(
        child=serializers.CharField(max_length=200), required=False, default=list
    )
    limit = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Only the first N instructions.",
        **bounds.INSTRUCTION_LIMIT.field_kwargs(),
    )
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    start = serializers.BooleanField(default=False)
    budget = serializers.DecimalField(
        max_digits=12,
        decimal_places=4,
        required=False,
        allow_null=True,
        help_text="Spend cap of the run (default: the judge's default_budget).",
    )
    # Pairwise runs only (kind "pairwise"): which pairs, ties, and a bias probe.
    categories = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        default=list,
        help_text="Pairwise: only pairs of these categories.",
    )
    sample = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Pairwise: a sample of N pairs.",
        **bounds.PAIR_SAMPLE.field_kwargs(),
    )
    seed = serializers.IntegerField(
        required=False,
        default=0,
        help_text="Pairwise: seed of the sample and probe.",
        **bounds.SEED.field_kwargs(),
    )
    allow_tie = serializers.BooleanField(
        required=False, default=True, help_text='Pairwise: allow a "tie" verdict.'
    )
    probe = serializers.ChoiceField(
        choices=["", "bandwagon", "attention"],
        required=False,
        default="",
        help_text="Pairwise: a bias probe variant.",
    )
    cue = serializers.CharField(
        max_length=500,
        required=False,
        allow_blank=True,
        default="",
        help_text="Pairwise probe text (bandwagon: must contain {target}).",
    )
    # Pointwise runs only: few-shot examples from the development split.
    few_shot = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="Pointwise: show k human-scored examples (rule 'random').",
        **bounds.FEW_SHOT_EXAMPLES.field_kwargs(),
    )
    few_shot_rule = serializers.ChoiceField(
        choices=["random", "manual"], required=False, default="random"
    )
    few_shot_seed = serializers.IntegerField(
        required=False, default=0, **bounds.SEED.field_kwargs()
    )
    few_shot_responses = serializers.ListField(
        child=serializers.IntegerField(**bounds.ID.field_kwargs()),
        required=False,
        default=list,
        max_length=100,
        help_text="Rule 'manual': the example responses (development split only).",
    )
    few_shot_criteria = serializers.ListField(
        child=serializers.CharField(max_length=100),
        required=False,
        default=list,
        max_length=100,
        help_text="Only examples of these criterion keys.",
    )
    batch = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Send the calls through the provider's Batch API (results within "
        "24h, at the batch price).",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A kind registered after this module was imported is offered too.
        self.fields["kind"].choices = [k.key for k in kinds.creatable()]


class JudgeRunListFilterInputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=JudgeRun.Status.choices, required=False)
    dataset = serializers.IntegerField(required=False)


class RetryOutputSerializer(serializers.Serializer):
    retried = serializers.IntegerField()
    run = JudgeRunOutputSerializer()


class JudgeCallFilterInputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=JudgeCall.Status.choices, required=False)


class CallScoreOutputSerializer(serializers.Serializer):
    skill = serializers.CharField(source="skill.key")
    skill_name = serializers.CharField(source="skill.name")
    sample_index = serializers.IntegerField()
    score = serializers.IntegerField(allow_null=True)
    rationale = serializers.CharField()


class JudgeCallOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    response_id = serializers.IntegerField(allow_null=True)
    instruction_id = serializers.SerializerMethodField()
    instruction_external_id = serializers.SerializerMethodField()
    model = serializers.SerializerMethodField()
    sample_index = serializers.IntegerField()
    attempts = serializers.IntegerField()
    error = serializers.CharField()
    error_kind = serializers.CharField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    cost = serializers.DecimalField(max_digits=12, decimal_places=6)
    latency_ms = serializers.IntegerField(allow_null=True)
    cached = serializers.BooleanField()
    raw_output = serializers.CharField()
    parsed = serializers.JSONField(allow_null=True)
    scores = CallScoreOutputSerializer(many=True, source="scores.all")
    pair_id = serializers.IntegerField(
        allow_null=True, help_text="Pairwise calls: the preference pair."
    )
    order = serializers.CharField(
        help_text='Pairwise calls: "ab" (response 1 as A) or "ba"; "" otherwise.'
    )
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    reply_model = serializers.CharField(
        help_text='The model the endpoint said answered (judge drift); "" when it '
        "did not say or the answer came from the cache."
    )
    system_fingerprint = serializers.CharField()

    def _instruction(self, call: JudgeCall):
        return call.response.instruction if call.response_id else call.instruction

    @extend_schema_field(OpenApiTypes.INT)
    def get_instruction_id(self, call: JudgeCall) -> int | None:
        instruction = self._instruction(call)
        return instruction.pk if instruction else None

    @extend_schema_field(OpenApiTypes.STR)
    def get_instruction_external_id(self, call: JudgeCall) -> str | None:
        instruction = self._instruction(call)
        return instruction.external_id if instruction else None

    @extend_schema_field(OpenApiTypes.STR)
    def get_model(self, call: JudgeCall) -> str | None:
        return call.response.model_name if call.response_id else None


class _JudgeOutputSerializer(serializers.Serializer):
    """The fields every stored judge output (score or critique) lists: its call and
    the response it is about."""

    id = serializers.IntegerField()
    call_id = serializers.IntegerField(allow_null=True)
    response_id = serializers.IntegerField()
    instruction_id = serializers.IntegerField(source="response.instruction_id")
    instruction_external_id = serializers.CharField(
        source="response.instruction.external_id"
    )
    model = serializers.CharField(source="response.model_name")


class JudgeScoreOutputSerializer(_JudgeOutputSerializer):
    skill = serializers.CharField(source="skill.key")
    skill_name = serializers.CharField(source="skill.name")
    sample_index = serializers.IntegerField()
    score = serializers.IntegerField(
        allow_null=True,
        help_text="A point of the criterion's scale, or a categorical criterion's "
        "label code (its position in the rubric's labels; see `label`); null is N/A.",
    )
    label = serializers.SerializerMethodField(
        help_text='The value as the rubric writes it: "4", a label key ("yes"), "N/A".'
    )
    rationale = serializers.CharField()

    def get_label(self, obj) -> str:
        return scale_of(obj.skill).label_of(obj.score)


class JudgeCritiqueOutputSerializer(_JudgeOutputSerializer):
    sample_index = serializers.IntegerField()
    text = serializers.CharField(help_text="The judge's critique, verbatim.")


class JudgeRunImportInputSerializer(serializers.Serializer):
    dataset = serializers.IntegerField(help_text="Dataset id.")
    format = serializers.ChoiceField(choices=FORMATS)
    files = serializers.ListField(child=serializers.FileField(), allow_empty=False)
    model = serializers.CharField(max_length=200, required=False, allow_blank=True)
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)
    mapping = serializers.ListField(
        child=serializers.CharField(max_length=300),
        required=False,
        default=list,
        help_text="FIELD=COLUMN pairs (generic JSONL/CSV).",
    )
    strict = serializers.BooleanField(
        default=False,
        help_text="Refuse the files when they have warnings (a score repeated with the "
        "same value, a skill the instruction is not assigned, an empty review) instead "
        "of importing them and listing the warnings on the run.",
    )


class PairwiseVerdictOutputSerializer(serializers.Serializer):
    """One verdict of a pairwise run: as presented ("A"/"B"/"tie") and mapped back to
    the pair's original numbering ("1"/"2"/"tie")."""

    id = serializers.IntegerField()
    call_id = serializers.IntegerField(allow_null=True)
    pair_id = serializers.IntegerField()
    instruction_id = serializers.IntegerField(source="pair.instruction_id")
    instruction_external_id = serializers.CharField(
        source="pair.instruction.external_id"
    )
    category = serializers.CharField(source="pair.category")
    model_1 = serializers.CharField(source="pair.response_1.model_name")
    model_2 = serializers.CharField(source="pair.response_2.model_name")
    order = serializers.CharField(
        help_text='"ab": response 1 shown as A; "ba": response 2 shown as A.'
    )
    sample_index = serializers.IntegerField()
    verdict_raw = serializers.CharField(help_text='"A", "B", "tie" or "" as presented.')
    verdict = serializers.CharField(help_text='"1", "2", "tie" or "" (original).')
    rationale = serializers.CharField()


# --- Stored keys --------------------------------------------------------------------------


class StoredKeyOutputSerializer(serializers.Serializer):
    """What is ever shown of a stored key: never its value nor its ciphertext."""

    id = serializers.IntegerField()
    workspace = serializers.IntegerField(source="workspace_id")
    name = serializers.CharField()
    allowed_hosts = serializers.ListField(child=serializers.CharField())
    created_by = serializers.CharField(
        source="created_by.username", default=None, allow_null=True
    )
    created_at = serializers.DateTimeField()
    rotated_at = serializers.DateTimeField(allow_null=True)
    last_used_at = serializers.DateTimeField(allow_null=True)


class StoredKeyListFilterInputSerializer(serializers.Serializer):
    workspace = serializers.IntegerField(
        help_text="The workspace whose keys to list.", **bounds.ID.field_kwargs()
    )


class StoredKeyCreateInputSerializer(serializers.Serializer):
    """Types only; the service checks the rules and names the field."""

    workspace = serializers.IntegerField(**bounds.ID.field_kwargs())
    name = serializers.CharField(allow_blank=True, max_length=1000)
    value = serializers.CharField(
        write_only=True,
        allow_blank=True,
        trim_whitespace=False,
        max_length=100_000,
        help_text="The API key. Stored encrypted; never shown again.",
    )
    allowed_hosts = serializers.ListField(
        child=serializers.CharField(max_length=300, allow_blank=True),
        max_length=1000,
        help_text="Host names (or *.example.com) the key may be sent to.",
    )


class StoredKeyReplaceInputSerializer(serializers.Serializer):
    value = serializers.CharField(
        write_only=True,
        allow_blank=True,
        trim_whitespace=False,
        max_length=100_000,
        help_text="The new value of the key. Stored encrypted; never shown again.",
    )
    allowed_hosts = serializers.ListField(
        child=serializers.CharField(max_length=300, allow_blank=True),
        max_length=1000,
        required=False,
        help_text="New allowed hosts (unchanged when absent).",
    )
