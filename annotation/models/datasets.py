"""Rubrics and skills, datasets, instructions and model responses."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from flaskapp import limits
from flaskapp.models import default_workspace_pk


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

    # NULL: a built-in rubric, shared read-only by every workspace.
    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        default=default_workspace_pk,
        related_name="rubrics",
    )
    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    description = models.TextField(max_length=limits.DESCRIPTION, blank=True)
    is_builtin = models.BooleanField(default=False)
    # [{"key", "name"}] in display order; FLASK's rubrics: its four abilities.
    groups = models.JSONField(default=list, blank=True)
    frozen_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            # Per workspace; the built-ins (workspace NULL) once among themselves.
            # A workspace's versions count on from the built-in of its name
            # (`rubric_import`), so a name and version it sees is one rubric.
            # Two partial indexes rather than nulls_distinct=False, which only
            # PostgreSQL 15+ enforces (SQLite would let built-ins repeat).
            models.UniqueConstraint(
                fields=["workspace", "name", "version"],
                condition=Q(workspace__isnull=False),
                name="rubric_name_version_unique_in_workspace",
            ),
            models.UniqueConstraint(
                fields=["name", "version"],
                condition=Q(workspace__isnull=True),
                name="rubric_builtin_name_version_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"

    @property
    def is_frozen(self) -> bool:
        return self.frozen_at is not None

    @property
    def flask_compatible(self) -> bool:
        """Whether campaigns, judge runs and agreement can use this rubric today: every
        criterion is ordinal on 1-5 and in a group that is a FLASK ability."""
        return all(skill.flask_compatible for skill in self.skills.all())


class SkillKind(models.TextChoices):
    ORDINAL = "ordinal", "Ordinal (a score on a scale)"
    CATEGORICAL = "categorical", "Categorical (one of a set of labels)"


# The groups of FLASK's rubrics: its four abilities, as `Rubric.groups` holds them.
FLASK_GROUPS = [{"key": value, "name": label} for value, label in Ability.choices]


class Skill(models.Model):
    """One criterion of a rubric: ordinal (a score from `scale_min` to `scale_max`,
    anchors per point in `scale_anchors`) or categorical (one of `labels`).

    `ability` and `anchor_1..anchor_5` are what campaigns, judge runs and agreement
    read; they are filled for an ordinal 1-5 criterion whose group is a FLASK ability
    and empty otherwise (`flask_compatible` says which).
    """

    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="skills")
    key = models.SlugField(max_length=64)
    name = models.CharField(max_length=100)
    ability = models.CharField(max_length=32, choices=Ability.choices)
    criteria = models.TextField(
        max_length=limits.RUBRIC_TEXT,
    )
    anchor_1 = models.TextField(
        max_length=limits.RUBRIC_TEXT,
    )
    anchor_2 = models.TextField(
        max_length=limits.RUBRIC_TEXT,
    )
    anchor_3 = models.TextField(
        max_length=limits.RUBRIC_TEXT,
    )
    anchor_4 = models.TextField(
        max_length=limits.RUBRIC_TEXT,
    )
    anchor_5 = models.TextField(
        max_length=limits.RUBRIC_TEXT,
    )
    position = models.PositiveSmallIntegerField(default=0)
    kind = models.CharField(
        max_length=16, choices=SkillKind.choices, default=SkillKind.ORDINAL
    )
    # Null for a categorical criterion.
    scale_min = models.SmallIntegerField(null=True, blank=True, default=1)
    scale_max = models.SmallIntegerField(null=True, blank=True, default=5)
    # {"<point>": text}: anchors for some points of the scale (both ends at least).
    scale_anchors = models.JSONField(default=dict, blank=True)
    # [{"key", "name", "description"}] for a categorical criterion.
    labels = models.JSONField(default=list, blank=True)
    allow_na = models.BooleanField(default=True)
    group = models.CharField(max_length=64, blank=True, default="")

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

    @property
    def flask_compatible(self) -> bool:
        return (
            self.kind == SkillKind.ORDINAL
            and (self.scale_min, self.scale_max) == (1, 5)
            and self.group in Ability.values
        )

    @property
    def scale_label(self) -> str:
        """ "0-4" for an ordinal criterion, "" for a categorical one."""
        if self.kind != SkillKind.ORDINAL:
            return ""
        return f"{self.scale_min}-{self.scale_max}"

    @property
    def point_anchors(self) -> list[tuple[int, str]]:
        """(point, anchor text) for every point of the scale ("" where none is given)."""
        if self.kind != SkillKind.ORDINAL or self.scale_min is None:
            return []
        return [
            (point, self.scale_anchors.get(str(point), ""))
            for point in range(self.scale_min, self.scale_max + 1)
        ]


class Dataset(models.Model):
    """A named collection of instructions (and their responses) scored with one rubric."""

    workspace = models.ForeignKey(
        "flaskapp.Workspace",
        on_delete=models.PROTECT,
        default=default_workspace_pk,
        related_name="datasets",
    )
    # Unique within its workspace (`dataset_named` resolves a name there).
    name = models.CharField(max_length=200)
    description = models.TextField(max_length=limits.DESCRIPTION, blank=True)
    rubric = models.ForeignKey(
        Rubric, on_delete=models.PROTECT, related_name="datasets"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The dataset's own slicing taxonomy (domains, difficulty labels, facets), fixed
    # at its first import; null: FLASK's built-in (`annotation.importers.taxonomy`).
    taxonomy = models.JSONField(null=True, blank=True, default=None)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["workspace", "name"], name="dataset_name_unique_in_workspace"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def declared_taxonomy(self):
        """The `annotation.importers.taxonomy.Taxonomy` this dataset slices by
        (FLASK's when it declares none); parsed once per instance."""
        cached = self.__dict__.get("_declared_taxonomy")
        if cached is None or cached[0] != self.taxonomy:
            from annotation.importers.taxonomy import Taxonomy  # models load first

            cached = (self.taxonomy, Taxonomy.stored(self.taxonomy))
            self.__dict__["_declared_taxonomy"] = cached
        return cached[1]


class Instruction(models.Model):
    """One evaluation instance: the prompt, its reference answer and its FLASK metadata.

    `domains` holds 0-2 domain keys of its dataset's taxonomy (FLASK's `Domain`
    values by default); `difficulty` is one of its dataset's levels (FLASK's 1-5 by
    default; any 1-99 a dataset declares) or null (unknown);
    relevant skills are ordered (most relevant first) through `InstructionSkill`.
    `checklist` is an optional list of ``{"skill": key or null, "question": str}``
    (FLASK-Hard's instance-specific rubric). `instance_rubric` is this instruction's
    own score rubric (Prometheus / BiGGen-Bench), ``{"criteria": str, "scores":
    {"1": str, ..., "5": str}}``, or ``{}``; it is shown next to the skill rubric.
    """

    dataset = models.ForeignKey(
        Dataset, on_delete=models.CASCADE, related_name="instructions"
    )
    external_id = models.CharField(max_length=200)
    text = models.TextField(
        max_length=limits.INSTRUCTION_TEXT,
    )
    reference_answer = models.TextField(max_length=limits.RESPONSE_TEXT, blank=True)
    source_task = models.CharField(max_length=200, blank=True, db_index=True)
    domain_1 = models.CharField(max_length=32, choices=Domain.choices, blank=True)
    domain_2 = models.CharField(max_length=32, choices=Domain.choices, blank=True)
    # No choices: the levels are the dataset's (`Dataset.declared_taxonomy`).
    difficulty = models.PositiveSmallIntegerField(null=True, blank=True)
    is_hard = models.BooleanField(default=False, help_text="Part of FLASK-Hard")
    checklist = models.JSONField(null=True, blank=True)
    instance_rubric = models.JSONField(default=dict, blank=True)
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
                | Q(difficulty__gte=1, difficulty__lte=99),
                name="instruction_difficulty_level_or_null",
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
        labels = self.dataset.declared_taxonomy.domain_labels()
        return [labels.get(d, d) for d in self.domains]

    def get_difficulty_display(self) -> str:
        """The level's label in its dataset's taxonomy ("" when unknown)."""
        if self.difficulty is None:
            return ""
        if self.dataset.taxonomy is None:
            return str(dict(Difficulty.choices).get(self.difficulty, self.difficulty))
        labels = self.dataset.declared_taxonomy.difficulty_labels()
        return labels.get(self.difficulty, f"level {self.difficulty}")


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
    text = models.TextField(
        max_length=limits.RESPONSE_TEXT,
    )
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
