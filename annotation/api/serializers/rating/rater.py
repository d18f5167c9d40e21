"""The raters' side of the rating API: their campaigns, assignments, scores, errors.

What a rater may see is decided here, in one place: `RaterAssignmentOutputSerializer`
never renders other raters' work or judge scores, and drops the model name and the
reference answer unless the campaign shows them.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from annotation.api.serializers.rating.values import (
    ANCHORS_SCHEMA,
    KEYS_SCHEMA,
    LABELS_SCHEMA,
    SCALE_SCHEMA,
    SCORE_SCHEMA,
    ScoreValueField,
    anchors_data,
    keys_data,
    labels_data,
    scale_data,
    score_value_data,
)
from annotation.models import Campaign
from annotation.models.campaigns import MAX_ACTIVE_SECONDS
from annotation.scales import scale_of


class RaterProgressOutputSerializer(serializers.Serializer):
    """Renders `selectors.RaterProgress`: the rater's own counts only."""

    submitted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    quota = serializers.IntegerField(allow_null=True)
    available = serializers.IntegerField(
        allow_null=True,
        help_text="How many more items you may be served in this campaign (within "
        "your quota); null in `next` (not counted there, to keep it fast).",
    )
    label = serializers.CharField()


class RaterCampaignOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    status = serializers.CharField(help_text="active or paused")
    guidelines = serializers.CharField()
    show_reference = serializers.BooleanField()
    rater_quota = serializers.IntegerField(allow_null=True)
    lock_ttl_minutes = serializers.IntegerField()
    progress = serializers.SerializerMethodField()

    @extend_schema_field(RaterProgressOutputSerializer)
    def get_progress(self, campaign) -> dict:
        return RaterProgressOutputSerializer(self.context["progress"][campaign.pk]).data


class RaterSkillOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    ability = serializers.CharField()
    ability_label = serializers.CharField(source="get_ability_display")
    criteria = serializers.CharField()
    kind = serializers.CharField(help_text="ordinal or categorical")
    scale = serializers.SerializerMethodField()
    labels = serializers.SerializerMethodField()
    allow_na = serializers.BooleanField()
    anchors = serializers.SerializerMethodField()
    keys = serializers.SerializerMethodField()

    @extend_schema_field(SCALE_SCHEMA)
    def get_scale(self, skill) -> dict | None:
        return scale_data(scale_of(skill))

    @extend_schema_field(LABELS_SCHEMA)
    def get_labels(self, skill) -> list[dict]:
        return labels_data(skill)

    @extend_schema_field(ANCHORS_SCHEMA)
    def get_anchors(self, skill) -> dict:
        return anchors_data(scale_of(skill))

    @extend_schema_field(KEYS_SCHEMA)
    def get_keys(self, skill) -> dict:
        return keys_data(scale_of(skill))


class RaterInstructionOutputSerializer(serializers.Serializer):
    text = serializers.CharField()
    reference_answer = serializers.CharField(
        required=False,
        help_text="Present only when the campaign shows reference answers.",
    )
    checklist = serializers.JSONField(
        allow_null=True,
        help_text='FLASK-Hard checklist: [{"skill", "question"}] or null.',
    )


class RaterResponseOutputSerializer(serializers.Serializer):
    text = serializers.CharField()
    model_name = serializers.CharField(
        required=False, help_text="Present only when the campaign shows model names."
    )


class RaterScoreOutputSerializer(serializers.Serializer):
    skill = serializers.CharField(source="skill.key")
    score = serializers.IntegerField(
        allow_null=True,
        help_text="The stored value: the point (ordinal) or the label's 0-based code "
        "(categorical); null means N/A.",
    )
    value = serializers.SerializerMethodField(
        help_text="The value as `scores` takes it: the point, the label key, or null."
    )
    is_na = serializers.BooleanField()
    rationale = serializers.CharField()

    @extend_schema_field(SCORE_SCHEMA)
    def get_value(self, score):
        return score_value_data(score)


class RaterAssignmentOutputSerializer(serializers.Serializer):
    """One of the rater's own assignments, as the rating form needs it.

    Expects `selectors.assignment_get_for_rater` (related rows loaded) and
    `context["skills"]` from `selectors.assignment_skills`. `scores` are the rater's own
    (empty until submitted).
    """

    id = serializers.IntegerField()
    campaign_id = serializers.IntegerField()
    status = serializers.CharField(help_text="served, submitted, skipped or expired")
    reason = serializers.CharField(help_text="Why this response was served.")
    served_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField(
        help_text="Submit before this to keep the slot."
    )
    submitted_at = serializers.DateTimeField(allow_null=True)
    instruction = serializers.SerializerMethodField()
    response = serializers.SerializerMethodField()
    critique_mode = serializers.CharField(
        source="campaign.critique",
        help_text="off, with_scores (a critique is required next to the scores) or "
        "only (a critique instead of scores: `skills` is then empty).",
    )
    critique_min_length = serializers.IntegerField(
        source="campaign.critique_min_length"
    )
    skills = serializers.SerializerMethodField()
    scores = RaterScoreOutputSerializer(many=True, source="scores.all")
    critique = serializers.CharField(help_text="The rater's critique (once submitted).")

    @extend_schema_field(RaterInstructionOutputSerializer)
    def get_instruction(self, assignment) -> dict:
        instruction = assignment.response.instruction
        data = {"text": instruction.text, "checklist": instruction.checklist}
        if assignment.campaign.show_reference:
            data["reference_answer"] = instruction.reference_answer
        return data

    @extend_schema_field(RaterResponseOutputSerializer)
    def get_response(self, assignment) -> dict:
        # Blind by default: the model's name could bias the rater.
        data = {"text": assignment.response.text}
        if assignment.campaign.show_model_names:
            data["model_name"] = assignment.response.model_name
        return data

    @extend_schema_field(RaterSkillOutputSerializer(many=True))
    def get_skills(self, assignment) -> list[dict]:
        skills = self.context["skills"]
        if assignment.campaign.critique == Campaign.Critique.ONLY:
            skills = []
        return RaterSkillOutputSerializer(skills, many=True).data


class QualificationCriterionOutputSerializer(serializers.Serializer):
    skill = serializers.CharField()
    name = serializers.CharField()
    expected = serializers.CharField()
    yours = serializers.CharField(help_text="Empty when not asked; `skipped`.")
    right = serializers.BooleanField()
    asked = serializers.BooleanField()


class QualificationItemOutputSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    instruction = serializers.CharField(help_text="The instruction's opening.")
    explanation = serializers.CharField()
    criteria = QualificationCriterionOutputSerializer(many=True)


class RaterQualificationOutputSerializer(serializers.Serializer):
    """The rater's latest qualification attempt in the campaign."""

    attempt = serializers.IntegerField()
    status = serializers.CharField(help_text="in_progress, passed or failed")
    items = serializers.IntegerField()
    done = serializers.IntegerField()
    pass_mark = serializers.FloatField()
    rule = serializers.CharField()
    right = serializers.IntegerField()
    checked = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    report = QualificationItemOutputSerializer(
        many=True, allow_null=True, help_text="Once failed: answers and expected ones."
    )


class RaterNextOutputSerializer(serializers.Serializer):
    """Always this envelope: an assignment, or null with a message saying why."""

    assignment = RaterAssignmentOutputSerializer(allow_null=True)
    message = serializers.CharField(
        help_text="Why nothing was served (empty otherwise)."
    )
    locked_by_others = serializers.IntegerField(
        help_text="Responses you could rate that other raters hold right now."
    )
    progress = RaterProgressOutputSerializer()
    qualification = RaterQualificationOutputSerializer(
        allow_null=True,
        help_text="Null unless the campaign has a qualification the rater started.",
    )


class _RatingBodySerializer(serializers.Serializer):
    """What a submit and an amend both carry: scores, the critique, rationales."""

    scores = serializers.DictField(
        child=ScoreValueField(),
        required=False,
        default=dict,
        help_text="Every listed skill key -> a point of its scale or one of its label "
        'keys; N/A as null or "na" where the criterion allows it. Empty (or absent) '
        "in a critique-only campaign.",
    )
    critique = serializers.CharField(
        required=False,
        allow_blank=True,
        allow_null=True,
        trim_whitespace=False,
        default="",
        help_text="The critique of the response: required (with the campaign's "
        "`critique_min_length`) when `critique_mode` is not off, refused otherwise.",
    )
    rationales = serializers.DictField(
        child=serializers.CharField(
            allow_blank=True, allow_null=True, trim_whitespace=False
        ),
        required=False,
        default=dict,
        help_text="Optional skill key -> rationale text.",
    )


class RatingSubmitInputSerializer(_RatingBodySerializer):
    active_seconds = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_ACTIVE_SECONDS,
        help_text="Seconds the rater actively spent (reported by the client), "
        f"at most {MAX_ACTIVE_SECONDS}.",
    )


class RatingAmendInputSerializer(_RatingBodySerializer):
    """The same body as a submit, without the active time."""


class RatingOutputSerializer(serializers.Serializer):
    """A rater's saved rating of one assignment: their own scores only."""

    assignment_id = serializers.IntegerField(source="id")
    status = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True, help_text="Last amendment.")
    active_seconds = serializers.FloatField(allow_null=True)
    scores = RaterScoreOutputSerializer(many=True, source="scores.all")
    critique = serializers.CharField()


class GoldFeedbackScoreOutputSerializer(serializers.Serializer):
    skill = serializers.CharField()
    name = serializers.CharField()
    expected = serializers.CharField()
    yours = serializers.CharField()
    right = serializers.BooleanField()


class GoldFeedbackOutputSerializer(serializers.Serializer):
    explanation = serializers.CharField()
    scores = GoldFeedbackScoreOutputSerializer(many=True)


class RatingSubmitOutputSerializer(RatingOutputSerializer):
    feedback = GoldFeedbackOutputSerializer(
        allow_null=True,
        help_text="In a campaign's training phase, after a known-answer item: the "
        "expected scores and why. Null otherwise.",
    )


class AssignmentSkipInputSerializer(serializers.Serializer):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=500,
        help_text='Why you skip (required; e.g. "outside my expertise").',
    )


class AssignmentSkipOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    skip_reason = serializers.CharField()
    closed_at = serializers.DateTimeField(allow_null=True)


# --- Errors ------------------------------------------------------------------------------


class RatingProblemOutputSerializer(serializers.Serializer):
    field = serializers.CharField(
        allow_null=True, help_text='E.g. "scores.factuality".'
    )
    message = serializers.CharField()
    line = serializers.IntegerField(allow_null=True)
    file = serializers.CharField(allow_null=True)
    text = serializers.CharField()


class RatingErrorOutputSerializer(serializers.Serializer):
    """A refused operation (`DomainError`, rendered by flaskapp.api.exception_handler)."""

    detail = serializers.CharField()
    problems = RatingProblemOutputSerializer(many=True)


class RaterRemovedOutputSerializer(serializers.Serializer):
    """A removed rater's refusal (`flaskapp.errors.RatingRefused`, a 403)."""

    detail = serializers.CharField()
    code = serializers.ChoiceField(
        choices=["not_campaign_member", "rater_role_removed"]
    )


RATER_REMOVED = OpenApiResponse(
    RaterRemovedOutputSerializer,
    description="The rater was removed from this campaign (`not_campaign_member`) or "
    "lost the rater role (`rater_role_removed`) after working in it; submitted work "
    "is kept.",
)
