"""Reads of the judging app: judge configs, runs and their progress, calls, scores and
metadata suggestions.

Querysets come with their joins applied, so list pages issue a constant number of
queries. Reads that end in `_for_user` check the role themselves (researchers and
admins; raters never see judge configs, runs or scores) and raise `PermissionDenied`
or `Http404`, so no caller can forget the check.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet, Sum
from django.http import Http404
from django.utils import timezone

from annotation.models import (
    Dataset,
    Instruction,
    InstructionSkill,
    PreferencePair,
    Response,
    Skill,
    SkillKind,
)
from flaskapp import roles, workspaces
from judging import endpoints, llm, reasoning
from judging.models import (
    JudgeCall,
    JudgeConfig,
    JudgeCritique,
    JudgeDriver,
    JudgeRun,
    JudgeScore,
    MetadataSuggestion,
    PairwiseVerdict,
)
from judging.selectors.criteria import judge_run_critiques

# Calls per second are measured over the calls finished in this window.
RATE_WINDOW_SECONDS = 30
RECENT_ERRORS_SHOWN = 8


# --- Judge configs ------------------------------------------------------------------------


def api_key_is_set(env_name: str) -> bool | None:
    """Whether the server's environment holds a non-empty value under `env_name`, for
    a declared key variable only (`endpoints.key_env_declared`); None for any other
    name, so that no page or response tells which variables the server has.

    Only the boolean leaves this function: the value itself is never returned, shown
    or logged.
    """
    if not endpoints.key_env_declared(env_name):
        return None
    return bool(os.environ.get(env_name))


@dataclass(frozen=True)
class Endpoint:
    """A (base URL, key variable) pair some config uses, and who approved it."""

    base_url: str
    api_key_env: str
    approved_by_id: int | None

    @property
    def value(self) -> str:
        """The pair as one form value (env names never contain "|")."""
        return f"{self.base_url}|{self.api_key_env}"

    @property
    def label(self) -> str:
        key = f"key {self.api_key_env}" if self.api_key_env else "no key"
        return f"{self.base_url} · {key}"


def judge_endpoint_list() -> list[Endpoint]:
    """The configured endpoints: distinct (base URL, key variable) pairs of configs,
    approved by someone who may manage endpoints now and usable under today's rules
    (`endpoints.endpoint_problems`), ordered by URL. These are the endpoints a
    researcher without endpoint rights may choose (`services.configs`)."""
    rows = (
        JudgeConfig.objects.exclude(base_url="", api_key_env="")
        .filter(
            endpoint_approved_by__isnull=False, endpoint_approved_by__is_active=True
        )
        .select_related("endpoint_approved_by")
        .order_by("base_url", "api_key_env", "pk")
    )
    found: dict[tuple[str, str], Endpoint] = {}
    may_manage: dict[int, bool] = {}
    for config in rows:
        pair = (config.base_url, config.api_key_env)
        approver = config.endpoint_approved_by
        if pair in found:
            continue
        if approver.pk not in may_manage:
            may_manage[approver.pk] = endpoints.can_manage_endpoints(approver)
        if may_manage[approver.pk] and not endpoints.endpoint_problems(*pair):
            found[pair] = Endpoint(*pair, approved_by_id=approver.pk)
    return list(found.values())


def judge_config_list_for_user(*, user, workspace=None) -> QuerySet[JudgeConfig]:
    """The judge configs of the workspaces where `user` is a researcher (only
    `workspace`'s when given) with their prompt and the number of runs made with
    each."""
    roles.require_researcher(user)
    qs = workspaces.scope_for_role(JudgeConfig.objects, user, workspaces.RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    return (
        qs.select_related("prompt", "created_by", "stored_key")
        .defer("stored_key__ciphertext")
        .annotate(run_count=Count("runs"))
        .order_by("name")
    )


def judge_config_get_for_user(*, user, config_id: int) -> JudgeConfig:
    """One judge config: 404 for another workspace's, 403 below researcher."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    config = (
        JudgeConfig.objects.select_related("prompt", "created_by", "stored_key")
        .defer("stored_key__ciphertext")
        .annotate(run_count=Count("runs"))
        .filter(pk=config_id)
        .first()
    )
    if config is None:
        raise Http404("No such judge config.")
    workspaces.require_object_role(user, config, workspaces.RESEARCHER)
    return config


# --- Runs and their progress -------------------------------------------------------------


@dataclass
class RunCounts:
    """Call counts and sums of one run (one aggregate query for a page of runs)."""

    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal = Decimal(0)
    cached: int = 0
    cached_input_tokens: int = 0  # of input_tokens, served by the provider's cache

    @property
    def cached_input_percent(self) -> int | None:
        """The share of input tokens the provider's prompt cache served, in whole
        percent (None before any input token is counted)."""
        if not self.input_tokens:
            return None
        return round(100 * self.cached_input_tokens / self.input_tokens)

    @property
    def total(self) -> int:
        return (
            self.pending + self.running + self.succeeded + self.failed + self.cancelled
        )

    @property
    def finished(self) -> int:
        return self.succeeded + self.failed

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def percent(self) -> int:
        return round(100 * self.finished / self.total) if self.total else 0

    @property
    def open(self) -> int:
        return self.pending + self.running


def _count_aggregates(prefix: str = "") -> dict:
    status = f"{prefix}status"
    return {
        "pending": Count("pk", filter=Q(**{status: JudgeCall.Status.PENDING})),
        "running": Count("pk", filter=Q(**{status: JudgeCall.Status.RUNNING})),
        "succeeded": Count("pk", filter=Q(**{status: JudgeCall.Status.SUCCEEDED})),
        "failed": Count("pk", filter=Q(**{status: JudgeCall.Status.FAILED})),
        "cancelled": Count("pk", filter=Q(**{status: JudgeCall.Status.CANCELLED})),
        "cached": Count("pk", filter=Q(cached=True)),
        "input_tokens": Sum("input_tokens"),
        "output_tokens": Sum("output_tokens"),
        "cost": Sum("cost"),
        "cached_input_tokens": Sum("cached_input_tokens"),
    }


def _counts_from(row: dict) -> RunCounts:
    return RunCounts(
        pending=row.get("pending") or 0,
        running=row.get("running") or 0,
        succeeded=row.get("succeeded") or 0,
        failed=row.get("failed") or 0,
        cancelled=row.get("cancelled") or 0,
        cached=row.get("cached") or 0,
        input_tokens=row.get("input_tokens") or 0,
        output_tokens=row.get("output_tokens") or 0,
        cost=row.get("cost") or Decimal(0),
        cached_input_tokens=row.get("cached_input_tokens") or 0,
    )


def judge_run_counts(*, run_ids: list[int]) -> dict[int, RunCounts]:
    """`RunCounts` per run id, in one grouped query whatever the number of runs."""
    rows = (
        JudgeCall.objects.filter(run_id__in=run_ids)
        .values("run_id")
        .annotate(**_count_aggregates())
        .order_by()
    )
    counts = {row["run_id"]: _counts_from(row) for row in rows}
    without_calls = [run_id for run_id in run_ids if run_id not in counts]
    counts.update(_imported_counts(without_calls))
    return {run_id: counts.get(run_id, RunCounts()) for run_id in run_ids}


def _imported_counts(run_ids: list[int]) -> dict[int, RunCounts]:
    """Runs that hold results without calls, whatever their kind: the pairwise
    verdicts imported from a file (`judging.services.verdicts`), or written straight
    into a pairwise run (bench data), count as done (one query; none for no ids).

    The one rule for the progress of such runs, on the run list and the run page:
    what they hold is done, nothing is pending.
    """
    if not run_ids:
        return {}
    rows = (
        PairwiseVerdict.objects.filter(run_id__in=run_ids, call__isnull=True)
        .values("run_id")
        .annotate(n=Count("pk"))
        .order_by()
    )
    return {row["run_id"]: RunCounts(succeeded=row["n"]) for row in rows}


def judge_run_list_for_user(
    *,
    user,
    status: str | None = None,
    dataset_id: int | None = None,
    config_id: int | None = None,
    workspace=None,
) -> QuerySet[JudgeRun]:
    """Runs of the workspaces where `user` is a researcher (only `workspace`'s when
    given), newest first, with their config, dataset and creator joined.

    Counts are not annotated here (a join over every call of every run): pages ask
    `judge_run_counts` for the runs they show.
    """
    roles.require_researcher(user)
    qs = workspaces.scope_for_role(JudgeRun.objects, user, workspaces.RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    qs = qs.select_related("config", "dataset", "created_by").annotate(
        has_ordinal_criteria=ordinal_criteria_exist()
    )
    if status:
        qs = qs.filter(status=status)
    if dataset_id:
        qs = qs.filter(dataset_id=dataset_id)
    if config_id:
        qs = qs.filter(config_id=config_id)
    return qs.order_by("-created_at", "-id")


def ordinal_criteria_exist() -> Exists:
    """Whether a run's rubric has a criterion that is not categorical (annotated as
    `has_ordinal_criteria`: `criteria.classification_run_ids` then needs no query)."""
    return Exists(
        Skill.objects.filter(rubric_id=OuterRef("dataset__rubric_id")).exclude(
            kind=SkillKind.CATEGORICAL
        )
    )


def judge_run_get_for_user(*, user, run_id: int) -> JudgeRun:
    """One run: 404 for another workspace's, 403 below researcher."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    run = (
        JudgeRun.objects.select_related(
            "config", "config__prompt", "dataset", "created_by"
        )
        .annotate(has_ordinal_criteria=ordinal_criteria_exist())
        .filter(pk=run_id)
        .first()
    )
    if run is None:
        raise Http404("No such judge run.")
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
    return run


@dataclass
class RunProgress:
    """What the run page shows live: counts, throughput, tokens, cost and ETA."""

    counts: RunCounts
    calls_per_second: float = 0.0
    eta_seconds: int | None = None
    elapsed_seconds: int | None = None
    mean_latency_ms: int | None = None
    recent_errors: list[JudgeCall] = field(default_factory=list)
    is_live: bool = False
    # HTTP requests open right now, as the live drivers reported at their last beat
    # (`counts.running` is the calls claimed: in flight, or waiting for a slot, a retry
    # or the database). None when the run is not running.
    requests_in_flight: int | None = None

    @property
    def total(self) -> int:
        return self.counts.total


def judge_run_progress(*, run: JudgeRun, now: datetime | None = None) -> RunProgress:
    """Counts, tokens and cost so far, calls/s, ETA and requests in flight of `run`
    (three queries while running, two otherwise).

    Calls per second count the calls finished in the last `RATE_WINDOW_SECONDS` (or
    since the run started, when that is shorter); the ETA divides the calls still open
    by that rate and is only given while the run is running.
    """
    now = now or timezone.now()
    since = now - timedelta(seconds=RATE_WINDOW_SECONDS)
    aggregates = _count_aggregates()
    aggregates["recent"] = Count("pk", filter=Q(finished_at__gte=since))
    aggregates["latency"] = Sum("latency_ms")
    aggregates["timed"] = Count("latency_ms")
    row = JudgeCall.objects.filter(run_id=run.pk).aggregate(**aggregates)
    counts = _counts_from(row)
    if not counts.total:  # the same rule as judge_run_counts (the run list)
        counts = _imported_counts([run.pk]).get(run.pk, counts)
    is_live = run.status == JudgeRun.Status.RUNNING
    window = float(RATE_WINDOW_SECONDS)
    if run.started_at is not None:
        window = min(window, max((now - run.started_at).total_seconds(), 1.0))
    rate = (row["recent"] or 0) / window if is_live else 0.0
    eta = None
    if is_live and rate > 0:
        eta = round(counts.open / rate)
    elapsed = None
    if run.started_at is not None:
        end = run.finished_at if not is_live and run.finished_at else now
        elapsed = max(0, int((end - run.started_at).total_seconds()))
    mean_latency = round(row["latency"] / row["timed"]) if row["timed"] else None
    errors: list[JudgeCall] = []
    if counts.failed:
        errors = list(
            JudgeCall.objects.filter(run_id=run.pk, status=JudgeCall.Status.FAILED)
            .select_related("response", "response__instruction", "instruction")
            .order_by("-finished_at", "-id")[:RECENT_ERRORS_SHOWN]
        )
    requests_in_flight = None
    if is_live:
        fresh = now - timedelta(seconds=settings.JUDGE_DRIVER_STALE_SECONDS)
        requests_in_flight = (
            JudgeDriver.objects.filter(run_id=run.pk, beat_at__gte=fresh).aggregate(
                n=Sum("in_flight")
            )["n"]
            or 0
        )
    return RunProgress(
        counts=counts,
        requests_in_flight=requests_in_flight,
        calls_per_second=round(rate, 2),
        eta_seconds=eta,
        elapsed_seconds=elapsed,
        mean_latency_ms=mean_latency,
        recent_errors=errors,
        is_live=is_live,
    )


def judge_call_list(*, run: JudgeRun, status: str | None = None) -> QuerySet[JudgeCall]:
    """A run's calls in order, with their response, instruction and scores (with
    skills) loaded: a page of calls costs the same number of queries at any size.
    What a kind's results page shows besides (a pairwise run's pair, a critique run's
    critiques) its `TaskKind.results_queryset` adds."""
    qs = JudgeCall.objects.filter(run_id=run.pk)
    if status:
        qs = qs.filter(status=status)
    return (
        qs.select_related("response", "response__instruction", "instruction")
        .prefetch_related(
            Prefetch(
                "scores",
                JudgeScore.objects.select_related("skill").order_by(
                    "skill__position", "skill_id"
                ),
            ),
        )
        .order_by("pk")
    )


def judge_call_list_for_user(
    *, user, run_id: int, status: str | None = None
) -> QuerySet[JudgeCall]:
    run = judge_run_get_for_user(user=user, run_id=run_id)
    return judge_call_list(run=run, status=status)


def judge_score_list_for_user(*, user, run_id: int) -> QuerySet[JudgeScore]:
    """A run's scores, one row per (response, skill, sample), with their joins."""
    run = judge_run_get_for_user(user=user, run_id=run_id)
    return (
        JudgeScore.objects.filter(run_id=run.pk)
        .select_related("response", "response__instruction", "skill")
        .order_by("response__instruction__position", "response_id", "skill__position")
    )


def judge_critique_list_for_user(*, user, run_id: int) -> QuerySet[JudgeCritique]:
    """A run's critiques (a critique run's, or imported ones), one row per (response,
    sample), in instruction order; researchers' and admins' (the run's permission)."""
    run = judge_run_get_for_user(user=user, run_id=run_id)
    return judge_run_critiques(run=run)


# --- What a new run would judge ----------------------------------------------------------


def dataset_model_names(*, dataset: Dataset) -> list[tuple[str, int]]:
    """(model name, response count) of a dataset, by name."""
    return list(
        Response.objects.filter(instruction__dataset=dataset)
        .values_list("model_name")
        .annotate(n=Count("id"))
        .order_by("model_name")
    )


def run_responses(
    *, dataset: Dataset, models: list[str] | None, instruction_limit: int | None
) -> QuerySet[Response]:
    """The responses a pointwise run over `dataset` would judge (the same choice as
    `judge_run_create`: the given models, the first `instruction_limit` instructions)."""
    responses = Response.objects.filter(instruction__dataset=dataset)
    if models:
        responses = responses.filter(model_name__in=models)
    if instruction_limit:
        ids = list(
            Instruction.objects.filter(dataset=dataset)
            .order_by("position", "id")
            .values_list("pk", flat=True)[:instruction_limit]
        )
        responses = responses.filter(instruction_id__in=ids)
    return responses


def run_instructions(
    *, dataset: Dataset, instruction_limit: int | None
) -> QuerySet[Instruction]:
    """The first `instruction_limit` instructions of `dataset` (all without one), in
    order: what a run with one call per instruction starts from (a checklist run then
    keeps those without a checklist: `judging.kinds.metadata`)."""
    qs = Instruction.objects.filter(dataset=dataset).order_by("position", "id")
    if instruction_limit:
        ids = list(qs.values_list("pk", flat=True)[:instruction_limit])
        qs = qs.filter(pk__in=ids)
    return qs


def run_pairs(
    *,
    dataset: Dataset,
    categories: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> list[tuple[int, int]]:
    """(pair id, instruction id) of the preference pairs a pairwise run would judge:
    the dataset's pairs (those of `categories` when given), or a seeded random
    `sample` of N of them, in id order."""
    pairs = PreferencePair.objects.filter(dataset=dataset)
    if categories:
        pairs = pairs.filter(category__in=categories)
    rows = list(pairs.order_by("pk").values_list("pk", "instruction_id"))
    if sample is not None and 0 < sample < len(rows):
        rows = sorted(random.Random(seed).sample(rows, sample))
    return rows


# --- Metadata suggestions ----------------------------------------------------------------


def suggestion_list_for_user(
    *, user, run_id: int, status: str | None = None
) -> tuple[JudgeRun, QuerySet[MetadataSuggestion]]:
    """A run's suggestions with each instruction's current metadata (skills ranked).

    Researchers may read them; deciding is the admins' (see `services.suggestions`).
    """
    run = judge_run_get_for_user(user=user, run_id=run_id)
    qs = MetadataSuggestion.objects.filter(run_id=run.pk)
    if status:
        qs = qs.filter(status=status)
    qs = (
        qs.select_related("instruction", "decided_by")
        .prefetch_related(
            Prefetch(
                "instruction__skill_links",
                InstructionSkill.objects.select_related("skill").order_by("rank"),
            )
        )
        .order_by("instruction__position", "instruction_id")
    )
    return run, qs


def suggestion_get_for_user(*, user, suggestion_id: int) -> MetadataSuggestion:
    """One suggestion: 404 for another workspace's run, 403 below researcher."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    suggestion = (
        MetadataSuggestion.objects.select_related(
            "run", "run__dataset", "instruction", "decided_by"
        )
        .prefetch_related(
            Prefetch(
                "instruction__skill_links",
                InstructionSkill.objects.select_related("skill").order_by("rank"),
            )
        )
        .filter(pk=suggestion_id)
        .first()
    )
    if suggestion is None:
        raise Http404("No such suggestion.")
    workspaces.require_object_role(user, suggestion.run, workspaces.RESEARCHER)
    return suggestion


def suggestion_counts(*, run: JudgeRun) -> dict[str, int]:
    """Suggestions of `run` per status (proposed, accepted, rejected)."""
    rows = dict(
        MetadataSuggestion.objects.filter(run_id=run.pk)
        .values_list("status")
        .annotate(n=Count("id"))
        .order_by()
    )
    return {value: rows.get(value, 0) for value in MetadataSuggestion.Status.values}


def prompt_template_list(*, user=None, workspace=None):
    """The built-in prompt template versions and those of the workspaces where
    `user` is a researcher (only `workspace`'s when given), newest version of each
    name first, with use counts (counting only configs `user` may see)."""
    from django.db.models import Count, Q

    from judging.models import PromptTemplate

    qs = PromptTemplate.objects.all()
    config_filter = Q()
    if user is not None:
        ids = workspaces.workspace_ids_with_role(user, workspaces.RESEARCHER)
        if ids is not None:
            qs = qs.filter(Q(workspace__isnull=True) | Q(workspace_id__in=ids))
            config_filter = Q(judgeconfig__workspace_id__in=ids)
    if workspace is not None:
        qs = qs.filter(Q(workspace__isnull=True) | Q(workspace=workspace))
        config_filter &= Q(judgeconfig__workspace=workspace)
    return qs.annotate(
        config_count=Count("judgeconfig", filter=config_filter)
    ).order_by("name", "-version")


def run_request_settings(run: JudgeRun) -> dict | None:
    """What each call of `run` sends besides its messages, as the request builder of
    both paths (`llm.chat_request_body`) makes it from the run's frozen settings and
    the adaptations its calls start with (`reasoning.learnt_adaptations`): the one
    source of the run page's "Request" row and the API's ``request_settings``.

    None for a run that calls no endpoint (a baseline, an import). Otherwise
    ``{"fields": {name: value}, "not_sent": [name], "adaptations": [words],
    "samples": n, "text": "..."}``: e.g. a reasoning model's ``fields`` hold
    ``max_completion_tokens`` and its ``reasoning_effort`` and ``not_sent`` names
    ``temperature``."""
    snapshot = run.settings_snapshot or {}
    if not snapshot.get("model") or str(snapshot.get("backend", "")).startswith(
        "baseline"
    ):
        return None
    adaptations = reasoning.learnt_adaptations(
        snapshot,
        run.config.adaptations if run.config_id else None,
        run.adaptations,
    )
    request = reasoning.apply_adaptations(
        llm.ChatRequest(
            messages=[],
            model=snapshot["model"],
            temperature=float(snapshot.get("temperature") or 0.0),
            max_tokens=int(snapshot.get("max_tokens") or 0),
            **reasoning.request_options(snapshot),
            logprobs=bool(snapshot.get("logprobs")),
            top_logprobs=snapshot.get("top_logprobs"),
        ),
        adaptations,
    )
    fields = llm.chat_request_body(request)
    for name in ("messages", "model"):
        fields.pop(name, None)
    not_sent = [
        name
        for name in ("temperature", "max_tokens")
        if name not in fields and name not in (request.extra_body or {})
    ]
    samples = int(snapshot.get("samples") or 1)
    parts = [f"{name} {_shown(value)}" for name, value in fields.items()]
    parts += [f"no {name}" for name in not_sent if name == "temperature"]
    if samples > 1:
        parts.append(f"{samples} samples (seed = sample index)")
    return {
        "fields": fields,
        "not_sent": not_sent,
        "adaptations": list(adaptations.values()),
        "samples": samples,
        "text": " · ".join(parts),
    }


def _shown(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)
