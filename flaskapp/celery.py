"""The Celery application. Configuration comes from Django settings (CELERY_*)."""

import os

from celery import Celery
from celery.signals import after_setup_logger

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")

app = Celery("flaskapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@after_setup_logger.connect
def _quiet_worker_logs(logger=None, **kwargs):
    """The worker's terminal without the upkeep's INFO lines (flaskapp/logs.py)."""
    from flaskapp.logs import quiet_worker_logs

    quiet_worker_logs(logger)
