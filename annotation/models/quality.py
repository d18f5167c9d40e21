"""Known answers: gold items and attention checks (the raters' side of quality).

A `GoldItem` marks one response of a dataset as having known scores: a `GoldScore`
per criterion it checks, each right when a rater's score is within `tolerance` of it
(0: exact). An attention check is a gold item whose instruction or response itself
asks for a specific answer ("to show you read this, score Readability 2"); it is
counted apart. Campaigns created with a gold rate serve the dataset's gold items to
every rater, unmarked (`annotation.services.gold`).

An `Adjudication` is a reviewer's settled score where the raters of a campaign
disagreed (`annotation.services.adjudication`); every change of it, of a rater's
exclusion and of a human score is kept in a history (django-simple-history).

A `Qualification` is one rater's attempt at a campaign's qualification set: the first
`Campaign.qualification_size` gold items the rater is served, before any real item
(`annotation.services.qualification`). It is graded when its last item is submitted
(or skipped, which counts as wrong): passed when the share of right answers reaches
the campaign's pass mark. A failed rater is served nothing more, unless a researcher
allows one retry (a second attempt on gold items the rater has not seen).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from simple_history.models import HistoricalRecords

from annotation.models.campaigns import Campaign
from annotation.models.datasets import Dataset, Response, Skill
from flaskapp import bounds, limits


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
    explanation = models.TextField(max_length=limits.GOLD_EXPLANATION, blank=True)
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


class Qualification(models.Model):
    class Status(models.TextChoices):
        IN_PROGRESS = "in_progress", "In progress"
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="qualifications"
    )
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    attempt = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(
        max_length=12, choices=Status.choices, default=Status.IN_PROGRESS
    )
    items = models.PositiveSmallIntegerField(help_text="Gold items in this attempt.")
    checked = models.PositiveIntegerField(default=0)  # criteria compared
    right = models.PositiveIntegerField(default=0)
    accuracy = models.FloatField(null=True, blank=True)  # right / checked, when graded
    pass_mark = models.FloatField()  # the campaign's, when the attempt started
    rule = models.CharField(max_length=10)  # exact / within1, when it started
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # On a failed attempt: the researcher who allowed a retry, and when.
    retry_allowed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    retry_allowed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_id", "rater_id", "attempt"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "rater", "attempt"], name="qualification_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater_id} #{self.attempt} {self.status}"


class RaterExclusion(models.Model):
    """A researcher's decision about one rater of a campaign, with who, when and why:
    `exclude` leaves the rater's scores out of every analysis of the campaign
    (agreement, meta-evaluation, training export; the long export marks them); `pause`
    stops serving the rater new items. Reversible: `ended_at` (and who, why) closes
    it; the row stays, so the history is complete. At most one open decision of each
    kind per rater and campaign."""

    class Kind(models.TextChoices):
        EXCLUDE = "exclude", "Scores excluded from analyses"
        PAUSE = "pause", "Paused"

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="rater_exclusions"
    )
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    reason = models.TextField(
        max_length=limits.NOTE,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    ended_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    end_reason = models.TextField(max_length=limits.NOTE, blank=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords(excluded_fields=["updated_at"])

    class Meta:
        ordering = ["campaign_id", "rater_id", "-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "rater", "kind"],
                condition=models.Q(ended_at__isnull=True),
                name="rater_exclusion_one_open",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.rater_id} in {self.campaign_id}"


class Adjudication(models.Model):
    """A reviewer's settled score for one criterion of one response in a campaign,
    where its raters disagreed beyond the campaign's rule
    (`annotation.services.adjudication`), with a note saying why.

    A source of its own ("human, adjudicated"): it never overwrites a rater's
    `HumanScore`. `score` follows `annotation.scales` like a rater's (null: N/A).
    One per campaign, response and criterion; changing it keeps the earlier value in
    its history (who, when, note)."""

    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="adjudications"
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    score = models.SmallIntegerField(null=True, blank=True)
    note = models.TextField(
        max_length=limits.NOTE,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords(excluded_fields=["created_at", "updated_at"])

    class Meta:
        ordering = ["campaign_id", "response_id", "skill__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "response", "skill"], name="adjudication_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill_id}={'N/A' if self.score is None else self.score}"
