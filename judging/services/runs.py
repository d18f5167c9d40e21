"""Judge runs: create (any kind), start, cancel, resume, retry failed calls.

Configs live in `judging.services.configs`, the cost rule in
`judging.services.estimates`, what differs between kinds in `judging.kinds`.

Execution itself lives in `judging.services.execution`; this module only changes rows
and enqueues driver tasks (after commit).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation.models import Dataset
from annotation.services.rubrics import rubric_freeze
from flaskapp import workspaces
from flaskapp.errors import DomainError, Problem
from judging import kinds
from judging.fewshot import FewShotRequest
from judging.kinds import REFUSED_FOREIGN_OPTIONS, RunOptions, TaskKind
from judging.models import JudgeBatch, JudgeCall, JudgeConfig, JudgeRun
from judging.services import budgets
from judging.services.configs import (
    config_endpoint_problems,
    config_snapshot,
    snapshot_endpoint_problems,
)
from judging.services.estimates import estimate_from_sizes
from judging.services.execution.batch import batch_run_cancel, batch_settings
from judging.services.fewshot import (
    few_shot_estimate_note,
    few_shot_examples_draw,
    few_shot_prompt_chars,
)
from judging.services.run_names import run_default_name
from judging.tasks import judge_run_drive_task


def judge_run_create(  # noqa: PLR0913 - keyword-only options, one per form, API and command field; each kind refuses those it does not take
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
    batch: bool = False,
    budget: Decimal | None = None,
) -> JudgeRun:
    """Create a pending judge run of any `kind` and its calls; nothing is sent yet.

    `budget`: the run's spend cap (None: the config's `default_budget`, which may be
    none); one below a single call's estimate is refused naming `budget`
    (`judging.services.budgets`).

    The one entry for the run form, the API and the `judge` command, for every kind
    of `judging.kinds.REGISTRY` that is `creatable`. The kind says which options it
    `takes` (pointwise: `models`, `instruction_limit` (a number of instructions),
    `max_calls` and `few_shot`; critique the same but `few_shot`; pairwise
    `categories`, `sample`, `seed`, `allow_tie`, `probe` and `cue`; metadata and
    checklist `instruction_limit`); an option of `REFUSED_FOREIGN_OPTIONS` given to a
    kind that does not take it is refused, naming it. Refused too: an unknown kind,
    a judge config whose endpoint today's rules refuse, a baseline judge for a kind
    that needs an LLM, the kind's own bad options, and a selection with nothing to
    judge. The run stores the estimate (`judging.services.estimates`) of its items,
    a frozen copy of the config (with the kind's own settings) and, with
    `few_shot`, the drawn examples (`run.few_shot`; their responses are not judged).

    `batch`: the calls go through the provider's Batch API
    (`judging.services.execution.batch`); refused for a baseline judge.

    Raises `DomainError` naming the field, `PermissionDenied` for a non-researcher.
    Side effects: one run row and its call rows, in one transaction.
    """
    options = RunOptions(
        models=models,
        instruction_limit=instruction_limit,
        max_calls=max_calls,
        categories=categories,
        sample=sample,
        seed=seed,
        allow_tie=allow_tie,
        probe=probe,
        cue=cue,
        few_shot=few_shot,
    )
    task = _creatable_kind(kind)
    _refuse_foreign_options(task, options)
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    problems: list[Problem] = config_endpoint_problems(config)
    if config.workspace_id != dataset.workspace_id:
        # A run lives in its dataset's workspace and uses that workspace's judges.
        problems.append(
            Problem("is not a judge of the dataset's workspace", field="config")
        )
    if config.is_baseline and task.baseline_refusal:
        problems.append(Problem(task.baseline_refusal, field="config"))
    problems += task.problems(config=config, dataset=dataset, options=options)
    if batch and config.is_baseline:
        problems.append(
            Problem("a baseline judge calls no endpoint: no batch", field="batch")
        )
    if problems:
        raise DomainError(task.refusal, problems)
    drawn = (
        few_shot_examples_draw(dataset=dataset, request=few_shot)
        if options.given("few_shot")
        else {}
    )
    selection = task.select(
        dataset=dataset, options=options, examples=drawn, config=config
    )
    if not selection:
        raise task.nothing(dataset=dataset, options=options)
    extra_chars = few_shot_prompt_chars(few_shot=drawn) if drawn else 0
    sizes = task.sizes(config=config, selection=selection, extra_chars=extra_chars)
    estimate = estimate_from_sizes(config=config, sizes=sizes, batch=batch)
    snapshot = {
        **config_snapshot(config),
        **task.snapshot_extra(config=config, options=options),
    }
    if batch:
        snapshot["batch"] = batch_settings(config)
    if drawn:
        snapshot["few_shot"] = {k: drawn[k] for k in ("rule", "k", "seed", "split_id")}
        estimate["few_shot"] = few_shot_estimate_note(
            few_shot=drawn, left_out=selection.left_out
        )
    if budget is None:
        budget = config.default_budget
    if problems := budgets.budget_problems(
        budget=budget,
        per_call=budgets.call_estimate(snapshot=snapshot, estimate=estimate),
        spent=Decimal(0),
    ):
        raise DomainError(task.refusal, problems)
    with transaction.atomic():
        if task.freezes_rubric():
            # The rows this run writes follow the rubric version as it is now.
            rubric_freeze(rubric_id=dataset.rubric_id)
        run = JudgeRun.objects.create(
            workspace_id=dataset.workspace_id,
            config=config,
            dataset=dataset,
            kind=task.key,
            name=name
            or run_default_name(
                config=config, dataset=dataset, what=task.default_name(options)
            ),
            settings_snapshot=snapshot,
            estimate=estimate,
            few_shot=drawn,
            total_calls=sizes.calls,
            created_by=user,
            budget=budget,
            **task.run_fields(options=options, selection=selection),
        )
        JudgeCall.objects.bulk_create(
            (
                JudgeCall(run=run, **fields)
                for fields in task.calls(
                    config=config, options=options, selection=selection
                )
            ),
            batch_size=5000,
        )
    return run


def _creatable_kind(key: str) -> TaskKind:
    try:
        task = kinds.get(key)
    except kinds.UnknownTaskKind as exc:
        raise DomainError("the judge run was not created", [exc.problem()]) from None
    if not task.creatable:
        raise DomainError(
            "the judge run was not created",
            [Problem(f"a run of kind {key!r} is not made by a judge", field="kind")],
        )
    return task


def _refuse_foreign_options(task: TaskKind, options: RunOptions) -> None:
    """An option the kind does not take is refused, naming it and the kinds that
    take it."""
    wrong = [
        name
        for name in REFUSED_FOREIGN_OPTIONS
        if name not in task.takes and options.given(name)
    ]
    if wrong:
        raise DomainError(
            "the judge run was not created",
            [
                Problem(
                    "only for kind "
                    + " or ".join(
                        repr(k.key) for k in kinds.creatable() if name in k.takes
                    ),
                    field=name,
                )
                for name in wrong
            ],
        )


def drivers_for(run: JudgeRun) -> int:
    """How many driver tasks to start: one per worker process expected (settings)."""
    if run.config and run.config.is_baseline:
        return 1
    if (run.settings_snapshot or {}).get("batch"):
        return 1  # one batch driver per run (it holds the run's advisory lock)
    return max(1, settings.JUDGE_DRIVERS_PER_RUN)


def _enqueue_drivers(run: JudgeRun) -> None:
    n = drivers_for(run)
    transaction.on_commit(
        lambda: [
            judge_run_drive_task.apply_async((run.pk,), queue="judge") for _ in range(n)
        ]
    )


def judge_run_start(
    *, run: JudgeRun, user: User, budget: Decimal | None = None
) -> JudgeRun:
    """Start (or resume) a run: status running, driver tasks enqueued after commit.

    `budget`: a new spend cap (e.g. higher, to resume a run stopped at its budget);
    it must leave room for one more call, and a run whose cap is spent is not
    started without one (`budgets.budget_for_start`: `DomainError` naming `budget`).

    Idempotent for a running run (enqueues nothing new). A completed run with nothing
    pending stays completed. A run whose frozen endpoint today's rules refuse
    (`judging.endpoints`: undeclared key variable, host not allowed) is not started:
    `DomainError` naming `config`, nothing changed or queued.
    """
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
    with transaction.atomic():
        run = JudgeRun.objects.select_for_update().get(pk=run.pk)
        if run.status == JudgeRun.Status.RUNNING:
            return run
        if refusal := kinds.get(run.kind).start_refusal:
            raise DomainError(refusal)
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
        run.budget = budgets.budget_for_start(run=run, budget=budget)
        run.status = JudgeRun.Status.RUNNING
        run.started_at = run.started_at or timezone.now()
        run.finished_at = None
        run.heartbeat_at = timezone.now()
        run.save(
            update_fields=[
                "status",
                "started_at",
                "finished_at",
                "heartbeat_at",
                "budget",
            ]
        )
        _enqueue_drivers(run)
    return run


def judge_run_cancel(*, run: JudgeRun, user: User) -> JudgeRun:
    """Stop a run: drivers stop claiming within a second; calls in flight finish and are
    stored; pending calls stay pending so that the run can be resumed.

    A Batch API run's open batches are cancelled at the provider even when no
    worker drives the run (`batch_run_cancel`: here, before returning, when no
    driver holds the run), each batch's outcome recorded; nothing more is
    submitted. Idempotent: cancelling a cancelled run cancels what is still open."""
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
    JudgeRun.objects.filter(pk=run.pk, status=JudgeRun.Status.RUNNING).update(
        status=JudgeRun.Status.CANCELLED, finished_at=timezone.now()
    )
    run.refresh_from_db()
    if (
        run.status == JudgeRun.Status.CANCELLED
        and (run.settings_snapshot or {}).get("batch")
        and run.batches.filter(state__in=JudgeBatch.OPEN_STATES).exists()
    ):
        batch_run_cancel(run)
    return run


def judge_run_retry_failed(*, run: JudgeRun, user: User) -> int:
    """Put failed calls back to pending (good ones untouched) and start the run.

    Returns how many calls will be retried.
    """
    workspaces.require_object_role(user, run, workspaces.RESEARCHER)
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


def judge_run_create_pairwise(
    *, config: JudgeConfig, dataset: Dataset, user: User, **options
) -> JudgeRun:
    """`judge_run_create` of kind "pairwise" (`judging.kinds.pairwise`), for the
    callers that only make pairwise runs."""
    return judge_run_create(
        config=config, dataset=dataset, user=user, kind="pairwise", **options
    )
