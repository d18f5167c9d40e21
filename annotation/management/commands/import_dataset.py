"""`manage.py import_dataset FILE --dataset NAME [--format jsonl|csv] [--rubric NAME]
[--map F=COL ...] [--map score.KEY=COL ...]`.

Imports a generic JSONL, CSV or Parquet file of instructions, optionally with model
responses and the human scores people gave them on the dataset's rubric (which
columns are scores: `annotation.importers.scores`). The scores become one closed
campaign of the dataset (`annotation.services.score_imports`).
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import CommandError
from django.utils import timezone

from annotation.importers.generic import FIELDS
from annotation.management.commands._cli import command_workspace
from annotation.management.commands._import_cli import (
    add_file_options,
    format_from_name,
    print_report,
    read_files,
    refused,
)
from annotation.services.import_jobs import import_job_record_command
from annotation.services.imports import dataset_import_files, rubric_named
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


class Command(DataCommand):
    help = (
        "Import a generic JSONL, CSV or Parquet file (one instruction per row, "
        "optionally with a model, its response and human scores per criterion) into "
        "a dataset. A bad file changes nothing; every problem is printed with its "
        "line and field."
    )

    def add_arguments(self, parser):
        add_file_options(parser, fields=FIELDS)
        parser.add_argument(
            "--model", help="Model name for rows with a response but no model column."
        )
        parser.add_argument(
            "--rubric",
            help="A new dataset's rubric, by name (its latest version) or id; default "
            "the built-in FLASK rubric. Ignored for an existing dataset. Columns named "
            "like a criterion's key hold its human scores; map others with --map "
            "score.KEY=COLUMN (and rationale.KEY=COLUMN); a rater column names who "
            "scored.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Validate and count; write nothing."
        )

    def handle(self, *args, **options):
        started = time.perf_counter()
        path = Path(options["file"])
        fmt = options["format"] or format_from_name(path)
        if fmt is None:
            raise CommandError(
                f"{path}: cannot tell the format from the extension {path.suffix!r}; "
                "pass --format jsonl or --format csv"
            )
        service_options: dict = {}
        if options["map"]:
            service_options["mapping"] = options["map"]
        if options["model"]:
            service_options["model"] = options["model"]
        if options["strict"]:
            service_options["strict"] = True
        if options["rubric"]:
            try:
                service_options["rubric_id"] = rubric_named(options["rubric"]).pk
            except DomainError as exc:
                raise refused(exc, self.stderr) from exc
        files = read_files([path])
        record = {
            "dataset_name": options["dataset"],
            "fmt": fmt,
            "paths": [path],
            "options": service_options,
            "started_at": timezone.now(),
            "workspace": command_workspace(options),
        }
        try:
            report = dataset_import_files(
                dataset_name=options["dataset"],
                fmt=fmt,
                files=files,
                options=service_options,
                dry_run=options["dry_run"],
                workspace=record["workspace"],
            )
        except DomainError as exc:
            if not options["dry_run"]:
                import_job_record_command(**record, error=exc)
            raise refused(exc, self.stderr) from exc
        print_report(self, report, time.perf_counter() - started)
        if not options["dry_run"]:
            job = import_job_record_command(**record, report=report)
            self.stdout.write(f"  recorded:      import {job.pk} in the import history")
