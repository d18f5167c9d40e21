from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    """Agreement, meta-evaluation, probes, charts and exports.

    No models: it reads the annotation and judging apps and writes only the cache.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "analysis"
    verbose_name = "Analysis"
