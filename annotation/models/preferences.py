"""Pairwise preference data: evaluated models, pairs and human preferences."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotation.models.campaigns import Assignment, ShownOrder
from annotation.models.datasets import Dataset, Instruction, Response
from flaskapp import limits
from flaskapp.models import default_workspace_pk


class PreferenceLabel(models.TextChoices):
    """A preference in the ORIGINAL numbering of a pair (never "A"/"B")."""

    RESPONSE_1 = "1", "Response 1"
    RESPONSE_2 = "2", "Response 2"
    TIE = "tie", "Tie"


class EvaluatedModel(models.Model):
    """An evaluated model's family, for self-preference probes.

    Responses keep their plain `model_name`; join on `name` within the dataset's
    workspace (each workspace maps its own models: `evaluated_model_families`). The
    judge side has `JudgeConfig.model_family`.
    """

    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.CASCADE,
        default=default_workspace_pk,
        related_name="evaluated_models",
    )
    name = models.CharField(max_length=200)
    family = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"],
                name="evaluated_model_name_unique_in_workspace",
            )
        ]

    def __str__(self) -> str:
        return self.name


class PreferencePair(models.Model):
    """Two responses to one instruction, to be compared.

    `response_1` / `response_2` fix the ORIGINAL numbering that every label and verdict
    refers to ("1", "2", "tie"), whatever order a rater or judge was shown. Both
    responses belong to `instruction` (checked by the services that create pairs).
    """

    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="preference_pairs"
    )
    instruction = models.ForeignKey(
        Instruction, on_delete=models.CASCADE, related_name="preference_pairs"
    )
    response_1 = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    response_2 = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    category = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=200, blank=True)
    external_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["dataset_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "response_1", "response_2"],
                name="preference_pair_unique",
            ),
            models.CheckConstraint(
                condition=~Q(response_1=F("response_2")),
                name="preference_pair_distinct_responses",
            ),
        ]
        indexes = [
            models.Index(
                fields=["dataset", "category"], name="preference_pair_category_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"pair {self.pk}: {self.response_1_id} vs {self.response_2_id}"


class HumanPreference(models.Model):
    """One human's preference on a pair, in the ORIGINAL numbering.

    Imported votes (`origin` "imported") carry the source's `voter` id (may be blank)
    and a `source_key`, unique per pair, that makes re-importing the same rows a no-op
    (see `annotation.importers.preferences.source_key`). Campaign votes carry their `assignment` and `rater`, plus `shown_order`, the
    order the rater saw; their label is already mapped back to "1"/"2"/"tie".
    `skill_labels` optionally holds per-skill preferences ``{skill_key: "1"|"2"|"tie"}``.
    """

    class Origin(models.TextChoices):
        IMPORTED = "imported", "Imported"
        CAMPAIGN = "campaign", "Campaign"

    pair = models.ForeignKey(
        PreferencePair, on_delete=models.CASCADE, related_name="human_preferences"
    )
    label = models.CharField(max_length=3, choices=PreferenceLabel.choices)
    skill_labels = models.JSONField(default=dict, blank=True)
    rationale = models.TextField(max_length=limits.RATIONALE, blank=True)
    origin = models.CharField(max_length=10, choices=Origin.choices)
    voter = models.CharField(max_length=200, blank=True)
    source_key = models.CharField(max_length=100, blank=True)
    assignment = models.ForeignKey(
        Assignment,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="preferences",
    )
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    shown_order = models.CharField(max_length=2, choices=ShownOrder.choices, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pair_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment"],
                condition=Q(assignment__isnull=False),
                name="human_preference_assignment_unique",
            ),
            models.UniqueConstraint(
                fields=["pair", "source_key"],
                condition=~Q(source_key=""),
                name="human_preference_source_key_unique",
            ),
            models.CheckConstraint(
                condition=Q(label__in=["1", "2", "tie"]),
                name="human_preference_label_valid",
            ),
            models.CheckConstraint(
                condition=Q(shown_order__in=["", "12", "21"]),
                name="human_preference_shown_order_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"pair {self.pair_id}: {self.label} ({self.origin})"
