"""`manage.py export --dataset NAME [--format csv|jsonl|parquet] [--out FILE]
[--campaign ID ...] [--run ID ...]`.

Writes every human and judge score of a dataset in the long export shape
(`analysis.exports.scores.FIELDS`), to stdout or to FILE, streamed in chunks (flat memory).
With --campaign and/or --run, only those campaigns' human scores and those runs'
judge scores are written. Prints a one-line summary to stderr when writing a file.
Parquet is binary: it needs --out.

A dataset with a development / test split is exported without its locked test
split's rows, and stderr says so: the command has no user to log a look at the test
split as, so test rows come only through the export API's ``include_test=1`` with a
reason, logged as a look (`exports.scores.export_test_rows`).
"""

from __future__ import annotations

from django.core.management.base import CommandError
from django.db import transaction

from analysis.exports.scores import (
    FORMATS,
    export_chunks,
    export_filters_check,
    export_format_check,
    export_test_rows,
)
from annotation.management.commands._import_cli import refused
from annotation.models import Dataset
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


class Command(DataCommand):
    help = (
        "Export a dataset's human and judge scores, one row per (response, skill, "
        "source), as CSV, JSON Lines or Parquet."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument("--out", help="Write to this file (default: stdout).")
        parser.add_argument(
            "--campaign",
            type=int,
            nargs="+",
            action="extend",
            help="Only these campaigns' human scores (repeatable).",
        )
        parser.add_argument(
            "--run",
            type=int,
            nargs="+",
            action="extend",
            help="Only these judge runs' scores (repeatable).",
        )

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"no dataset named {options['dataset']!r}")
        try:
            export_format_check(options["format"])
        except DomainError as exc:
            raise refused(exc, self.stderr) from None
        if options["format"] == "parquet" and not options["out"]:
            raise CommandError("--format parquet writes a binary file: give --out FILE")
        campaign_ids, run_ids = options["campaign"], options["run"]
        try:
            export_filters_check(
                dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from None
        # In a transaction, PostgreSQL's server-side cursor is a plain one that streams;
        # in autocommit Django declares it WITH HOLD, which the server first
        # materializes in full at commit.
        with transaction.atomic():
            self._write(dataset, campaign_ids, run_ids, options)

    def _write(self, dataset, campaign_ids, run_ids, options) -> None:
        counter = [0]
        test_rows = export_test_rows(dataset=dataset, user=None, include_test=False)
        if test_rows.has_split:
            self.stderr.write(
                f"{dataset.name}: {test_rows.label} (the locked test split; the "
                "export API's include_test=1 with a reason logs a look and adds them)"
            )
        chunks = export_chunks(
            dataset=dataset,
            fmt=options["format"],
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            counter=counter,
            test_rows=test_rows,
        )
        if options["out"]:
            with open(options["out"], "wb") as out:
                for chunk in chunks:
                    out.write(chunk)
            self.stderr.write(
                f"{counter[0]} scores of {dataset.name} written to {options['out']}"
            )
        else:
            for chunk in chunks:
                self.stdout.write(chunk.decode(), ending="")
