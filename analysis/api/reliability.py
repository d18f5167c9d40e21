"""GET /api/campaigns/{id}/reliability/: each rater's reliability in a pointwise
campaign (`analysis.selectors.reliability`): items, time, gold accuracy, agreement
with the leave-one-out consensus overall and per criterion, severity,
straight-lining, speed outliers, drift by quarter, flags with their reasons, and
whether the rater is excluded or paused. Researchers and admins only."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from analysis.selectors.reliability import campaign_reliability, reliability_dict
from annotation import selectors as annotation_selectors
from annotation.api.permissions import IsResearcher


class CampaignReliabilityApi(APIView):
    permission_classes = [IsResearcher]

    @extend_schema(tags=["campaigns"], responses={200: OpenApiTypes.OBJECT})
    def get(self, request, campaign_id: int):
        campaign = annotation_selectors.campaign_get_for_user(
            user=request.user, campaign_id=campaign_id
        )
        return Response(reliability_dict(campaign_reliability(campaign=campaign)))
