"""REST API of the annotation app, mounted at /api/ (flaskapp.urls).

Names: ``annotation_api:<entity>-<action>``. Researchers: ``campaigns/...``; raters:
``rate/...`` and ``pairwise/rate/...``.
"""

from django.urls import path

from annotation.api import datasets, pairwise, rating

app_name = "annotation_api"

urlpatterns = [
    path("rubrics/", datasets.RubricListApi.as_view(), name="rubric-list"),
    path("rubrics/import/", datasets.RubricImportApi.as_view(), name="rubric-import"),
    path(
        "rubrics/<int:rubric_id>/",
        datasets.RubricDetailApi.as_view(),
        name="rubric-detail",
    ),
    path("datasets/", datasets.DatasetListApi.as_view(), name="dataset-list"),
    path(
        "datasets/<int:dataset_id>/",
        datasets.DatasetDetailApi.as_view(),
        name="dataset-detail",
    ),
    path(
        "datasets/<int:dataset_id>/instructions/",
        datasets.InstructionListApi.as_view(),
        name="instruction-list",
    ),
    path(
        "datasets/<int:dataset_id>/responses/",
        datasets.ResponseListApi.as_view(),
        name="response-list",
    ),
    path(
        "datasets/<int:dataset_id>/gold/",
        datasets.DatasetGoldApi.as_view(),
        name="gold-list",
    ),
    path(
        "datasets/<int:dataset_id>/gold/import/",
        datasets.DatasetGoldImportApi.as_view(),
        name="gold-import",
    ),
    path(
        "datasets/<int:dataset_id>/gold/<int:response_id>/",
        datasets.DatasetGoldDetailApi.as_view(),
        name="gold-detail",
    ),
    # By name, not id: importing into a name that does not exist yet creates the dataset.
    path(
        "datasets/<str:dataset_name>/imports/",
        datasets.DatasetImportApi.as_view(),
        name="dataset-import",
    ),
    path(
        "instructions/<int:instruction_id>/",
        datasets.InstructionDetailApi.as_view(),
        name="instruction-detail",
    ),
    path("imports/", datasets.ImportJobListApi.as_view(), name="import-list"),
    path(
        "imports/<int:job_id>/",
        datasets.ImportJobDetailApi.as_view(),
        name="import-detail",
    ),
    path(
        "imports/<int:job_id>/confirm/",
        datasets.ImportJobConfirmApi.as_view(),
        name="import-confirm",
    ),
    path("campaigns/", rating.CampaignListApi.as_view(), name="campaign-list"),
    path(
        "campaigns/<int:campaign_id>/",
        rating.CampaignDetailApi.as_view(),
        name="campaign-detail",
    ),
    path(
        "campaigns/<int:campaign_id>/status/",
        rating.CampaignStatusApi.as_view(),
        name="campaign-status",
    ),
    path(
        "campaigns/<int:campaign_id>/critique/",
        rating.CampaignCritiqueApi.as_view(),
        name="campaign-critique",
    ),
    path(
        "campaigns/<int:campaign_id>/training/",
        rating.CampaignTrainingApi.as_view(),
        name="campaign-training",
    ),
    path(
        "campaigns/<int:campaign_id>/gold/",
        rating.CampaignGoldApi.as_view(),
        name="campaign-gold",
    ),
    path(
        "campaigns/<int:campaign_id>/raters/",
        rating.CampaignRatersApi.as_view(),
        name="campaign-raters",
    ),
    path(
        "campaigns/<int:campaign_id>/locks/",
        rating.CampaignLockListApi.as_view(),
        name="campaign-locks",
    ),
    path(
        "rate/campaigns/",
        rating.RaterCampaignListApi.as_view(),
        name="rater-campaign-list",
    ),
    path(
        "rate/campaigns/<int:campaign_id>/next/",
        rating.AssignmentNextApi.as_view(),
        name="assignment-next",
    ),
    path(
        "rate/campaigns/<int:campaign_id>/progress/",
        rating.RaterProgressApi.as_view(),
        name="rater-progress",
    ),
    path(
        "rate/assignments/<int:assignment_id>/",
        rating.AssignmentDetailApi.as_view(),
        name="assignment-detail",
    ),
    path(
        "rate/assignments/<int:assignment_id>/submit/",
        rating.RatingSubmitApi.as_view(),
        name="rating-submit",
    ),
    path(
        "rate/assignments/<int:assignment_id>/skip/",
        rating.AssignmentSkipApi.as_view(),
        name="assignment-skip",
    ),
    path(
        "rate/assignments/<int:assignment_id>/scores/",
        rating.RatingAmendApi.as_view(),
        name="rating-amend",
    ),
    path(
        "pairwise/campaigns/",
        pairwise.PairwiseCampaignListApi.as_view(),
        name="pairwise-campaign-list",
    ),
    path(
        "pairwise/campaigns/<int:campaign_id>/",
        pairwise.PairwiseCampaignDetailApi.as_view(),
        name="pairwise-campaign-detail",
    ),
    path(
        "pairwise/rate/campaigns/<int:campaign_id>/next/",
        pairwise.PairwiseNextApi.as_view(),
        name="pairwise-next",
    ),
    path(
        "pairwise/rate/campaigns/<int:campaign_id>/progress/",
        pairwise.PairwiseProgressApi.as_view(),
        name="pairwise-progress",
    ),
    path(
        "pairwise/rate/assignments/<int:assignment_id>/submit/",
        pairwise.PairwiseSubmitApi.as_view(),
        name="pairwise-submit",
    ),
    path(
        "pairwise/rate/assignments/<int:assignment_id>/skip/",
        pairwise.PairwiseSkipApi.as_view(),
        name="pairwise-skip",
    ),
    path(
        "pairwise/rate/assignments/<int:assignment_id>/preference/",
        pairwise.PairwiseAmendApi.as_view(),
        name="pairwise-amend",
    ),
]
