"""Judge drift: which model (and `system_fingerprint`) the endpoint said answered.

Each call records what the reply reported (`JudgeCall.reply_model`,
`system_fingerprint`; "" when the endpoint did not say, and for calls served from
the cache). A judge validated on one snapshot is not validated on the next, so the
run page and the agreement dashboard say when these vary within a run, or differ
from earlier runs of the same config (`run_drift_notices`) or between the runs
compared (`runs_drift_notices`). One grouped query per call of these functions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.db.models import Count

from judging.models import JudgeCall, JudgeRun

# Earlier runs of the same config that a run is compared with.
EARLIER_RUNS = 5


@dataclass
class Identity:
    """What one run's calls reported: counts by model and by fingerprint."""

    models: Counter = field(default_factory=Counter)
    fingerprints: Counter = field(default_factory=Counter)

    @property
    def main_model(self) -> str:
        return self.models.most_common(1)[0][0] if self.models else ""


def run_identities(run_ids: list[int]) -> dict[int, Identity]:
    """Run id -> what its answered calls reported (runs whose calls reported
    nothing are absent)."""
    rows = (
        JudgeCall.objects.filter(run_id__in=run_ids)
        .exclude(reply_model="", system_fingerprint="")
        .values_list("run_id", "reply_model", "system_fingerprint")
        .annotate(n=Count("id"))
        .order_by()
    )
    found: dict[int, Identity] = {}
    for run_id, model, fingerprint, n in rows:
        _count(found.setdefault(run_id, Identity()), model, fingerprint, n)
    return found


def _count(identity: Identity, model: str, fingerprint: str, n: int) -> None:
    if model:
        identity.models[model] += n
    if fingerprint:
        identity.fingerprints[fingerprint] += n


def _shares(counter: Counter, what: str) -> str:
    total = sum(counter.values())
    parts = [
        f"{what} {value}".strip() + f" for {round(100 * n / total)}% of calls"
        for value, n in counter.most_common()
    ]
    return ", ".join(parts[:-1]) + f" and {parts[-1]}" if len(parts) > 1 else parts[0]


def _within(identity: Identity) -> list[str]:
    notices = []
    if len(identity.models) > 1:
        notices.append(
            "The endpoint answered as " + _shares(identity.models, "model") + "."
        )
    if len(identity.fingerprints) > 1:
        notices.append(
            "Its system_fingerprint changed within the run: "
            + _shares(identity.fingerprints, "")
            + "."
        )
    return notices


def run_drift_notices(run: JudgeRun) -> list[str]:
    """What the run page says about drift (empty when nothing varies): the models
    and fingerprints that answered within the run, and earlier runs of the same
    config (the last `EARLIER_RUNS`) answered as another model or fingerprint."""
    earlier_ids: list[int] = []
    if run.config_id is not None:
        earlier_ids = list(
            JudgeRun.objects.filter(config_id=run.config_id, pk__lt=run.pk)
            .order_by("-pk")
            .values_list("pk", flat=True)[:EARLIER_RUNS]
        )
    identities = run_identities([run.pk, *earlier_ids])
    mine = identities.get(run.pk)
    if mine is None:
        return []
    notices = _within(mine)
    for other_id in earlier_ids:
        other = identities.get(other_id)
        if other is None:
            continue
        if other.main_model and other.main_model != mine.main_model:
            notices.append(
                f"Earlier run {other_id} of this judge was answered as model "
                f"{other.main_model}; this run as {mine.main_model}."
            )
        elif (
            set(other.fingerprints)
            and set(mine.fingerprints)
            and not (set(other.fingerprints) & set(mine.fingerprints))
        ):
            notices.append(
                f"Earlier run {other_id} of this judge was answered by another "
                f"system_fingerprint ({', '.join(sorted(other.fingerprints))})."
            )
    return notices


def run_ids_drift_notices(run_ids: list[int]) -> list[str]:
    """`runs_drift_notices` of the runs `run_ids`, in one query (the runs' names
    and configs come with their calls' identities): the agreement dashboard's."""
    rows = (
        JudgeCall.objects.filter(run_id__in=[r for r in run_ids if r])
        .exclude(reply_model="", system_fingerprint="")
        .values_list(
            "run_id",
            "run__name",
            "run__config_id",
            "reply_model",
            "system_fingerprint",
        )
        .annotate(n=Count("id"))
        .order_by()
    )
    runs: dict[int, JudgeRun] = {}
    identities: dict[int, Identity] = {}
    for run_id, name, config_id, model, fingerprint, n in rows:
        runs.setdefault(run_id, JudgeRun(pk=run_id, name=name, config_id=config_id))
        _count(identities.setdefault(run_id, Identity()), model, fingerprint, n)
    return runs_drift_notices(sorted(runs.values(), key=lambda r: r.pk), identities)


def runs_drift_notices(
    runs: list[JudgeRun], identities: dict[int, Identity] | None = None
) -> list[str]:
    """What the agreement dashboard says about drift among the judge runs it
    compares: a run answered by more than one model, and runs of the same config
    answered as different models. `identities`: `run_identities` of `runs`, when
    already read."""
    if identities is None:
        identities = run_identities([r.pk for r in runs])
    notices: list[str] = []
    by_config: dict[int, list[JudgeRun]] = {}
    for run in runs:
        identity = identities.get(run.pk)
        if identity is None:
            continue
        if len(identity.models) > 1:
            notices.append(
                f"Run {run.pk} ({run}): the endpoint answered as "
                + _shares(identity.models, "model")
                + "."
            )
        if run.config_id is not None:
            by_config.setdefault(run.config_id, []).append(run)
    for group in by_config.values():
        models = {identities[r.pk].main_model for r in group} - {""}
        if len(models) > 1:
            named = ", ".join(
                f"run {r.pk} as {identities[r.pk].main_model}" for r in group
            )
            notices.append(
                f"Runs of the same judge were answered as different models: {named}."
            )
    return notices
