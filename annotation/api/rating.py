"""REST API of rating campaigns: thin views that parse, call a service or selector, render.

Two audiences, the same rules as the pages:

- researchers and admins manage campaigns under ``/api/campaigns/`` (a rater or a user
  without a role gets 403);
- raters work under ``/api/rate/``, only in campaigns they are members of and only on
  their own assignments. Anything else is a 404, exactly like a missing id, for every
  role (the `*_for_rater` selectors and the rating services raise it), so ids of other
  campaigns and assignments leak nothing. Their loop (next, progress, submit, skip,
  amend) is the one set of views of `annotation.api.loop`, with this kind's
  `PointwiseApi`; their campaign list and an assignment's detail are here.

Refused writes are `DomainError`s, rendered as 400 ``{"detail", "problems": [{"field",
...}]}`` by flaskapp.api.exception_handler; wrong types are refused by the input
serializers with DRF's ``{"<field>": [...]}``.
"""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as selectors
from annotation.api.common import NOT_FOUND, ItemApi, refused
from annotation.api.permissions import IsResearcher
from annotation.api.serializers.rating import (
    RATER_REMOVED,
    CampaignCreateInputSerializer,
    CampaignCritiqueInputSerializer,
    CampaignDetailOutputSerializer,
    CampaignListOutputSerializer,
    CampaignLockOutputSerializer,
    CampaignRatersInputSerializer,
    CampaignStatusInputSerializer,
    RaterAssignmentOutputSerializer,
    RaterCampaignOutputSerializer,
    RaterNextOutputSerializer,
    RatingAmendInputSerializer,
    RatingOutputSerializer,
    RatingSubmitInputSerializer,
    RatingSubmitOutputSerializer,
    rater_assignment_data,
    rater_qualification_data,
    rating_data,
)
from annotation.items import POINTWISE
from annotation.models import Assignment, Campaign, HumanScore, Skill
from annotation.services.campaign_spec import spec_from_fields
from annotation.services.campaigns import (
    campaign_create,
    campaign_set_critique,
    campaign_set_raters,
    campaign_set_status,
)
from annotation.services.gold import gold_feedback
from annotation.services.serving import NextResult
from flaskapp import roles, workspaces
from flaskapp.api import WORKSPACE_FILTER_PARAMETER, Pagination

REFUSED = refused("scores.factuality")


def _paginate(view: APIView, queryset) -> list:
    """The page of `queryset` for `view`'s request (kept on the view for the response)."""
    view._paginator = view.pagination_class()
    return view._paginator.paginate_queryset(queryset, view.request, view=view)


def campaign_body(campaign: Campaign) -> dict:
    """The API's body for one campaign (settings, criteria, task label, progress per
    rater): what create, detail and every status action answer, here and in
    `annotation.api.quality`."""
    progress = selectors.campaign_progress(campaign=campaign)
    criteria = selectors.campaign_criteria(campaign=campaign)
    task = selectors.campaign_task_label(
        campaign=campaign, scales=[c.scale for c in criteria]
    )
    return CampaignDetailOutputSerializer(
        campaign,
        context={"progress": progress, "criteria": criteria, "task": task},
    ).data


def _assignment_for_form(*, user, assignment_id: int) -> tuple[Assignment, list[Skill]]:
    """The rater's own assignment with what the rating form shows, and its skills."""
    assignment = selectors.assignment_get_for_rater(
        user=user, assignment_id=assignment_id
    )
    return assignment, selectors.assignment_skills(assignment=assignment)


def _rating_data(*, user, assignment_id: int) -> dict:
    assignment = selectors.assignment_scores_for_rater(
        user=user, assignment_id=assignment_id
    )
    return rating_data(assignment)


# --- Researchers: campaigns --------------------------------------------------------------


class CampaignListApi(APIView):
    """List every campaign, or create one over a dataset's responses."""

    permission_classes = [IsResearcher]
    pagination_class = Pagination

    @extend_schema(
        parameters=[WORKSPACE_FILTER_PARAMETER],
        tags=["campaigns"],
        responses=CampaignListOutputSerializer(many=True),
    )
    def get(self, request):
        page = _paginate(
            self,
            workspaces.filter_by_workspace_param(
                selectors.campaign_list_for_user(user=request.user),
                request.user,
                request.query_params.get("workspace"),
            ),
        )
        return self._paginator.get_paginated_response(
            CampaignListOutputSerializer(page, many=True).data
        )

    @extend_schema(
        tags=["campaigns"],
        request=CampaignCreateInputSerializer,
        responses={201: CampaignDetailOutputSerializer, 400: REFUSED},
    )
    def post(self, request):
        serializer = CampaignCreateInputSerializer(
            data=request.data, context={"request": request}
        )
        serializer.is_valid(raise_exception=True)
        campaign = campaign_create(
            spec=spec_from_fields(serializer.validated_data), created_by=request.user
        )
        return Response(campaign_body(campaign), status=status.HTTP_201_CREATED)


class CampaignDetailApi(APIView):
    """A campaign's settings and progress (totals, per rater with median seconds)."""

    permission_classes = [IsResearcher]

    @extend_schema(tags=["campaigns"], responses=CampaignDetailOutputSerializer)
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        return Response(campaign_body(campaign))


class CampaignStatusApi(APIView):
    """Pause, resume or close a campaign. Closing is final."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=CampaignStatusInputSerializer,
        responses={200: CampaignDetailOutputSerializer, 400: REFUSED},
    )
    def post(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        serializer = CampaignStatusInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_set_status(
            campaign=campaign,
            status=serializer.validated_data["status"],
            user=request.user,
        )
        return Response(campaign_body(campaign))


class CampaignCritiqueApi(APIView):
    """Set whether raters write a critique (off / with_scores / only) and its minimum
    length; applies to ratings submitted from now on."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=CampaignCritiqueInputSerializer,
        responses={200: CampaignDetailOutputSerializer, 400: REFUSED},
    )
    def put(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        serializer = CampaignCritiqueInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_set_critique(
            campaign=campaign,
            critique=serializer.validated_data["critique"],
            critique_min_length=serializer.validated_data["critique_min_length"],
            user=request.user,
        )
        return Response(campaign_body(campaign))


class CampaignRatersApi(APIView):
    """Replace a campaign's raters (their past assignments are kept)."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=CampaignRatersInputSerializer,
        responses={200: CampaignDetailOutputSerializer, 400: REFUSED},
    )
    def put(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        serializer = CampaignRatersInputSerializer(
            data=request.data, context={"request": request}
        )
        serializer.is_valid(raise_exception=True)
        campaign = campaign_set_raters(
            campaign=campaign,
            raters=serializer.validated_data["raters"],
            user=request.user,
        )
        return Response(campaign_body(campaign))


class CampaignLockListApi(APIView):
    """Who holds which response right now, and until when (soonest expiry first)."""

    permission_classes = [IsResearcher]
    pagination_class = Pagination

    @extend_schema(
        tags=["campaigns"], responses=CampaignLockOutputSerializer(many=True)
    )
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        page = _paginate(self, selectors.campaign_locked_assignments(campaign=campaign))
        data = CampaignLockOutputSerializer(
            page, many=True, context={"now": timezone.now()}
        ).data
        return self._paginator.get_paginated_response(data)


# --- Raters ------------------------------------------------------------------------------


class RaterCampaignListApi(APIView):
    """The campaigns the user rates in (active or paused), each with their own progress.

    A user without the rater role is a member of none: the list is empty.
    """

    pagination_class = Pagination

    @extend_schema(tags=["rate"], responses=RaterCampaignOutputSerializer(many=True))
    def get(self, request):
        user = request.user
        if roles.is_rater(user):
            # campaign_list_for_user shows researchers every campaign; this list is
            # the user's own rating work, with the statuses a rater may see.
            campaigns = selectors.campaign_list_for_user(user=user).filter(
                raters=user, status__in=[Campaign.Status.ACTIVE, Campaign.Status.PAUSED]
            )
        else:
            campaigns = Campaign.objects.none()
        page = _paginate(self, campaigns)
        progress = {
            c.pk: selectors.rater_progress(user=user, campaign=c, with_available=True)
            for c in page
        }
        data = RaterCampaignOutputSerializer(
            page, many=True, context={"progress": progress}
        ).data
        return self._paginator.get_paginated_response(data)


class AssignmentDetailApi(APIView):
    """One of the rater's own assignments, with their own scores once submitted."""

    @extend_schema(
        tags=["rate"],
        responses={
            200: RaterAssignmentOutputSerializer,
            403: RATER_REMOVED,
            404: NOT_FOUND,
        },
    )
    def get(self, request, assignment_id: int):
        assignment, skills = _assignment_for_form(
            user=request.user, assignment_id=assignment_id
        )
        return Response(
            RaterAssignmentOutputSerializer(assignment, context={"skills": skills}).data
        )


class PointwiseApi(ItemApi):
    """The rater loop's API of responses to score (`annotation.api.loop`, the
    ``rate/...`` routes)."""

    kind = POINTWISE
    tag = "rate"
    refused = REFUSED
    next_output = RaterNextOutputSerializer
    submit_input = RatingSubmitInputSerializer
    submit_output = RatingSubmitOutputSerializer
    amend_input = RatingAmendInputSerializer
    amend_output = RatingOutputSerializer
    answer_fields = ("scores", "rationales", "critique")
    docs = {
        "next": """Serve the next response to rate (or the one the rater already holds).

        Always 200 with the same envelope: `assignment` is null when nothing can be served,
        and `message` says why (paused or closed campaign, quota reached, nothing left, or
        everything left is locked by others: `locked_by_others`).
        """,
        "progress": "The rater's own progress in one campaign.",
        "submit": """Submit scores for every listed skill. Idempotent: a repeat with the same
        answer returns the saved rating unchanged and writes nothing; a repeat with
        another answer is a 409 naming the amend endpoint (``PUT .../scores/``), and
        changes nothing.""",
        "skip": "Skip a served response with a reason; it goes back to the pool for "
        "others.",
        "amend": "Replace the rater's own submitted scores (not once the campaign is "
        "closed).",
    }

    def served_data(self, *, user, result: NextResult) -> dict:
        """The served assignment with what the rating form shows: loaded with the
        pick where the service could, read once more for a resumed one."""
        assignment, skills = result.assignment, []
        if result.skills is not None:
            # The raw-SQL path served the form's data with the assignment (a served
            # assignment has no scores yet).
            skills = result.skills
            _no_scores(assignment)
        elif "response" not in assignment._state.fields_cache:
            # A resumed assignment: load what the form shows.
            assignment, skills = _assignment_for_form(
                user=user, assignment_id=assignment.pk
            )
        else:
            # Just served: response and instruction came with the pick, and a served
            # assignment has no scores yet.
            skills = selectors.assignment_skills(assignment=assignment)
            _no_scores(assignment)
        return rater_assignment_data(assignment, skills)

    def next_extra(self, *, user, campaign: Campaign) -> dict:
        # None (no query) for a campaign without qualification.
        qualification = selectors.rater_qualification(campaign=campaign, rater=user)
        return {"qualification": rater_qualification_data(qualification)}

    def submitted_data(self, *, user, assignment: Assignment) -> dict:
        feedback = gold_feedback(assignment)  # training phase, gold only
        if "scores" in getattr(assignment, "_prefetched_objects_cache", {}):
            # Just saved: the service handed over the rows it wrote, no re-read needed.
            data = rating_data(assignment)
        else:
            data = _rating_data(user=user, assignment_id=assignment.pk)
        return {**data, "feedback": feedback}

    def amended_data(self, *, user, assignment: Assignment) -> dict:
        return _rating_data(user=user, assignment_id=assignment.pk)


def _no_scores(assignment: Assignment) -> None:
    """Mark a just served assignment's scores as loaded and empty: rendering
    compiles no query."""
    no_scores = HumanScore.objects.none()
    no_scores._result_cache = []
    assignment._prefetched_objects_cache = {"scores": no_scores}
