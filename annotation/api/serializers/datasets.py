"""Input and output shapes of the annotation API. Parsing and rendering only."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.reverse import reverse

from annotation.models import DATASET_FORMAT_CHOICES, ImportJob
from annotation.selectors.gold import gold_expected
from flaskapp import limits

# The body of a refusal is the kernel's (one home); kept importable from here.
from flaskapp.api import (  # noqa: F401
    ImportProblemOutputSerializer,
    ProblemOutputSerializer,
)

# --- Rubrics -----------------------------------------------------------------------------


class RubricListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()
    is_builtin = serializers.BooleanField()
    is_frozen = serializers.BooleanField()
    skill_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class SkillAnchorOutputSerializer(serializers.Serializer):
    score = serializers.IntegerField(min_value=1, max_value=5)
    description = serializers.CharField()


class SkillLabelOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()


class SkillPointAnchorOutputSerializer(serializers.Serializer):
    point = serializers.IntegerField()
    description = serializers.CharField()


class SkillOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    ability = serializers.CharField(
        help_text="The FLASK ability; empty unless the criterion is FLASK-shaped."
    )
    ability_label = serializers.CharField(source="get_ability_display")
    criteria = serializers.CharField()
    anchors = serializers.SerializerMethodField()
    kind = serializers.CharField(help_text="ordinal or categorical")
    group = serializers.CharField()
    scale_min = serializers.IntegerField(allow_null=True)
    scale_max = serializers.IntegerField(allow_null=True)
    scale_anchors = serializers.SerializerMethodField()
    labels = SkillLabelOutputSerializer(many=True)
    allow_na = serializers.BooleanField()

    @extend_schema_field(SkillAnchorOutputSerializer(many=True))
    def get_anchors(self, skill) -> list[dict]:
        """FLASK's five anchors (1-5); empty for any other criterion."""
        if not skill.flask_compatible:
            return []
        return [{"score": score, "description": text} for score, text in skill.anchors]

    @extend_schema_field(SkillPointAnchorOutputSerializer(many=True))
    def get_scale_anchors(self, skill) -> list[dict]:
        return [
            {"point": point, "description": text}
            for point, text in skill.point_anchors
            if text
        ]


class RubricGroupOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()


class RubricDetailOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()
    description = serializers.CharField()
    is_builtin = serializers.BooleanField()
    is_frozen = serializers.BooleanField()
    created_at = serializers.DateTimeField()
    groups = RubricGroupOutputSerializer(many=True)
    flask_compatible = serializers.BooleanField(
        help_text="Every criterion ordinal 1-5 in a FLASK ability (FLASK's own "
        "shape); campaigns, judge runs and agreement take any rubric."
    )
    skills = SkillOutputSerializer(many=True)


class RubricImportInputSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="Default: the file's `name` (FLASK's file: FLASK official).",
    )
    file = serializers.FileField(
        help_text="Our rubric file (YAML or JSON) or FLASK's "
        "`skillset_description.json`, recognised by content."
    )


# --- Datasets ----------------------------------------------------------------------------


class RubricRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    version = serializers.IntegerField()


class DatasetListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    rubric = RubricRefOutputSerializer()
    instruction_count = serializers.IntegerField()
    response_count = serializers.IntegerField()
    created_at = serializers.DateTimeField()


class ModelCountOutputSerializer(serializers.Serializer):
    model = serializers.CharField()
    count = serializers.IntegerField()


class DomainCountOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    label = serializers.CharField()
    count = serializers.IntegerField()


class DifficultyCountOutputSerializer(serializers.Serializer):
    level = serializers.IntegerField(allow_null=True, help_text="1-5; null = unknown")
    label = serializers.CharField()
    count = serializers.IntegerField()


class TaskCountOutputSerializer(serializers.Serializer):
    task = serializers.CharField()
    count = serializers.IntegerField()


class SkillCountOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    count = serializers.IntegerField()


class DatasetStatsOutputSerializer(serializers.Serializer):
    """Renders `selectors.DatasetStats` (its lists of tuples become objects)."""

    instructions = serializers.IntegerField()
    responses = serializers.IntegerField()
    models = serializers.SerializerMethodField()
    domains = serializers.SerializerMethodField()
    difficulties = serializers.SerializerMethodField()
    tasks = serializers.SerializerMethodField()
    skills = serializers.SerializerMethodField()

    @extend_schema_field(ModelCountOutputSerializer(many=True))
    def get_models(self, stats) -> list[dict]:
        return [{"model": m, "count": n} for m, n in stats.models]

    @extend_schema_field(DomainCountOutputSerializer(many=True))
    def get_domains(self, stats) -> list[dict]:
        return [{"key": k, "label": label, "count": n} for k, label, n in stats.domains]

    @extend_schema_field(DifficultyCountOutputSerializer(many=True))
    def get_difficulties(self, stats) -> list[dict]:
        return [
            {"level": lv, "label": label, "count": n}
            for lv, label, n in stats.difficulties
        ]

    @extend_schema_field(TaskCountOutputSerializer(many=True))
    def get_tasks(self, stats) -> list[dict]:
        return [{"task": t, "count": n} for t, n in stats.tasks]

    @extend_schema_field(SkillCountOutputSerializer(many=True))
    def get_skills(self, stats) -> list[dict]:
        return [{"key": k, "name": name, "count": n} for k, name, n in stats.skills]


class DatasetDetailOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField()
    rubric = RubricRefOutputSerializer()
    created_at = serializers.DateTimeField()
    taxonomy = serializers.JSONField(
        allow_null=True,
        help_text="The dataset's own slicing taxonomy (domains, difficulty levels "
        "with labels, facets); null: FLASK's.",
    )
    stats = serializers.SerializerMethodField()

    @extend_schema_field(DatasetStatsOutputSerializer)
    def get_stats(self, dataset) -> dict:
        return DatasetStatsOutputSerializer(self.context["stats"]).data


# --- Instructions and responses ----------------------------------------------------------


class InstructionListFilterInputSerializer(serializers.Serializer):
    """Query parameters of the instruction list; all optional. `domain`,
    `difficulty` and `facet.NAME` are checked against the dataset's own taxonomy
    (`Taxonomy.filter_problems`, by `instruction_list_for_user`): a value it does
    not declare is a 400 naming the parameter and listing the allowed values."""

    # Blank values mean "no filter", as an HTML form with empty selects sends them.
    domain = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="A domain key of the dataset's taxonomy (FLASK's ten by default).",
    )
    difficulty = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=20,
        help_text="A level of the dataset's taxonomy (FLASK's 1-5 by default), or "
        '"unknown" for instructions without a level.',
    )
    skill = serializers.SlugField(
        required=False, allow_blank=True, help_text="A skill key, e.g. `factuality`."
    )
    task = serializers.CharField(
        required=False, allow_blank=True, help_text="The source task, exactly."
    )
    # allow_null makes an absent flag mean "either", not False (DRF's HTML-form default).
    hard = serializers.BooleanField(
        required=False,
        allow_null=True,
        default=None,
        help_text="FLASK-Hard only / not.",
    )
    q = serializers.CharField(
        required=False, allow_blank=True, help_text="Full-text search in the text."
    )


class InstructionListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    text = serializers.CharField()
    reference_answer = serializers.CharField()
    source_task = serializers.CharField()
    domains = serializers.ListField(child=serializers.CharField())
    difficulty = serializers.IntegerField(allow_null=True)
    skills = serializers.SerializerMethodField()
    is_hard = serializers.BooleanField()
    checklist = serializers.JSONField(
        allow_null=True,
        help_text="This instruction's own checklist: [{skill, question}] or null.",
    )
    instance_rubric = serializers.JSONField(
        help_text="This instruction's own score rubric ({criteria, scores: {point: "
        "text}}), imported as `score_rubric`; {} when it has none."
    )
    metadata = serializers.JSONField()
    response_count = serializers.IntegerField()

    def get_skills(self, instruction) -> list[str]:
        """Relevant skill keys, most relevant first (`skill_links` is prefetched)."""
        return [link.skill.key for link in instruction.skill_links.all()]


class DatasetRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class InstructionResponseOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    model_name = serializers.CharField()
    text = serializers.CharField()


class InstructionDetailOutputSerializer(InstructionListOutputSerializer):
    dataset = DatasetRefOutputSerializer()
    response_count = serializers.SerializerMethodField()
    responses = InstructionResponseOutputSerializer(many=True)

    def get_response_count(self, instruction) -> int:
        return len(instruction.responses.all())


class ResponseListFilterInputSerializer(serializers.Serializer):
    model = serializers.CharField(
        required=False, allow_blank=True, help_text="One model's responses only."
    )


class ResponseListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    instruction_id = serializers.IntegerField()
    instruction_external_id = serializers.CharField()
    model_name = serializers.CharField()
    text = serializers.CharField()
    metadata = serializers.JSONField()
    created_at = serializers.DateTimeField()


# --- Imports -----------------------------------------------------------------------------


class DatasetImportInputSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=DATASET_FORMAT_CHOICES)
    files = serializers.ListField(
        child=serializers.FileField(),
        required=False,
        help_text="One or more files (repeat the field). A single `file` is accepted too.",
    )
    file = serializers.FileField(required=False)
    map = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Generic formats: `field=column` pairs (repeat the field); "
        "`score.KEY=column` for the human scores of criterion KEY.",
    )
    model = serializers.CharField(
        required=False,
        help_text="flask_outputs: the model's name (default: file name).",
    )
    hard = serializers.BooleanField(default=False, help_text="Mark as FLASK-Hard.")
    strict = serializers.BooleanField(
        default=False,
        help_text="Refuse the files when they have warnings (e.g. an empty response) "
        "instead of importing them and listing the warnings in the report.",
    )
    rubric_id = serializers.IntegerField(
        required=False, help_text="A new dataset's rubric (default: the built-in one)."
    )
    description = serializers.CharField(
        required=False, allow_blank=True, max_length=limits.DESCRIPTION
    )
    confirm = serializers.BooleanField(
        default=True,
        help_text="True: import at once when valid (inline if small, else queued). "
        "False: validate only (a dry run); confirm later.",
    )
    taxonomy = serializers.JSONField(
        required=False,
        binary=True,
        help_text="Generic formats, a new dataset: its own slicing taxonomy, a JSON "
        'object {"domains": [names], "difficulty": {"1": label, ...}, "facets": '
        "[columns]}; default FLASK's domains and difficulty levels.",
    )
    split = serializers.CharField(
        required=False,
        max_length=200,
        help_text="Generic formats: a file that is a zipped Hugging Face dataset "
        "directory (save_to_disk's, or a Hub dataset's Parquet / JSON Lines files) "
        "with several splits: import this one.",
    )
    facets = serializers.ListField(
        child=serializers.CharField(max_length=64),
        required=False,
        max_length=20,
        help_text="Generic formats, a new dataset: categorical columns the "
        "dashboards slice by, their values inferred from the file (repeat the field).",
    )

    def validate(self, attrs: dict) -> dict:
        uploads = list(attrs.pop("files", []))
        single = attrs.pop("file", None)
        if single is not None:
            uploads.append(single)
        if not uploads:
            raise serializers.ValidationError(
                {"files": "Upload at least one file (field `files` or `file`)."}
            )
        attrs["uploads"] = uploads
        return attrs

    def options(self) -> dict:
        """The service's options dict, with only the keys that were given."""
        data = self.validated_data
        options: dict = {}
        if data.get("map"):
            options["mapping"] = data["map"]
        if data.get("taxonomy") is not None:
            options["taxonomy"] = data["taxonomy"]
        if data.get("facets"):
            options["facets"] = data["facets"]
        for key in ("model", "rubric_id", "description", "split"):
            if data.get(key) not in (None, ""):
                options[key] = data[key]
        if data["hard"]:
            options["hard"] = True
        if data["strict"]:
            options["strict"] = True
        return options


class ImportFileOutputSerializer(serializers.Serializer):
    name = serializers.CharField()
    size = serializers.IntegerField()


class ImportJobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    dataset_name = serializers.CharField()
    dataset_id = serializers.IntegerField(allow_null=True)
    format = serializers.CharField()
    status = serializers.ChoiceField(choices=ImportJob.Status.choices)
    options = serializers.JSONField()
    files = ImportFileOutputSerializer(many=True)
    summary = serializers.JSONField()
    preview = serializers.ListField(child=serializers.DictField())
    errors = ImportProblemOutputSerializer(many=True)
    total_rows = serializers.IntegerField()
    processed_rows = serializers.IntegerField()
    progress_percent = serializers.IntegerField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    url = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.URI)
    def get_url(self, job) -> str:
        """Where to poll the job's status."""
        return reverse(
            "annotation_api:import-detail",
            kwargs={"job_id": job.pk},
            request=self.context.get("request"),
        )


# --- Gold items ---------------------------------------------------------------------------


class GoldItemInputSerializer(serializers.Serializer):
    response_id = serializers.IntegerField(help_text="A response of the dataset.")
    scores = serializers.DictField(
        child=serializers.JSONField(allow_null=True),
        help_text="criterion key -> expected score (a point, a label, or null for "
        "N/A), checked against the criterion's scale.",
    )
    tolerance = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="A rater's score is right within this many points (default 0: "
        "exact); labels always exactly.",
    )
    explanation = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=limits.GOLD_EXPLANATION,
    )
    kind = serializers.CharField(
        required=False, default="gold", help_text="gold or attention."
    )


class GoldImportInputSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="CSV, JSON Lines or Parquet: a row per response (`response_id`, or "
        "`instruction` and `model`), the expected scores as criterion columns or a "
        "`scores` object, optional `tolerance`, `explanation`, `kind`."
    )
    format = serializers.ChoiceField(
        choices=["csv", "jsonl"],
        required=False,
        help_text="Default: csv for a .csv name, else JSON Lines; Parquet and gzip "
        "are recognised by content.",
    )


class GoldImportOutputSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    updated = serializers.IntegerField()
    items = serializers.IntegerField()


class GoldItemOutputSerializer(serializers.Serializer):
    response_id = serializers.IntegerField()
    instruction = serializers.CharField(source="response.instruction.external_id")
    model = serializers.CharField(source="response.model_name")
    kind = serializers.CharField()
    tolerance = serializers.IntegerField()
    explanation = serializers.CharField()
    expected = serializers.SerializerMethodField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True)
    updated_at = serializers.DateTimeField()

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "string"}})
    def get_expected(self, gold) -> dict:
        return gold_expected(gold)
