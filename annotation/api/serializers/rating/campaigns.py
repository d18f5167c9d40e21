"""The researchers' side of the rating API: campaigns, their criteria and progress."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db.models import Q
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotation import selectors
from annotation.api.serializers.rating.values import (
    LABELS_SCHEMA,
    SCALE_SCHEMA,
    scale_data,
)
from annotation.models import Campaign, Dataset
from flaskapp import bounds, limits, workspaces
from flaskapp.api import WorkspaceScopedPrimaryKeyRelatedField
from flaskapp.bounds import ID
from flaskapp.params import ascii_int


class UserRefOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()


class RaterListField(serializers.ListField):
    """Raters by username or by id; every one must exist. With the request in the
    serializer's context, only the people of the requester's workspaces exist:
    another workspace's account is an unknown user, never named from its id."""

    child = serializers.CharField()

    def to_internal_value(self, data) -> list[User]:
        values = [str(v).strip() for v in super().to_internal_value(data)]
        ids = {i for i in map(ascii_int, values) if i is not None and ID.contains(i)}
        candidates = User.objects.all()
        request = self.context.get("request")
        if request is not None:
            shared = workspaces.workspace_ids_for_user(request.user)
            if shared is not None:
                candidates = candidates.filter(
                    workspace_memberships__workspace_id__in=shared
                ).distinct()
        users = list(candidates.filter(Q(username__in=values) | Q(pk__in=ids)))
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


class CampaignCreateInputSerializer(serializers.Serializer):
    # A dataset of another workspace is refused like a missing one.
    dataset = WorkspaceScopedPrimaryKeyRelatedField(
        queryset=Dataset.objects.all(),
        help_text="The dataset's id (one of a workspace where you are a researcher; "
        "the campaign is made in the dataset's workspace).",
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
    guidelines = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=limits.GUIDELINES
    )
    raters = RaterListField(
        required=False, default=list, help_text="Usernames or user ids."
    )
    critique = serializers.CharField(
        required=False,
        default=Campaign.Critique.OFF,
        help_text="off, with_scores (a critique next to the scores) or only (a "
        "critique instead of scores).",
    )
    critique_min_length = serializers.IntegerField(
        required=False,
        default=0,
        help_text="A critique must have at least this many characters.",
    )
    gold_rate = serializers.IntegerField(
        required=False,
        default=0,
        help_text="Serve one of the dataset's gold items in every N items each rater "
        "is served, unmarked (0: none).",
        **bounds.GOLD_RATE.field_kwargs(),
    )
    training_phase = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Show raters the expected scores right after a gold item.",
    )
    qualification_size = serializers.IntegerField(
        required=False,
        default=0,
        help_text="Gold items each rater answers before any real item (0: none).",
        **bounds.QUALIFICATION_SIZE.field_kwargs(),
    )
    qualification_pass = serializers.FloatField(
        required=False,
        default=0.8,
        help_text="The pass mark: the share of right answers (0-1).",
        **bounds.QUALIFICATION_PASS.field_kwargs(),
    )
    qualification_rule = serializers.ChoiceField(
        choices=["exact", "within1"],
        required=False,
        default="exact",
        help_text="exact, or within1 (one point off still right; labels exactly).",
    )


class CampaignTrainingInputSerializer(serializers.Serializer):
    training_phase = serializers.BooleanField(
        help_text="On: raters see the expected scores and explanation right after "
        "submitting a gold item. Off: no feedback."
    )


class CampaignCritiqueInputSerializer(serializers.Serializer):
    # CharField / IntegerField: the service refuses bad values naming the field.
    critique = serializers.CharField(help_text="off, with_scores or only.")
    critique_min_length = serializers.IntegerField(required=False, default=0)


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
    critique = serializers.CharField(help_text="off, with_scores or only")
    critique_min_length = serializers.IntegerField()
    gold_rate = serializers.IntegerField(help_text="One gold item in every N (0: none)")
    training_phase = serializers.BooleanField()
    qualification_size = serializers.IntegerField()
    qualification_pass = serializers.FloatField()
    qualification_rule = serializers.CharField()
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


class CampaignCriterionOutputSerializer(serializers.Serializer):
    key = serializers.CharField(source="skill.key")
    name = serializers.CharField(source="skill.name")
    kind = serializers.CharField(
        source="scale.kind", help_text="ordinal or categorical"
    )
    scale = serializers.SerializerMethodField()
    labels = serializers.SerializerMethodField()
    allow_na = serializers.BooleanField(source="scale.allow_na")

    @extend_schema_field(SCALE_SCHEMA)
    def get_scale(self, criterion) -> dict | None:
        return scale_data(criterion.scale)

    @extend_schema_field(LABELS_SCHEMA)
    def get_labels(self, criterion) -> list[dict]:
        return list(criterion.skill.labels or [])


class CampaignDetailOutputSerializer(CampaignListOutputSerializer):
    guidelines = serializers.CharField()
    task = serializers.SerializerMethodField()
    criteria = serializers.SerializerMethodField()
    skills = serializers.SerializerMethodField()
    raters = UserRefOutputSerializer(many=True, source="raters.all")
    progress = serializers.SerializerMethodField()

    def get_skills(self, campaign) -> list[str]:
        """The chosen skill keys (skill_mode "chosen"; empty otherwise)."""
        return [skill.key for skill in campaign.chosen_skills.order_by("position")]

    @extend_schema_field(CampaignProgressOutputSerializer)
    def get_progress(self, campaign) -> dict:
        return CampaignProgressOutputSerializer(self.context["progress"]).data

    def get_task(self, campaign) -> str:
        """ "Classification" when every criterion is categorical, "Pointwise
        scores", "Critique" (instead of scores), "Pairwise preference"."""
        if "task" not in self.context:
            scales = [c.scale for c in self._criteria(campaign)]
            self.context["task"] = selectors.campaign_task_label(
                campaign=campaign, scales=scales
            )
        return self.context["task"]

    def _criteria(self, campaign) -> list:
        """The view's `criteria`, or read here (one query) when it gave none."""
        if "criteria" not in self.context:
            self.context["criteria"] = selectors.campaign_criteria(campaign=campaign)
        return self.context["criteria"]

    @extend_schema_field(CampaignCriterionOutputSerializer(many=True))
    def get_criteria(self, campaign) -> list[dict]:
        """Every criterion raters may be asked about, with its scale or labels."""
        return CampaignCriterionOutputSerializer(
            self._criteria(campaign), many=True
        ).data


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


class CampaignGoldOutputSerializer(serializers.Serializer):
    """One rater's answers to the campaign's gold items (`selectors.gold`)."""

    rater_id = serializers.IntegerField()
    username = serializers.CharField()
    items = serializers.IntegerField(help_text="Gold items submitted.")
    checked = serializers.IntegerField(help_text="Criteria compared.")
    right = serializers.IntegerField(help_text="Within the item's tolerance.")
    accuracy = serializers.FloatField(allow_null=True)
    low = serializers.FloatField(allow_null=True, help_text="Wilson 95% interval.")
    high = serializers.FloatField(allow_null=True)
    exact_rate = serializers.FloatField(allow_null=True)
    within1_rate = serializers.FloatField(
        allow_null=True, help_text="On ordinal criteria."
    )
    attention = serializers.IntegerField(help_text="Attention checks submitted.")
    attention_passed = serializers.IntegerField()


class QualificationOutputSerializer(serializers.Serializer):
    """One rater's qualification attempt (`selectors.campaign_qualifications`)."""

    rater_id = serializers.IntegerField()
    username = serializers.CharField(source="rater.username")
    attempt = serializers.IntegerField()
    status = serializers.CharField(help_text="in_progress, passed or failed")
    items = serializers.IntegerField(help_text="Gold items in the attempt.")
    done = serializers.IntegerField(help_text="Answered (submitted or skipped).")
    checked = serializers.IntegerField(help_text="Criteria compared, once graded.")
    right = serializers.IntegerField()
    accuracy = serializers.FloatField(allow_null=True)
    pass_mark = serializers.FloatField()
    rule = serializers.CharField()
    started_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    retry_allowed_by = serializers.CharField(
        source="retry_allowed_by.username", allow_null=True, default=None
    )
    can_retry = serializers.BooleanField()


class RaterDecisionInputSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(
        choices=["exclude", "pause"],
        help_text="exclude: the rater's scores leave the analyses; pause: nothing new "
        "is served to the rater.",
    )
    action = serializers.ChoiceField(
        choices=["start", "end"], help_text="start the decision, or reverse it"
    )
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="Why (required to start).",
    )


class RaterDecisionOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    rater_id = serializers.IntegerField()
    username = serializers.CharField(source="rater.username")
    kind = serializers.CharField()
    reason = serializers.CharField()
    created_by = serializers.CharField(source="created_by.username", allow_null=True)
    created_at = serializers.DateTimeField()
    ended_by = serializers.CharField(
        source="ended_by.username", allow_null=True, default=None
    )
    ended_at = serializers.DateTimeField(allow_null=True)
    end_reason = serializers.CharField()
