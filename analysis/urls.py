"""Pages of the analysis app: agreement dashboards, meta-evaluation and the scores
browser (instruction pages with every score, a dataset's filtered responses); researchers.

Names: ``analysis:<entity>-<page>``.
"""

from django.urls import path

from analysis.views import (
    agreement,
    browse,
    choose,
    consistency,
    disagreements,
    experiments,
    jobs,
    leaderboard,
    metaeval,
    ppi,
    profiles,
    reliability,
    report,
    run_diff,
    sampling,
)

app_name = "analysis"

urlpatterns = [
    # The navigation's "Results": every per-dataset and per-campaign result page.
    path("results/", choose.results_home, name="results"),
    path(
        "campaigns/sampling/new/",
        sampling.sampling_campaign_new,
        name="sampling-campaign-new",
    ),
    path(
        "campaigns/<int:campaign_id>/sampling/",
        sampling.campaign_sampling,
        name="campaign-sampling",
    ),
    path(
        "runs/<int:run_id>/consistency/",
        consistency.run_consistency,
        name="run-consistency",
    ),
    path(
        "instructions/<int:instruction_id>/",
        browse.instruction_detail,
        name="instruction-detail",
    ),
    path(
        "datasets/<int:dataset_id>/responses/",
        browse.dataset_responses,
        name="dataset-responses",
    ),
    path(
        "reliability/<int:campaign_id>/",
        reliability.campaign_reliability_page,
        name="reliability",
    ),
    path("agreement/", agreement.agreement_home, name="agreement-home"),
    path(
        "agreement/<int:dataset_id>/",
        agreement.agreement_dashboard,
        name="agreement",
    ),
    path(
        "agreement/<int:dataset_id>/<slug:table>.csv",
        agreement.agreement_csv,
        name="agreement-csv",
    ),
    path(
        "agreement/<int:dataset_id>/charts/<slug:kind>.svg",
        agreement.agreement_chart,
        name="agreement-chart",
    ),
    path(
        "agreement/<int:dataset_id>/skills/<slug:skill_key>/",
        agreement.agreement_skill,
        name="agreement-skill",
    ),
    path(
        "agreement/<int:dataset_id>/skills/<slug:skill_key>/disagreements.csv",
        agreement.agreement_skill_csv,
        name="agreement-skill-csv",
    ),
    path(
        "runs/<int:run_id>/disagreements/",
        disagreements.run_disagreements,
        name="run-disagreements",
    ),
    path(
        "runs/<int:run_id>/disagreements/tags/",
        disagreements.run_disagreement_tag_add,
        name="run-disagreement-tag-add",
    ),
    path(
        "runs/<int:run_id>/disagreements/tags/remove/",
        disagreements.run_disagreement_tag_remove,
        name="run-disagreement-tag-remove",
    ),
    path(
        "runs/<int:run_id>/disagreements/notes/",
        disagreements.run_criterion_note_add,
        name="run-criterion-note-add",
    ),
    path(
        "runs/<int:run_id>/diff/<int:other_id>/",
        run_diff.run_diff,
        name="run-diff",
    ),
    path(
        "datasets/<int:dataset_id>/workbench/",
        experiments.dataset_workbench,
        name="dataset-workbench",
    ),
    path("experiments/", experiments.experiment_list, name="experiment-list"),
    path(
        "experiments/<int:experiment_id>/",
        experiments.experiment_detail,
        name="experiment",
    ),
    path(
        "leaderboard/<int:dataset_id>/profiles/",
        profiles.leaderboard_profiles,
        name="leaderboard-profiles",
    ),
    path("estimates/<int:dataset_id>/", ppi.dataset_estimates, name="estimates"),
    path(
        "estimates/<int:dataset_id>/win-rates/",
        ppi.dataset_win_rates,
        name="estimates-win-rates",
    ),
    path("metaeval/", metaeval.metaeval_home, name="metaeval-home"),
    path("metaeval/<int:dataset_id>/", metaeval.metaeval_report, name="metaeval"),
    path(
        "metaeval/<int:dataset_id>/probes/",
        metaeval.metaeval_pointwise_probes,
        name="metaeval-probes",
    ),
    path(
        "leaderboard/<int:dataset_id>/pairwise/",
        leaderboard.leaderboard_pairwise,
        name="leaderboard-pairwise",
    ),
    path("jobs/<int:job_id>/", jobs.job_detail, name="job-detail"),
    path("jobs/<int:job_id>/download/", jobs.job_download, name="job-download"),
    path(
        "report/<int:dataset_id>/",
        report.dataset_report,
        name="dataset-report",
    ),
]
