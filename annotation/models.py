"""FLASK data: rubrics and skills, datasets, instructions and model responses.

Invariants live in the database where it can hold them (unique keys, value ranges);
the rest (a relevant skill belongs to the dataset's rubric, frozen rubrics) is enforced
by the services and, on PostgreSQL, by a constraint trigger (see migration 0002).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q


class Ability(models.TextChoices):
    """The four primary abilities of FLASK, in the paper's order."""

    LOGICAL_THINKING = "logical_thinking", "Logical Thinking"
    BACKGROUND_KNOWLEDGE = "background_knowledge", "Background Knowledge"
    PROBLEM_HANDLING = "problem_handling", "Problem Handling"
    USER_ALIGNMENT = "user_alignment", "User Alignment"


class Domain(models.TextChoices):
    """The ten FLASK domains."""

    HUMANITIES = "humanities", "Humanities"
    LANGUAGE = "language", "Language"
    CULTURE = "culture", "Culture"
    HEALTH = "health", "Health"
    HISTORY = "history", "History"
    NATURAL_SCIENCE = "natural_science", "Natural Science"
    MATH = "math", "Math"
    SOCIAL_SCIENCE = "social_science", "Social Science"
    TECHNOLOGY = "technology", "Technology"
    CODING = "coding", "Coding"


class Difficulty(models.IntegerChoices):
    """FLASK's five difficulty levels (null on an instruction means unknown)."""

    SIMPLE_LIFESTYLE = 1, "Simple lifestyle knowledge"
    ADVANCED_LIFESTYLE = 2, "Advanced lifestyle knowledge"
    FORMAL_EDUCATION = 3, "Formal education knowledge"
    MAJOR_LEVEL = 4, "Major level knowledge"
    EXPERT_LEVEL = 5, "Expert level knowledge"


class Rubric(models.Model):
    """A versioned set of skills. Frozen (read-only) once any score uses it."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    description = models.TextField(blank=True)
    is_builtin = models.BooleanField(default=False)
    frozen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(
                fields=["name", "version"], name="rubric_name_version_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None


class Skill(models.Model):
    """One scored skill of a rubric, with its criteria and the five score anchors."""

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="skills")
    key = models.SlugField(max_length=64)
    name = models.CharField(max_length=100)
    ability = models.CharField(max_length=32, choices=Ability.choices)
    criteria = models.TextField()
    anchor_1 = models.TextField()
    anchor_2 = models.TextField()
    anchor_3 = models.TextField()
    anchor_4 = models.TextField()
    anchor_5 = models.TextField()
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["rubric_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["rubric", "key"], name="skill_rubric_key_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def anchors(self) -> list[tuple[int, str]]:
        return [
            (1, self.anchor_1),
            (2, self.anchor_2),
            (3, self.anchor_3),
            (4, self.anchor_4),
            (5, self.anchor_5),
        ]


class Dataset(models.Model):
    """A named collection of instructions (and their responses) scored with one rubric."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    rubric = models.ForeignKey(
        Rubric, on_delete=models.PROTECT, related_name="datasets"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Instruction(models.Model):
    """One evaluation instance: the prompt, its reference answer and its FLASK metadata.

    `domains` holds 0-2 `Domain` values; `difficulty` is 1-5 or null (unknown);
    relevant skills are ordered (most relevant first) through `InstructionSkill`.
    `checklist` is an optional list of ``{"skill": key or null, "question": str}``
    (FLASK-Hard's instance-specific rubric).
    """

    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="instructions"
    )
    external_id = models.CharField(max_length=200)
    text = models.TextField()
    reference_answer = models.TextField(blank=True)
    source_task = models.CharField(max_length=200, blank=True, db_index=True)
    domain_1 = models.CharField(max_length=32, choices=Domain.choices, blank=True)
    domain_2 = models.CharField(max_length=32, choices=Domain.choices, blank=True)
    difficulty = models.PositiveSmallIntegerField(
        choices=Difficulty.choices, null=True, blank=True
    )
    is_hard = models.BooleanField(default=False, help_text="Part of FLASK-Hard")
    checklist = models.JSONField(null=True, blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    skills = models.ManyToManyField(Skill, through="InstructionSkill", related_name="+")

    class Meta:
        ordering = ["dataset_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["dataset", "external_id"],
                name="instruction_dataset_external_id_unique",
            ),
            models.CheckConstraint(
                condition=Q(difficulty__isnull=True)
                | Q(difficulty__gte=1, difficulty__lte=5),
                name="instruction_difficulty_1_5_or_null",
            ),
            models.CheckConstraint(
                condition=~Q(domain_1="") | Q(domain_2=""),
                name="instruction_domain_2_needs_domain_1",
            ),
        ]
        indexes = [
            models.Index(fields=["dataset", "difficulty"]),
            models.Index(fields=["dataset", "domain_1"]),
            models.Index(fields=["dataset", "domain_2"]),
        ]

    def __str__(self) -> str:
        return f"{self.dataset_id}:{self.external_id}"

    @property
    def domains(self) -> list[str]:
        return [d for d in (self.domain_1, self.domain_2) if d]

    def get_domains_display(self) -> list[str]:
        labels = dict(Domain.choices)
        return [labels.get(d, d) for d in self.domains]


class InstructionSkill(models.Model):
    """An instruction's relevant skill at a rank (0 = most relevant)."""

    instruction = models.ForeignKey(
        Instruction, on_delete=models.CASCADE, related_name="skill_links"
    )
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    rank = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["instruction_id", "rank"]
        constraints = [
            models.UniqueConstraint(
                fields=["instruction", "skill"], name="instruction_skill_unique"
            ),
            models.UniqueConstraint(
                fields=["instruction", "rank"], name="instruction_skill_rank_unique"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.instruction_id}#{self.rank}: {self.skill_id}"


class Response(models.Model):
    """One evaluated model's answer to an instruction. Immutable once imported."""

    instruction = models.ForeignKey(
        Instruction, on_delete=models.CASCADE, related_name="responses"
    )
    model_name = models.CharField(max_length=200)
    text = models.TextField()
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["instruction_id", "model_name"]
        constraints = [
            models.UniqueConstraint(
                fields=["instruction", "model_name"],
                name="response_instruction_model_unique",
            ),
        ]
        indexes = [models.Index(fields=["model_name"])]

    def __str__(self) -> str:
        return f"{self.instruction_id}/{self.model_name}"


class ImportJob(models.Model):
    """One import of one or more files into a dataset, with its validation report.

    Lifecycle: ``validated`` (parsed, problems listed, nothing written) or ``invalid``
    -> ``queued`` -> ``running`` -> ``succeeded`` | ``failed``. `errors` keeps every
    rejected line with its reason, so a refused file leaves a record.
    """

    class Status(models.TextChoices):
        VALIDATED = "validated", "Validated"
        INVALID = "invalid", "Invalid"
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Format(models.TextChoices):
        FLASK = "flask", "FLASK evaluation set (JSONL)"
        FLASK_OUTPUTS = "flask_outputs", "FLASK model outputs (JSONL)"
        JSONL = "jsonl", "Generic JSONL"
        CSV = "csv", "Generic CSV"

    dataset_name = models.CharField(max_length=200)
    dataset = models.ForeignKey(
        Dataset,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="imports",
    )
    format = models.CharField(max_length=20, choices=Format.choices)
    options = models.JSONField(default=dict, blank=True)
    files = models.JSONField(
        default=list, help_text="[{name, path, size}] of stored uploads"
    )
    status = models.CharField(max_length=20, choices=Status.choices)
    summary = models.JSONField(default=dict, blank=True)
    preview = models.JSONField(default=list, blank=True)
    errors = models.JSONField(default=list, blank=True)
    total_rows = models.PositiveIntegerField(default=0)
    processed_rows = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import {self.pk} into {self.dataset_name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in {
            self.Status.SUCCEEDED,
            self.Status.FAILED,
            self.Status.INVALID,
        }

    @property
    def progress_percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.total_rows:
            return 0
        return min(100, int(100 * self.processed_rows / self.total_rows))


# --- Rating campaigns ---------------------------------------------------------------------


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
    overlap = models.PositiveSmallIntegerField(default=1)
    overlap_percent = models.PositiveSmallIntegerField(
        default=100,
        help_text="Share of responses that get `overlap` raters; the rest get one.",
    )
    show_reference = models.BooleanField(default=True)
    show_model_names = models.BooleanField(default=False)
    lock_ttl_minutes = models.PositiveIntegerField(default=30)
    rater_quota = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="At most this many responses per rater (optional).",
    )
    guidelines = models.TextField(blank=True, help_text="Markdown shown to raters.")
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


class CampaignItem(models.Model):
    """One response to be rated in a campaign, with its rating slots.

    `target` raters should submit; `submitted` have; `reserved` hold a live lock.
    `open_slots = target - submitted - reserved` is kept in the row so that the next-item
    query is one index scan. Changed only under a row lock (services.rating).
    """

    # No index of its own: the unique (campaign, response) index serves campaign lookups.
    campaign = models.ForeignKey(
        Campaign, on_delete=models.CASCADE, related_name="items", db_index=False
    )
    response = models.ForeignKey(Response, on_delete=models.PROTECT, related_name="+")
    # Pairwise campaigns: the pair to compare; `response` is then pair.response_1.
    pair = models.ForeignKey(
        "PreferencePair",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    target = models.PositiveSmallIntegerField()
    submitted = models.PositiveSmallIntegerField(default=0)
    reserved = models.PositiveSmallIntegerField(default=0)
    open_slots = models.SmallIntegerField()
    position = models.PositiveIntegerField()

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
        ]
        indexes = [
            models.Index(
                fields=["campaign", "-submitted", "position"],
                condition=Q(open_slots__gt=0),
                name="campaign_item_open_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"campaign {self.campaign_id} / response {self.response_id}"


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
    note = models.TextField(
        blank=True, help_text="What happened, e.g. a refused late submit."
    )
    updated_at = models.DateTimeField(null=True, blank=True)

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


class HumanScore(models.Model):
    """A rater's score for one skill of one response: 1-5, or N/A (score is null)."""

    assignment = models.ForeignKey(
        Assignment, on_delete=models.CASCADE, related_name="scores"
    )
    skill = models.ForeignKey(Skill, on_delete=models.PROTECT, related_name="+")
    score = models.PositiveSmallIntegerField(null=True, blank=True)
    rationale = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment_id", "skill__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "skill"], name="human_score_unique"
            ),
            models.CheckConstraint(
                condition=Q(score__isnull=True) | Q(score__gte=1, score__lte=5),
                name="human_score_1_5_or_na",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill_id}={'N/A' if self.score is None else self.score}"

    @property
    def is_na(self) -> bool:
        return self.score is None


# --- Pairwise preferences -----------------------------------------------------------------


class PreferenceLabel(models.TextChoices):
    """A preference in the ORIGINAL numbering of a pair (never "A"/"B")."""

    RESPONSE_1 = "1", "Response 1"
    RESPONSE_2 = "2", "Response 2"
    TIE = "tie", "Tie"


class EvaluatedModel(models.Model):
    """An evaluated model's family, for self-preference probes.

    Responses keep their plain `model_name`; join on `name`. The judge side has
    `JudgeConfig.model_family`.
    """

    name = models.CharField(max_length=200, unique=True)
    family = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

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
    rationale = models.TextField(blank=True)
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
