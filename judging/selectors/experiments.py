"""Reads of experiments (researchers and admins only)."""

from __future__ import annotations

from django.db.models import Count, QuerySet
from django.http import Http404

from annotation.models import Dataset
from flaskapp import roles
from judging.models import Experiment


def experiment_list_for_user(*, user, dataset: Dataset | None = None) -> QuerySet:
    """Experiments, newest first, with their dataset and run count (one query)."""
    roles.require_researcher(user)
    qs = Experiment.objects.select_related("dataset", "baseline").annotate(
        n_runs=Count("runs")
    )
    return qs.filter(dataset=dataset) if dataset is not None else qs


def experiment_get_for_user(*, user, experiment_id) -> Experiment:
    """One experiment with its dataset; PermissionDenied for non-researchers, Http404
    for an unknown id."""
    roles.require_researcher(user)
    try:
        return Experiment.objects.select_related("dataset", "baseline").get(
            pk=int(experiment_id)
        )
    except (TypeError, ValueError, Experiment.DoesNotExist):
        raise Http404("no such experiment") from None
