"""Judging API routes, mounted at /api/ (flaskapp.urls). Names: `judging_api:<name>`."""

from django.urls import path

from . import agreement_views, views

app_name = "judging_api"

urlpatterns = [
    path("judges/", views.JudgeConfigListApi.as_view(), name="judge-list"),
    path(
        "judges/<int:config_id>/",
        views.JudgeConfigDetailApi.as_view(),
        name="judge-detail",
    ),
    path("runs/", views.JudgeRunListApi.as_view(), name="run-list"),
    path("runs/import/", views.JudgeRunImportApi.as_view(), name="run-import"),
    path("runs/<int:run_id>/", views.JudgeRunDetailApi.as_view(), name="run-detail"),
    path(
        "runs/<int:run_id>/start/", views.JudgeRunStartApi.as_view(), name="run-start"
    ),
    path(
        "runs/<int:run_id>/cancel/",
        views.JudgeRunCancelApi.as_view(),
        name="run-cancel",
    ),
    path(
        "runs/<int:run_id>/retry-failed/",
        views.JudgeRunRetryFailedApi.as_view(),
        name="run-retry-failed",
    ),
    path(
        "runs/<int:run_id>/calls/", views.JudgeCallListApi.as_view(), name="call-list"
    ),
    path(
        "runs/<int:run_id>/scores/",
        views.JudgeScoreListApi.as_view(),
        name="score-list",
    ),
    path(
        "runs/<int:run_id>/verdicts/",
        views.PairwiseVerdictListApi.as_view(),
        name="verdict-list",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/",
        agreement_views.AgreementApi.as_view(),
        name="agreement",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/sources/",
        agreement_views.AgreementSourcesApi.as_view(),
        name="agreement-sources",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/slices/",
        agreement_views.AgreementSlicesApi.as_view(),
        name="agreement-slices",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/disagreements/",
        agreement_views.AgreementDisagreementsApi.as_view(),
        name="agreement-disagreements",
    ),
    path(
        "datasets/<int:dataset_id>/metaeval/",
        agreement_views.MetaevalApi.as_view(),
        name="metaeval",
    ),
    path(
        "datasets/<int:dataset_id>/probes/",
        agreement_views.PointwiseProbesApi.as_view(),
        name="pointwise-probes",
    ),
]
