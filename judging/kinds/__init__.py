"""Judge task kinds as plug-ins: one `TaskKind` per kind, one ordered `REGISTRY`.

A judge task kind (pointwise scores, critique, pairwise verdicts, metadata and
checklist suggestions, ...) is one module of this package holding everything that
differs between kinds: the options it takes, the items it judges and the calls it
plans, its cost estimate's sizes, its prompt and response format, the parser of the
judge's answer, the rows it stores and what its run page shows. Generic code (the
run form, the API serializers, the `judge` command, `judging.services.runs`'s one
`judge_run_create`, the estimates, the driver and the store of
`judging.services.execution`, the run views) iterates `REGISTRY` or asks `get(key)`
and calls hooks; it never compares a run's kind with a literal. The model is
Django's session backends and password hashers, or Sentry's `GroupType` registry.

Adding a kind: write a module with a `TaskKind` subclass and `register()` it (the
built-in ones are imported at the bottom of this module). The stored value of a run's
kind is `JudgeRun.kind` (`JudgeRun.Kind` keeps the choices of the built-in kinds, so
a new built-in kind also adds its choice there, with its migration).

Layering: this package imports models, prompts, parsing and selectors, never
`judging.services` (the services import it); what a hook needs from a service
(the cost rule, the few-shot draw, the config snapshot) the service does around it.

Contract of the hooks, in the order a run meets them:

- `problems(config, dataset, options)`: the kind's own refusals of the options
  (`Problem`s naming the field); the generic create adds the endpoint's, the baseline
  refusal (`baseline_refusal`) and the refusal of options the kind does not `take`.
- `select(dataset, options, examples, config)`: the items the run judges
  (`Selection`); read only. The run form's estimate and `judge_run_create` call the
  same hook, so form and run agree. `nothing(dataset, options)` is the error when it
  is empty.
- `sizes(config, selection, extra_chars)`: what the calls would carry (`Sizes`);
  `judging.services.estimates` turns it into tokens and cost (the one cost rule).
- `snapshot_extra(config, options)`, `run_fields(options, selection)` and
  `calls(config, options, selection)`: the run row's frozen settings and fields, and
  the `JudgeCall` rows (field dicts), written in one transaction by the service.
- `load_contexts(claim)`: render the claimed calls of a `Claim` (`CallContext`s),
  a fixed number of queries per batch.
- `parse(ctx, result, text)`: read the answer into `result` (`CallResult`); raises
  `parsing.ParseError`, after which the driver re-asks with `reask(reason, skills)`.
- `result_rows(run, results)`: the model rows of the succeeded results of a batch,
  written by the store's flush with `ignore_conflicts` (unique per call target).
- `page_context(run)`, `results_queryset(calls)` and `results_flags`: what the run
  page and the results page add for this kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from annotation.models import Dataset, Skill
from flaskapp.errors import DomainError, Problem
from judging.fewshot import FewShotRequest
from judging.models import JudgeConfig, JudgeRun

# --- What a run is asked for, and what it plans ------------------------------------------


@dataclass(frozen=True)
class RunOptions:
    """The options of a run as `judge_run_create` takes them (None / "" / []: not
    given). Which ones a kind reads is its `takes`."""

    models: list[str] | None = None
    instruction_limit: int | None = None
    max_calls: int | None = None
    categories: list[str] | None = None
    sample: int | None = None
    seed: int = 0
    allow_tie: bool = True
    probe: str = ""
    cue: str = ""
    few_shot: FewShotRequest | None = None

    def given(self, name: str) -> bool:
        """Whether option `name` was given a value (a default is not a value)."""
        value = getattr(self, name)
        if name == "few_shot":
            return value is not None and value.wanted
        return value not in (None, "", [], ())


# The options refused (naming them) when a kind that does not take them is given
# them; the others (a model list sent to a pairwise run by the API's default, a seed)
# are ignored, as they always were.
REFUSED_FOREIGN_OPTIONS = (
    "categories",
    "sample",
    "probe",
    "cue",
    "few_shot",
    "max_calls",
)


@dataclass
class Selection:
    """The items a run judges. `items`: a queryset (or list) the kind's `sizes`
    measures; `targets`: what `calls` turns into calls (ids or rows); `left_out`:
    responses left out because they are few-shot examples; `extra`: the kind's own
    (e.g. a pairwise run's probe cues)."""

    items: Any
    targets: list
    left_out: int = 0
    extra: dict = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.targets)


@dataclass(frozen=True)
class Sizes:
    """What a run's calls would carry, for the one cost rule
    (`judging.services.estimates.estimate_from_sizes`): `input_chars` over all
    `items`, sent once per sample; `output_tokens` per call (before `max_tokens`);
    `shared_chars`: of each call's input, the prefix every call of the run shares
    (the cache-friendly layout's; 0: none), which a provider's prompt cache can
    serve once a call of the same `prefix_groups` group has been made (a provider's
    prefix includes the reply's schema, so calls with different schemas are
    different groups)."""

    calls: int
    items: int
    input_chars: int
    output_tokens: int
    shared_chars: int = 0
    prefix_groups: int = 1


# --- What the driver hands a kind -----------------------------------------------------------


@dataclass(frozen=True)
class Claim:
    """A batch of calls of `run` a driver claimed under `token`, to render: their
    `ids`, the rubric's skills in order (`all_skills`), the config's prompt
    `template` (None: the built-in) and `cache_key(snapshot, messages, sample_index,
    response_format)`, the key of the judge cache.

    `sent`: the calls were rendered and sent already and only their answers are to
    be read (the Batch API's result lines): a kind may skip rendering a call whose
    key was stored when it was sent (`JudgeCall.prompt_hash`), leaving its
    `messages` empty and taking that key as its `cache_key`; a call with no stored
    key is rendered as usual."""

    run: JudgeRun
    token: str
    ids: list[int]
    all_skills: list[Skill]
    template: Any
    cache_key: Callable[..., str]
    sent: bool = False

    @property
    def snapshot(self) -> dict:
        return self.run.settings_snapshot


@dataclass
class CallContext:
    """Everything needed to make one call, loaded before the event loop needs it."""

    call_id: int
    token: str
    response_id: int | None
    sample_index: int
    skills: list[Skill]
    messages: list[dict]
    cache_key: str
    response_text: str = ""
    reference: str = ""
    kind: str = JudgeRun.Kind.POINTWISE
    instruction_id: int | None = None
    response_format: dict | None = None
    # Pairwise calls (see judging.kinds.pairwise).
    pair_id: int | None = None
    order: str = ""
    allow_tie: bool = True
    keep: dict = field(default_factory=dict)  # kept in `parsed` whatever the outcome
    # Pointwise: skill key -> `annotation.scales.Scale`, what the parser accepts.
    scales: dict = field(default_factory=dict)
    # Metadata: the dataset's `annotation.importers.taxonomy.Taxonomy` (its domains and
    # difficulty levels, what the prompt offers and the parser accepts).
    taxonomy: Any = None


@dataclass
class CallResult:
    call_id: int
    token: str
    response_id: int | None
    sample_index: int
    status: str
    kind: str = JudgeRun.Kind.POINTWISE
    instruction_id: int | None = None
    raw_output: str = ""
    parsed: dict | None = None
    error: str = ""
    error_kind: str = ""
    attempts: int = 0
    parse_failures: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: int | None = None
    cached: bool = False
    cache_key: str = ""
    prompt_hash: str = ""  # of the rendered request: reproducible from template + data
    scores: list[tuple[int, int | None, str]] = field(default_factory=list)  # skill id
    pair_id: int | None = None
    order: str = ""
    rationale: str = ""  # a pairwise verdict's rationale
    critique: str = ""  # a critique call's critique (stored as `JudgeCritique`)
    reply_model: str = ""  # the model the endpoint said answered (judge drift)
    system_fingerprint: str = ""
    # Probability-weighted scores (`TaskKind.weigh`): skill id -> `Weighted`; and
    # whether the run asked for token probabilities and this answer had none.
    weighted: dict = field(default_factory=dict)
    no_logprobs: bool = False
    # Usage details as reported (`judging.llm.ChatResult`), priced by `judging.costs`.
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    # Made through the Batch API (the batch path sets it): priced at the discount.
    batch: bool = False


def cache_friendly(snapshot: dict) -> bool:
    """Whether a run's prompts use the cache-friendly layout (`JudgeConfig.
    prompt_layout`; a run frozen before the option existed keeps the template's
    order)."""
    return (
        snapshot.get("prompt_layout", JudgeConfig.PromptLayout.TEMPLATE)
        == JudgeConfig.PromptLayout.CACHE_FRIENDLY
    )


def reask_start(reason: str) -> str:
    """The opening every kind's re-ask message shares."""
    return f"Your previous answer could not be read ({reason}). "


# --- The kind --------------------------------------------------------------------------------


class TaskKind:
    """One judge task kind. Subclasses set the attributes and override the hooks of
    the run's stages (see the module's docstring); a kind that is not `creatable`
    (imported and derived runs: rows written by other services) overrides none."""

    key: ClassVar[str]
    label: ClassVar[str]  # as a run's kind is displayed
    form_label: ClassVar[str] = ""  # the run form's description of the choice
    # The `PromptTemplate.Kind` of this kind's templates and the FLAMe task kinds of
    # the training export (`analysis.exports.training`) it corresponds to.
    prompt_kind: ClassVar[str] = ""
    training_tasks: ClassVar[tuple[str, ...]] = ()
    # The run options it takes (`RunOptions` field names).
    takes: ClassVar[frozenset[str]] = frozenset()
    creatable: ClassVar[bool] = True  # by the form, the API and the `judge` command
    executable: ClassVar[bool] = True  # has calls a driver can send
    writes_scores: ClassVar[bool] = False  # one `JudgeScore` per response and skill
    reads_values: ClassVar[bool] = False  # scores or labels on the rubric's criteria
    annotates_instructions: ClassVar[bool] = False  # one call per instruction
    # The problem a baseline judge gets ("": a baseline can run this kind).
    baseline_refusal: ClassVar[str] = ""
    refusal: ClassVar[str] = "the judge run was not created"
    # Why `judge_run_start` refuses a run of this kind ("": it does not).
    start_refusal: ClassVar[str] = ""
    # The results page's flags (`judging/run_results.html`).
    results_flags: ClassVar[dict[str, bool]] = {}
    # The kind's template partials (`templates/judging/kinds/`), by slot: "badge"
    # (before the run's badges), "settings" (the run page's whole settings card,
    # instead of the judge's), "prompt" and "targets" (its prompt row and the rows
    # after the judge's settings), "page" (a section at the end of the run page),
    # "estimate" (the run form's line under the estimate). A slot left out shows
    # the default (a judge's settings; one call per response and sample).
    templates: ClassVar[dict[str, str]] = {}
    kind_badge: ClassVar[bool] = True  # the kind's name as a badge of the run
    suggests: ClassVar[str] = ""  # what a suggestion run suggests, in a sentence

    # Creating a run --------------------------------------------------------------------

    def problems(
        self, *, config: JudgeConfig, dataset: Dataset, options: RunOptions
    ) -> list[Problem]:
        return []

    def select(
        self,
        *,
        dataset: Dataset,
        options: RunOptions,
        examples: dict,
        config: JudgeConfig | None = None,
    ) -> Selection:
        raise NotImplementedError(f"{self.key}: runs are not created by judge_run")

    def nothing(self, *, dataset: Dataset, options: RunOptions) -> DomainError:
        return DomainError(
            "nothing to judge", [Problem("nothing matches", field="dataset")]
        )

    def sizes(
        self, *, config: JudgeConfig, selection: Selection, extra_chars: int = 0
    ) -> Sizes:
        raise NotImplementedError(self.key)

    def default_name(self, options: RunOptions) -> str:
        """What a default run name says about the kind ("" for none)."""
        return ""

    def snapshot_extra(self, *, config: JudgeConfig, options: RunOptions) -> dict:
        return {}

    def run_fields(self, *, options: RunOptions, selection: Selection) -> dict:
        return {}

    def freezes_rubric(self) -> bool:
        """Whether the run's rows follow the rubric version (frozen at creation)."""
        return self.writes_scores

    def calls(
        self, *, config: JudgeConfig, options: RunOptions, selection: Selection
    ) -> Iterable[dict]:
        raise NotImplementedError(self.key)

    def template_problems(self, user_text: str) -> list[str]:
        """Why a prompt template's user text cannot render this kind's prompt."""
        return []

    # Executing it -------------------------------------------------------------------------

    def load_contexts(self, claim: Claim) -> list[CallContext]:
        raise NotImplementedError(self.key)

    def parse(self, ctx: CallContext, result: CallResult, text: str) -> None:
        raise NotImplementedError(self.key)

    def reask(self, reason: str, skills: list | None = None) -> str:
        return reask_start(reason) + "Answer again in the requested format."

    def weigh(
        self, ctx: CallContext, result: CallResult, text: str, tokens: list[dict]
    ) -> None:
        """After `parse` succeeded on `text`: read the probability-weighted values
        of its scores from the answer's output `tokens` (`judging.logprobs`) into
        `result.weighted`. Kinds without scores on a scale keep the default: none."""

    def result_rows(self, run: JudgeRun, results: list[CallResult]) -> list:
        return []

    # Showing it ---------------------------------------------------------------------------

    def page_context(self, run: JudgeRun) -> dict:
        return {}

    def results_queryset(self, calls):
        return calls

    def wait_summary(self, run: JudgeRun) -> str:
        """What the `judge` command adds to a finished run's summary line."""
        return ""

    def __repr__(self) -> str:
        return f"<TaskKind {self.key}>"


# --- The registry ----------------------------------------------------------------------------


class UnknownTaskKind(LookupError):
    """No judge task kind has this key."""

    def __init__(self, key: object) -> None:
        self.key = key
        super().__init__(
            f"unknown judge task kind {key!r}; known: {', '.join(REGISTRY)}"
        )

    def problem(self, field: str = "kind") -> Problem:
        return Problem(f"unknown kind {self.key!r}", field=field)


# Ordered: the run form, the API and the `judge` command offer the creatable kinds in
# this order.
REGISTRY: dict[str, TaskKind] = {}


def register(kind: TaskKind) -> TaskKind:
    """Add `kind` to the registry (its key must be new); returns it."""
    if kind.key in REGISTRY:
        raise ValueError(f"judge task kind {kind.key!r} is already registered")
    REGISTRY[kind.key] = kind
    return kind


def unregister(key: str) -> None:
    """Remove the kind `key` (tests that register a kind of their own)."""
    REGISTRY.pop(key, None)


def get(key: str) -> TaskKind:
    """The kind `key`; raises `UnknownTaskKind` naming the known keys."""
    try:
        return REGISTRY[key]
    except (KeyError, TypeError):
        raise UnknownTaskKind(key) from None


def find(key: str | None) -> TaskKind | None:
    """The kind `key`, or None."""
    return REGISTRY.get(key) if isinstance(key, str) else None


def all_kinds() -> Iterator[TaskKind]:
    return iter(list(REGISTRY.values()))


def creatable() -> list[TaskKind]:
    """The kinds a run can be created of, in registry order."""
    return [k for k in REGISTRY.values() if k.creatable]


def default() -> TaskKind:
    """The kind of a run when none is named: the first creatable one (pointwise)."""
    return creatable()[0]


def choices() -> list[tuple[str, str]]:
    """(key, run form description) of the creatable kinds, in registry order."""
    return [(k.key, k.form_label or k.label) for k in creatable()]


def keys(**attributes: object) -> tuple[str, ...]:
    """The keys of the kinds whose attributes have these values, e.g.
    `keys(writes_scores=True)`."""
    return tuple(
        k.key
        for k in REGISTRY.values()
        if all(getattr(k, name) == value for name, value in attributes.items())
    )


def training_tasks() -> tuple[str, ...]:
    """The FLAMe task kinds of the training export, in registry order."""
    seen: dict[str, None] = {}
    for kind in REGISTRY.values():
        seen.update(dict.fromkeys(kind.training_tasks))
    return tuple(seen)


# The built-in kinds: the one list of them. Registry order is the run form's.
from judging.kinds.critique import CritiqueKind  # noqa: E402
from judging.kinds.derived import DerivedKind  # noqa: E402
from judging.kinds.imported import ImportedKind  # noqa: E402
from judging.kinds.metadata import ChecklistKind, MetadataKind  # noqa: E402
from judging.kinds.pairwise import PairwiseKind  # noqa: E402
from judging.kinds.pointwise import PointwiseKind  # noqa: E402

BUILTIN = (
    PointwiseKind,
    CritiqueKind,
    MetadataKind,
    ChecklistKind,
    PairwiseKind,
    ImportedKind,
    DerivedKind,
)
for _kind in BUILTIN:
    register(_kind())
