"""Rating API routes, mounted at /api/ (flaskapp.urls) beside annotation.api.urls.

Researchers: ``campaigns/...``; raters: ``rate/...``. Names: ``rating_api:<entity>-<action>``
(a namespace of its own: two includes sharing ``api`` could not both be reversed).
"""

from django.urls import path

from . import rating_views as views

app_name = "rating_api"

urlpatterns = [
    path("campaigns/", views.CampaignListApi.as_view(), name="campaign-list"),
    path(
        "campaigns/<int:campaign_id>/",
        views.CampaignDetailApi.as_view(),
        name="campaign-detail",
    ),
    path(
        "campaigns/<int:campaign_id>/status/",
        views.CampaignStatusApi.as_view(),
        name="campaign-status",
    ),
    path(
        "campaigns/<int:campaign_id>/raters/",
        views.CampaignRatersApi.as_view(),
        name="campaign-raters",
    ),
    path(
        "campaigns/<int:campaign_id>/locks/",
        views.CampaignLockListApi.as_view(),
        name="campaign-locks",
    ),
    path(
        "rate/campaigns/",
        views.RaterCampaignListApi.as_view(),
        name="rater-campaign-list",
    ),
    path(
        "rate/campaigns/<int:campaign_id>/next/",
        views.AssignmentNextApi.as_view(),
        name="assignment-next",
    ),
    path(
        "rate/campaigns/<int:campaign_id>/progress/",
        views.RaterProgressApi.as_view(),
        name="rater-progress",
    ),
    path(
        "rate/assignments/<int:assignment_id>/",
        views.AssignmentDetailApi.as_view(),
        name="assignment-detail",
    ),
    path(
        "rate/assignments/<int:assignment_id>/submit/",
        views.RatingSubmitApi.as_view(),
        name="rating-submit",
    ),
    path(
        "rate/assignments/<int:assignment_id>/skip/",
        views.AssignmentSkipApi.as_view(),
        name="assignment-skip",
    ),
    path(
        "rate/assignments/<int:assignment_id>/scores/",
        views.RatingAmendApi.as_view(),
        name="rating-amend",
    ),
]
