"""agreement_slice_values: the slice dimensions' values of a dataset, cached.

The dashboard shows them on every request, so they are counted in the database (two
aggregate queries, not one row per response: that took ~0.1 s on the FLASK release)
and cached under the dataset's input fingerprint, which a new, changed or deleted
instruction or response changes (see `cache`): never stale.
"""

from __future__ import annotations

from django.core.cache import cache
from django.db.models import Count
from django.db.models.fields.json import KeyTextTransform

from analysis.selectors.agreement.cache import (
    CACHE_SECONDS,
    cache_key,
    inputs_fingerprint,
)
from analysis.selectors.agreement.inputs import fetch, quoted_table
from annotation.importers.taxonomy import Taxonomy
from annotation.models import Dataset, Instruction, Response


def agreement_slice_values(*, dataset: Dataset) -> dict[str, list[dict]]:
    """Every slice dimension's values present in `dataset`, with response counts:
    ``{dimension: [{"value", "label", "n_responses"}, ...]}``, values in a fixed
    order (domains and levels as defined, tasks and models sorted), the dataset's
    own domains, levels and facets (`facet.NAME`) when it declares them.

    Queries: the fingerprint (one on PostgreSQL) and a cache read; two more when
    the cache does not have them. Read-only apart from the cache.
    """
    key = cache_key({"slice_values": dataset.pk}, inputs_fingerprint(dataset, [], []))
    values = cache.get(key)
    if values is None:
        values = slice_values_count(dataset)
        cache.set(key, values, CACHE_SECONDS)
    return values


def slice_values_count(dataset: Dataset) -> dict[str, list[dict]]:
    """The slice values of `dataset` counted afresh: two aggregate queries whatever
    its size (responses per instruction profile, and per model), a third for its
    facets."""
    profiles = fetch(
        f"SELECT i.domain_1, i.domain_2, i.difficulty, i.source_task, i.is_hard, "
        f"COUNT(*) FROM {quoted_table(Response)} r "
        f"JOIN {quoted_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s "
        f"GROUP BY i.domain_1, i.domain_2, i.difficulty, i.source_task, i.is_hard",
        [dataset.pk],
    )
    per_model = fetch(
        f"SELECT r.model_name, COUNT(*) FROM {quoted_table(Response)} r "
        f"JOIN {quoted_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s GROUP BY r.model_name",
        [dataset.pk],
    )
    domains: dict[str, int] = {}
    levels: dict[int, int] = {}
    tasks: dict[str, int] = {}
    hard = {True: 0, False: 0}
    for domain_1, domain_2, difficulty, task, is_hard, n in profiles:
        for key in {domain_1, domain_2}:
            domains[key] = domains.get(key, 0) + n
        levels[difficulty or 0] = levels.get(difficulty or 0, 0) + n
        tasks[str(task)] = tasks.get(str(task), 0) + n
        hard[bool(is_hard)] += n
    taxonomy = Taxonomy.stored(dataset.taxonomy)
    labels = taxonomy.domain_labels()
    level_labels = taxonomy.difficulty_labels()
    out: dict[str, list[dict]] = {}
    out["domain"] = [
        {"value": key, "label": labels[key], "n_responses": domains[key]}
        for key in labels
        if domains.get(key)
    ]
    out["difficulty"] = [
        {"value": str(level), "label": label, "n_responses": levels[level]}
        for level, label in level_labels.items()
        if levels.get(level)
    ]
    if levels.get(0):
        out["difficulty"].append(
            {"value": "unknown", "label": "unknown", "n_responses": levels[0]}
        )
    out["task"] = [
        {"value": t, "label": t or "(no task)", "n_responses": tasks[t]}
        for t in sorted(tasks)
    ]
    out["hard"] = [
        {"value": v, "label": label, "n_responses": hard[flag]}
        for v, label, flag in (
            ("hard", "FLASK-Hard", True),
            ("rest", "not FLASK-Hard", False),
        )
        if hard[flag]
    ]
    out["model"] = [
        # sorted here, not by the database's collation: the order of the arrays
        {"value": name, "label": name, "n_responses": n}
        for name, n in sorted(per_model)
    ]
    out.update(_facet_values(dataset, taxonomy))
    return out


def _facet_values(dataset: Dataset, taxonomy: Taxonomy) -> dict[str, list[dict]]:
    """``{"facet.NAME": [{"value", "label", "n_responses"}, ...]}`` for each facet
    the dataset declares: its declared values in their order (else sorted), then
    "unknown" for responses without one. One aggregate query, none without facets."""
    if not taxonomy.facets:
        return {}
    names = {f"f{n}": facet.name for n, facet in enumerate(taxonomy.facets)}
    profiles = (
        Response.objects.filter(instruction__dataset=dataset)
        .annotate(
            **{
                alias: KeyTextTransform(name, "instruction__metadata")
                for alias, name in names.items()
            }
        )
        .values(*names)
        .annotate(n=Count("id"))
        .order_by()
    )
    counts: dict[str, dict[str | None, int]] = {name: {} for name in names.values()}
    for row in profiles:
        for alias, name in names.items():
            counts[name][row[alias]] = counts[name].get(row[alias], 0) + row["n"]
    out: dict[str, list[dict]] = {}
    for facet in taxonomy.facets:
        seen = counts[facet.name]
        order = list(facet.values) if facet.values is not None else []
        order += sorted(v for v in seen if v is not None and v not in order)
        out[facet.dimension] = [
            {"value": v, "label": v, "n_responses": seen[v]}
            for v in order
            if seen.get(v)
        ]
        if seen.get(None):
            out[facet.dimension].append(
                {"value": "unknown", "label": "unknown", "n_responses": seen[None]}
            )
    return out
