"""Reads of one judge config's history: its versions, and which version each run used."""

from __future__ import annotations

from django.db.models import QuerySet

from flaskapp import workspaces
from judging import reasoning
from judging.models import JudgeConfig, JudgeConfigVersion


def judge_config_version_list_for_user(
    *, user, config: JudgeConfig
) -> QuerySet[JudgeConfigVersion]:
    """The recorded versions of `config`, newest first, with who saved each.
    Researchers only (`PermissionDenied`). A config made before versions were kept,
    or a placeholder for imported results, may have none."""
    workspaces.require_object_role(user, config, workspaces.RESEARCHER)
    return (
        JudgeConfigVersion.objects.filter(config=config)
        .select_related("created_by")
        .order_by("-version")
    )


def run_config_version(run) -> int | None:
    """The config version a run froze (None for runs made before versions existed)."""
    value = (run.settings_snapshot or {}).get("config_version")
    return value if isinstance(value, int) else None


def version_changes(versions: list[JudgeConfigVersion]) -> list[tuple]:
    """(version, [(setting, before, after), ...]) for `versions` (newest first, as
    `judge_config_version_list_for_user` gives them): what each version changed from
    the one before it; version 1 (or the oldest recorded) lists nothing. A config
    made before versions were recorded has none: an empty list."""
    rows = []
    for newer, older in zip(
        versions, [*versions[1:], None][: len(versions)], strict=True
    ):
        changes = []
        if older is not None:
            keys = [k for k in newer.snapshot if k != "prompt_id"]
            # A version saved before a setting existed had it at its default.
            before = {**reasoning.SNAPSHOT_DEFAULTS, **older.snapshot}
            changes = [
                (key, before.get(key), newer.snapshot.get(key))
                for key in keys
                if before.get(key) != newer.snapshot.get(key)
            ]
        rows.append((newer, changes))
    return rows
