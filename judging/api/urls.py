"""REST API of the judging app, mounted at /api/ (flaskapp.urls). Names: ``judging_api:<name>``."""

from django.urls import path

from judging.api import derived, keys, preferences, tags, views

app_name = "judging_api"

urlpatterns = [
    # Votes and a judge's verdicts from one file: it writes to both apps.
    path(
        "datasets/<str:dataset_name>/preferences/",
        preferences.PreferenceImportApi.as_view(),
        name="dataset-preferences-import",
    ),
    path("judges/", views.JudgeConfigListApi.as_view(), name="judge-list"),
    path(
        "judges/<int:config_id>/",
        views.JudgeConfigDetailApi.as_view(),
        name="judge-detail",
    ),
    path("keys/", keys.StoredKeyListApi.as_view(), name="key-list"),
    path("keys/<int:key_id>/", keys.StoredKeyDetailApi.as_view(), name="key-detail"),
    path("runs/", views.JudgeRunListApi.as_view(), name="run-list"),
    path("runs/import/", views.JudgeRunImportApi.as_view(), name="run-import"),
    path("runs/panel/", derived.JudgeRunPanelCreateApi.as_view(), name="run-panel"),
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
        "runs/<int:run_id>/calibrate/",
        derived.JudgeRunCalibrateApi.as_view(),
        name="run-calibrate",
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
        "runs/<int:run_id>/critiques/",
        views.JudgeCritiqueListApi.as_view(),
        name="critique-list",
    ),
    path(
        "runs/<int:run_id>/failure-tags/",
        tags.FailureTagListApi.as_view(),
        name="run-failure-tags",
    ),
    path(
        "prompts/<int:prompt_id>/criterion-notes/",
        tags.CriterionNoteListApi.as_view(),
        name="prompt-criterion-notes",
    ),
    path(
        "runs/<int:run_id>/verdicts/",
        views.PairwiseVerdictListApi.as_view(),
        name="verdict-list",
    ),
]
