import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
application = get_wsgi_application()
# Import the URLconf (and so every view) now rather than on the first request: with
# gunicorn's --preload (flaskapp/launcher.py) that happens once, before the workers
# fork and before the port opens.
get_resolver().url_patterns  # noqa: B018
# The loaded application (modules, URLconf, settings) lives as long as the process:
# keep it out of every later garbage collection, so a full collection during a
# request scans only what requests made (bench/pages_all.py).
gc.collect()
gc.freeze()
