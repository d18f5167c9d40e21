"""Judge runs: create (any kind), start, cancel, resume, retry failed calls.

Configs live in `judging.services.configs`, the cost rule in
`judging.services.estimates`.

Execution itself lives in `judging.services.execution`; this module only changes rows
and enqueues driver tasks (after commit).
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation import roles
from annotation.errors import DomainError, Problem
from annotation.models import Dataset, PreferencePair, Response
from annotation.services.rubrics import rubric_freeze
from flaskapp.bounds import INSTRUCTION_LIMIT, MAX_CALLS, PAIR_SAMPLE, SEED
from judging.fewshot import FewShotRequest, example_response_ids
from judging.models import JudgeCall, JudgeConfig, JudgeRun, PromptTemplate
from judging.selectors.runs import run_instructions, run_pairs, run_responses
from judging.services.configs import (
    config_endpoint_problems,
    config_snapshot,
    snapshot_endpoint_problems,
)
from judging.services.estimates import (
    annotation_estimate,
    critique_estimate,
    pairwise_estimate,
    pointwise_estimate,
)
from judging.services.fewshot import (
    POINTWISE_ONLY,
    few_shot_estimate_note,
    few_shot_examples_draw,
    few_shot_prompt_chars,
)
from judging.services.probes import (  # noqa: F401 (re-exported)
    ATTENTION_SENTENCES,
    BANDWAGON_CUE,
    PAIR_ORDERS,
    _probe_cues,
    _probe_record,
)
from judging.services.run_names import run_default_name
from judging.tasks import judge_run_drive_task

PAIRWISE_ONLY = ("categories", "sample", "probe", "cue")


def judge_run_create(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    user: User,
    kind: str = JudgeRun.Kind.POINTWISE,
    models: list[str] | None = None,
    instruction_limit: int | None = None,
    max_calls: int | None = None,
    categories: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    allow_tie: bool = True,
    probe: str = "",
    cue: str = "",
    name: str = "",
    few_shot: FewShotRequest | None = None,
) -> JudgeRun:
    """Create a pending judge run of any `kind` and its calls; nothing is sent yet.

    The one entry for the run form, the API and the `judge` command. Pointwise runs
    (any rubric: ordinal criteria on any scale, categorical ones, which pages call a
    classification run) and critique runs take `models`, `instruction_limit` (a number
    of instructions) and `max_calls` (`_judge_run_create_pointwise`); pairwise
    runs `categories`, `sample`, `seed`, `allow_tie`, `probe` and `cue`
    (`judge_run_create_pairwise`); metadata and checklist runs `instruction_limit`
    (`judge_run_create_annotation`). An option of another kind is refused, naming
    it. Every run stores `judging.services.estimates`' estimate of its items.
    Pointwise runs may take `few_shot` examples (`_judge_run_create_pointwise`).
    Raises `DomainError` naming the field, `PermissionDenied` for a non-researcher.
    """
    given = {
        "categories": categories,
        "sample": sample,
        "probe": probe,
        "cue": cue,
    }
    if kind != JudgeRun.Kind.PAIRWISE:
        wrong = [k for k in PAIRWISE_ONLY if given[k] not in (None, "", [])]
        if wrong:
            raise DomainError(
                "the judge run was not created",
                [Problem("only for kind 'pairwise'", field=k) for k in wrong],
            )
    if few_shot is not None and few_shot.wanted and kind != JudgeRun.Kind.POINTWISE:
        raise DomainError("the judge run was not created", [POINTWISE_ONLY])
    if max_calls is not None and kind not in RESPONSE_KINDS:
        raise DomainError(
            "the judge run was not created",
            [
                Problem(
                    "only for kind 'pointwise' or 'critique' (pairwise runs take a "
                    "sample of pairs)",
                    field="max_calls",
                )
            ],
        )
    if kind == JudgeRun.Kind.PAIRWISE:
        return judge_run_create_pairwise(
            config=config,
            dataset=dataset,
            user=user,
            categories=categories,
            sample=sample,
            seed=seed,
            allow_tie=allow_tie,
            probe=probe,
            cue=cue,
            name=name,
        )
    if kind in ANNOTATION_KINDS:
        return judge_run_create_annotation(
            config=config,
            dataset=dataset,
            user=user,
            kind=kind,
            instruction_limit=instruction_limit,
            name=name,
        )
    if kind not in RESPONSE_KINDS:
        raise DomainError(
            "the judge run was not created",
            [Problem(f"unknown kind {kind!r}", field="kind")],
        )
    return _judge_run_create_pointwise(
        config=config,
        dataset=dataset,
        user=user,
        kind=kind,
        models=models,
        instruction_limit=instruction_limit,
        max_calls=max_calls,
        name=name,
        few_shot=few_shot,
    )


# Kinds with one call per response and sample.
RESPONSE_KINDS = (JudgeRun.Kind.POINTWISE, JudgeRun.Kind.CRITIQUE)


def _judge_run_create_pointwise(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    user: User,
    kind: str = JudgeRun.Kind.POINTWISE,
    models: list[str] | None = None,
    instruction_limit: int | None = None,
    max_calls: int | None = None,
    name: str = "",
    few_shot: FewShotRequest | None = None,
) -> JudgeRun:
    """A pending pointwise (or critique) run and its calls (one per response and
    sample).

    Pointwise: every criterion of the dataset's rubric, whatever its scale or labels
    (`annotation.scales`), is judged on its own values. Critique: one open-ended
    critique per call (`judging.prompts.render_critique`), stored as `JudgeCritique`;
    a baseline judge cannot write one (refused on `config`).

    `instruction_limit` keeps the first N instructions (every selected model's response
    to each); `max_calls` then keeps the first responses, in instruction order, whose
    calls (responses x samples) fit in N. Nothing is sent yet: the run records an
    estimate (calls, tokens, cost) and a frozen copy of the config. Raises
    `DomainError` naming the field for bad input.

    `few_shot` (`judging.services.fewshot.few_shot_examples_draw`: development split
    only) is stored on `run.few_shot`; the run never judges an example response:
    they leave its calls, and how many left is in `estimate["few_shot"]`.
    """
    roles.require_researcher(user)
    models = sorted(set(models or []))
    problems: list[Problem] = config_endpoint_problems(config)
    if kind == JudgeRun.Kind.CRITIQUE and config.is_baseline:
        problems.append(
            Problem(
                "a baseline judge cannot write a critique; choose an LLM judge",
                field="config",
            )
        )
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
    if problem := INSTRUCTION_LIMIT.problem(instruction_limit, "limit", optional=True):
        problems.append(problem)
    if problem := MAX_CALLS.problem(max_calls, "max_calls", optional=True):
        problems.append(problem)
    elif max_calls is not None and max_calls < config.samples:
        problems.append(
            Problem(
                f"{max_calls} is fewer than the config's {config.samples} samples "
                "per response",
                field="max_calls",
            )
        )
    if few_shot is not None and few_shot.wanted and config.is_baseline:
        problems.append(
            Problem("a baseline judge reads no prompt: no examples", field="few_shot")
        )
    if problems:
        raise DomainError("the judge run was not created", problems)
    drawn = (
        few_shot_examples_draw(dataset=dataset, request=few_shot)
        if few_shot is not None and few_shot.wanted
        else {}
    )
    responses = run_responses(
        dataset=dataset, models=models, instruction_limit=instruction_limit
    )
    # Never judge an example: its human score is in the prompt.
    left_out = responses.filter(pk__in=example_response_ids(drawn)).count()
    responses = responses.exclude(pk__in=example_response_ids(drawn))
    response_ids = list(
        responses.order_by("instruction__position", "pk").values_list("pk", flat=True)
    )
    if not response_ids:
        raise DomainError(
            "nothing to judge", [Problem("no responses match", field="models")]
        )
    if max_calls is not None and len(response_ids) * config.samples > max_calls:
        response_ids = response_ids[: max_calls // config.samples]
        responses = responses.filter(pk__in=response_ids)
    critique = kind == JudgeRun.Kind.CRITIQUE
    snapshot = config_snapshot(config)
    if critique:
        layout = config.prompt.layout if config.prompt else PromptTemplate.Layout.FLASK
        snapshot.update(kind=kind, layout=layout)
    estimate = (critique_estimate if critique else pointwise_estimate)(
        config=config,
        responses=responses,
        **({"few_shot_chars": few_shot_prompt_chars(few_shot=drawn)} if drawn else {}),
    )
    if drawn:
        snapshot["few_shot"] = {k: drawn[k] for k in ("rule", "k", "seed", "split_id")}
        estimate["few_shot"] = few_shot_estimate_note(few_shot=drawn, left_out=left_out)
    with transaction.atomic():
        # The scores this run writes follow the rubric version as it is now.
        rubric_freeze(rubric_id=dataset.rubric_id)
        run = JudgeRun.objects.create(
            config=config,
            dataset=dataset,
            kind=kind,
            models_included=models,
            instruction_limit=instruction_limit,
            name=name
            or run_default_name(
                config=config, dataset=dataset, what="critiques" if critique else ""
            ),
            settings_snapshot=snapshot,
            estimate=estimate,
            few_shot=drawn,
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


ANNOTATION_KINDS = (JudgeRun.Kind.METADATA, JudgeRun.Kind.CHECKLIST)


def judge_run_create_annotation(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    user: User,
    kind: str,
    instruction_limit: int | None = None,
    name: str = "",
) -> JudgeRun:
    """Create a pending metadata or checklist run: one call per instruction.

    Each call targets an instruction (response null, sample 0). Nothing is sent and
    nothing in the dataset changes; `judge_run_start` executes it and the engine
    stores `MetadataSuggestion`s for an admin to accept. Raises `DomainError` naming
    the field for bad input, `PermissionDenied` for a user who is not a researcher.
    """
    roles.require_researcher(user)
    problems: list[Problem] = config_endpoint_problems(config)
    if kind not in ANNOTATION_KINDS:
        problems.append(
            Problem(
                f"must be {' or '.join(ANNOTATION_KINDS)}, not {kind!r}", field="kind"
            )
        )
    if config.is_baseline:
        problems.append(
            Problem(
                "a baseline judge cannot annotate metadata; choose an LLM judge",
                field="config",
            )
        )
    if problem := INSTRUCTION_LIMIT.problem(instruction_limit, "limit", optional=True):
        problems.append(problem)
    if problems:
        raise DomainError("the annotation run was not created", problems)
    instructions = run_instructions(
        dataset=dataset, instruction_limit=instruction_limit, kind=kind
    )
    ids = list(instructions.values_list("pk", flat=True))
    if not ids:
        raise DomainError(
            "nothing to annotate",
            [
                Problem(
                    f"dataset {dataset.name!r} has no instructions to annotate"
                    + (
                        " without a checklist"
                        if kind == JudgeRun.Kind.CHECKLIST
                        else ""
                    ),
                    field="dataset",
                )
            ],
        )
    label = "metadata" if kind == JudgeRun.Kind.METADATA else "checklists"
    with transaction.atomic():
        run = JudgeRun.objects.create(
            config=config,
            dataset=dataset,
            kind=kind,
            instruction_limit=instruction_limit,
            name=name or run_default_name(config=config, dataset=dataset, what=label),
            settings_snapshot={**config_snapshot(config), "kind": kind},
            estimate=annotation_estimate(config=config, instructions=instructions),
            total_calls=len(ids),
            created_by=user,
        )
        JudgeCall.objects.bulk_create(
            (
                JudgeCall(
                    run=run,
                    instruction_id=pk,
                    response=None,
                    sample_index=0,
                    status=JudgeCall.Status.PENDING,
                )
                for pk in ids
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
    pending stays completed. A run whose frozen endpoint today's rules refuse
    (`judging.endpoints`: undeclared key variable, host not allowed) is not started:
    `DomainError` naming `config`, nothing changed or queued.
    """
    roles.require_researcher(user)
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if run.status == JudgeRun.Status.RUNNING:
            return run
        if run.kind == JudgeRun.Kind.IMPORTED:
            raise DomainError("an imported run has nothing to execute")
        snapshot = run.settings_snapshot or {}
        if not str(snapshot.get("backend", "")).startswith("baseline"):
            # The settings the workers will use, checked against today's rules: a run
            # frozen before an endpoint was refused must not send anything either.
            name = run.config.name if run.config_id else run.name
            problems = snapshot_endpoint_problems(snapshot, name=name)
            if problems:
                raise DomainError("the run was not started", problems)
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
            driver_token="",
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
    if problem := PAIR_SAMPLE.problem(sample, "sample", optional=True):
        problems.append(problem)
    if problem := SEED.problem(seed, "seed"):
        problems.append(problem)
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
    pair_rows = run_pairs(
        dataset=dataset, categories=categories, sample=sample, seed=seed
    )
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
    pair_ids = [pid for pid, _ in pair_rows]
    cues, probe_settings = _probe_cues(probe, pair_ids, seed, cue)
    snapshot = config_snapshot(config)
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
            or run_default_name(
                config=config,
                dataset=dataset,
                what="pairwise" + (f", {probe}" if probe else ""),
            ),
            settings_snapshot=snapshot,
            estimate=pairwise_estimate(
                config=config, pairs=PreferencePair.objects.filter(pk__in=pair_ids)
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
