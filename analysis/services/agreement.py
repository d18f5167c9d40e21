"""An agreement table for a web request: from the cache, inline, or by a job.

Issue 34: a cold agreement table over ~200,000 scores takes many seconds (loading
the scores and the point statistics, not only the bootstrap the budget bounds). The
dashboard (page, fragment, CSV, charts, drill-down) and the agreement API ask
`agreement_for_request`: the cached result when there is one; else, for a small
selection (`analysis.selectors.budget.agreement_inline`), the computation in the
request as before; else a background job of kind ``agreement``
(`analysis.jobs`) that computes and caches it, which the caller shows (a polled
progress state, a 202 with the job) until the same request finds it in the cache.
"""

from __future__ import annotations

from analysis.jobs import JOB_KINDS
from analysis.models import Job
from analysis.selectors.agreement import agreement_compute
from analysis.selectors.agreement.result import AgreementResult
from analysis.selectors.budget import agreement_inline
from analysis.selectors.jobs import job_get_for_user
from analysis.services.jobs import job_start


def agreement_for_request(
    *, user, dataset, job_id: int | None = None, **kwargs
) -> AgreementResult | Job:
    """The agreement result of `agreement_compute(dataset=dataset, **kwargs)` if
    cached or small enough to compute now; otherwise the `Job` computing it.

    `job_id` (a poll of a job the caller showed): never computes in the request; the
    job itself when it is still active or failed (its ``reason`` says why), a new
    one when it is done and the result is not in the cache (the inputs changed
    since, or the cache was emptied). The same job for the same user and parameters
    while it is active (`job_start`'s dedupe).

    Preconditions: `user` may see `dataset` (a researcher). Raises AgreementError
    for bad parameters (before any job), `TooManyRequests` when the user has as many
    active jobs as allowed, Http404 / PermissionDenied for a `job_id` the user may
    not see. Writes at most one job row.
    """
    cached = agreement_compute(dataset=dataset, cached_only=True, **kwargs)
    if cached is not None:
        return cached
    if job_id is not None:
        job = job_get_for_user(user=user, job_id=job_id)
        if _same(job, dataset, kwargs) and job.status != Job.Status.DONE:
            return job
    elif agreement_inline(
        dataset=dataset,
        campaign_ids=kwargs.get("campaign_ids"),
        run_ids=kwargs.get("run_ids"),
        reference_run_id=kwargs.get("reference_run_id"),
        retest=kwargs.get("retest", False),
    ):
        return agreement_compute(dataset=dataset, **kwargs)
    return job_start(kind="agreement", owner=user, dataset=dataset, params=kwargs)


def _same(job: Job, dataset, kwargs: dict) -> bool:
    """Whether `job` computes this very table (a poll's ``job`` may name another)."""
    return (
        job.kind == "agreement"
        and job.dataset_id == dataset.pk
        and job.params == JOB_KINDS["agreement"].check(kwargs)
    )
