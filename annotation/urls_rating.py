"""URLs of rating campaigns (researchers) and of the rating UI (raters)."""

from django.urls import path

from . import views_rating as views

app_name = "rating"

urlpatterns = [
    path("campaigns/", views.campaign_list, name="campaign-list"),
    path("campaigns/new/", views.campaign_new, name="campaign-new"),
    path("campaigns/<int:campaign_id>/", views.campaign_detail, name="campaign-detail"),
    path(
        "campaigns/<int:campaign_id>/status/",
        views.campaign_status,
        name="campaign-status",
    ),
    path(
        "campaigns/<int:campaign_id>/raters/",
        views.campaign_raters,
        name="campaign-raters",
    ),
    path("rate/", views.rate_home, name="rate-home"),
    path("rate/<int:campaign_id>/", views.rate_next, name="rate-next"),
    path("rate/<int:campaign_id>/mine/", views.rate_history, name="rate-history"),
    path(
        "rate/assignments/<int:assignment_id>/",
        views.assignment_review,
        name="assignment-review",
    ),
    path(
        "rate/assignments/<int:assignment_id>/submit/",
        views.assignment_submit,
        name="assignment-submit",
    ),
    path(
        "rate/assignments/<int:assignment_id>/skip/",
        views.assignment_skip,
        name="assignment-skip",
    ),
]
