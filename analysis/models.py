"""The one table of the analysis app: a log of changes to the inputs of agreement.

`InputChange` is written only by PostgreSQL triggers (migration 0001), never by Python:
every statement that inserts, updates or deletes human scores, submitted assignments,
judge scores, responses, instructions or metadata suggestions appends one row per
campaign, judge run or dataset it touched. The agreement cache key then needs one
index-only count per input instead of scans of the score tables
(`analysis.selectors.agreement.cache`). On SQLite there are no triggers and the cache
key is computed from the score tables themselves.
"""

from __future__ import annotations

from django.db import models


class InputChange(models.Model):
    """One statement's change to the inputs of a campaign, a judge run or a dataset.

    `scope` is ``c`` (campaign: human scores, submitted assignments), ``r`` (judge run:
    judge scores) or ``d`` (dataset: responses, instructions, metadata suggestions);
    `key` is that campaign's, run's or dataset's id. Rows are only ever appended: the
    (count, max id) per key changes with every committed change, whatever the commit
    order of concurrent writers.
    """

    scope = models.CharField(max_length=1)
    key = models.BigIntegerField()

    class Meta:
        indexes = [
            models.Index(fields=["scope", "key", "id"], name="inputchange_scope_key_id")
        ]

    def __str__(self) -> str:
        return f"{self.scope}{self.key} #{self.pk}"
