"""Editing a dataset's slicing taxonomy after its import (issue 35's follow-up):
rename labels, add or drop domains, levels and facets no instruction uses, declare
an existing metadata column a facet. The declaration's rules are
`annotation.importers.taxonomy`'s; this module adds the one rule of an edit: no
instruction may be left with a value the new taxonomy does not declare.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from annotation.importers.taxonomy import Taxonomy, taxonomy_parse
from annotation.models import Dataset
from annotation.selectors.datasets import dataset_get_for_user
from annotation.selectors.taxonomy import taxonomy_usage
from flaskapp.errors import DomainError
from flaskapp.workspaces import RESEARCHER, audit_record

AUDIT_ACTION = "dataset.taxonomy_changed"


def dataset_taxonomy_update(*, user, dataset_id: int, taxonomy: Any) -> Dataset:
    """Replace dataset `dataset_id`'s taxonomy with the declaration `taxonomy`
    (the import's JSON object: ``domains``, ``difficulty``, ``facets``; null or {}
    for FLASK's built-in).

    Preconditions: `user` is a researcher or owner of the dataset's workspace (404
    for another workspace's dataset, 403 below researcher). Refuses, changing
    nothing, with `DomainError` whose problems name the field: a declaration that is
    not valid (``taxonomy``, as at import), and one that would orphan stored
    instructions (``taxonomy.domains``, ``taxonomy.difficulty``,
    ``taxonomy.facets``: a dropped domain or level in use, a facet value not
    declared). Side effects: the dataset row (locked while checked, so no import
    of the same dataset interleaves with the check) and one audit event
    (`AUDIT_ACTION`, before and after); the agreement cache's key changes with the
    taxonomy (`analysis.selectors.agreement.cache.inputs_fingerprint`). Idempotent:
    the same declaration again changes nothing and writes no audit event.
    """
    dataset = dataset_get_for_user(user=user, dataset_id=dataset_id, needed=RESEARCHER)
    new = taxonomy_parse(taxonomy)
    with transaction.atomic():
        dataset = Dataset.objects.select_for_update().get(pk=dataset.pk)
        before = dataset.taxonomy
        after = new.to_json()
        if Taxonomy.stored(before) == new:
            return dataset
        usage = taxonomy_usage(
            dataset=dataset, facet_names=[f.name for f in new.facets]
        )
        problems = new.orphans(usage)
        if problems:
            raise DomainError(
                "the taxonomy was not changed: instructions of the dataset use "
                "values it would no longer declare",
                problems,
            )
        dataset.taxonomy = after
        dataset.save(update_fields=["taxonomy"])
        audit_record(
            action=AUDIT_ACTION,
            actor=user,
            workspace=dataset.workspace_id,
            target=dataset,
            before={"taxonomy": before},
            after={"taxonomy": after},
        )
    return dataset
