from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    """Agreement, meta-evaluation, probes, charts and exports.

    It reads the annotation and judging apps and writes only the cache and its own
    two tables: `InputChange`, written by PostgreSQL triggers, not by Python, and
    `Job`, the background jobs of heavy work (`analysis.services.jobs`).
    """

    default_auto_field = "django.db.models.BigAutoField"
    name = "analysis"
    verbose_name = "Analysis"
