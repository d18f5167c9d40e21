"""`manage.py export_preferences --dataset NAME [--format csv|jsonl] [--out FILE]`.

Writes every human preference and judge verdict of a dataset in one long format
(`analysis.exports.preferences.FIELDS`), to stdout or FILE, streamed in chunks (flat
memory). Prints a one-line summary to stderr when writing a file.
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction

from analysis.exports.preferences import FORMATS, preference_rows, preferences_encode
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
)
from flaskapp.commands import DataCommand


class Command(DataCommand):
    help = (
        "Export a dataset's human preferences and judge verdicts, one row each, as "
        "CSV or JSON Lines."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument("--out", help="Write to this file (default: stdout).")

    def handle(self, *args, **options):
        dataset = command_dataset(options)
        counts: Counter = Counter()

        def counted():
            for row in preference_rows(dataset=dataset):
                counts[row["source_kind"]] += 1
                yield row

        chunks = preferences_encode(counted(), options["format"])
        # In a transaction PostgreSQL's server-side cursors stream (see `export`).
        with transaction.atomic():
            if options["out"]:
                with open(options["out"], "w", encoding="utf-8", newline="") as out:
                    for chunk in chunks:
                        out.write(chunk)
                self.stderr.write(
                    f"{counts['human']} human preferences and {counts['judge']} judge "
                    f"verdicts of {dataset.name} written to {options['out']}"
                )
            else:
                for chunk in chunks:
                    self.stdout.write(chunk, ending="")
