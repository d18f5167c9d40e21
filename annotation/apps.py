from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # Receivers that release a removed rater's locks (see annotation.signals).
        from annotation import signals  # noqa: F401
