"""Reads of experiments (researchers and admins only)."""

from __future__ import annotations

from django.db.models import Count, QuerySet
from django.http import Http404

from annotation.models import Dataset
from flaskapp import roles, workspaces
from judging.models import Experiment


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
