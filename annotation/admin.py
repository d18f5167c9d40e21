"""The Django admin's pages for what the app itself has no page for yet."""

from django.contrib import admin

from annotation.models import EvaluatedModel


@admin.register(EvaluatedModel)
class EvaluatedModelAdmin(admin.ModelAdmin):
    """Each evaluated model's family (for the self-preference probes: a response is
    the judge's own when its model's family equals the judge config's)."""

    list_display = ("name", "family", "created_at")
    list_editable = ("family",)
    search_fields = ("name", "family")
