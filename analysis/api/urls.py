"""REST API of the analysis app, mounted at /api/ (flaskapp.urls).

Agreement, meta-evaluation, probes and the exports. Names: ``analysis_api:<name>``.
"""

from django.urls import path

from analysis.api import (
    agreement,
    classification,
    consistency,
    experiments,
    exports,
    reliability,
    training,
)

app_name = "analysis_api"

urlpatterns = [
    path(
        "runs/<int:run_id>/consistency/",
        consistency.RunConsistencyApi.as_view(),
        name="run-consistency",
    ),
    path(
        "campaigns/<int:campaign_id>/reliability/",
        reliability.CampaignReliabilityApi.as_view(),
        name="reliability",
    ),
    path(
        "campaigns/<int:campaign_id>/rater-models/",
        reliability.CampaignRaterModelsApi.as_view(),
        name="rater-models",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/",
        agreement.AgreementApi.as_view(),
        name="agreement",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/sources/",
        agreement.AgreementSourcesApi.as_view(),
        name="agreement-sources",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/slices/",
        agreement.AgreementSlicesApi.as_view(),
        name="agreement-slices",
    ),
    path(
        "datasets/<int:dataset_id>/agreement/disagreements/",
        agreement.AgreementDisagreementsApi.as_view(),
        name="agreement-disagreements",
    ),
    path(
        "datasets/<int:dataset_id>/classification/",
        classification.ClassificationApi.as_view(),
        name="classification",
    ),
    path(
        "datasets/<int:dataset_id>/metaeval/",
        agreement.MetaevalApi.as_view(),
        name="metaeval",
    ),
    path(
        "datasets/<int:dataset_id>/probes/",
        agreement.PointwiseProbesApi.as_view(),
        name="pointwise-probes",
    ),
    path(
        "datasets/<int:dataset_id>/export/",
        exports.DatasetExportApi.as_view(),
        name="dataset-export",
    ),
    path(
        "datasets/<int:dataset_id>/training-export/",
        training.DatasetTrainingExportApi.as_view(),
        name="dataset-training-export",
    ),
    path(
        "datasets/<int:dataset_id>/preferences/export/",
        training.DatasetPreferencesExportApi.as_view(),
        name="dataset-preferences-export",
    ),
    path(
        "experiments/", experiments.ExperimentListApi.as_view(), name="experiment-list"
    ),
    path(
        "experiments/<int:experiment_id>/",
        experiments.ExperimentDetailApi.as_view(),
        name="experiment",
    ),
    path(
        "experiments/<int:experiment_id>/runs/",
        experiments.ExperimentRunsApi.as_view(),
        name="experiment-runs",
    ),
    path(
        "experiments/<int:experiment_id>/baseline/",
        experiments.ExperimentBaselineApi.as_view(),
        name="experiment-baseline",
    ),
    path(
        "experiments/<int:experiment_id>/test-looks/",
        experiments.ExperimentTestLookApi.as_view(),
        name="experiment-test-looks",
    ),
    path(
        "datasets/<int:dataset_id>/split/",
        experiments.DatasetSplitApi.as_view(),
        name="dataset-split",
    ),
]
