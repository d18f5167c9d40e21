"""Writes and workflows of the annotation app (re-exported from submodules)."""

from annotation.services.flask import dataset_import_flask
from annotation.services.hard import instruction_mark_hard, instruction_texts_matching
from annotation.services.import_jobs import (
    import_job_confirm,
    import_job_create,
    import_job_execute,
    import_job_record,
    import_job_record_command,
)
from annotation.services.imports import (
    ImportReport,
    dataset_import_files,
    dataset_parse_files,
    import_check_sizes,
)
from annotation.services.rubrics import (
    rubric_freeze,
    rubric_get_default,
    rubric_import,
)

__all__ = [
    "ImportReport",
    "dataset_import_files",
    "dataset_import_flask",
    "dataset_parse_files",
    "import_check_sizes",
    "import_job_confirm",
    "import_job_create",
    "import_job_execute",
    "import_job_record",
    "import_job_record_command",
    "instruction_mark_hard",
    "instruction_texts_matching",
    "rubric_freeze",
    "rubric_get_default",
    "rubric_import",
]

from annotation.services.campaigns import (
    campaign_create,
    campaign_set_critique,
    campaign_set_raters,
    campaign_set_status,
    campaign_set_training,
)  # noqa: E402
from annotation.services.exclusions import (  # noqa: E402
    rater_decision_end,
    rater_decision_start,
)
from annotation.services.gold import (  # noqa: E402
    gold_delete,
    gold_feedback,
    gold_import,
    gold_import_file,
    gold_set,
)
from annotation.services.qualification import (  # noqa: E402
    qualification_allow_retry,
)
from annotation.services.rating import (
    NextResult,
    assignment_next,
    assignment_skip,
    assignments_expire,
    rating_amend,
    rating_submit,
)

__all__ += [
    "NextResult",
    "assignment_next",
    "assignment_skip",
    "assignments_expire",
    "campaign_create",
    "campaign_set_raters",
    "campaign_set_critique",
    "campaign_set_status",
    "campaign_set_training",
    "gold_delete",
    "gold_feedback",
    "gold_import",
    "gold_import_file",
    "gold_set",
    "qualification_allow_retry",
    "rater_decision_end",
    "rater_decision_start",
    "rating_amend",
    "rating_submit",
]
