"""Pages of the judging app: judge configs, prompts, runs (researchers and admins).

Names: ``judging:<entity>-<page>``.
"""

from django.urls import path

from judging.views import configs, derived, keys, prompts, suggestions
from judging.views import runs as views

app_name = "judging"

urlpatterns = [
    path("judges/", configs.judge_list, name="judge-list"),
    path("judges/new/", configs.judge_new, name="judge-new"),
    path("judges/<int:config_id>/", configs.judge_detail, name="judge-detail"),
    path("judges/<int:config_id>/edit/", configs.judge_edit, name="judge-edit"),
    path(
        "judges/<int:config_id>/test/",
        configs.judge_test_connection,
        name="judge-test",
    ),
    path("keys/", keys.key_home, name="key-home"),
    path("keys/<int:key_id>/replace/", keys.key_replace, name="key-replace"),
    path("keys/<int:key_id>/delete/", keys.key_delete, name="key-delete"),
    path("workspaces/<int:workspace_id>/keys/", keys.key_list, name="key-list"),
    path("prompts/", prompts.prompt_list, name="prompt-list"),
    path("prompts/diff/", prompts.prompt_diff_page, name="prompt-diff"),
    path(
        "prompts/<int:prompt_id>/preview/",
        prompts.prompt_preview,
        name="prompt-preview",
    ),
    path("runs/", views.run_list, name="run-list"),
    path("runs/new/", views.run_new, name="run-new"),
    path("runs/import/", views.run_import, name="run-import"),
    path("runs/panel/new/", derived.run_panel_new, name="run-panel-new"),
    path("runs/<int:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<int:run_id>/start/", views.run_start, name="run-start"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/retry/", views.run_retry, name="run-retry"),
    path("runs/<int:run_id>/calibrate/", derived.run_calibrate, name="run-calibrate"),
    path("runs/<int:run_id>/results/", views.run_results, name="run-results"),
    path(
        "runs/<int:run_id>/suggestions/",
        suggestions.run_suggestions,
        name="run-suggestions",
    ),
    path(
        "runs/<int:run_id>/suggestions/accept-all/",
        suggestions.suggestion_accept_all_view,
        name="suggestion-accept-all",
    ),
    path(
        "runs/<int:run_id>/suggestions/<int:suggestion_id>/accept/",
        suggestions.suggestion_accept_view,
        name="suggestion-accept",
    ),
    path(
        "runs/<int:run_id>/suggestions/<int:suggestion_id>/reject/",
        suggestions.suggestion_reject_view,
        name="suggestion-reject",
    ),
]
