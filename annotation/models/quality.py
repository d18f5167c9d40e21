"""Known answers: gold items and attention checks (the raters' side of quality).

A `GoldItem` marks one response of a dataset as having known scores: a `GoldScore`
per criterion it checks, each right when a rater's score is within `tolerance` of it
(0: exact). An attention check is a gold item whose instruction or response itself
asks for a specific answer ("to show you read this, score Readability 2"); it is
counted apart. Campaigns created with a gold rate serve the dataset's gold items to
every rater, unmarked (`annotation.services.gold`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models.datasets import Dataset, Response, Skill
from flaskapp import bounds


class GoldItem(models.Model):
    class Kind(models.TextChoices):
        GOLD = "gold", "Gold item"
        ATTENTION = "attention", "Attention check"

    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="gold_items"
    )
    response = models.OneToOneField(
        Response, on_delete=models.CASCADE, related_name="gold"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.GOLD)
    tolerance = models.PositiveSmallIntegerField(
        default=0, validators=bounds.GOLD_TOLERANCE.validators()
    )
    explanation = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["dataset_id", "response_id"]

    def __str__(self) -> str:
        return f"{self.kind} {self.response_id}"


class GoldScore(models.Model):
    """The expected score of one criterion of a gold item (`HumanScore.score`'s
    storage: a point, a label code, or null for an expected N/A)."""

    gold = models.ForeignKey(GoldItem, on_delete=models.CASCADE, related_name="scores")
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    score = models.SmallIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["gold_id", "skill__position"]
        constraints = [
            models.UniqueConstraint(fields=["gold", "skill"], name="gold_score_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.skill_id}={self.score}"
