"""The chosen score sources (campaigns, judge runs) and the check of the parameters."""

from __future__ import annotations

from annotation.models import Campaign, Dataset
from flaskapp.bounds import N_BOOT, SEED
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
    return {
        "campaigns": [
            {"id": c.pk, "name": c.name, "status": c.status} for c in campaigns
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
        raise AgreementError("run: choose at least one judge run")
    if reference_run_id and retest:
        raise AgreementError(
            "reference_run: choose a reference run or test-retest, not both"
        )
    if reference_run_id in run_ids:
        raise AgreementError("reference_run: must differ from the compared runs")
    if not (campaign_ids or reference_run_id or retest):
        raise AgreementError(
            "campaign: choose a human campaign (or a reference run, or test-retest)"
        )
    return runs
