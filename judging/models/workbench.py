"""The judge workbench: held-out human labels, experiments, failure tags and notes.

* `EvalSplit` / `EvalSplitMember`: a dataset's fixed development / test split of its
  instructions (seeded, stratified); `TestSplitLook` logs every evaluation on the
  test split (who, when, which runs), so the workbench can say how often it was seen.
* `Experiment`: judge runs over the same items, compared with a baseline run.
* `FailureTag` / `DisagreementTag`: a researcher's reading of the items where a run
  disagrees with the humans; `CriterionNote`: what the researcher learnt about a
  criterion, kept with the prompt version it was written against.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from annotation.models import Dataset, Instruction, Response, Skill
from flaskapp import limits
from flaskapp.models import default_workspace_pk
from judging.models.runs import JudgeRun, PromptTemplate


class EvalSplit(models.Model):
    """A dataset's development / test split, by instruction. Fixed once made: the
    test split's figures mean something only if it never moves."""

    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="eval_splits",
    )
    dataset = models.OneToOneField(
        Dataset, on_delete=models.CASCADE, related_name="eval_split"
    )
    seed = models.PositiveIntegerField(default=0)
    test_fraction = models.FloatField()
    # The instruction fields the split was stratified by (those the dataset knows).
    stratified_by = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(test_fraction__gt=0) & Q(test_fraction__lt=1),
                name="eval_split_fraction_between_0_and_1",
            )
        ]

    def __str__(self) -> str:
        return f"split of {self.dataset_id} ({self.test_fraction:.0%} test)"


class EvalSplitMember(models.Model):
    """Which part of the split an instruction (and so each of its responses) is in."""

    class Part(models.TextChoices):
        DEV = "dev", "Development"
        TEST = "test", "Test"

    split = models.ForeignKey(
        EvalSplit, on_delete=models.CASCADE, related_name="members"
    )
    instruction = models.ForeignKey(
        Instruction, on_delete=models.CASCADE, related_name="+"
    )
    part = models.CharField(max_length=4, choices=Part.choices)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["split", "instruction"], name="split_member_unique"
            )
        ]
        indexes = [models.Index(fields=["split", "part"])]

    def __str__(self) -> str:
        return f"instruction {self.instruction_id}: {self.part}"


class TestSplitLook(models.Model):
    """One evaluation on the locked test split: who, when, which runs, and why."""

    __test__ = False  # a model, not a test class (pytest collects by name)

    split = models.ForeignKey(EvalSplit, on_delete=models.CASCADE, related_name="looks")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    run_ids = models.JSONField(default=list)
    experiment = models.ForeignKey(
        "Experiment",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="test_looks",
    )
    reason = models.TextField(max_length=limits.NOTE, blank=True)
    at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"test look {self.pk} at {self.at:%Y-%m-%d %H:%M}"


class Experiment(models.Model):
    """Judge runs over the same items of one dataset, compared with a baseline run."""

    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="experiments",
    )
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, related_name="experiments"
    )
    name = models.CharField(max_length=200)
    description = models.TextField(max_length=limits.DESCRIPTION, blank=True)
    runs = models.ManyToManyField(JudgeRun, related_name="experiments", blank=True)
    baseline = models.ForeignKey(
        JudgeRun,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # The human campaigns the runs are scored against (empty: every campaign of
    # the dataset with scores).
    campaign_ids = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "name"], name="experiment_name_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name


class FailureTag(models.Model):
    """A reusable failure mode of a dataset's judges ("misses the unit", ...)."""

    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="failure_tags"
    )
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "name"], name="failure_tag_name_unique"
            )
        ]

    def __str__(self) -> str:
        return self.name


class DisagreementTag(models.Model):
    """A failure mode a researcher saw on one item (response, criterion) of a run."""

    run = models.ForeignKey(
        JudgeRun, on_delete=models.CASCADE, related_name="disagreement_tags"
    )
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="+")
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    tag = models.ForeignKey(FailureTag, on_delete=models.CASCADE, related_name="uses")
    note = models.TextField(max_length=limits.NOTE, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "response", "skill", "tag"],
                name="disagreement_tag_unique",
            )
        ]

    def __str__(self) -> str:
        return f"{self.tag_id} on run {self.run_id}, response {self.response_id}"


class CriterionNote(models.Model):
    """What a researcher learnt about a criterion while reading a prompt version's
    disagreements (criteria drift while people grade: the notes keep the trail)."""

    # Its own (a built-in prompt's notes are each workspace's own).
    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="criterion_notes",
    )
    prompt = models.ForeignKey(
        PromptTemplate, on_delete=models.CASCADE, related_name="criterion_notes"
    )
    skill_key = models.CharField(max_length=100)
    text = models.TextField(
        max_length=limits.NOTE,
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"note on {self.skill_key} ({self.prompt_id})"
