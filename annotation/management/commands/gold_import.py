"""`manage.py gold_import FILE --dataset NAME`: mark responses as gold items.

FILE (CSV, JSON Lines or Parquet, possibly gzip-compressed) has one row per response:
`response_id`, or `instruction` (the instruction's id in the dataset) and `model`;
the expected scores as criterion columns or a `scores` object; optional `tolerance`
(points a rater may be off, default 0), `explanation` and `kind` (gold or
attention). All rows or none: every problem is printed with its line and field.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
    command_user,
)
from annotation.management.commands._import_cli import refused
from annotation.services.gold import gold_import_file
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


class Command(DataCommand):
    help = (
        "Mark responses of a dataset as gold items (known answers) from a CSV, JSON "
        "Lines or Parquet file. A bad file changes nothing; every problem is printed "
        "with its line and field."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="The gold file (.csv, .jsonl, .parquet).")
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument(
            "--format",
            choices=["jsonl", "csv"],
            help="jsonl or csv (default: csv for a .csv name; Parquet and gzip are "
            "recognised by content).",
        )
        parser.add_argument(
            "--user", help="Act as this researcher or admin (default: an admin)."
        )

    def handle(self, *args, **options):
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
        dataset = command_dataset(options)
        user = command_user(options["user"])
        try:
            result = gold_import_file(
                dataset=dataset,
                data=path,
                file=path.name,
                fmt=options["format"],
                user=user,
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        self.stdout.write(
            f"Dataset '{dataset.name}': {result['created']} gold item(s) created, "
            f"{result['updated']} updated"
        )
