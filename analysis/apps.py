from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    """Agreement, meta-evaluation, probes, charts and exports.

    It reads the annotation and judging apps and writes only the cache. Its one
    table, `InputChange`, is written by PostgreSQL triggers, not by Python.
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "analysis"
    verbose_name = "Analysis"
