"""The base of the data commands (imports, exports, judge runs, statistics)."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class DataCommand(BaseCommand):
    """A management command that reads or writes data and skips Django's system checks.

    The checks load the whole URLconf (every view and the libraries behind them: about
    1 s and 65 MB of peak memory on every run) and check nothing a data command relies
    on. `manage.py check`, `migrate` and the servers still run them.
    """

    requires_system_checks = []
