"""URLs of pairwise campaigns: researchers' pages and the raters' comparison UI."""

from django.urls import path

from . import views_pairwise as views

app_name = "pairwise"

urlpatterns = [
    path("pairwise/", views.pairwise_home, name="pairwise-home"),
    path(
        "pairwise/campaigns/new/",
        views.pairwise_campaign_new,
        name="pairwise-campaign-new",
    ),
    path(
        "pairwise/campaigns/<int:campaign_id>/",
        views.pairwise_campaign_detail,
        name="pairwise-campaign-detail",
    ),
    path(
        "pairwise/campaigns/<int:campaign_id>/status/",
        views.pairwise_campaign_status,
        name="pairwise-campaign-status",
    ),
    path(
        "pairwise/compare/<int:campaign_id>/",
        views.pairwise_next,
        name="pairwise-next",
    ),
    path(
        "pairwise/compare/<int:campaign_id>/mine/",
        views.pairwise_history,
        name="pairwise-history",
    ),
    path(
        "pairwise/compare/assignments/<int:assignment_id>/submit/",
        views.pairwise_submit,
        name="pairwise-submit",
    ),
    path(
        "pairwise/compare/assignments/<int:assignment_id>/skip/",
        views.pairwise_skip,
        name="pairwise-skip",
    ),
]
