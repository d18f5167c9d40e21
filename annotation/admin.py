"""The Django admin's pages for what the app itself has no page for yet."""

from django.contrib import admin

from annotation.models import EvaluatedModel


@admin.register(EvaluatedModel)
class EvaluatedModelAdmin(admin.ModelAdmin):
    """Each evaluated model's family, per workspace (for the self-preference probes:
    a response is the judge's own when its model's family, as the dataset's workspace
    maps it, equals the judge config's). A name is unique within its workspace; the
    list shows and filters by workspace, so one lab's mapping is edited apart from
    another's."""

    list_display = ("name", "workspace", "family", "created_at")
    list_editable = ("family",)
    list_filter = ("workspace",)
    list_select_related = ("workspace",)
    search_fields = ("name", "family", "workspace__slug")
    fields = ("workspace", "name", "family")

    def get_readonly_fields(self, request, obj=None):
        """The workspace is chosen when a model is added, then fixed: moving a
        mapping would change another lab's probes."""
        return ("workspace",) if obj is not None else ()
