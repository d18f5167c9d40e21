"""Imported runs: judge results made elsewhere (FLASK review files, generic JSONL or
CSV), written by `judging.services.imports` and `judging.services.verdicts`.

Not created by `judge_run_create` and never executed: their calls arrive finished.
Their scores (and labels) are compared with humans like any run's.
"""

from __future__ import annotations

from judging.kinds import TaskKind
from judging.models import JudgeRun


class ImportedKind(TaskKind):
    key = JudgeRun.Kind.IMPORTED.value
    label = JudgeRun.Kind.IMPORTED.label
    creatable = False
    executable = False
    writes_scores = True
    reads_values = True
    start_refusal = "an imported run has nothing to execute"
    kind_badge = False  # its own badge says it
    templates = {
        "badge": "judging/kinds/imported_badge.html",
        "settings": "judging/kinds/imported_settings.html",
    }
