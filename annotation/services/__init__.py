"""Writes and workflows of the annotation app (re-exported from submodules)."""

from .imports import (
    ImportReport,
    dataset_import_files,
    dataset_parse_files,
    import_job_confirm,
    import_job_create,
    import_job_execute,
    rubric_import,
)
from .rubrics import rubric_freeze, rubric_get_default

__all__ = [
    "ImportReport",
    "dataset_import_files",
    "dataset_parse_files",
    "import_job_confirm",
    "import_job_create",
    "import_job_execute",
    "rubric_freeze",
    "rubric_get_default",
    "rubric_import",
]
