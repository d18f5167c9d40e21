"""What a judge endpoint asked to change, stored (`judging.reasoning`).

The client changes a parameter the endpoint refuses with its documented 400 (e.g.
``max_tokens`` -> ``max_completion_tokens``); the run driver stores the change here so
that every later call of the same config version (another run, a restarted worker)
is sent right the first time, and the run and config pages say what was changed.
"""

from __future__ import annotations

from django.db import transaction

from judging.models import JudgeConfig, JudgeRun
from judging.reasoning import learnt_adaptations


def known_adaptations(run: JudgeRun) -> dict[str, str]:
    """The changes (param -> words) a run's calls start with: those stored on its
    config for the version the run froze, and those the run itself made. Reads only
    the loaded `run` and `run.config` (no query)."""
    config = run.config
    return learnt_adaptations(
        run.settings_snapshot or {},
        config.adaptations if config is not None else None,
        run.adaptations,
    )


def adaptations_record(
    *, run_id: int, config_id: int, version: int, adaptations: dict[str, str]
) -> None:
    """Store `adaptations` (param -> words) on the run and, when `version` is still
    the config's version, on the config (replacing those of an earlier version).
    Merges with what is stored; locks the config row; idempotent."""
    with transaction.atomic():
        config = JudgeConfig.objects.select_for_update().filter(pk=config_id).first()
        if config is not None and config.version == version:
            stored = config.adaptations or {}
            params = (
                dict(stored.get("params") or {})
                if stored.get("version") == version
                else {}
            )
            params.update(adaptations)
            if stored != {"version": version, "params": params}:
                config.adaptations = {"version": version, "params": params}
                config.save(update_fields=["adaptations"])
        run = JudgeRun.objects.select_for_update().filter(pk=run_id).first()
        if run is not None:
            merged = {**(run.adaptations or {}), **adaptations}
            if merged != run.adaptations:
                run.adaptations = merged
                run.save(update_fields=["adaptations"])
