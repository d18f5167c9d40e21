"""The taxonomy labels a score export adds to its rows (issue 35): one home for the
rule, read by the Python rows (`exports.scores`) and the PostgreSQL CSV
(`exports.scores_sql`) alike.

A row's `domain_labels` are the labels of its instruction's domains and its
`difficulty_label` the label of its level, where the dataset declares its own
domains / levels (`annotation.importers.taxonomy`); for a part it does not declare
(FLASK's built-in) the cell is empty (null), as FLASK's exports always were.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from annotation.models import Dataset


@dataclass(frozen=True)
class ExportLabels:
    """Declared domain key -> label and level -> label; None: not declared."""

    domains: dict[str, str] | None
    levels: dict[int, str] | None

    @classmethod
    def of(cls, dataset: Dataset) -> ExportLabels:
        taxonomy = dataset.declared_taxonomy
        return cls(
            domains=None if taxonomy.domains is None else dict(taxonomy.domains),
            levels=None if taxonomy.difficulty is None else dict(taxonomy.difficulty),
        )

    def domain_labels(self, domains: list[str]) -> list[str] | None:
        """The labels of a row's domain keys in order (a key the declaration lacks
        is left out, as the SQL's lookup leaves it out); None when not declared."""
        if self.domains is None:
            return None
        return [self.domains[d] for d in domains if d in self.domains]

    def sql_params(self) -> dict[str, str | None]:
        """The lookups as JSON text for `scores_sql` (``::jsonb``; null: not
        declared): ``domain_labels`` {key: label}, ``level_labels`` {"N": label}."""
        return {
            "domain_labels": None if self.domains is None else json.dumps(self.domains),
            "level_labels": None
            if self.levels is None
            else json.dumps({str(n): label for n, label in self.levels.items()}),
        }

    def difficulty_label(self, level: int | None) -> str | None:
        if self.levels is None or level is None:
            return None
        return self.levels.get(level)
