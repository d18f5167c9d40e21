"""Reading background jobs (`analysis.models.Job`): who may see one.

A job is seen by its owner and by the researchers (and admins) who may see its
dataset; never by raters or users without a role (403), and an unknown id is a 404.
"""

from __future__ import annotations

from django.http import Http404

from analysis.models import Job
from annotation import selectors as annotation_selectors
from flaskapp import roles


def job_get_for_user(*, user, job_id: int) -> Job:
    """The job, if `user` may see it (module doc); Http404 / PermissionDenied. Two
    queries at most."""
    roles.require_researcher(user)
    job = Job.objects.select_related("dataset", "owner").filter(pk=job_id).first()
    if job is None:
        raise Http404("No such job.")
    if job.owner_id != user.pk:
        annotation_selectors.dataset_get_for_user(user=user, dataset_id=job.dataset_id)
    return job


def job_list_for_user(*, user, dataset, kind: str, limit: int = 5) -> list[Job]:
    """The user's latest jobs of `kind` on `dataset`, newest first."""
    return list(
        Job.objects.filter(owner=user, dataset=dataset, kind=kind).order_by(
            "-created_at", "-id"
        )[:limit]
    )
