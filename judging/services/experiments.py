"""Experiments: judge runs over the same items, compared with a baseline run.

An experiment is the unit a researcher iterates in: prompt versions x models x
parameters x samples, each a run over the same responses and criteria, so that a
paired comparison with the baseline means something. The one rule for "the same
items" is :func:`run_items`; a run that covers other items is refused with the
difference named.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.http import Http404

from annotation.models import Campaign, Dataset
from flaskapp import bounds, workspaces
from flaskapp.errors import DomainError, Problem
from flaskapp.limits import model_text_problems
from flaskapp.params import ascii_int
from flaskapp.untrusted import text_problem
from judging import kinds
from judging.models import Experiment, JudgeCall, JudgeRun, JudgeScore
from judging.selectors.item_scores import SCORE_KINDS  # noqa: F401 (re-exported)

NAME_MAX = Experiment._meta.get_field("name").max_length


def run_items(run: JudgeRun) -> tuple[frozenset[int], frozenset[int]]:
    """(response ids, skill ids) a run covers: the responses of its calls and
    scores, and the criteria it scored (two queries). The one rule for "the same
    items" of an experiment."""
    responses = set(
        JudgeCall.objects.filter(run=run, response__isnull=False).values_list(
            "response_id", flat=True
        )
    )
    scored = JudgeScore.objects.filter(run=run).values_list("response_id", "skill_id")
    skills = set()
    for response_id, skill_id in scored.distinct():
        responses.add(response_id)
        skills.add(skill_id)
    return frozenset(responses), frozenset(skills)


def _same_items_problem(run: JudgeRun, items, reference: JudgeRun, ref_items) -> str:
    """Why `run` does not cover the items of `reference` ('' when it does)."""
    (responses, skills), (ref_responses, ref_skills) = items, ref_items
    if responses != ref_responses:
        missing, extra = ref_responses - responses, responses - ref_responses
        parts = []
        if missing:
            parts.append(
                f"{len(missing)} of its responses missing (e.g. response {min(missing)})"
            )
        if extra:
            parts.append(f"{len(extra)} others (e.g. response {min(extra)})")
        return (
            f"run {run.pk} covers {len(responses)} responses and run {reference.pk} "
            f"{len(ref_responses)}: {' and '.join(parts)}; the runs of one experiment "
            "must judge the same items"
        )
    if skills and ref_skills and skills != ref_skills:
        return (
            f"run {run.pk} scored {len(skills)} criteria and run {reference.pk} "
            f"{len(ref_skills)}; the runs of one experiment must score the same criteria"
        )
    return ""


def _check_runs(
    dataset: Dataset, runs: list[JudgeRun], reference=None
) -> list[Problem]:
    problems = []
    for run in runs:
        if run.dataset_id != dataset.pk:
            problems.append(
                Problem(f"run {run.pk} is of another dataset", field="run_ids")
            )
        elif not kinds.get(run.kind).writes_scores:
            problems.append(
                Problem(
                    f"run {run.pk} is a {run.get_kind_display().lower()} run; an "
                    "experiment compares runs that score criteria",
                    field="run_ids",
                )
            )
    if problems:
        return problems
    members = ([reference] if reference else []) + runs
    if len(members) < 2:
        return []
    first, first_items = members[0], run_items(members[0])
    for run in members[1:]:
        why = _same_items_problem(run, run_items(run), first, first_items)
        if why:
            problems.append(Problem(why, field="run_ids"))
    return problems


def _ids(values) -> list[int] | None:
    """The ids in `values` (ints or ASCII digit strings within `bounds.ID`), in order
    without repeats; None when one is not such an id (a 5,000-digit string included)."""
    if isinstance(values, str | int):
        values = [values]
    wanted = []
    for value in values or []:
        number = None if isinstance(value, bool) else ascii_int(value)
        if number is None or not bounds.ID.contains(number):
            return None
        wanted.append(number)
    return list(dict.fromkeys(wanted))


def _runs(ids, workspace_id: int) -> tuple[list[JudgeRun], list[Problem]]:
    """The runs `ids` names, of workspace `workspace_id` only: a run of another
    workspace is reported like a missing one ("no run N")."""
    wanted = _ids(ids)
    if wanted is None:
        return [], [Problem("must be run ids (integers)", field="run_ids")]
    found = {
        r.pk: r
        for r in JudgeRun.objects.filter(pk__in=wanted, workspace_id=workspace_id)
    }
    problems = [
        Problem(f"no run {i}", field="run_ids") for i in wanted if i not in found
    ]
    return [found[i] for i in wanted if i in found], problems


def experiment_create(
    *,
    user: User,
    dataset: Dataset,
    name: str,
    run_ids: list[int] | None = None,
    baseline_id: int | None = None,
    campaign_ids: list[int] | None = None,
    description: str = "",
) -> Experiment:
    """Create an experiment of `dataset` with these runs (maybe none yet).

    The baseline (default: the first run) is one of the runs. Refuses (DomainError
    naming the field) an empty or taken name, runs of another dataset or of a kind
    that scores no criteria, runs that do not cover the same responses and criteria
    (:func:`run_items`), a baseline not among the runs, campaigns of another
    dataset. Writes the experiment and its run links in one transaction.
    """
    workspaces.require_object_role(user, dataset, workspaces.RESEARCHER)
    name = (name or "").strip()
    problems = []
    if not name:
        problems.append(Problem("is empty", field="name"))
    elif len(name) > NAME_MAX:
        problems.append(Problem(f"is longer than {NAME_MAX} characters", field="name"))
    for field_name, value in (("name", name), ("description", description or "")):
        if problem := text_problem(value):
            problems.append(Problem(problem, field=field_name))
    problems += model_text_problems(Experiment, {"description": description or ""})
    runs, run_problems = _runs(run_ids, dataset.workspace_id)
    problems += run_problems
    baseline = None
    if baseline_id not in (None, ""):
        baseline = next((r for r in runs if str(r.pk) == str(baseline_id)), None)
        if baseline is None:
            problems.append(
                Problem(f"run {baseline_id} is not one of the runs", field="baseline")
            )
    campaigns = _campaigns(dataset, campaign_ids, problems)
    if not problems:
        problems += _check_runs(dataset, runs)
    if problems:
        raise DomainError("the experiment was not created", problems)
    try:
        with transaction.atomic():
            experiment = Experiment.objects.create(
                workspace_id=dataset.workspace_id,
                dataset=dataset,
                name=name,
                description=(description or "").strip(),
                baseline=baseline or (runs[0] if runs else None),
                campaign_ids=campaigns,
                created_by=user,
            )
            experiment.runs.set(runs)
    except IntegrityError:
        raise DomainError(
            "the experiment was not created",
            [Problem(f"the dataset already has an experiment {name!r}", field="name")],
        ) from None
    return experiment


def _campaigns(dataset: Dataset, campaign_ids, problems: list[Problem]) -> list[int]:
    wanted = _ids(campaign_ids)
    if wanted is not None:
        wanted = sorted(wanted)
    else:
        problems.append(
            Problem("must be campaign ids (integers)", field="campaign_ids")
        )
        return []
    found = set(
        Campaign.objects.filter(pk__in=wanted, dataset=dataset).values_list(
            "pk", flat=True
        )
    )
    for c in wanted:
        if c not in found:
            problems.append(
                Problem(f"no campaign {c} of this dataset", field="campaign_ids")
            )
    return wanted


def experiment_add_run(*, user: User, experiment: Experiment, run_id) -> Experiment:
    """Add a run to the experiment (idempotent: a run already in it is left as it
    is). The run must cover the experiment's items (:func:`run_items` of the
    baseline); an experiment without runs takes it as its baseline."""
    workspaces.require_object_role(user, experiment, workspaces.RESEARCHER)
    runs, problems = _runs([run_id], experiment.workspace_id)
    if not problems:
        problems = _check_runs(experiment.dataset, runs, experiment.baseline)
    if problems:
        raise DomainError("the run was not added", problems)
    run = runs[0]
    with transaction.atomic():
        experiment.runs.add(run)
        if experiment.baseline_id is None:
            experiment.baseline = run
            experiment.save(update_fields=["baseline"])
    return experiment


def experiment_join_new_run(*, user: User, experiment_id, run: JudgeRun) -> Experiment:
    """Add a run just created for an experiment (not started: nothing paid for yet)
    to it, or delete the run and raise DomainError when it cannot join (no such
    experiment, or other items than the baseline's), so a refused request leaves
    nothing behind. The one workflow of the run form and `manage.py judge
    --experiment`. Returns the experiment."""
    experiment = Experiment.objects.filter(pk=experiment_id).first()
    try:
        if experiment is None:
            raise DomainError(
                "the run was not added",
                [Problem(f"no experiment {experiment_id}", field="experiment")],
            )
        return experiment_add_run(user=user, experiment=experiment, run_id=run.pk)
    except (DomainError, Http404, PermissionDenied):
        # Another workspace's experiment (404) or one the user may not change (403)
        # leaves no run behind either.
        run.delete()
        raise


def experiment_set_baseline(
    *, user: User, experiment: Experiment, run_id
) -> Experiment:
    """Make one of the experiment's runs its baseline (DomainError otherwise)."""
    workspaces.require_object_role(user, experiment, workspaces.RESEARCHER)
    try:
        run = experiment.runs.get(pk=int(run_id))
    except (TypeError, ValueError, JudgeRun.DoesNotExist):
        raise DomainError(
            "the baseline was not changed",
            [
                Problem(
                    f"run {run_id} is not one of the experiment's runs",
                    field="baseline",
                )
            ],
        ) from None
    experiment.baseline = run
    experiment.save(update_fields=["baseline"])
    return experiment
