from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # Receivers that release a removed rater's locks (see annotation.signals).
        # A score's history records its changes, not the deletion of a whole dataset
        # or campaign: without delete receivers those stay set-based (fast) deletes.
        from django.db.models.signals import post_delete, pre_delete

        from annotation import signals  # noqa: F401
        from annotation.models import HumanScore
        from annotation.models.campaigns import SCORE_HISTORY

        pre_delete.disconnect(SCORE_HISTORY.pre_delete, sender=HumanScore)
        post_delete.disconnect(SCORE_HISTORY.post_delete, sender=HumanScore)

        # The kernel's account services (flaskapp.people) mark a password temporary
        # through this app's table without importing the app (flaskapp.credentials).
        from annotation.services.raters import password_mark_temporary
        from flaskapp.credentials import temporary_password_recorder_register

        temporary_password_recorder_register(password_mark_temporary)
