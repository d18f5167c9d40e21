#!/usr/bin/env python
"""Django's command-line utility for administrative tasks."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "flaskapp.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting the environment gets wrong (no DJANGO_SECRET_KEY, DJANGO_HTTPS=maybe):
        # say what to set, without a traceback.
        sys.stderr.write(f"error: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
