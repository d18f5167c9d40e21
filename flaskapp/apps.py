from django.apps import AppConfig


class FlaskappConfig(AppConfig):
    """The project package as an app, so that its system checks are registered."""

    name = "flaskapp"
    verbose_name = "FLASK Eval"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_in

        from flaskapp import checks  # noqa: F401 (registers the checks)
        from flaskapp.accounts import note_temporary_password

        user_logged_in.connect(note_temporary_password, dispatch_uid="temp-password")
