from django.apps import AppConfig


class FlaskappConfig(AppConfig):
    """The project package as an app, so that its system checks are registered."""

    name = "flaskapp"
    verbose_name = "FLASK Eval"

    def ready(self) -> None:
        from flaskapp import checks  # noqa: F401 (registers the checks)
