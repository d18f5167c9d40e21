"""What a dataset's instructions hold of its taxonomy: the domain keys, difficulty
levels and facet values in use, which an edit of the taxonomy must keep declared
(`annotation.services.taxonomy`)."""

from __future__ import annotations

from django.db.models import Count
from django.db.models.fields.json import KeyTextTransform

from annotation.importers.taxonomy import TaxonomyUsage
from annotation.models import Dataset, Instruction


def taxonomy_usage(*, dataset: Dataset, facet_names: list[str]) -> TaxonomyUsage:
    """Instructions of `dataset` per domain key, per level and, for each name of
    `facet_names`, per stored text of that metadata column (numbers and booleans
    as the text a facet stores; absent or null is not counted). 2 + 1 queries
    (the last only with facet names)."""
    instructions = Instruction.objects.filter(dataset=dataset)
    domains: dict[str, int] = {}
    for field in ("domain_1", "domain_2"):
        for key, n in (
            instructions.exclude(**{field: ""})
            .values_list(field)
            .annotate(n=Count("id"))
            .order_by()
        ):
            domains[key] = domains.get(key, 0) + n
    levels = dict(
        instructions.filter(difficulty__isnull=False)
        .values_list("difficulty")
        .annotate(n=Count("id"))
        .order_by()
    )
    facet_values: dict[str, dict[str, int]] = {name: {} for name in facet_names}
    if facet_names:
        aliases = {f"f{n}": name for n, name in enumerate(facet_names)}
        rows = (
            instructions.annotate(
                **{a: KeyTextTransform(name, "metadata") for a, name in aliases.items()}
            )
            .values(*aliases)
            .annotate(n=Count("id"))
            .order_by()
        )
        for row in rows:
            for alias, name in aliases.items():
                value = row[alias]
                if value is not None and value != "":
                    seen = facet_values[name]
                    seen[value] = seen.get(value, 0) + row["n"]
    return TaxonomyUsage(domains=domains, levels=levels, facet_values=facet_values)
