"""Training-data and preference export routes, mounted at /api/ (flaskapp.urls).

Names: `training_api:dataset-training-export`, `training_api:dataset-preferences-export`.
"""

from django.urls import path

from .training_views import DatasetPreferencesExportApi, DatasetTrainingExportApi

app_name = "training_api"

urlpatterns = [
    path(
        "datasets/<int:dataset_id>/training-export/",
        DatasetTrainingExportApi.as_view(),
        name="dataset-training-export",
    ),
    path(
        "datasets/<int:dataset_id>/preferences/export/",
        DatasetPreferencesExportApi.as_view(),
        name="dataset-preferences-export",
    ),
]
