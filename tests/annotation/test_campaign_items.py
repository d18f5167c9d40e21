"""Campaign items: the one-statement creation on PostgreSQL equals the Python rules,
and a response that an item refers to cannot be deleted (no foreign-key constraint
holds it: the ORM's PROTECT and a delete trigger do)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.deletion import ProtectedError

from annotation.models import CampaignItem, Response
from annotation.services.campaign_items import in_overlap_sample, serving_order_key
from annotation.services.campaign_spec import (
    CampaignSpec,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from tests.factories import ResponseFactory, dataset_with_responses


def make_dataset(n_instructions=30, models=("a", "b", "c")):
    return dataset_with_responses(n_instructions, models)


@pytest.mark.parametrize(
    "models, overlap, percent", [([], 3, 37), (["a", "c"], 2, 100)]
)
def test_items_follow_the_order_key_and_the_overlap_sample(
    researcher, models, overlap, percent
):
    """The rules as Python states them, whatever the database computes them with."""
    dataset = make_dataset()
    campaign = campaign_create(spec=CampaignSpec(name="c", dataset=dataset, models=models, serving=ServingPolicy(overlap=overlap, overlap_percent=percent)), created_by=researcher)  # fmt: skip
    items = list(
        CampaignItem.objects.filter(campaign=campaign)
        .order_by("position")
        .values_list("response_id", "target", "open_slots", "position")
    )
    expected_ids = Response.objects.filter(instruction__dataset=dataset)
    if models:
        expected_ids = expected_ids.filter(model_name__in=models)
    order = sorted(
        expected_ids.values_list("pk", flat=True),
        key=lambda rid: (serving_order_key(campaign.pk, rid), rid),
    )
    assert [i[0] for i in items] == order
    assert [i[3] for i in items] == list(range(len(order)))
    for response_id, target, open_slots, _ in items:
        sampled = in_overlap_sample(campaign.pk, response_id, percent)
        assert target == (overlap if sampled else 1)
        assert open_slots == target
    if percent < 100:
        assert {i[1] for i in items} == {1, overlap}


def test_a_rated_response_cannot_be_deleted_by_the_orm_nor_by_sql(researcher):
    dataset = make_dataset(n_instructions=2, models=("a",))
    campaign_create(spec=CampaignSpec(name="c", dataset=dataset), created_by=researcher)
    response = Response.objects.filter(instruction__dataset=dataset).first()
    with pytest.raises(ProtectedError):
        response.delete()
    with pytest.raises(IntegrityError, match="campaign item refers to"):
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(
                    "DELETE FROM annotation_response WHERE id = %s", [response.pk]
                )
    assert Response.objects.filter(pk=response.pk).exists()
    # A response no campaign refers to is deleted as before.
    free = ResponseFactory(instruction=response.instruction, model_name="z")
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM annotation_response WHERE id = %s", [free.pk])
    assert not Response.objects.filter(pk=free.pk).exists()
