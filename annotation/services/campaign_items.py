"""A new campaign's items (`CampaignItem` rows), by item kind: one per response to
rate (pointwise; or per drawn response of a sampling campaign) or one per pair to
compare (pairwise). Called by `services.campaigns.campaign_create` inside its
transaction, with a checked spec; each returns how many real items it created.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

from django.db import connection

from annotation.models import Campaign, CampaignItem, PreferencePair, Response
from annotation.services.campaign_spec import CampaignSpec
from annotation.services.import_rows import copy_rows
from annotation.services.pairs import pairs_create_from_dataset
from flaskapp.errors import DomainError, Problem


def in_overlap_sample(campaign_id: int, item_key: int, percent: int) -> bool:
    """A stable pseudo-random choice of `percent` % of items (same on every run),
    keyed by the response id (pointwise) or the pair id (pairwise)."""
    if percent >= 100:
        return True
    if percent <= 0:
        return False
    digest = hashlib.sha256(f"{campaign_id}:{item_key}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % 10000 < percent * 100


def serving_order_key(campaign_id: int, response_id: int) -> str:
    """The shuffle of a campaign's items: items sorted by this key (then by id).

    A hash of campaign and response ids: the same order on every run and database,
    unrelated to model or instruction order. `_ITEMS_SQL` computes the same key.
    """
    return hashlib.md5(f"{campaign_id}/{response_id}".encode()).hexdigest()


# PostgreSQL: the campaign's items in one statement, with the same order key as
# `serving_order_key` and the same overlap sample as `in_overlap_sample` (the first
# 4 bytes of a SHA-256, big-endian, modulo 10,000).
_ITEMS_SQL = """
INSERT INTO annotation_campaignitem
    (campaign_id, response_id, target, submitted, reserved, open_slots, position)
SELECT %(campaign)s, id, target, 0, 0, target,
       row_number() OVER (ORDER BY order_key COLLATE "C", id) - 1
FROM (
    SELECT r.id,
           md5(%(campaign)s::text || '/' || r.id::text) AS order_key,
           CASE
               WHEN %(percent)s >= 100 THEN %(overlap)s
               WHEN %(percent)s <= 0 THEN 1
               WHEN ('x' || substr(encode(sha256(convert_to(
                        %(campaign)s::text || ':' || r.id::text, 'UTF8')), 'hex'), 1, 8)
                    )::bit(32)::bigint %% 10000 < %(percent)s * 100
                   THEN %(overlap)s
               ELSE 1
           END AS target
    FROM annotation_response r
    JOIN annotation_instruction i ON i.id = r.instruction_id
    WHERE i.dataset_id = %(dataset)s
      AND (cardinality(%(models)s::text[]) = 0 OR r.model_name = ANY(%(models)s))
      AND NOT (%(gold)s AND EXISTS (
          SELECT 1 FROM annotation_golditem g WHERE g.response_id = r.id))
) AS picked
"""


def _sampled_items_create(campaign: Campaign, sample: list[tuple[int, float]]) -> int:
    """A sampling campaign's items: one per sampled response, in the plan's order
    (their `position`), each with its inclusion probability. The spec's
    `SamplingPolicy` checked that the responses are the campaign's."""
    if connection.vendor == "postgresql":
        # As in `_all_items_create`: no referenced response may go before the commit.
        with connection.cursor() as cursor:
            cursor.execute("LOCK TABLE annotation_response IN SHARE MODE")
    target = campaign.overlap
    rows = [
        (campaign.pk, response_id, target, 0, 0, target, position, probability)
        for position, (response_id, probability) in enumerate(sample)
    ]
    copy_rows(
        CampaignItem,
        ["campaign_id", "response_id", "target", "submitted", "reserved",
         "open_slots", "position", "sampling_probability"],
        rows,
    )  # fmt: skip
    return len(rows)


def _all_items_create(campaign: Campaign, models: list[str]) -> int:
    """Create the campaign's items (one per response to rate); return how many.
    With a gold rate or a qualification, the dataset's gold responses are not among
    them (they become the campaign's gold items, `services.gold.gold_items_create`).

    One INSERT ... SELECT on PostgreSQL; elsewhere the ids are read, ordered and
    inserted from Python by the same rules.
    """
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            # Items hold no foreign-key constraint on their response (see the model):
            # no response may be deleted between this read and the commit. Reads
            # and the judges' foreign-key checks go on; imports wait.
            cursor.execute("LOCK TABLE annotation_response IN SHARE MODE")
            # The order sort fits in memory (255,000 keys spill at the default).
            cursor.execute("SET LOCAL work_mem = '64MB'")
            cursor.execute(
                _ITEMS_SQL,
                {
                    "campaign": campaign.pk,
                    "dataset": campaign.dataset_id,
                    "models": list(models),
                    "overlap": campaign.overlap,
                    "percent": campaign.overlap_percent,
                    "gold": campaign.uses_gold,
                },
            )
            return cursor.rowcount
    responses = Response.objects.filter(instruction__dataset_id=campaign.dataset_id)
    if models:
        responses = responses.filter(model_name__in=models)
    if campaign.uses_gold:
        responses = responses.filter(gold__isnull=True)
    response_ids = sorted(
        responses.values_list("pk", flat=True),
        key=lambda rid: (serving_order_key(campaign.pk, rid), rid),
    )
    rows = []
    for position, response_id in enumerate(response_ids):
        target = (
            campaign.overlap
            if in_overlap_sample(campaign.pk, response_id, campaign.overlap_percent)
            else 1
        )
        rows.append((campaign.pk, response_id, target, 0, 0, target, position))
    copy_rows(
        CampaignItem,
        ["campaign_id", "response_id", "target", "submitted", "reserved",
         "open_slots", "position"],
        rows,
    )  # fmt: skip
    return len(rows)


def response_items_create(campaign: Campaign, spec: CampaignSpec) -> int:
    """A pointwise campaign's items: the drawn sample of a sampling campaign, else
    every response of the spec's models (all models: every response)."""
    if spec.sampling is not None:
        real = _sampled_items_create(campaign, spec.sampling.drawn())
    else:
        real = _all_items_create(campaign, campaign.models_included)
    if not real:
        raise DomainError(
            "the campaign has no responses to rate",
            [Problem("the dataset has no responses for these models", field="models")],
        )
    return real


def _pairs(campaign: Campaign, spec: CampaignSpec) -> list[tuple[int, int]]:
    """(pair id, response_1 id) of the pairs to compare, made or chosen."""
    policy = spec.pairs
    if policy.mode == "existing":
        qs = PreferencePair.objects.filter(dataset=campaign.dataset)
        if policy.categories:
            qs = qs.filter(category__in=policy.categories)
        if spec.models:
            qs = qs.filter(
                response_1__model_name__in=spec.models,
                response_2__model_name__in=spec.models,
            )
        return list(qs.order_by("pk").values_list("pk", "response_1_id"))
    try:
        made = pairs_create_from_dataset(
            dataset=campaign.dataset,
            mode=policy.mode,
            baseline_model=policy.baseline_model,
            models=list(spec.models) or None,
            sample=policy.sample,
            seed=policy.seed,
        )
    except DomainError as exc:
        raise DomainError("the campaign was not created", exc.problems) from exc
    return sorted((p.pk, p.response_1_id) for p in made.pairs)


def pair_items_create(campaign: Campaign, spec: CampaignSpec) -> int:
    """A pairwise campaign's items: one per pair (`PairPolicy`), shuffled with a
    seed of the campaign id; pairs it makes are written in the caller's
    transaction (a refusal writes none)."""
    pairs = _pairs(campaign, spec)
    if not pairs:
        raise DomainError(
            "the campaign has no pairs to compare",
            [Problem("no pair of responses matches this selection", field="pair_mode")],
        )
    random.Random(campaign.pk).shuffle(pairs)
    items = []
    for position, (pair_id, response_id) in enumerate(pairs):
        target = (
            campaign.overlap
            if in_overlap_sample(campaign.pk, pair_id, campaign.overlap_percent)
            else 1
        )
        items.append(
            CampaignItem(
                campaign=campaign,
                pair_id=pair_id,
                response_id=response_id,
                target=target,
                open_slots=target,
                position=position,
            )
        )
    CampaignItem.objects.bulk_create(items, batch_size=5000)
    return len(items)


# How each kind of campaign gets its items (by `Campaign.Kind`).
ITEMS_CREATE: dict[str, Callable[[Campaign, CampaignSpec], int]] = {
    Campaign.Kind.POINTWISE: response_items_create,
    Campaign.Kind.PAIRWISE: pair_items_create,
}
