from django.urls import path

from . import views

app_name = "annotation"

urlpatterns = [
    path("datasets/", views.dataset_list, name="dataset-list"),
    path("datasets/<int:dataset_id>/", views.dataset_detail, name="dataset-detail"),
    path(
        "instructions/<int:instruction_id>/",
        views.instruction_detail,
        name="instruction-detail",
    ),
    path("rubrics/", views.rubric_list, name="rubric-list"),
    path("rubrics/import/", views.rubric_import, name="rubric-import"),
    path("rubrics/<int:rubric_id>/", views.rubric_detail, name="rubric-detail"),
    path("imports/", views.import_list, name="import-list"),
    path("imports/new/", views.import_new, name="import-new"),
    path("imports/<int:job_id>/", views.import_detail, name="import-detail"),
    path("imports/<int:job_id>/confirm/", views.import_confirm, name="import-confirm"),
]
