"""REST API of a campaign's rater quality (researchers and admins): the training phase,
gold accuracy per rater, qualification attempts and retries, and the exclusion and
pause decisions. Thin, as `annotation.api.rating`."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import selectors as selectors
from annotation.api.permissions import IsResearcher
from annotation.api.rating import REFUSED, campaign_body
from annotation.api.serializers.rating import (
    CampaignDetailOutputSerializer,
    CampaignGoldOutputSerializer,
    CampaignTrainingInputSerializer,
    QualificationOutputSerializer,
    RaterDecisionInputSerializer,
    RaterDecisionOutputSerializer,
)
from annotation.selectors import raters as rater_selectors
from annotation.services.campaigns import campaign_set_training
from annotation.services.exclusions import rater_decision_end, rater_decision_start
from annotation.services.qualification import qualification_allow_retry


class CampaignTrainingApi(APIView):
    """Start or end the training phase: while on, a rater sees the expected scores
    and explanation right after submitting a gold item."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=CampaignTrainingInputSerializer,
        responses={200: CampaignDetailOutputSerializer, 400: REFUSED},
    )
    def put(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        serializer = CampaignTrainingInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        campaign = campaign_set_training(
            campaign=campaign,
            on=serializer.validated_data["training_phase"],
            user=request.user,
        )
        return Response(campaign_body(campaign))


class CampaignGoldApi(APIView):
    """Per rater: gold items submitted, accuracy (right within each item's
    tolerance) with its Wilson 95% interval, exact and within-1 rates, attention
    checks passed."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"], responses=CampaignGoldOutputSerializer(many=True)
    )
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        rows = selectors.campaign_gold_accuracy(campaign=campaign)
        return Response(CampaignGoldOutputSerializer(rows, many=True).data)


class CampaignQualificationApi(APIView):
    """Every rater's qualification attempts: status, answered items, right / checked,
    the share right against the pass mark, and whether a retry may be allowed."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"], responses=QualificationOutputSerializer(many=True)
    )
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        rows = selectors.campaign_qualifications(campaign=campaign)
        return Response(QualificationOutputSerializer(rows, many=True).data)


class CampaignQualificationRetryApi(APIView):
    """Allow a rater who failed the qualification one more attempt (once), on gold
    items they have not seen. 400 (nothing changed) otherwise."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=None,
        responses={201: QualificationOutputSerializer, 400: REFUSED},
    )
    def post(self, request, campaign_id: int, rater_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        rater = rater_selectors.rater_get_for_user(user=request.user, rater_id=rater_id)
        qualification_allow_retry(campaign=campaign, rater=rater, user=request.user)
        attempt = next(
            q
            for q in reversed(selectors.campaign_qualifications(campaign=campaign))
            if q.rater_id == rater.pk
        )
        return Response(
            QualificationOutputSerializer(attempt).data,
            status=status.HTTP_201_CREATED,
        )


class CampaignDecisionListApi(APIView):
    """Every exclusion and pause of the campaign's raters, open or reversed, newest
    first, with who decided, when and why."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"], responses=RaterDecisionOutputSerializer(many=True)
    )
    def get(self, request, campaign_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        rows = selectors.campaign_decisions(campaign=campaign)
        return Response(RaterDecisionOutputSerializer(rows, many=True).data)


class CampaignRaterDecisionApi(APIView):
    """Exclude a rater's scores from the analyses, or pause the rater (`action`
    start, with a reason), or reverse it (`action` end). 400 naming the field, nothing
    changed, when refused."""

    permission_classes = [IsResearcher]

    @extend_schema(
        tags=["campaigns"],
        request=RaterDecisionInputSerializer,
        responses={201: RaterDecisionOutputSerializer, 400: REFUSED},
    )
    def post(self, request, campaign_id: int, rater_id: int):
        campaign = selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        rater = rater_selectors.rater_get_for_user(user=request.user, rater_id=rater_id)
        serializer = RaterDecisionInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        service = (
            rater_decision_start if data["action"] == "start" else rater_decision_end
        )
        decision = service(
            campaign=campaign,
            rater=rater,
            kind=data["kind"],
            reason=data["reason"],
            user=request.user,
        )
        return Response(
            RaterDecisionOutputSerializer(decision).data,
            status=status.HTTP_201_CREATED,
        )
