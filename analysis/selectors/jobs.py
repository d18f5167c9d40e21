"""Reading background jobs (`analysis.models.Job`): who may see one.

A job is seen by the researchers (and admins) of its workspace (its owner among
them); never by raters or users without a role (403), and an unknown id is a 404.
"""

from __future__ import annotations

from django.http import Http404

from analysis.models import Job
from flaskapp import workspaces


def job_get_for_user(*, user, job_id: int) -> Job:
    """The job, if `user` may see it (module doc); Http404 / PermissionDenied. Two
    queries at most."""
    workspaces.require_role_somewhere(user, workspaces.RESEARCHER)
    job = Job.objects.select_related("dataset", "owner").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such job.")
    # Its workspace's researchers (the owner too only while still one there).
    workspaces.require_object_role(user, job, workspaces.RESEARCHER)
    return job


def job_list_for_user(*, user, dataset, kind: str, limit: int = 5) -> list[Job]:
    """The user's latest jobs of `kind` on `dataset`, newest first."""
    return list(
        Job.objects.filter(owner=user, dataset=dataset, kind=kind).order_by(
            "-created_at", "-id"
        )[:limit]
    )
