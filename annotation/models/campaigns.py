"""Rating campaigns, their items, raters' assignments and human scores."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from simple_history.models import HistoricalRecords

from annotation.models.datasets import Dataset, Response, Skill
from flaskapp import bounds, limits
from flaskapp.models import default_workspace_pk


class ShownOrder(models.TextChoices):
    """Which response a rater saw first (as "A") in a pairwise comparison."""

    ORIGINAL = "12", "Response 1 as A"
    SWAPPED = "21", "Response 2 as A"


class Campaign(models.Model):
    """A human rating project over a dataset's responses.

    Which skills a rater scores: each instruction's own relevant skills (the FLASK
    default), every skill of the rubric, or a chosen list. `overlap` raters score each
    response, or only `overlap_percent` % of them (a seeded sample) while the rest get
    one rater, so agreement can be measured cheaply.
    """

    class SkillMode(models.TextChoices):
        INSTRUCTION = (
            "instruction",
            "Each instruction's relevant skills (FLASK default)",
        )
        ALL = "all", "Every skill of the rubric"
        CHOSEN = "chosen", "A chosen list of skills"

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"
        CLOSED = "closed", "Closed"

    class Kind(models.TextChoices):
        POINTWISE = "pointwise", "Pointwise skill scores"
        PAIRWISE = "pairwise", "Pairwise preference"

    class Critique(models.TextChoices):
        """Whether raters write a critique of each response (FLAMe's open-ended task)."""

        OFF = "off", "No critique"
        WITH_SCORES = "with_scores", "A critique next to the scores"
        ONLY = "only", "A critique instead of scores"

    # Always its dataset's workspace (`campaign_create` checks).
    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="campaigns",
    )
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.POINTWISE)
    dataset = models.ForeignKey(
        Dataset, on_delete=models.PROTECT, related_name="campaigns"
    )
    models_included = models.JSONField(
        default=list,
        blank=True,
        help_text="Model names to rate; empty means every model.",
    )
    skill_mode = models.CharField(
        max_length=20, choices=SkillMode.choices, default=SkillMode.INSTRUCTION
    )
    chosen_skills = models.ManyToManyField(Skill, blank=True, related_name="+")
    # Bounds: flaskapp.bounds, shared with the forms, serializers and services.
    overlap = models.PositiveSmallIntegerField(
        default=1, validators=bounds.OVERLAP.validators()
    )
    overlap_percent = models.PositiveSmallIntegerField(
        default=100,
        validators=bounds.OVERLAP_PERCENT.validators(),
        help_text="Share of responses that get `overlap` raters; the rest get one.",
    )
    show_reference = models.BooleanField(default=True)
    show_model_names = models.BooleanField(default=False)
    lock_ttl_minutes = models.PositiveIntegerField(
        default=30, validators=bounds.LOCK_TTL_MINUTES.validators()
    )
    rater_quota = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=bounds.RATER_QUOTA.validators(),
        help_text="At most this many responses per rater (optional).",
    )
    guidelines = models.TextField(
        max_length=limits.GUIDELINES, blank=True, help_text="Markdown shown to raters."
    )
    critique = models.CharField(
        max_length=12, choices=Critique.choices, default=Critique.OFF
    )
    critique_min_length = models.PositiveIntegerField(
        default=0, help_text="A critique must have at least this many characters."
    )
    # Gold items (annotation.models.quality): the dataset's gold responses are served
    # to every rater, one in every `gold_rate` items (0: none), never as real items.
    gold_rate = models.PositiveSmallIntegerField(
        default=0,
        validators=bounds.GOLD_RATE.validators(),
        help_text="Serve one gold item in every N items (0: no gold items).",
    )
    training_phase = models.BooleanField(
        default=False,
        help_text="While on, a rater sees the expected scores after a gold item.",
    )

    # Qualification (annotation.models.quality.Qualification): each rater first answers
    # this many gold items, and is served real ones only with a share of right answers
    # of at least `qualification_pass` (by `qualification_rule`).
    class QualificationRule(models.TextChoices):
        EXACT = "exact", "Exact score"
        WITHIN1 = "within1", "Within one point"

    qualification_size = models.PositiveSmallIntegerField(
        default=0,
        validators=bounds.QUALIFICATION_SIZE.validators(),
        help_text="Gold items each rater answers before real ones (0: none).",
    )
    qualification_pass = models.FloatField(
        default=0.8,
        validators=bounds.QUALIFICATION_PASS.validators(),
        help_text="The share of right answers a rater needs (0-1).",
    )
    qualification_rule = models.CharField(
        max_length=10,
        choices=QualificationRule.choices,
        default=QualificationRule.EXACT,
    )
    # Rater reliability (analysis.selectors.reliability): items rated faster than this
    # are counted as speed outliers (null: a quarter of the campaign's median time).
    speed_threshold_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=bounds.SPEED_THRESHOLD.validators(),
        help_text="Items faster than this many seconds are flagged (empty: a "
        "quarter of the campaign's median).",
    )

    # Adjudication (annotation.services.adjudication): a (response, criterion) goes to
    # the queue when its raters' scores span at least `adjudication_range` points
    # (ordinal criteria; 0: never), or when their labels split by
    # `adjudication_split` (categorical criteria).
    class SplitRule(models.TextChoices):
        NO_MAJORITY = "no_majority", "No label has a strict majority"
        ANY = "any", "The raters gave different labels"
        OFF = "off", "Never"

    adjudication_range = models.PositiveSmallIntegerField(
        default=2,
        validators=bounds.ADJUDICATION_RANGE.validators(),
        help_text="Scores spanning this many points go to adjudication (0: never).",
    )
    adjudication_split = models.CharField(
        max_length=12, choices=SplitRule.choices, default=SplitRule.NO_MAJORITY
    )
    # Raters paused by a researcher (`RaterExclusion` holds the record): served
    # nothing new. Kept here too so that serving reads it with the campaign.
    paused_raters = models.JSONField(default=list, blank=True)
    # A sampling campaign (`services.sampling`): only a sample of the responses are
    # items, each with its inclusion probability (`CampaignItem.sampling_probability`),
    # drawn by a plan computed from a judge run's scores (`analysis.sampling`). Holds
    # {"strategy", "why", "seed", "run", "budget", "skill", "population", "sampled"}
    # (empty: an ordinary campaign, every response an item).
    sampling = models.JSONField(default=dict, blank=True)
    raters = models.ManyToManyField(
        settings.AUTH_USER_MODEL, blank=True, related_name="rating_campaigns"
    )
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.ACTIVE
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(overlap__gte=1), name="campaign_overlap_gte_1"
            ),
            models.CheckConstraint(
                condition=Q(overlap_percent__gte=0, overlap_percent__lte=100),
                name="campaign_overlap_percent_0_100",
            ),
            models.CheckConstraint(
                condition=Q(lock_ttl_minutes__gte=1), name="campaign_lock_ttl_gte_1"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def uses_gold(self) -> bool:
        """Whether the dataset's gold responses are this campaign's gold items (served
        interleaved, or as its qualification set) rather than real items."""
        return bool(self.gold_rate or self.qualification_size)


class CampaignItem(models.Model):
    """One response to be rated in a campaign, with its rating slots.

    `target` raters should submit; `submitted` have; `reserved` hold a live lock.
    `open_slots = target - submitted - reserved` is kept in the row so that the next-item
    query is one index scan. Changed only under a row lock (services.rating).

    A `gold` item (a known-answer response, `GoldItem`) has no slots at all (target,
    submitted, reserved and open_slots all 0): the next-item query never picks it,
    every rater may be served it (`services.gold`), and it never counts toward the
    campaign's overlap or progress.
    """

    # No index of its own: the unique (campaign, response) index serves campaign lookups.
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    # No foreign-key constraint: its per-row check (a FOR KEY SHARE lock written on
    # each response row) was half the time of creating a 255,000-item campaign. The
    # reference is held instead by the ORM (PROTECT), by the trigger of migration
    # 0007 that refuses any DELETE of a referenced response, and by the SHARE lock
    # that `campaign_create` takes on the response table while it reads it.
    response = models.ForeignKey(
        Response, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    # Pairwise campaigns: the pair to compare; `response` is then pair.response_1.
    # Indexed only where set (a pointwise campaign's items would fill it with NULLs).
    pair = models.ForeignKey(
        "PreferencePair",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
    )
    target = models.PositiveSmallIntegerField()
    submitted = models.PositiveSmallIntegerField(default=0)
    reserved = models.PositiveSmallIntegerField(default=0)
    open_slots = models.SmallIntegerField()
    position = models.PositiveIntegerField()
    gold = models.BooleanField(default=False, db_default=False)
    # Sampling campaigns only: the probability with which this response was drawn
    # into the sample (the inverse-probability weights of the estimates rest on it).
    sampling_probability = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["campaign_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "response"],
                condition=Q(pair__isnull=True),
                name="campaign_item_response_unique",
            ),
            models.UniqueConstraint(
                fields=["campaign", "pair"],
                condition=Q(pair__isnull=False),
                name="campaign_item_pair_unique",
            ),
            # The overlap invariant, held by the database itself.
            models.CheckConstraint(
                condition=Q(submitted__lte=F("target")),
                name="campaign_item_submitted_lte_target",
            ),
            models.CheckConstraint(
                condition=Q(open_slots__gte=0)
                & Q(open_slots=F("target") - F("submitted") - F("reserved")),
                name="campaign_item_slots_consistent",
            ),
            models.CheckConstraint(
                condition=Q(gold=False) | Q(target=0, submitted=0, reserved=0),
                name="campaign_item_gold_has_no_slots",
            ),
            models.CheckConstraint(
                condition=Q(sampling_probability__isnull=True)
                | Q(sampling_probability__gt=0, sampling_probability__lte=1),
                name="campaign_item_sampling_probability_0_1",
            ),
        ]
        indexes = [
            models.Index(
                fields=["campaign", "-submitted", "position"],
                condition=Q(open_slots__gt=0),
                name="campaign_item_open_idx",
            ),
            models.Index(
                fields=["pair"],
                condition=Q(pair__isnull=False),
                name="campaign_item_pair_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} / response {self.response_id}"


# Active seconds on one item above this are a broken counter, not a rater: the form
# ignores such a value and the API refuses it (400 naming `active_seconds`).
MAX_ACTIVE_SECONDS = 86400


class Assignment(models.Model):
    """One response served to one rater in a campaign, and what became of it.

    Status: ``served`` (the rater holds a slot until `expires_at`) -> ``submitted`` |
    ``skipped`` | ``expired``. `reason` says why it was served. Unique per
    (campaign, response, rater): a rater never gets the same response twice.
    """

    class Status(models.TextChoices):
        SERVED = "served", "Served"
        SUBMITTED = "submitted", "Submitted"
        SKIPPED = "skipped", "Skipped"
        EXPIRED = "expired", "Expired"

    # Indexed through (campaign, rater, status) and the unique (campaign, response, rater).
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    item = models.ForeignKey(
        CampaignItem, on_delete=models.CASCADE, related_name="assignments"
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    # Pairwise campaigns: the pair served and the order shown ("12": response_1 as A,
    # "21": response_2 as A), drawn per rater at serve time.
    pair = models.ForeignKey(
        "PreferencePair",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    shown_order = models.CharField(max_length=2, choices=ShownOrder.choices, blank=True)
    rater = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.SERVED
    )
    reason = models.CharField(max_length=200)
    served_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    active_seconds = models.FloatField(null=True, blank=True)
    skip_reason = models.CharField(max_length=500, blank=True)
    # The rater's written critique of the response (campaigns with `critique` on).
    critique = models.TextField(max_length=limits.RATIONALE, blank=True)
    note = models.TextField(
        max_length=limits.NOTE,
        blank=True,
        help_text="What happened, e.g. a refused late submit.",
    )
    updated_at = models.DateTimeField(null=True, blank=True)
    # A gold item (a copy of `item.gold`, set when served, never changed): its scores
    # measure the rater, so every analysis of human scores reads `gold=False` only
    # (agreement, meta-evaluation, exports); the rater's pages and API never show it.
    gold = models.BooleanField(default=False, db_default=False)
    # A gold item whose expected answers the rater was shown (a training phase's
    # feedback, a failed qualification's report): it was training for this rater, and
    # is never served to them again as a test, in any campaign (`services.gold`).
    answers_shown = models.BooleanField(default=False, db_default=False)
    # A gold item served as part of a rater's qualification attempt.
    qualification = models.ForeignKey(
        "annotation.Qualification",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="assignments",
    )

    class Meta:
        ordering = ["-served_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "response", "rater"],
                condition=Q(pair__isnull=True),
                name="assignment_once_per_rater",
            ),
            models.UniqueConstraint(
                fields=["campaign", "pair", "rater"],
                condition=Q(pair__isnull=False),
                name="assignment_pair_once_per_rater",
            ),
            models.CheckConstraint(
                condition=Q(shown_order__in=["", "12", "21"]),
                name="assignment_shown_order_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["campaign", "rater", "status"]),
            models.Index(
                fields=["campaign", "expires_at"],
                condition=Q(status="served"),
                name="assignment_live_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.rater_id} on {self.response_id} ({self.status})"

    @property
    def seconds_on_task(self) -> float | None:
        if self.submitted_at is None:
            return None
        return (self.submitted_at - self.served_at).total_seconds()


# The history of human scores (django-simple-history): a row per change made through
# the ORM's save() (`services.rating.rating_amend`, which first records the submitted
# value), with who (`history_user`), when and why (`history_change_reason`). The
# bulk writes of a submit or an import are a score's creation, not a change, and
# are not copied. Deletions (a whole dataset or campaign going) are not recorded:
# `annotation.apps` disconnects the delete signals so those deletes stay set-based.
SCORE_HISTORY = HistoricalRecords(excluded_fields=["created_at", "updated_at"])


class HumanScore(models.Model):
    """A rater's score for one skill of one response, or N/A (score is null).

    `score` follows `annotation.scales`: the point of an ordinal criterion, the label
    code of a categorical one; the services check it against the skill's `Scale`.
    """

    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, related_name="scores"
    )
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    score = models.SmallIntegerField(null=True, blank=True)
    rationale = models.TextField(max_length=limits.RATIONALE, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Every change of a score (an amend) with who and when; see SCORE_HISTORY.
    history = SCORE_HISTORY

    class Meta:
        ordering = ["assignment_id", "skill__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "skill"], name="human_score_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill_id}={'N/A' if self.score is None else self.score}"

    @property
    def is_na(self) -> bool:
        return self.score is None


# --- Pairwise preferences -----------------------------------------------------------------
