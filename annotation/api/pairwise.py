"""REST API of pairwise campaigns: researchers create and read them; raters get the
next pair, submit, skip, amend and read their own progress through the rater loop's
one set of views (`annotation.api.loop`), with this kind's `PairwiseApi`: its
serializers and renderings are here.

The same rules as the pages and as the pointwise rating API: only members of a
pairwise campaign reach it, only their own assignments; anything else is a 404 for
every role, exactly like a missing id (the `*_for_rater` selectors and the services
raise it). Researcher endpoints refuse raters with 403. An anonymous request gets
401/403. Refused input is a `DomainError`,
rendered as 400 ``{"detail", "problems": [{"field", ...}]}`` (fields such as `label`
or `skill_labels.factuality`); wrong types are refused by the input serializers with
DRF's ``{"<field>": [...]}``.

Blindness: responses are given as `response_a` / `response_b` in the order recorded
for this rater; model names only when the campaign shows them; other raters' votes
never. Labels go in and come out in presented terms (A / B / tie).
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as selectors
from annotation.api.common import NOT_FOUND, ItemApi, refused
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.rating import (
    CampaignDetailOutputSerializer,
    CampaignListOutputSerializer,
    RaterListField,
    RaterProgressOutputSerializer,
)
from annotation.items import PAIRWISE
from annotation.items.pairwise import pairwise_skills, unmap_shown_label
from annotation.models import Assignment, Dataset, HumanPreference
from annotation.models.campaigns import MAX_ACTIVE_SECONDS
from annotation.selectors import pairwise as pairwise_selectors
from annotation.services.campaign_spec import spec_from_fields
from annotation.services.campaigns import campaign_create
from annotation.services.serving import NextResult
from flaskapp import bounds, limits
from flaskapp.api import Pagination, WorkspaceScopedPrimaryKeyRelatedField

REFUSED = refused("label")


class PairwiseCampaignCreateInputSerializer(serializers.Serializer):
    # A dataset of another workspace is refused like a missing one.
    dataset = WorkspaceScopedPrimaryKeyRelatedField(
        queryset=Dataset.objects.all(),
        help_text="The dataset's id (one of a workspace where you are a researcher; "
        "the campaign is made in the dataset's workspace).",
    )
    name = serializers.CharField(max_length=200)
    pair_mode = serializers.CharField(
        default="all_pairs",
        help_text="all_pairs, baseline, sample or existing (the dataset's stored "
        "pairs, e.g. imported preferences).",
    )
    baseline_model = serializers.CharField(
        required=False, allow_null=True, default=None
    )
    models = serializers.ListField(
        child=serializers.CharField(), required=False, default=list
    )
    sample = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        **bounds.PAIR_SAMPLE.field_kwargs(),
    )
    seed = serializers.IntegerField(default=0, **bounds.SEED.field_kwargs())
    categories = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="With pair_mode existing: only pairs of these categories.",
    )
    skills = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        default=list,
        help_text="Skill keys asked per pair besides the overall preference.",
    )
    overlap = serializers.IntegerField(
        default=1, help_text="Raters per pair.", **bounds.OVERLAP.field_kwargs()
    )
    overlap_percent = serializers.IntegerField(
        default=100, **bounds.OVERLAP_PERCENT.field_kwargs()
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


class PairwiseCampaignOutputSerializer(CampaignDetailOutputSerializer):
    kind = serializers.CharField()


class PairwiseCampaignListOutputSerializer(CampaignListOutputSerializer):
    kind = serializers.CharField()
    pair_count = serializers.IntegerField()
    votes_needed = serializers.IntegerField()
    votes_submitted = serializers.IntegerField()
    rater_count = serializers.IntegerField()


def _campaign_data(campaign) -> dict:
    progress = selectors.campaign_progress(campaign=campaign)
    return PairwiseCampaignOutputSerializer(
        campaign, context={"progress": progress}
    ).data


class PairwiseCampaignListApi(APIView):
    """List pairwise campaigns with their totals, or create one (pairs made from the
    dataset or taken from its stored pairs). Researchers and admins only."""

    permission_classes = [IsResearcher]
    pagination_class = Pagination

    @extend_schema(
        tags=["pairwise"], responses=PairwiseCampaignListOutputSerializer(many=True)
    )
    def get(self, request):
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(
            pairwise_selectors.pairwise_campaign_list_for_user(user=request.user),
            request,
            view=self,
        )
        return paginator.get_paginated_response(
            PairwiseCampaignListOutputSerializer(page, many=True).data
        )

    @extend_schema(
        tags=["pairwise"],
        request=PairwiseCampaignCreateInputSerializer,
        responses={201: PairwiseCampaignOutputSerializer, 400: REFUSED},
    )
    def post(self, request):
        serializer = PairwiseCampaignCreateInputSerializer(
            data=request.data, context={"request": request}
        )
        serializer.is_valid(raise_exception=True)
        campaign = campaign_create(
            spec=spec_from_fields(serializer.validated_data, pairwise=True),
            created_by=request.user,
        )
        return Response(_campaign_data(campaign), status=201)


class PairwiseCampaignDetailApi(APIView):
    """A pairwise campaign's settings and progress (votes done / needed, per rater)."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["pairwise"],
        responses={200: PairwiseCampaignOutputSerializer, 404: NOT_FOUND},
    )
    def get(self, request, campaign_id: int):
        campaign = pairwise_selectors.pairwise_campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        return Response(_campaign_data(campaign))


class PairwiseSubmitInputSerializer(serializers.Serializer):
    label = serializers.CharField(
        allow_blank=True, help_text='"A", "B" or "tie", as the pair was shown to you.'
    )
    skill_labels = serializers.DictField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        default=dict,
        help_text='{skill key: "A" | "B" | "tie"} for every skill the campaign asks.',
    )
    rationale = serializers.CharField(
        required=False, allow_blank=True, default="", trim_whitespace=False
    )
    active_seconds = serializers.FloatField(
        required=False, min_value=0, max_value=MAX_ACTIVE_SECONDS
    )


class PairwiseSkillOutputSerializer(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    criteria = serializers.CharField()


class PairwiseResponseOutputSerializer(serializers.Serializer):
    text = serializers.CharField()
    model_name = serializers.CharField(
        allow_null=True, help_text="Null unless the campaign shows model names."
    )


class PairwiseAssignmentOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    campaign = serializers.IntegerField()
    status = serializers.CharField()
    reason = serializers.CharField()
    served_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    instruction = serializers.CharField()
    reference_answer = serializers.CharField(allow_null=True)
    response_a = PairwiseResponseOutputSerializer()
    response_b = PairwiseResponseOutputSerializer()
    skills = PairwiseSkillOutputSerializer(many=True)


class PairwiseNextOutputSerializer(serializers.Serializer):
    assignment = PairwiseAssignmentOutputSerializer(allow_null=True)
    message = serializers.CharField()
    locked_by_others = serializers.IntegerField()
    progress = RaterProgressOutputSerializer()


class PairwiseSubmitOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    label = serializers.CharField(help_text="Your answer as shown: A, B or tie.")
    skill_labels = serializers.DictField(child=serializers.CharField())
    rationale = serializers.CharField()


def _assignment_data(assignment: Assignment, skills=None) -> dict:
    """What the rater is shown of `assignment` (its campaign, pair, instruction and
    responses loaded); `skills`: the per-skill questions when already loaded."""
    campaign = assignment.campaign
    if skills is None:
        skills = pairwise_skills(campaign=campaign)
    response_a, response_b = pairwise_selectors.shown_responses(assignment)
    instruction = assignment.pair.instruction

    def response(r) -> dict:
        return {
            "text": r.text,
            "model_name": r.model_name if campaign.show_model_names else None,
        }

    return {
        "id": assignment.pk,
        "campaign": campaign.pk,
        "status": assignment.status,
        "reason": assignment.reason,
        "served_at": assignment.served_at,
        "expires_at": assignment.expires_at,
        "instruction": instruction.text,
        "reference_answer": instruction.reference_answer
        if campaign.show_reference
        else None,
        "response_a": response(response_a),
        "response_b": response(response_b),
        "skills": [
            {"key": s.key, "name": s.name, "criteria": s.criteria} for s in skills
        ],
    }


def _preference_data(assignment) -> dict:
    """The rater's stored answer to `assignment`, in the terms it was shown in (the
    vote handed over by the service when it has just been saved)."""
    handed = getattr(assignment, "_prefetched_objects_cache", {}).get("preferences")
    if handed is not None and len(handed) == 1:
        preference = handed[0]
    else:
        preference = HumanPreference.objects.get(assignment=assignment)
    order = preference.shown_order
    unmap = unmap_shown_label
    return {
        "id": assignment.pk,
        "status": assignment.status,
        "submitted_at": serializers.DateTimeField().to_representation(
            assignment.submitted_at
        ),
        "label": unmap(preference.label, order),
        "skill_labels": {
            key: unmap(value, order) for key, value in preference.skill_labels.items()
        },
        "rationale": preference.rationale,
    }


class PairwiseApi(ItemApi):
    """The rater loop's API of pairs to compare (`annotation.api.loop`, the
    ``pairwise/rate/...`` routes): answers in presented terms (A / B / tie)."""

    kind = PAIRWISE
    tag = "pairwise"
    refused = REFUSED
    next_output = PairwiseNextOutputSerializer
    submit_input = PairwiseSubmitInputSerializer
    submit_output = PairwiseSubmitOutputSerializer
    amend_input = PairwiseSubmitInputSerializer
    amend_output = PairwiseSubmitOutputSerializer
    answer_fields = ("label", "skill_labels", "rationale")
    docs = {
        "next": """Serve the next pair to compare (or the one the rater already holds).

        Always 200 with the same envelope: `assignment` is null when nothing can be
        served, and `message` says why (paused or closed campaign, quota reached, nothing
        left, or everything left is locked by others: `locked_by_others`).
        """,
        "progress": "The rater's own progress in one pairwise campaign.",
        "submit": """Submit a preference in presented terms (A / B / tie, overall and per asked
        skill). Idempotent: a repeat with the same answer returns it unchanged; with
        another answer it is a 409 and changes nothing (amend with ``PUT
        .../preference/``).""",
        "skip": "Skip a served pair with a reason; it goes back to the pool for others.",
        "amend": """Replace the rater's own submitted preference while the campaign is not closed
        (a paused one still takes amendments), in presented terms as at submit: the
        API's `pairwise_amend`, as the history's Amend page. A closed campaign or an
        assignment not submitted is a 400 saying why; another rater's is a 404.""",
    }

    def served_data(self, *, user, result: NextResult) -> dict:
        if result.skills is not None:
            # The raw-SQL path served the pair, its texts and the questions with the
            # assignment, for a campaign the loop has just checked the rater against.
            return _assignment_data(result.assignment, result.skills)
        return _assignment_data(
            pairwise_selectors.pairwise_assignment_get_for_rater(
                user=user, assignment_id=result.assignment.pk
            )
        )

    def submitted_data(self, *, user, assignment: Assignment) -> dict:
        return _preference_data(assignment)

    def amended_data(self, *, user, assignment: Assignment) -> dict:
        return _preference_data(assignment)
