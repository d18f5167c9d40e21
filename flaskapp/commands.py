"""The base of the data commands (imports, exports, judge runs, statistics)."""

from __future__ import annotations

from django.core.management.base import BaseCommand


class DataCommand(BaseCommand):
    """A management command that reads or writes data and skips Django's system checks.

    The checks load the whole URLconf (every view and the libraries behind them: about
    1 s and 65 MB of peak memory on every run) and check nothing a data command relies
    on. `manage.py check`, `migrate` and the servers still run them. `--skip-checks`
    stays accepted (and changes nothing), so scripts that pass it keep working.
    """

    requires_system_checks = []

    def create_parser(self, prog_name, subcommand, **kwargs):
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.add_argument(
            "--skip-checks",
            action="store_true",
            help="Accepted for compatibility: this command runs no system checks.",
        )
        return parser
