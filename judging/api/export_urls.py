"""Score export route, mounted at /api/ (flaskapp.urls). Name: `export_api:dataset-export`."""

from django.urls import path

from .export_views import DatasetExportApi

app_name = "export_api"

urlpatterns = [
    path(
        "datasets/<int:dataset_id>/export/",
        DatasetExportApi.as_view(),
        name="dataset-export",
    ),
]
