"""How much bootstrap work a web request asks for, and the refusal above the budget.

The work of an agreement table (or a skill profile) grows with n_boot x the scores
it resamples: the judge scores of the compared runs (and of a reference run) plus
the human scores of the reference campaigns. `boot_cells` counts them (two COUNT
queries; a slice is not subtracted, so the count is an upper bound), and
`boot_budget_check` refuses a request that asked for an n_boot whose n_boot x cells
exceeds ``settings.BOOT_BUDGET`` (`flaskapp.bounds.boot_problem`) with a
`BadParameter` naming ``n_boot`` and the largest value allowed for that selection:
a 400 from the API's handler and a listed problem on the pages; a default n_boot
(not asked for) becomes that largest value instead. Issue 34: ``n_boot=10000`` held a
web thread for 129 s on a dataset of 200,000 scores.
"""

from __future__ import annotations

from analysis.selectors.agreement import agreement_defaults
from annotation.models import Dataset, HumanScore
from flaskapp.bounds import boot_largest, boot_problem
from flaskapp.params import BadParameter
from judging.models import JudgeScore


def boot_cells(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    reference_run_id: int | None = None,
    retest: bool = False,
) -> int:
    """The scores a bootstrap over this selection resamples (module doc); the
    defaults of `agreement_defaults` where no campaign or run is chosen. Read only.
    Counted once per `dataset` object and selection: a request that checks the
    bootstrap budget and then whether to compute inline asks twice, and the second
    answer comes from the first (kept on the object, which lives as long as the
    request)."""
    memo_key = (
        tuple(campaign_ids or ()),
        tuple(run_ids or ()),
        reference_run_id,
        retest,
    )
    memo = dataset.__dict__.setdefault("_boot_cells", {})
    if memo_key not in memo:
        memo[memo_key] = _boot_cells(
            dataset=dataset,
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            reference_run_id=reference_run_id,
            retest=retest,
        )
    return memo[memo_key]


def _boot_cells(*, dataset, campaign_ids, run_ids, reference_run_id, retest) -> int:
    campaign_ids = list(campaign_ids or [])
    run_ids = list(run_ids or [])
    if not run_ids or (not campaign_ids and not (reference_run_id or retest)):
        defaults = agreement_defaults(dataset=dataset, exclude_run_id=reference_run_id)
        run_ids = run_ids or defaults.run_ids
        if not (campaign_ids or reference_run_id or retest):
            campaign_ids = defaults.campaign_ids
    if reference_run_id:
        run_ids = [*run_ids, reference_run_id]
    judged = JudgeScore.objects.filter(run_id__in=run_ids).count() if run_ids else 0
    humans = 0
    if campaign_ids and not (reference_run_id or retest):
        humans = HumanScore.objects.filter(
            assignment__campaign_id__in=campaign_ids
        ).count()
    return judged + humans


def boot_budget_check(
    *, n_boot: int, dataset: Dataset, explicit: bool = True, **selection
) -> int:
    """The n_boot one web request may use for this selection: `n_boot` itself when
    n_boot x `boot_cells` is within the budget; when it is not, the largest allowed
    if `n_boot` was a default (the caller did not ask for it: the dashboard's and the
    API's 1,000 shrink on a large dataset, and the result's ``n_boot`` says so), else
    `BadParameter` naming ``n_boot`` and that largest value. No query for 0."""
    if not n_boot:
        return n_boot
    cells = boot_cells(dataset=dataset, **selection)
    problem = boot_problem(n_boot, cells)
    if problem is None:
        return n_boot
    if not explicit:
        return boot_largest(cells)
    raise BadParameter("n_boot", problem.message)


def rater_models_inline(*, campaign) -> bool:
    """Whether the rater models of `campaign` are fitted in the request: at most
    ``settings.RATER_MODELS_INLINE_SCORES`` human scores (one COUNT); above, a
    background job fits them (`analysis.jobs`, kind ``rater_models``)."""
    from django.conf import settings

    limit = settings.RATER_MODELS_INLINE_SCORES
    scores = HumanScore.objects.filter(assignment__campaign=campaign)
    return not scores[limit : limit + 1].exists()


def agreement_inline(*, dataset: Dataset, **selection) -> bool:
    """Whether an agreement table not in the cache is computed in the request: its
    selection reads at most ``settings.AGREEMENT_INLINE_SCORES`` scores (the one size
    measure, `boot_cells`: loading the scores, the point statistics and the bootstrap
    all grow with it); above, a background job computes and caches it
    (`analysis.services.agreement`, kind ``agreement``). Two COUNTs at most."""
    from django.conf import settings

    return boot_cells(dataset=dataset, **selection) <= settings.AGREEMENT_INLINE_SCORES
