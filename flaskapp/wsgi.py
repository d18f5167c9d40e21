import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
application = get_wsgi_application()
# The loaded application (modules, URLconf, settings) lives as long as the process:
# keep it out of every later garbage collection, so a full collection during a
# request scans only what requests made (bench/pages_all.py).
gc.collect()
gc.freeze()
