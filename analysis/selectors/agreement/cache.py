"""The cache key of an agreement result: its parameters and a fingerprint of its inputs.

A new or amended score, a decided metadata suggestion or a new response changes the
fingerprint, hence the key: a cached result is never stale.
"""

from __future__ import annotations

import hashlib
import json

from django.db import connection

from analysis.selectors.agreement.inputs import fetch, placeholders, quoted_table
from annotation.models import Assignment, Dataset, HumanScore, Instruction, Response
from judging.models import JudgeScore, MetadataSuggestion

CACHE_SECONDS = 24 * 3600
CACHE_VERSION = "agreement-v1"


def inputs_fingerprint(dataset: Dataset, campaign_ids: list[int], run_ids: list[int]):
    """Counts and latest change times of every input (up to 4 aggregate queries)."""
    human = [0, None, None]
    if campaign_ids:
        human = fetch(
            f"SELECT COUNT(*), MAX(hs.id), MAX(hs.updated_at) "
            f"FROM {quoted_table(HumanScore)} hs JOIN {quoted_table(Assignment)} a "
            f"ON a.id = hs.assignment_id "
            f"WHERE a.campaign_id IN ({placeholders(campaign_ids)}) AND a.status = %s",
            [*campaign_ids, Assignment.Status.SUBMITTED],
        )[0]
    judge = [0, None]
    if run_ids:
        judge = fetch(
            f"SELECT COUNT(*), MAX(id) FROM {quoted_table(JudgeScore)} "
            f"WHERE run_id IN ({placeholders(run_ids)})",
            list(run_ids),
        )[0]
    meta = fetch(
        f"SELECT COUNT(*), MAX(ms.decided_at) "
        f"FROM {quoted_table(MetadataSuggestion)} ms "
        f"JOIN {quoted_table(Instruction)} i ON i.id = ms.instruction_id "
        f"WHERE i.dataset_id = %s AND ms.decided_at IS NOT NULL",
        [dataset.pk],
    )[0]
    responses = fetch(
        f"SELECT COUNT(*), MAX(r.id) FROM {quoted_table(Response)} r "
        f"JOIN {quoted_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s",
        [dataset.pk],
    )[0]
    return [str(x) for x in (*human, *judge, *meta, *responses)]


def cache_key(params: dict, fingerprint: list[str]) -> str:
    """The cache key of a result: parameters, input fingerprint and database name."""
    blob = json.dumps(
        {"p": params, "f": fingerprint, "db": connection.settings_dict.get("NAME")},
        sort_keys=True,
        default=str,
    )
    return f"{CACHE_VERSION}:{hashlib.sha256(blob.encode()).hexdigest()}"
