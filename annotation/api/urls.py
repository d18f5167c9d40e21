"""REST API routes, mounted at /api/ (flaskapp.urls). Names: `api:<entity>-<action>`."""

from django.urls import path

from . import preferences, views

app_name = "api"

urlpatterns = [
    path("rubrics/", views.RubricListApi.as_view(), name="rubric-list"),
    path("rubrics/import/", views.RubricImportApi.as_view(), name="rubric-import"),
    path(
        "rubrics/<int:rubric_id>/",
        views.RubricDetailApi.as_view(),
        name="rubric-detail",
    ),
    path("datasets/", views.DatasetListApi.as_view(), name="dataset-list"),
    path(
        "datasets/<int:dataset_id>/",
        views.DatasetDetailApi.as_view(),
        name="dataset-detail",
    ),
    path(
        "datasets/<int:dataset_id>/instructions/",
        views.InstructionListApi.as_view(),
        name="instruction-list",
    ),
    path(
        "datasets/<int:dataset_id>/responses/",
        views.ResponseListApi.as_view(),
        name="response-list",
    ),
    # By name, not id: importing into a name that does not exist yet creates the dataset.
    path(
        "datasets/<str:dataset_name>/imports/",
        views.DatasetImportApi.as_view(),
        name="dataset-import",
    ),
    path(
        "datasets/<str:dataset_name>/preferences/",
        preferences.PreferenceImportApi.as_view(),
        name="dataset-preferences-import",
    ),
    path(
        "instructions/<int:instruction_id>/",
        views.InstructionDetailApi.as_view(),
        name="instruction-detail",
    ),
    path("imports/", views.ImportJobListApi.as_view(), name="import-list"),
    path(
        "imports/<int:job_id>/",
        views.ImportJobDetailApi.as_view(),
        name="import-detail",
    ),
    path(
        "imports/<int:job_id>/confirm/",
        views.ImportJobConfirmApi.as_view(),
        name="import-confirm",
    ),
]
