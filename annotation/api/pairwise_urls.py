"""Pairwise campaign API routes, mounted at /api/ (flaskapp.urls).

Names: ``pairwise_api:<entity>-<action>``.
"""

from django.urls import path

from . import pairwise_views as views

app_name = "pairwise_api"

urlpatterns = [
    path(
        "pairwise/campaigns/",
        views.PairwiseCampaignListApi.as_view(),
        name="pairwise-campaign-list",
    ),
    path(
        "pairwise/campaigns/<int:campaign_id>/",
        views.PairwiseCampaignDetailApi.as_view(),
        name="pairwise-campaign-detail",
    ),
    path(
        "pairwise/rate/campaigns/<int:campaign_id>/next/",
        views.PairwiseNextApi.as_view(),
        name="pairwise-next",
    ),
    path(
        "pairwise/rate/campaigns/<int:campaign_id>/progress/",
        views.PairwiseProgressApi.as_view(),
        name="pairwise-progress",
    ),
    path(
        "pairwise/rate/assignments/<int:assignment_id>/submit/",
        views.PairwiseSubmitApi.as_view(),
        name="pairwise-submit",
    ),
    path(
        "pairwise/rate/assignments/<int:assignment_id>/skip/",
        views.PairwiseSkipApi.as_view(),
        name="pairwise-skip",
    ),
]
