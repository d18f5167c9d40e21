"""Reads of experiments (researchers and admins only)."""

from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, QuerySet
from django.http import Http404

from annotation.models import Dataset
from flaskapp import roles, workspaces
from judging.models import Experiment, JudgeScore
from judging.selectors.item_scores import SCORE_KINDS
from judging.selectors.runs import judge_run_list_for_user


def experiment_list_for_user(
    *, user, dataset: Dataset | None = None, workspace=None
) -> QuerySet:
    """Experiments of the workspaces where `user` is a researcher (only
    `workspace`'s when given), newest first, with their dataset and run count (one
    query)."""
    roles.require_researcher(user)
    qs = workspaces.scope_for_role(Experiment.objects, user, workspaces.RESEARCHER)
    if workspace is not None:
        qs = qs.filter(workspace=workspace)
    qs = qs.select_related("dataset", "baseline").annotate(n_runs=Count("runs"))
    return qs.filter(dataset=dataset) if dataset is not None else qs


def experiment_get_for_user(*, user, experiment_id) -> Experiment:
    """One experiment with its dataset; PermissionDenied for non-researchers, Http404
    for an unknown id."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    try:
        experiment = Experiment.objects.select_related("dataset", "baseline").get(
            pk=int(experiment_id)
        )
    except (TypeError, ValueError, OverflowError, Experiment.DoesNotExist):
        raise Http404("no such experiment") from None
    workspaces.require_object_role(user, experiment, workspaces.RESEARCHER)
    return experiment


def experiment_run_choices(*, user, workspace=None) -> list[tuple[Dataset, list]]:
    """The runs an experiment may hold, grouped by dataset (by name, runs by id):
    runs of a kind that scores criteria with at least one criterion score (a
    pairwise import scores none, so it is not offered), of `user`'s runs as
    `judge_run_list_for_user` scopes them. One query."""
    scored = JudgeScore.objects.filter(run_id=OuterRef("pk"))
    runs = (
        judge_run_list_for_user(user=user, workspace=workspace)
        .filter(kind__in=SCORE_KINDS)
        .filter(Exists(scored))
        .select_related("dataset")
        .order_by("dataset__name", "dataset_id", "pk")
    )
    groups: dict[int, tuple[Dataset, list]] = {}
    for run in runs:
        groups.setdefault(run.dataset_id, (run.dataset, []))[1].append(run)
    return list(groups.values())
