"""URLs of the judging pages (researchers and admins)."""

from django.urls import path

from . import views, views_agreement, views_metaeval

app_name = "judging"

urlpatterns = [
    path("judges/", views.judge_list, name="judge-list"),
    path("judges/new/", views.judge_new, name="judge-new"),
    path("prompts/", views.prompt_list, name="prompt-list"),
    path("runs/", views.run_list, name="run-list"),
    path("runs/new/", views.run_new, name="run-new"),
    path("runs/import/", views.run_import, name="run-import"),
    path("runs/<int:run_id>/", views.run_detail, name="run-detail"),
    path("runs/<int:run_id>/start/", views.run_start, name="run-start"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/retry/", views.run_retry, name="run-retry"),
    path("runs/<int:run_id>/results/", views.run_results, name="run-results"),
    path(
        "runs/<int:run_id>/suggestions/",
        views.run_suggestions,
        name="run-suggestions",
    ),
    path(
        "runs/<int:run_id>/suggestions/accept-all/",
        views.suggestion_accept_all_view,
        name="suggestion-accept-all",
    ),
    path(
        "runs/<int:run_id>/suggestions/<int:suggestion_id>/accept/",
        views.suggestion_accept_view,
        name="suggestion-accept",
    ),
    path(
        "runs/<int:run_id>/suggestions/<int:suggestion_id>/reject/",
        views.suggestion_reject_view,
        name="suggestion-reject",
    ),
    path("agreement/", views_agreement.agreement_home, name="agreement-home"),
    path(
        "agreement/<int:dataset_id>/",
        views_agreement.agreement_dashboard,
        name="agreement",
    ),
    path(
        "agreement/<int:dataset_id>/<slug:table>.csv",
        views_agreement.agreement_csv,
        name="agreement-csv",
    ),
    path(
        "agreement/<int:dataset_id>/charts/<slug:kind>.svg",
        views_agreement.agreement_chart,
        name="agreement-chart",
    ),
    path(
        "agreement/<int:dataset_id>/skills/<slug:skill_key>/",
        views_agreement.agreement_skill,
        name="agreement-skill",
    ),
    path(
        "agreement/<int:dataset_id>/skills/<slug:skill_key>/disagreements.csv",
        views_agreement.agreement_skill_csv,
        name="agreement-skill-csv",
    ),
    path("metaeval/", views_metaeval.metaeval_home, name="metaeval-home"),
    path("metaeval/<int:dataset_id>/", views_metaeval.metaeval_report, name="metaeval"),
    path(
        "metaeval/<int:dataset_id>/probes/",
        views_metaeval.metaeval_pointwise_probes,
        name="metaeval-probes",
    ),
]
