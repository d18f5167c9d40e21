"""Input and output shapes of the rating API (campaigns, assignments, scores).

Parsing and rendering only: value rules (overlap 1-50, scores 1-5 or N/A, every listed
skill present) belong to `annotation.services.rating`, which names the offending field
in its `DomainError`. Input serializers here only check types, so a wrong type is
refused by DRF ({"field": [...]}) and a wrong value by the service ({"detail",
"problems": [{"field", ...}]}).

What a rater may see is decided here, in one place: `RaterAssignmentOutputSerializer`
never renders other raters' work or judge scores, and drops the model name and the
reference answer unless the campaign shows them.
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers

from annotation.importers.base import NA_WORDS
from annotation.models import Campaign, Dataset
from annotation.models.campaigns import MAX_ACTIVE_SECONDS
from flaskapp import bounds
from flaskapp.bounds import ID
from flaskapp.params import ascii_int

SCORE_SCHEMA = {
    "oneOf": [
        {"type": "integer", "minimum": 1, "maximum": 5},
        {"type": "string", "enum": sorted(NA_WORDS)},
    ],
    "nullable": True,
    "description": '1-5, or N/A as null or "na".',
}
ANCHORS_SCHEMA = {
    "type": "object",
    "properties": {str(n): {"type": "string"} for n in range(1, 6)},
    "required": [str(n) for n in range(1, 6)],
    "description": "What each score 1-5 means for this skill.",
}


@extend_schema_field(SCORE_SCHEMA)
class ScoreValueField(serializers.Field):
    """A score as sent: any JSON scalar. The service decides what is valid, and names
    the skill (`scores.<key>`) when it is not."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, dict | list):
            raise serializers.ValidationError('must be 1-5 or "na".')
        return data

    def to_representation(self, value):
        return value


class UserRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class RaterListField(serializers.ListField):
    """Raters by username or by id; every one must exist."""

    child = serializers.CharField()

    def to_internal_value(self, data) -> list[User]:
        values = [str(v).strip() for v in super().to_internal_value(data)]
        ids = {i for i in map(ascii_int, values) if i is not None and ID.contains(i)}
        users = list(User.objects.filter(Q(username__in=values) | Q(pk__in=ids)))
        by_name = {u.username: u for u in users}
        by_id = {str(u.pk): u for u in users}
        found, unknown = [], []
        for value in values:
            user = by_name.get(value) or by_id.get(value)
            if user is None:
                unknown.append(value)
            elif user not in found:
                found.append(user)
        if unknown:
            raise serializers.ValidationError(f"unknown users: {', '.join(unknown)}")
        return found


# --- Researchers: campaigns --------------------------------------------------------------


class CampaignCreateInputSerializer(serializers.Serializer):
    dataset = serializers.PrimaryKeyRelatedField(
        queryset=Dataset.objects.all(), help_text="The dataset's id."
    )
    name = serializers.CharField(max_length=200)
    models = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="Model names to rate; empty or absent means every model of the dataset.",
    )
    skill_mode = serializers.ChoiceField(
        choices=Campaign.SkillMode.choices, default=Campaign.SkillMode.INSTRUCTION
    )
    skills = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text='Skill keys, with skill_mode "chosen".',
    )
    overlap = serializers.IntegerField(
        default=1, help_text="Raters per response.", **bounds.OVERLAP.field_kwargs()
    )
    overlap_percent = serializers.IntegerField(
        default=100,
        help_text="Share (0-100) of responses that get `overlap` raters.",
        **bounds.OVERLAP_PERCENT.field_kwargs(),
    )
    show_reference = serializers.BooleanField(default=True)
    show_model_names = serializers.BooleanField(default=False)
    lock_ttl_minutes = serializers.IntegerField(
        default=30, **bounds.LOCK_TTL_MINUTES.field_kwargs()
    )
    rater_quota = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        **bounds.RATER_QUOTA.field_kwargs(),
    )
    guidelines = serializers.CharField(required=False, allow_blank=True, default="")
    raters = RaterListField(
        required=False, default=list, help_text="Usernames or user ids."
    )


class CampaignStatusInputSerializer(serializers.Serializer):
    # A CharField, not a ChoiceField: the service refuses unknown values naming
    # `status`, and a second "status" enum would collide in the OpenAPI schema.
    status = serializers.CharField(help_text="active, paused or closed (final).")


class CampaignRatersInputSerializer(serializers.Serializer):
    raters = RaterListField(help_text="Usernames or user ids; replaces the list.")


class CampaignDatasetRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class CampaignListOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    dataset = CampaignDatasetRefOutputSerializer()
    status = serializers.CharField(help_text="active, paused or closed")
    models = serializers.ListField(
        child=serializers.CharField(), source="models_included"
    )
    skill_mode = serializers.CharField()
    overlap = serializers.IntegerField()
    overlap_percent = serializers.IntegerField()
    show_reference = serializers.BooleanField()
    show_model_names = serializers.BooleanField()
    lock_ttl_minutes = serializers.IntegerField()
    rater_quota = serializers.IntegerField(allow_null=True)
    created_by = serializers.CharField(source="created_by.username", allow_null=True)
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)


class CampaignRaterProgressOutputSerializer(serializers.Serializer):
    rater_id = serializers.IntegerField()
    username = serializers.CharField()
    submitted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    expired = serializers.IntegerField()
    in_progress = serializers.IntegerField()
    median_seconds = serializers.FloatField(
        allow_null=True, help_text="Median seconds from served to submitted."
    )
    median_active_seconds = serializers.FloatField(
        allow_null=True, help_text="Median active seconds the rater's browser reported."
    )
    removed = serializers.BooleanField(
        help_text="No longer one of the campaign's raters, or no longer has the rater "
        "role; their submitted work is kept and counted."
    )


class CampaignProgressOutputSerializer(serializers.Serializer):
    """Renders `selectors.CampaignProgress`."""

    responses = serializers.IntegerField()
    responses_done = serializers.IntegerField()
    ratings_needed = serializers.IntegerField()
    ratings_submitted = serializers.IntegerField()
    locked = serializers.IntegerField(
        help_text="Rating slots held by a served assignment."
    )
    percent = serializers.IntegerField()
    raters = CampaignRaterProgressOutputSerializer(many=True)
    removed_submitted = serializers.IntegerField(
        help_text="Submitted assignments from removed raters (counted in the totals)."
    )
    removed_scores = serializers.IntegerField(
        help_text="Score rows of those assignments (pointwise)."
    )


class CampaignDetailOutputSerializer(CampaignListOutputSerializer):
    guidelines = serializers.CharField()
    skills = serializers.SerializerMethodField()
    raters = UserRefOutputSerializer(many=True, source="raters.all")
    progress = serializers.SerializerMethodField()

    def get_skills(self, campaign) -> list[str]:
        """The chosen skill keys (skill_mode "chosen"; empty otherwise)."""
        return [skill.key for skill in campaign.chosen_skills.order_by("position")]

    @extend_schema_field(CampaignProgressOutputSerializer)
    def get_progress(self, campaign) -> dict:
        return CampaignProgressOutputSerializer(self.context["progress"]).data


class CampaignLockOutputSerializer(serializers.Serializer):
    assignment_id = serializers.IntegerField(source="id")
    rater = UserRefOutputSerializer()
    response_id = serializers.IntegerField()
    instruction_id = serializers.IntegerField(source="response.instruction_id")
    instruction_external_id = serializers.CharField(
        source="response.instruction.external_id"
    )
    model_name = serializers.CharField(source="response.model_name")
    reason = serializers.CharField()
    served_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    is_expired = serializers.SerializerMethodField()

    def get_is_expired(self, assignment) -> bool:
        """Past its expiry but not yet returned to the pool (the next request does)."""
        return assignment.expires_at <= self.context["now"]


# --- Raters: their campaigns, assignments and scores -------------------------------------


class RaterProgressOutputSerializer(serializers.Serializer):
    """Renders `selectors.RaterProgress`: the rater's own counts only."""

    submitted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    quota = serializers.IntegerField(allow_null=True)
    available = serializers.IntegerField(
        allow_null=True,
        help_text="Open rating slots left in the campaign; null in `next` (not counted "
        "there, to keep it fast).",
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
    anchors = serializers.SerializerMethodField()

    @extend_schema_field(ANCHORS_SCHEMA)
    def get_anchors(self, skill) -> dict:
        return {str(score): text for score, text in skill.anchors}


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
    score = serializers.IntegerField(allow_null=True, help_text="1-5; null means N/A.")
    is_na = serializers.BooleanField()
    rationale = serializers.CharField()


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
    skills = serializers.SerializerMethodField()
    scores = RaterScoreOutputSerializer(many=True, source="scores.all")

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
        return RaterSkillOutputSerializer(self.context["skills"], many=True).data


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


class RatingSubmitInputSerializer(serializers.Serializer):
    scores = serializers.DictField(
        child=ScoreValueField(),
        help_text='Every listed skill key -> 1-5, or N/A as null or "na".',
    )
    rationales = serializers.DictField(
        child=serializers.CharField(
            allow_blank=True, allow_null=True, trim_whitespace=False
        ),
        required=False,
        default=dict,
        help_text="Optional skill key -> rationale text.",
    )
    active_seconds = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=MAX_ACTIVE_SECONDS,
        help_text="Seconds the rater actively spent (reported by the client), "
        f"at most {MAX_ACTIVE_SECONDS}.",
    )


class RatingAmendInputSerializer(serializers.Serializer):
    scores = serializers.DictField(
        child=ScoreValueField(),
        help_text='Every listed skill key -> 1-5, or N/A as null or "na".',
    )
    rationales = serializers.DictField(
        child=serializers.CharField(
            allow_blank=True, allow_null=True, trim_whitespace=False
        ),
        required=False,
        default=dict,
    )


class RatingOutputSerializer(serializers.Serializer):
    """A rater's saved rating of one assignment: their own scores only."""

    assignment_id = serializers.IntegerField(source="id")
    status = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField(allow_null=True, help_text="Last amendment.")
    active_seconds = serializers.FloatField(allow_null=True)
    scores = RaterScoreOutputSerializer(many=True, source="scores.all")


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
    """A removed rater's refusal (`annotation.roles.RatingRefused`, a 403)."""

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


# --- Hot-path renderers ------------------------------------------------------------------
#
# `next` and `submit` are the rater loop: rendering them with the nested serializers
# above cost more than their queries. These functions build the very same JSON by hand
# (same keys, same order, same value formats, the same blind-rating rules); the views
# still declare the serializers above in their OpenAPI schema, and the tests compare both.

_DATETIME = serializers.DateTimeField()


def _datetime(value) -> str | None:
    return _DATETIME.to_representation(value) if value is not None else None


def rater_skill_data(skill) -> dict:
    """`RaterSkillOutputSerializer` by hand."""
    return {
        "key": skill.key,
        "name": skill.name,
        "ability": skill.ability,
        "ability_label": skill.get_ability_display(),
        "criteria": skill.criteria,
        "anchors": {
            "1": skill.anchor_1,
            "2": skill.anchor_2,
            "3": skill.anchor_3,
            "4": skill.anchor_4,
            "5": skill.anchor_5,
        },
    }


def rater_score_data(score) -> dict:
    """`RaterScoreOutputSerializer` by hand."""
    return {
        "skill": score.skill.key,
        "score": score.score,
        "is_na": score.score is None,
        "rationale": score.rationale,
    }


def rater_assignment_data(assignment, skills) -> dict:
    """`RaterAssignmentOutputSerializer` by hand: blind unless the campaign says not."""
    campaign = assignment.campaign
    response = assignment.response
    instruction = response.instruction
    instruction_data = {"text": instruction.text, "checklist": instruction.checklist}
    if campaign.show_reference:
        instruction_data["reference_answer"] = instruction.reference_answer
    response_data = {"text": response.text}
    if campaign.show_model_names:
        response_data["model_name"] = response.model_name
    return {
        "id": assignment.pk,
        "campaign_id": assignment.campaign_id,
        "status": str(assignment.status),
        "reason": assignment.reason,
        "served_at": _datetime(assignment.served_at),
        "expires_at": _datetime(assignment.expires_at),
        "submitted_at": _datetime(assignment.submitted_at),
        "instruction": instruction_data,
        "response": response_data,
        "skills": [rater_skill_data(skill) for skill in skills],
        "scores": [rater_score_data(score) for score in assignment.scores.all()],
    }


def rater_progress_data(progress) -> dict:
    """`RaterProgressOutputSerializer` by hand."""
    return {
        "submitted": progress.submitted,
        "skipped": progress.skipped,
        "quota": progress.quota,
        "available": progress.available,
        "label": progress.label,
    }


def rater_next_data(envelope: dict, skills) -> dict:
    """`RaterNextOutputSerializer` by hand."""
    assignment = envelope["assignment"]
    return {
        "assignment": None
        if assignment is None
        else rater_assignment_data(assignment, skills),
        "message": envelope["message"],
        "locked_by_others": envelope["locked_by_others"],
        "progress": rater_progress_data(envelope["progress"]),
    }


def rating_data(assignment) -> dict:
    """`RatingOutputSerializer` by hand (`assignment.scores` loaded with their skills)."""
    active = assignment.active_seconds
    return {
        "assignment_id": assignment.pk,
        "status": str(assignment.status),
        "submitted_at": _datetime(assignment.submitted_at),
        "updated_at": _datetime(assignment.updated_at),
        "active_seconds": None if active is None else float(active),
        "scores": [rater_score_data(score) for score in assignment.scores.all()],
    }
