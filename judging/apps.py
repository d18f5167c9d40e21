from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"

    def ready(self) -> None:
        # The judge-results kind of the one upload page (annotation cannot import
        # judging, so judging adds its kind to annotation's registry).
        from judging.services import uploads  # noqa: F401
