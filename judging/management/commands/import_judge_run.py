"""`manage.py import_judge_run FILE... --dataset NAME [--format flask_review|jsonl|csv]
[--model M] [--name N] [--map FIELD=COLUMN ...] [--strict]`.

Imports judge results made elsewhere as a completed judge run of kind `imported`. A
file with any problem imports nothing; every problem is printed with its line and
field. Warnings (a repeated same-value score, a skill the instruction is not assigned,
an empty review) are printed after the summary; `--strict` refuses them instead.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
    command_user,
)
from annotation.management.commands._import_cli import (
    add_strict_option,
    format_from_name,
    print_warnings,
    read_files,
    refused,
)
from annotation.models import ImportJob
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError
from judging.services.imports import FORMATS, GENERIC_FIELDS
from judging.services.run_imports import judge_run_import

# `.gz` is looked through; Parquet holds generic rows (id, model, skill, score, ...).
FORMAT_BY_SUFFIX = {
    ".csv": "csv",
    ".jsonl": "flask_review",
    ".json": "flask_review",
    ".parquet": "jsonl",
}


class Command(DataCommand):
    help = (
        "Import judge results made elsewhere (FLASK review files, one per model, or a "
        "generic JSONL/CSV of scores) as a judge run. A bad file changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser, creates=True)
        parser.add_argument(
            "--format",
            choices=FORMATS,
            help="Default: csv for .csv files, flask_review otherwise.",
        )
        parser.add_argument(
            "--model",
            help="Model name (FLASK review: instead of the file name; generic: for rows "
            "without a model column).",
        )
        parser.add_argument("--name", default="", help="Run name.")
        parser.add_argument(
            "--map",
            action="append",
            default=[],
            metavar="FIELD=COLUMN",
            help=f"Read FIELD from COLUMN (generic formats). Fields: "
            f"{', '.join(GENERIC_FIELDS)}.",
        )
        add_strict_option(
            parser,
            examples="a score repeated with the same value, a score for a skill the "
            "instruction is not assigned, an empty review",
        )
        parser.add_argument(
            "--user", help="Import as this user (default: the first admin)."
        )

    def handle(self, *args, **options):
        paths = [Path(p) for p in options["files"]]
        fmt = options["format"] or format_from_name(paths[0], FORMAT_BY_SUFFIX)
        if fmt is None:
            raise CommandError(
                f"{paths[0]}: cannot tell the format from the extension; pass --format"
            )
        dataset = command_dataset(options)
        user = command_user(options["user"])
        files = read_files(paths)
        try:
            run = judge_run_import(
                source=ImportJob.Source.COMMAND,
                dataset=dataset,
                user=user,
                name=options["name"],
                fmt=fmt,
                files=files,
                model=options["model"],
                mapping=options["map"] or None,
                strict=options["strict"],
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        scores = run.scores.count()
        self.stdout.write(
            f"Run {run.pk}: {run.name} · {run.total_calls:,} calls, {scores:,} scores, "
            f"models: {', '.join(run.models_included)}"
        )
        snapshot = run.settings_snapshot
        print_warnings(
            self,
            [w["text"] for w in snapshot.get("warnings", [])],
            total=snapshot.get("warning_count", 0),
        )
