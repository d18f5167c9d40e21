"""What an import did, or for a dry run would do: the report every import service
returns and the command line, the API and the upload page show."""

from __future__ import annotations

from dataclasses import dataclass, field

from annotation.importers.base import MAX_PROBLEMS
from flaskapp.errors import Problem


@dataclass
class ImportReport:
    """What an import did (or, for a dry run, would do)."""

    dataset: str
    rows: int = 0
    created_instructions: int = 0
    created_responses: int = 0
    unchanged: int = 0
    models: list[str] = field(default_factory=list)
    dry_run: bool = False
    rubric: str = ""
    # FLASK-Hard marking (dataset_import_flask only): instructions now marked, and the
    # hard-set lines whose instruction text is not in the dataset ("file, line N (id X)").
    hard_marked: int = 0
    hard_unmatched: list[str] = field(default_factory=list)
    # Human scores (generic files): created, or found already imported (the same
    # scores into the same dataset), the raters named, and the campaign holding them.
    human_scores: int = 0
    unchanged_scores: int = 0
    raters: list[str] = field(default_factory=list)
    campaign_id: int | None = None
    campaign: str = ""
    # Accepted but worth a look (e.g. empty responses), each with file, line, field.
    warnings: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "rows": self.rows,
            "created_instructions": self.created_instructions,
            "created_responses": self.created_responses,
            "unchanged": self.unchanged,
            "models": self.models,
            "dry_run": self.dry_run,
            "rubric": self.rubric,
            "hard_marked": self.hard_marked,
            "hard_unmatched": self.hard_unmatched,
            "human_scores": self.human_scores,
            "unchanged_scores": self.unchanged_scores,
            "raters": self.raters,
            "campaign_id": self.campaign_id,
            "campaign": self.campaign,
            "warnings": [w.as_dict() for w in self.warnings[:MAX_PROBLEMS]],
            "warning_count": len(self.warnings),
        }
