"""HTML forms of the judging pages: parse what a person typed; the services validate
ranges and rules and name the field of each problem, which the form then shows."""

from __future__ import annotations

from django import forms

from annotation.forms import MultipleFileField
from flaskapp import bounds
from flaskapp.errors import DomainError
from judging import endpoints, kinds, reasoning
from judging.fewshot import FewShotRequest
from judging.models import JudgeConfig, JudgeRun, PromptTemplate, StoredKey
from judging.selectors.keys import stored_key_choices_for_user
from judging.selectors.runs import Endpoint, judge_endpoint_list, prompt_template_list

PROBES = [
    ("", "No probe"),
    ("bandwagon", "Bandwagon: a sentence says most people preferred one answer"),
    ("attention", "Attention: an irrelevant sentence is added"),
]
IMPORT_FORMATS = [
    ("flask_review", "FLASK review files (JSONL, one per model)"),
    ("jsonl", "Generic JSONL (one score per line)"),
    ("csv", "Generic CSV (one score per row)"),
]
IMPORT_FORMAT_HELP = {
    "flask_review": (
        "FLASK's GPT-4 review output: each line is the eval-set record (question_id or "
        'idx, ...) plus "review" (the judge\'s text) and "score" (a dict keyed by skill '
        "name, or a list aligned with the record's skills). The model is taken from the "
        "file name (gpt4_review.jsonl is gpt4) unless you give it below."
    ),
    "jsonl": (
        "One JSON object per line with id (instruction id), model, skill, score (a "
        "value of that skill: a point of its scale, a label, or N/A where allowed) and "
        "optionally rationale, sample, review and critique (the judge's written "
        "critique of the response; a line may carry a critique alone). Map other key "
        "names below."
    ),
    "csv": (
        "A header row, then one score per row: id, model, skill, score (a value of "
        "that skill: a point of its scale, a label, or N/A where allowed), optionally "
        "rationale, sample, review and critique (a row may carry a critique alone). "
        "Map other column names below."
    ),
}


class ProblemsFormMixin:
    """Put each of a service's problems next to the field it names."""

    FIELD_OF_PROBLEM: dict[str, str] = {}

    def add_problems(self, exc: DomainError) -> None:
        if not exc.problems:
            self.add_error(None, exc.message)  # type: ignore[attr-defined]
        for problem in exc.problems:
            name = self.FIELD_OF_PROBLEM.get(problem.field or "", problem.field)
            target = name if name in self.fields else None  # type: ignore[attr-defined]
            message = problem.message if target else str(problem)
            self.add_error(target, message)  # type: ignore[attr-defined]


class JudgeConfigForm(ProblemsFormMixin, forms.Form):
    """A judge config, new (`config` None) or changed. `user` decides the endpoint
    fields: with endpoint rights (`endpoints.can_manage_endpoints`) the base URL and
    key variable are typed or a configured endpoint is chosen; without, only a
    configured endpoint can be chosen (the service enforces it either way)."""

    endpoint = forms.ChoiceField(
        required=False,
        label="Configured endpoint",
        help_text="An endpoint (base URL and key variable) an admin has configured.",
    )
    name = forms.CharField(max_length=100)
    backend = forms.ChoiceField(
        choices=JudgeConfig.Backend.choices, initial=JudgeConfig.Backend.OPENAI
    )
    base_url = forms.CharField(
        max_length=500,
        required=False,
        label="Base URL",
        help_text="The OpenAI-compatible endpoint, e.g. https://api.openai.com/v1.",
        widget=forms.TextInput(attrs={"placeholder": "https://api.openai.com/v1"}),
    )
    model = forms.CharField(max_length=200, required=False)
    model_family = forms.CharField(
        max_length=100,
        required=False,
        help_text="Optional, for self-preference probes (e.g. gpt).",
    )
    api_key_env = forms.CharField(
        max_length=100,
        required=False,
        label="API key environment variable",
        help_text="The NAME of the server's environment variable that holds the key, "
        "e.g. OPENAI_API_KEY; only declared names can be used. The key itself is "
        "never stored or shown.",
        widget=forms.TextInput(
            attrs={
                "placeholder": "OPENAI_API_KEY",
                "autocomplete": "off",
                "spellcheck": "false",
                "class": "mono",
            }
        ),
    )
    stored_key = forms.ModelChoiceField(
        queryset=StoredKey.objects.none(),
        required=False,
        empty_label="None",
        label="Stored API key",
        help_text="A key stored for your workspace (Keys page), sent instead of an "
        "environment variable's; the base URL's host must be one of its allowed hosts. "
        "With a stored key, any researcher may type the base URL.",
    )
    # Bounds: flaskapp.bounds (the model fields and the service use the same).
    temperature = forms.FloatField(initial=0.0, **bounds.TEMPERATURE.field_kwargs())
    max_tokens = forms.IntegerField(
        initial=1024, label="Max tokens", **bounds.MAX_TOKENS.field_kwargs()
    )
    samples = forms.IntegerField(
        initial=1,
        label="Samples per item",
        help_text="n >= 1 answers per response.",
        **bounds.SAMPLES.field_kwargs(),
    )
    prompt = forms.ModelChoiceField(
        queryset=PromptTemplate.objects.none(),
        required=False,
        empty_label="Built-in FLASK prompt",
        label="Prompt template",
    )
    include_reference = forms.BooleanField(
        required=False, initial=True, label="Show the reference answer to the judge"
    )
    output_mode = forms.ChoiceField(
        choices=JudgeConfig.OutputMode.choices,
        initial=JudgeConfig.OutputMode.JSON_SCHEMA,
        label="Output mode",
    )
    price_input_per_m = forms.DecimalField(
        initial=0, max_digits=10, decimal_places=4, label="Input price / 1M tokens"
    )
    price_output_per_m = forms.DecimalField(
        initial=0, max_digits=10, decimal_places=4, label="Output price / 1M tokens"
    )
    # Costs and budgets (`judging.costs`, `judging.services.budgets`).
    price_cached_input_per_m = forms.DecimalField(
        required=False,
        max_digits=10,
        decimal_places=4,
        label="Cached input price / 1M tokens",
        help_text="Input tokens the provider's prompt cache serves (empty: the input "
        "price).",
    )
    batch_discount_percent = forms.IntegerField(
        required=False,  # absent: unchanged (a new config: 50)
        initial=50,
        label="Batch API discount (%)",
        **bounds.BATCH_DISCOUNT_PERCENT.field_kwargs(),
    )
    default_budget = forms.DecimalField(
        required=False,
        max_digits=12,
        decimal_places=4,
        label="Default budget per run",
        help_text="A new run stops before its cost would pass this (empty: no cap).",
    )
    prompt_layout = forms.ChoiceField(
        required=False,  # absent: unchanged (a new config: cache-friendly)
        choices=JudgeConfig.PromptLayout.choices,
        initial=JudgeConfig.PromptLayout.CACHE_FRIENDLY,
        label="Prompt layout",
        help_text="Cache-friendly: every call starts with the same text (the judge's "
        "instructions and the whole rubric), then says which criteria to score, and "
        "shows the response last, so a provider's prompt cache applies (scores are "
        "read the same way).",
    )
    max_concurrency = forms.IntegerField(
        initial=16,
        label="Max concurrent requests",
        **bounds.MAX_CONCURRENCY.field_kwargs(),
    )
    requests_per_minute = forms.IntegerField(
        required=False,
        label="Requests / minute",
        **bounds.REQUESTS_PER_MINUTE.field_kwargs(),
    )
    tokens_per_minute = forms.IntegerField(
        required=False,
        label="Tokens / minute",
        **bounds.TOKENS_PER_MINUTE.field_kwargs(),
    )
    timeout_seconds = forms.FloatField(
        initial=120.0, label="Timeout (s)", **bounds.TIMEOUT_SECONDS.field_kwargs()
    )
    max_parse_retries = forms.IntegerField(
        initial=2,
        **bounds.MAX_PARSE_RETRIES.field_kwargs(),
        label="Re-asks on unreadable output",
        help_text="How often the judge is asked again when its answer cannot be parsed.",
    )
    batch_max_retries = forms.IntegerField(
        required=False,
        initial=2,
        min_value=0,
        max_value=10,
        label="Batch retries",
        help_text="Batch API runs: how many follow-up batches retry the lines that "
        "failed.",
    )
    is_dev_server = forms.BooleanField(
        required=False,
        label="This is the built-in fake judge server (a development tool)",
    )
    # Reasoning models and extra request fields (`judging.reasoning`).
    reasoning_model = forms.BooleanField(
        required=False,
        label="Reasoning model (send max_completion_tokens, no temperature; "
        "set temperature to 1)",
    )
    reasoning_effort = forms.ChoiceField(
        required=False,
        choices=[("", "Not sent"), *((e, e) for e in reasoning.EFFORTS)],
        label="Reasoning effort",
    )
    extra_body = forms.JSONField(
        required=False,
        initial=dict,  # an empty object, not the JSON "null" of no value
        label="Extra request fields (JSON object)",
        help_text='Merged into every request, e.g. {"top_k": 20}. It may not set '
        "what the app sets itself (messages, model, response_format, max_tokens, "
        "temperature, logprobs, n, stream, tools, ...).",
        widget=forms.Textarea(attrs={"rows": 2, "class": "mono"}),
    )
    logprobs = forms.BooleanField(
        required=False,
        label="Probability-weighted scores (ask for token log-probabilities)",
        help_text="Stores, next to each integer score, its expected value over the "
        "scale's values among the score token's most likely alternatives.",
    )
    top_logprobs = forms.IntegerField(
        required=False,  # empty: the config's (5 for a new one)
        initial=5,
        label="Alternatives per token (top_logprobs)",
        **bounds.TOP_LOGPROBS.field_kwargs(),
    )

    def __init__(
        self,
        *args,
        user,
        config: JudgeConfig | None = None,
        workspace_id: int | None = None,
        **kwargs,
    ):
        """`workspace_id`: where a new config goes (an edited one stays in its own);
        its stored keys are the choices."""
        super().__init__(*args, **kwargs)
        # The built-in templates and those of the config's workspace (a new one's:
        # `workspace_id`); one of another workspace is refused like a missing one.
        scope = config.workspace_id if config else workspace_id
        self.fields["prompt"].queryset = (
            prompt_template_list(user=user, workspace=scope)
            .filter(kind=PromptTemplate.Kind.POINTWISE)
            .order_by("name", "-version")
        )
        self.can_manage_endpoints = endpoints.can_manage_endpoints(user)
        self.fields["stored_key"].queryset = stored_key_choices_for_user(
            user=user,
            include_id=config.stored_key_id if config else None,
            workspace_id=config.workspace_id if config else workspace_id,
        )
        self.fields["stored_key"].label_from_instance = lambda key: (
            f"{key.name} ({key.workspace.name}; {', '.join(key.allowed_hosts)})"
        )
        self.has_stored_keys = self.fields["stored_key"].queryset.exists()
        choices = [(e.value, e.label) for e in judge_endpoint_list()]
        current = ""
        if config is not None and (config.base_url or config.api_key_env):
            current = Endpoint(config.base_url, config.api_key_env, None).value
            if current not in dict(choices):
                label = Endpoint(config.base_url, config.api_key_env, None).label
                choices.insert(0, (current, f"{label} (this judge's)"))
        if self.can_manage_endpoints:
            empty = "None: type a new endpoint below"
        else:
            empty = "None (baselines only)"
            self.fields["endpoint"].initial = current
            # The typed fields are not shown (the base URL is, with stored keys);
            # their problems belong to the choice.
            self.FIELD_OF_PROBLEM = {"api_key_env": "endpoint"}
            if not self.has_stored_keys:
                self.FIELD_OF_PROBLEM["base_url"] = "endpoint"
        self.fields["endpoint"].choices = [("", empty), *choices]
        patterns = ", ".join(endpoints.key_env_patterns())
        self.fields["api_key_env"].help_text += f" Declared: {patterns}."

    def service_fields(self) -> dict:
        data = dict(self.cleaned_data)
        chosen = data.pop("endpoint", "")
        if chosen:
            data["base_url"], _, data["api_key_env"] = chosen.rpartition("|")
        data["name"] = data["name"].strip()
        data["api_key_env"] = data["api_key_env"].strip()
        if data.get("extra_body") is None:
            data["extra_body"] = {}
        if data.get("batch_max_retries") is None:
            data.pop("batch_max_retries", None)  # not given: the default or as it was
        if data.get("top_logprobs") is None:
            data.pop("top_logprobs", None)
        for name in ("batch_discount_percent", "prompt_layout"):
            if data.get(name) in (None, ""):
                data.pop(name, None)  # not posted: the config's own (or the default)
        return data


class RunForm(ProblemsFormMixin, forms.Form):
    name = forms.CharField(
        max_length=200,
        required=False,
        help_text="Optional; a name is made up if empty.",
    )
    config = forms.ModelChoiceField(
        queryset=JudgeConfig.objects.none(), label="Judge", empty_label="Choose…"
    )
    dataset = forms.ModelChoiceField(
        queryset=None, label="Dataset", empty_label="Choose…"
    )
    # Choices: the creatable kinds of `judging.kinds.REGISTRY` (set per form).
    kind = forms.ChoiceField(choices=(), initial=JudgeRun.Kind.POINTWISE)
    models = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple
    )
    instruction_limit = forms.IntegerField(
        required=False,
        **bounds.INSTRUCTION_LIMIT.field_kwargs(),
        label="Instruction limit",
        help_text="Only the first N instructions of the dataset (empty: all).",
    )
    pair_sample = forms.IntegerField(
        required=False,
        **bounds.PAIR_SAMPLE.field_kwargs(),
        label="Pairs",
        help_text="Pairwise: a seeded random sample of N pairs (empty: all pairs).",
    )
    allow_tie = forms.BooleanField(
        required=False, initial=True, label="Pairwise: the judge may answer tie"
    )
    probe = forms.ChoiceField(
        choices=PROBES,
        required=False,
        label="Bias probe",
        help_text="Pairwise: run as a probe variant; compare it with a plain run of "
        "the same judge on the meta-evaluation page.",
    )
    few_shot = forms.IntegerField(
        required=False,
        **bounds.FEW_SHOT_EXAMPLES.field_kwargs(),
        label="Examples (k)",
        help_text="Pointwise: show the judge k human-scored examples from the "
        "development split (empty: none).",
    )
    few_shot_rule = forms.ChoiceField(
        choices=[
            ("random", "Random, spread over criteria and score levels (seeded)"),
            ("manual", "Chosen by hand: the responses below"),
        ],
        required=False,
        initial="random",
        label="Example rule",
    )
    few_shot_seed = forms.IntegerField(
        required=False, initial=0, **bounds.SEED.field_kwargs(), label="Example seed"
    )
    few_shot_responses = forms.CharField(
        required=False,
        max_length=2000,
        label="Example responses",
        help_text="Chosen by hand: response ids, separated by spaces or commas "
        "(development split only).",
    )
    few_shot_criteria = forms.CharField(
        required=False,
        max_length=2000,
        label="Example criteria",
        help_text="Optional: only these criterion keys, separated by spaces or commas.",
    )
    batch = forms.BooleanField(
        required=False,
        initial=False,
        label="Send through the Batch API",
        help_text="The provider's files and batches: results within 24 hours, at the "
        "batch price.",
    )
    budget = forms.DecimalField(
        required=False,
        min_value=0,
        max_digits=12,
        decimal_places=4,
        label="Budget ($)",
        help_text="The run stops before its cost would pass this; it resumes with a "
        "higher one (empty: the judge's default budget, if it has one).",
    )
    start = forms.BooleanField(
        required=False, initial=False, label="Start the run right away"
    )

    FIELD_OF_PROBLEM = {
        "limit": "instruction_limit",
        "sample": "pair_sample",
        "few_shot_examples": "few_shot_responses",
    }

    def __init__(self, *args, configs, datasets, model_choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["config"].queryset = configs
        self.fields["dataset"].queryset = datasets
        self.fields["models"].choices = list(model_choices)
        self.fields["kind"].choices = kinds.choices()

    def clean_few_shot_responses(self) -> list[int]:
        words = self.cleaned_data["few_shot_responses"].replace(",", " ").split()
        bad = [w for w in words if not w.isdigit()]
        if bad:
            raise forms.ValidationError(f"not a response id: {bad[0][:40]}")
        return [int(w) for w in words]

    def few_shot_request(self) -> FewShotRequest | None:
        """The few-shot options as the run service takes them (None: none given)."""
        data = self.cleaned_data
        request = FewShotRequest(
            k=data.get("few_shot"),
            rule=data.get("few_shot_rule") or "random",
            seed=data.get("few_shot_seed") or 0,
            response_ids=tuple(data.get("few_shot_responses") or ()),
            criteria=tuple(
                (data.get("few_shot_criteria") or "").replace(",", " ").split()
            ),
        )
        return request if request.wanted else None

    def run_options(self) -> dict:
        """The options `judge_run_create` takes from the form: those the chosen kind
        takes (the form shows every kind's fields; another kind's are ignored), and
        the few-shot request whatever the kind (another kind refuses it, naming the
        field)."""
        data = self.cleaned_data
        task = kinds.get(data["kind"])
        fields = {
            "models": data["models"],
            "instruction_limit": data["instruction_limit"],
            "sample": data["pair_sample"],
            "allow_tie": data["allow_tie"],
            "probe": data["probe"] or "",
        }
        return {
            **{name: value for name, value in fields.items() if name in task.takes},
            "few_shot": self.few_shot_request(),
            "batch": bool(data.get("batch")),
            "budget": data.get("budget"),
        }


class RunImportForm(ProblemsFormMixin, forms.Form):
    dataset = forms.ModelChoiceField(queryset=None, empty_label="Choose…")
    format = forms.ChoiceField(choices=IMPORT_FORMATS, initial="flask_review")
    files = MultipleFileField(
        help_text="One or more files; FLASK review files are one per model."
    )
    model = forms.CharField(
        max_length=200,
        required=False,
        label="Model name",
        help_text="FLASK review: when the file name is not the model's name. Generic: "
        "for rows without a model column.",
    )
    name = forms.CharField(max_length=200, required=False, label="Run name")
    mapping = forms.CharField(
        required=False,
        label="Field mapping",
        help_text="Generic JSONL/CSV only: field=column, one per line (fields: id, "
        "model, skill, score, rationale, sample, review, critique).",
        widget=forms.Textarea(
            attrs={"rows": 3, "placeholder": "score=rating", "class": "mono"}
        ),
    )
    strict = forms.BooleanField(
        required=False,
        label="Strict: refuse the files if they have warnings",
        help_text="Without it, warnings (a score repeated with the same value, a skill "
        "the instruction is not assigned, an empty review) are listed on the run and "
        "the scores imported.",
    )

    def __init__(self, *args, datasets, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["dataset"].queryset = datasets

    def mapping_pairs(self) -> list[str]:
        return [
            line.strip()
            for line in self.cleaned_data.get("mapping", "").splitlines()
            if line.strip()
        ]


class StoredKeyForm(ProblemsFormMixin, forms.Form):
    """A key to store for a workspace (or, with `replace=True`, a key's new value and
    optionally new hosts). The value field never renders what was typed."""

    name = forms.CharField(max_length=100, required=False)
    value = forms.CharField(
        required=False,
        label="API key",
        strip=False,
        max_length=100_000,
        help_text="Stored encrypted; never shown again, not even to you.",
        widget=forms.PasswordInput(
            render_value=False, attrs={"autocomplete": "off", "spellcheck": "false"}
        ),
    )
    allowed_hosts = forms.CharField(
        required=False,
        max_length=10_000,
        label="Allowed hosts",
        help_text="The host names the key may be sent to, separated by commas or "
        "lines, e.g. api.openai.com or *.example.com. A judge whose base URL names "
        "another host is refused and nothing is sent.",
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
    )

    def __init__(self, *args, replace: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        self.replace = replace
        if replace:
            del self.fields["name"]
            self.fields["value"].label = "New value"
            self.fields["allowed_hosts"].help_text = "Empty: unchanged."

    def service_fields(self) -> dict:
        data = dict(self.cleaned_data)
        if self.replace and not data["allowed_hosts"].strip():
            data["allowed_hosts"] = None
        return data
