"""Pages of the annotation app: datasets, rubrics, imports, campaigns, rating, pairwise.

Names: ``annotation:<entity>-<page>``.
"""

from django.urls import path

from annotation.items import PAIRWISE, POINTWISE
from annotation.views import (
    adjudication,
    campaigns,
    datasets,
    gold,
    loop,
    pairwise,
    raters,
    rating,
    uploads,
)

app_name = "annotation"

# The rater loop's pages (`views.loop`) are one set for both item kinds; the route
# says which kind it serves.
POINTWISE_ROUTE = {"kind": POINTWISE.campaign_kind}
PAIRWISE_ROUTE = {"kind": PAIRWISE.campaign_kind}

urlpatterns = [
    # datasets, rubrics, imports
    path("datasets/", datasets.dataset_list, name="dataset-list"),
    path("datasets/<int:dataset_id>/", datasets.dataset_detail, name="dataset-detail"),
    path("datasets/<int:dataset_id>/gold/", gold.dataset_gold, name="dataset-gold"),
    path(
        "datasets/<int:dataset_id>/taxonomy/",
        datasets.dataset_taxonomy,
        name="dataset-taxonomy",
    ),
    path(
        "datasets/<int:dataset_id>/gold/<int:response_id>/delete/",
        gold.dataset_gold_delete,
        name="dataset-gold-delete",
    ),
    path("rubrics/", datasets.rubric_list, name="rubric-list"),
    path("rubrics/import/", datasets.rubric_import, name="rubric-import"),
    path("rubrics/<int:rubric_id>/", datasets.rubric_detail, name="rubric-detail"),
    path("rubrics/new/", datasets.rubric_edit, name="rubric-new"),
    path("rubrics/preview/", datasets.rubric_preview, name="rubric-preview"),
    path("rubrics/<int:rubric_id>/edit/", datasets.rubric_edit, name="rubric-edit"),
    path(
        "rubrics/<int:rubric_id>/rubric.yaml", datasets.rubric_file, name="rubric-file"
    ),
    path("upload/", uploads.upload_new, name="upload-new"),
    path("imports/", datasets.import_list, name="import-list"),
    path("imports/new/", datasets.import_new, name="import-new"),
    path("imports/<int:job_id>/", datasets.import_detail, name="import-detail"),
    path(
        "imports/<int:job_id>/confirm/", datasets.import_confirm, name="import-confirm"
    ),
    # rating campaigns (researchers) and the rating UI (raters)
    path("campaigns/", campaigns.campaign_list, name="campaign-list"),
    path("campaigns/new/", campaigns.campaign_new, name="campaign-new"),
    path(
        "campaigns/<int:campaign_id>/",
        campaigns.campaign_detail,
        name="campaign-detail",
    ),
    path(
        "campaigns/<int:campaign_id>/status/",
        campaigns.campaign_status,
        name="campaign-status",
    ),
    path(
        "campaigns/<int:campaign_id>/raters/",
        campaigns.campaign_raters,
        name="campaign-raters",
    ),
    path(
        "campaigns/<int:campaign_id>/critique/",
        campaigns.campaign_critique,
        name="campaign-critique",
    ),
    path(
        "campaigns/<int:campaign_id>/training/",
        campaigns.campaign_training,
        name="campaign-training",
    ),
    path(
        "campaigns/<int:campaign_id>/rater-decision/",
        campaigns.campaign_rater_decision,
        name="campaign-rater-decision",
    ),
    path(
        "campaigns/<int:campaign_id>/qualification/<int:rater_id>/retry/",
        campaigns.campaign_qualification_retry,
        name="campaign-qualification-retry",
    ),
    # adjudication (reviewers, researchers and admins)
    path("adjudication/", adjudication.adjudication_home, name="adjudication-home"),
    path(
        "campaigns/<int:campaign_id>/adjudication/",
        adjudication.adjudication_queue,
        name="adjudication-queue",
    ),
    path(
        "campaigns/<int:campaign_id>/adjudication/rule/",
        adjudication.adjudication_rule,
        name="adjudication-rule",
    ),
    path(
        "campaigns/<int:campaign_id>/adjudication/<int:response_id>/",
        adjudication.adjudication_item,
        name="adjudication-item",
    ),
    path(
        "campaigns/<int:campaign_id>/history/",
        adjudication.score_history,
        name="adjudication-history",
    ),
    # rater accounts (researchers and admins)
    path("raters/", raters.rater_list, name="rater-list"),
    path("raters/new/", raters.rater_new, name="rater-new"),
    path(
        "raters/<int:rater_id>/password/",
        raters.rater_password,
        name="rater-password",
    ),
    path(
        "raters/<int:rater_id>/campaigns/",
        raters.rater_campaign_add,
        name="rater-campaign-add",
    ),
    path("rate/", rating.rate_home, name="rate-home"),
    path("rate/<int:campaign_id>/", loop.item_next, POINTWISE_ROUTE, name="rate-next"),
    path(
        "rate/<int:campaign_id>/mine/",
        loop.item_history,
        POINTWISE_ROUTE,
        name="rate-history",
    ),
    path(
        "rate/assignments/<int:assignment_id>/",
        loop.item_amend,
        POINTWISE_ROUTE,
        name="assignment-review",
    ),
    path(
        "rate/assignments/<int:assignment_id>/submit/",
        loop.item_submit,
        POINTWISE_ROUTE,
        name="assignment-submit",
    ),
    path(
        "rate/assignments/<int:assignment_id>/skip/",
        loop.item_skip,
        POINTWISE_ROUTE,
        name="assignment-skip",
    ),
    # pairwise campaigns and the raters' comparison UI
    path("pairwise/", pairwise.pairwise_home, name="pairwise-home"),
    path(
        "pairwise/campaigns/new/",
        pairwise.pairwise_campaign_new,
        name="pairwise-campaign-new",
    ),
    path(
        "pairwise/campaigns/<int:campaign_id>/",
        pairwise.pairwise_campaign_detail,
        name="pairwise-campaign-detail",
    ),
    path(
        "pairwise/campaigns/<int:campaign_id>/status/",
        pairwise.pairwise_campaign_status,
        name="pairwise-campaign-status",
    ),
    path(
        "pairwise/compare/<int:campaign_id>/",
        loop.item_next,
        PAIRWISE_ROUTE,
        name="pairwise-next",
    ),
    path(
        "pairwise/compare/<int:campaign_id>/mine/",
        loop.item_history,
        PAIRWISE_ROUTE,
        name="pairwise-history",
    ),
    path(
        "pairwise/compare/assignments/<int:assignment_id>/submit/",
        loop.item_submit,
        PAIRWISE_ROUTE,
        name="pairwise-submit",
    ),
    path(
        "pairwise/compare/assignments/<int:assignment_id>/amend/",
        loop.item_amend,
        PAIRWISE_ROUTE,
        name="pairwise-amend",
    ),
    path(
        "pairwise/compare/assignments/<int:assignment_id>/skip/",
        loop.item_skip,
        PAIRWISE_ROUTE,
        name="pairwise-skip",
    ),
]
