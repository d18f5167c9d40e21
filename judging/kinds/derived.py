"""Derived runs: scores combined from other runs (a panel) or calibrated, written by
`judging.services.derived`. Not created by `judge_run_create`; no judge is called.
"""

from __future__ import annotations

from judging.kinds import TaskKind
from judging.models import JudgeRun


class DerivedKind(TaskKind):
    key = JudgeRun.Kind.DERIVED.value
    label = JudgeRun.Kind.DERIVED.label
    creatable = False
    executable = False
    writes_scores = True
    templates = {"settings": "judging/kinds/derived_settings.html"}
