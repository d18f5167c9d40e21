"""Writes and workflows of the judging app (re-exported from submodules)."""

from judging.services.configs import (
    judge_config_create,
    judge_config_get_or_create,
    judge_config_problems,
    judge_config_update,
)
from judging.services.estimates import judge_run_estimate
from judging.services.execution import (
    judge_run_drive,
    judge_run_finish_if_done,
    judge_runs_recover,
)
from judging.services.prompts import prompt_get_builtin, prompt_template_create
from judging.services.runs import (
    judge_run_cancel,
    judge_run_create,
    judge_run_retry_failed,
    judge_run_start,
)

__all__ = [
    "judge_config_create",
    "judge_config_get_or_create",
    "judge_config_problems",
    "judge_config_update",
    "judge_run_cancel",
    "judge_run_create",
    "judge_run_drive",
    "judge_run_estimate",
    "judge_run_finish_if_done",
    "judge_run_retry_failed",
    "judge_run_start",
    "judge_runs_recover",
    "prompt_get_builtin",
    "prompt_template_create",
]
