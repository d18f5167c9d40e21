"""The chosen score sources (campaigns, judge runs), their defaults and the check of
the parameters."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.models import Assignment, Campaign, Dataset
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.roles import synthetic_rater
from judging.models import JudgeRun, JudgeScore

MAX_BOOT = N_BOOT.high  # the most bootstrap resamples a request may ask for


class AgreementError(ValueError):
    """A bad parameter; the message names it."""


def run_label(run: JudgeRun) -> str:
    """How a run is named to people: ``#id name`` (the config's name if unnamed)."""
    name = run.name or (run.config.name if run.config_id else "")
    return f"#{run.pk} {name}".strip()


def agreement_sources_for_user(*, user, dataset: Dataset) -> dict:
    """Pointwise campaigns and judge runs with scores on `dataset` (researcher view)."""
    campaigns = Campaign.objects.filter(dataset=dataset).order_by("-created_at")
    if hasattr(Campaign, "Kind"):
        campaigns = campaigns.filter(kind=Campaign.Kind.POINTWISE)
    scored_runs = JudgeScore.objects.filter(run__dataset=dataset).values("run_id")
    runs = (
        JudgeRun.objects.filter(dataset=dataset, pk__in=scored_runs)
        .select_related("config")
        .order_by("-created_at")
    )
    real = real_campaign_ids(c.pk for c in campaigns)
    return {
        # `generated`: no real rating (only synthetic accounts' ratings, or none yet).
        "campaigns": [
            {
                "id": c.pk,
                "name": c.name,
                "status": c.status,
                "generated": c.pk not in real,
            }
            for c in campaigns
        ],
        "runs": [
            {
                "id": r.pk,
                "label": run_label(r),
                "kind": r.kind,
                "status": r.status,
                "samples": int((r.settings_snapshot or {}).get("samples") or 1),
            }
            for r in runs
        ],
    }


# The default sources, in words (shown by the dashboard, the API result and the command).
DEFAULTS_RULE = (
    "every pointwise campaign of the dataset with real (not generated) ratings, or, "
    "while no person has rated, every pointwise campaign; and, per judge, its latest "
    "completed run with scores (a judge is a judge config; a run without one, an "
    "import, is known by its name)"
)


def real_campaign_ids(campaign_ids) -> set[int]:
    """Those of `campaign_ids` with a rating submitted by a real (not synthetic)
    account: the campaigns whose human reference is people's. One query."""
    return set(
        Assignment.objects.filter(
            campaign_id__in=list(campaign_ids), status=Assignment.Status.SUBMITTED
        )
        .annotate(generated=synthetic_rater("rater_id"))
        .filter(generated=False)
        .values_list("campaign_id", flat=True)
        .distinct()
    )


FINISHED = (JudgeRun.Status.COMPLETED, JudgeRun.Status.FAILED)


@dataclass(frozen=True)
class AgreementDefaults:
    """What an agreement without a chosen campaign or run compares (DEFAULTS_RULE)."""

    campaign_ids: list[int]
    run_ids: list[int]
    # Campaigns without a real rating that the default leaves out (there are real ones).
    left_out: list[int] = field(default_factory=list)
    # No campaign has a real rating: the default reference is generated ratings.
    generated_only: bool = False


def _judge_key(run: JudgeRun) -> tuple:
    """Which judge a run belongs to: its config; an import by its name (unnamed: alone)."""
    if run.config_id:
        return ("config", run.config_id)
    if run.name:
        return ("name", run.name)
    return ("run", run.pk)


def agreement_defaults(
    *, dataset: Dataset, exclude_run_id: int | None = None
) -> AgreementDefaults:
    """The one default rule of the dashboard, the API and ``manage.py agreement``.

    Campaigns: every pointwise campaign of `dataset` (oldest first) with a real
    rating (`real_campaign_ids`): generated example ratings never mix into people's
    by default; while no person has rated, every pointwise campaign (and the pages
    say the reference is generated: `AgreementDefaults.generated_only`). Runs: per judge
    (see :func:`_judge_key`), the latest (by creation, then id) run that finished
    (completed, with or without failed calls), has at least one score on the
    dataset and is no bias probe; `exclude_run_id` (the reference run) is never a
    default. Runs ordered by id. Three queries; read only.
    """
    campaigns = Campaign.objects.filter(
        dataset=dataset, kind=Campaign.Kind.POINTWISE
    ).order_by("pk")
    scored = JudgeScore.objects.filter(run__dataset=dataset).values("run_id")
    runs = (
        JudgeRun.objects.filter(
            dataset=dataset, status__in=FINISHED, probe="", pk__in=scored
        )
        .exclude(pk=exclude_run_id or 0)
        .order_by("created_at", "pk")
    )
    latest: dict[tuple, int] = {}
    for run in runs.only("pk", "config_id", "name", "created_at"):
        latest[_judge_key(run)] = run.pk  # ascending order: the last one wins
    every = list(campaigns.values_list("pk", flat=True))
    real = real_campaign_ids(every)
    return AgreementDefaults(
        campaign_ids=[pk for pk in every if pk in real] if real else every,
        run_ids=sorted(latest.values()),
        left_out=[pk for pk in every if pk not in real] if real else [],
        generated_only=bool(every) and not real,
    )


def check_resampling(n_boot: int, seed: int, error=None) -> None:
    """`n_boot` and `seed` within `flaskapp.bounds` (a seed is what numpy's generator
    takes); raises `error` (AgreementError) naming the parameter."""
    error = error or AgreementError
    if not N_BOOT.contains(n_boot):
        raise error(f"n_boot: must be between 0 and {MAX_BOOT}, not {n_boot}")
    if not SEED.contains(seed):
        raise error(f"seed: {SEED.message()}, not {seed}")


def check_params(
    dataset, campaign_ids, run_ids, reference_run_id, retest, n_boot, seed=0
):
    """The chosen runs by id, once every parameter is valid for `dataset`.

    Raises AgreementError naming the first bad parameter (n_boot, seed, campaign, run,
    reference_run). Two queries.
    """
    check_resampling(n_boot, seed)
    found = set(
        Campaign.objects.filter(pk__in=campaign_ids, dataset=dataset).values_list(
            "pk", flat=True
        )
    )
    if missing := [c for c in campaign_ids if c not in found]:
        raise AgreementError(
            f"campaign: {', '.join(map(str, missing))} not found in dataset {dataset.name!r}"
        )
    wanted = [*run_ids, *([reference_run_id] if reference_run_id else [])]
    runs = {
        r.pk: r
        for r in JudgeRun.objects.filter(pk__in=wanted, dataset=dataset).select_related(
            "config"
        )
    }
    if missing := [r for r in wanted if r not in runs]:
        raise AgreementError(
            f"run: {', '.join(map(str, missing))} not found in dataset {dataset.name!r}"
        )
    if not run_ids:
        raise AgreementError(
            "run: no judge run was chosen and none is a default (no finished run "
            "with scores on this dataset)"
        )
    if reference_run_id and retest:
        raise AgreementError(
            "reference_run: choose a reference run or test-retest, not both"
        )
    if reference_run_id in run_ids:
        raise AgreementError("reference_run: must differ from the compared runs")
    if not (campaign_ids or reference_run_id or retest):
        raise AgreementError(
            "campaign: no human campaign was chosen and the dataset has no pointwise "
            "campaign (choose a reference run or test-retest instead)"
        )
    return runs
