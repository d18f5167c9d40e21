"""The cache key of an agreement result: its parameters and a fingerprint of its inputs.

A new or amended score, a decided metadata suggestion or a new response changes the
fingerprint, hence the key: a cached result is never stale.

On PostgreSQL the fingerprint is read from `analysis.models.InputChange`, the log its
triggers append to on every change (one index-only count, whatever the number of
scores); elsewhere it is computed from the score tables (counts, latest ids and times).
"""

from __future__ import annotations

import gc
import hashlib
import json
from contextlib import contextmanager

from django.core.cache import cache
from django.db import connection

from analysis.models import InputChange
from analysis.selectors.agreement.inputs import (
    Responses,
    dataset_responses,
    fetch,
    placeholders,
    quoted_table,
)
from analysis.selectors.agreement.result import AgreementResult
from annotation.models import (
    Adjudication,
    Assignment,
    Dataset,
    HumanScore,
    Instruction,
    RaterExclusion,
    Response,
)
from judging.models import JudgeScore, MetadataSuggestion

CACHE_SECONDS = 24 * 3600
# v2: defaults, ceiling, N/A samples, profiles; v3: the typed result is cached;
# v4: the responses table carries the dataset's taxonomy and facets
CACHE_VERSION = "agreement-v4"


def fingerprint_queries() -> int:
    """The most queries :func:`inputs_fingerprint` makes on this database: the change
    log's one on PostgreSQL, the scans' up to 7 elsewhere (what a cached result costs
    beyond its parameter checks)."""
    return 1 if connection.vendor == "postgresql" else 7


def inputs_fingerprint(dataset: Dataset, campaign_ids: list[int], run_ids: list[int]):
    """A list of strings that changes whenever any input of the result changes.

    One query on PostgreSQL (the change log, which exclusion decisions and
    adjudications write to as well), up to 7 aggregate queries elsewhere. The
    dataset's taxonomy is part of it (`dtax:`, in the dataset's part): an edit of
    its labels or facets (`dataset_taxonomy_update`) changes the labels and slices
    of every result, though no instruction changed.
    """
    if connection.vendor == "postgresql":
        out = _logged_fingerprint(dataset, campaign_ids, run_ids)
    else:
        out = _scanned_fingerprint(dataset, campaign_ids, run_ids)
    if dataset.taxonomy:
        blob = json.dumps(dataset.taxonomy, sort_keys=True).encode()
        out.append(f"dtax:{hashlib.sha256(blob).hexdigest()[:16]}")
    return out


def _logged_fingerprint(
    dataset: Dataset, campaign_ids: list[int], run_ids: list[int]
) -> list[str]:
    """(count, max id) of the change-log rows of each campaign, run and the dataset.

    Rows are only appended, so a committed change always adds one to a count, even
    when a concurrent writer took a higher id and committed first.
    """
    rows = fetch(
        f"SELECT scope, key, COUNT(*), MAX(id) FROM {quoted_table(InputChange)} "
        f"WHERE (scope = 'c' AND key = ANY(%s)) OR (scope = 'r' AND key = ANY(%s)) "
        f"OR (scope = 'd' AND key = %s) GROUP BY scope, key ORDER BY scope, key",
        [list(campaign_ids), list(run_ids), dataset.pk],
    )
    return ["log", *(f"{s}{k}:{n}:{m}" for s, k, n, m in rows)]


def _scanned_fingerprint(
    dataset: Dataset, campaign_ids: list[int], run_ids: list[int]
) -> list[str]:
    """Counts and latest change times of every input (up to 7 aggregate queries)."""
    human = [0, None, None]
    if campaign_ids:
        human = fetch(
            f"SELECT COUNT(*), MAX(hs.id), MAX(hs.updated_at) "
            f"FROM {quoted_table(HumanScore)} hs JOIN {quoted_table(Assignment)} a "
            f"ON a.id = hs.assignment_id "
            f"WHERE a.campaign_id IN ({placeholders(campaign_ids)}) AND a.status = %s",
            [*campaign_ids, Assignment.Status.SUBMITTED],
        )[0]
    exclusions = [0, None]
    if campaign_ids:
        exclusions = fetch(
            f"SELECT COUNT(*), MAX(x.updated_at) FROM {quoted_table(RaterExclusion)} x "
            f"WHERE x.campaign_id IN ({placeholders(campaign_ids)})",
            list(campaign_ids),
        )[0]
    settled = [0, None]
    if campaign_ids:
        settled = fetch(
            f"SELECT COUNT(*), MAX(x.updated_at) FROM {quoted_table(Adjudication)} x "
            f"WHERE x.campaign_id IN ({placeholders(campaign_ids)})",
            list(campaign_ids),
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
    return [str(x) for x in (*human, *exclusions, *settled, *judge, *meta, *responses)]


# The scanned fingerprint's layout: human (3), exclusions (2), adjudications (2),
# judge (2), then the dataset's own inputs, metadata decisions (2) and responses (2).
_SCANNED_DATASET_FROM = 9


def dataset_fingerprint(fingerprint: list[str]) -> list[str]:
    """The part of an :func:`inputs_fingerprint` that belongs to the dataset itself
    (its responses and instructions), whatever campaigns and runs it covers."""
    if fingerprint and fingerprint[0] == "log":
        return ["log", *(f for f in fingerprint[1:] if f.startswith("d"))]
    return fingerprint[_SCANNED_DATASET_FROM:]


def cached_responses(dataset: Dataset, fingerprint: list[str]) -> Responses:
    """The dataset's responses table (:func:`inputs.dataset_responses`), cached
    under the dataset's part of `fingerprint`: every computation for the dataset
    (another slice, other sources) reuses it until a response or instruction changes.
    One query when it is not cached, none when it is."""
    key = cache_key({"responses": dataset.pk}, dataset_fingerprint(fingerprint))
    responses = cache.get(key)
    if responses is None:
        responses = dataset_responses(dataset)
        cache.set(key, responses, CACHE_SECONDS)
    return responses


def cache_key(params: dict, fingerprint: list[str]) -> str:
    """The cache key of a result: parameters, input fingerprint and database name."""
    blob = json.dumps(
        {"p": params, "f": fingerprint, "db": connection.settings_dict.get("NAME")},
        sort_keys=True,
        default=str,
    )
    return f"{CACHE_VERSION}:{hashlib.sha256(blob.encode()).hexdigest()}"


@contextmanager
def gc_paused():
    """Run the block with the garbage collector paused (and restore its state).

    Reading or building an agreement result makes tens of thousands of small
    objects, all of them reachable: nothing is left to collect, yet they trigger
    full collections of the process's heap, which cost a cached dashboard 80 ms
    instead of 4 at random, and a cold computation about 50 ms in every other run
    (bench/pages_all.py)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def cache_result(key: str, result: AgreementResult) -> None:
    """Caches `result` under `key` (for CACHE_SECONDS), as it is: the typed objects
    are pickled, so a hit costs no rebuilding from JSON (CACHE_VERSION names their
    shape)."""
    cache.set(key, result, CACHE_SECONDS)


def cached_result(key: str):
    """The cached result under `key`, or None, read with the collector paused (an
    :class:`AgreementResult` under an agreement key; the skill profiles and the
    experiments cache their own results through it too)."""
    with gc_paused():
        return cache.get(key)
