"""`manage.py export --dataset NAME [--format csv|jsonl|parquet|hf] [--out FILE]
[--campaign ID ...] [--run ID ...] [--include-test --reason TEXT [--user NAME]]`.

Writes every human and judge score of a dataset in the long export shape
(`analysis.exports.scores.FIELDS`), to stdout or to FILE, streamed in chunks (flat memory).
With --campaign and/or --run, only those campaigns' human scores and those runs'
judge scores are written. Prints a one-line summary to stderr when writing a file.
Parquet is binary: it needs --out. `--format hf --out DIR` writes the dataset with all
its scores as a Hugging Face dataset directory (`analysis.exports.hub`).

A dataset with a development / test split is exported without its locked test
split's rows, and stderr says so. `--include-test` with a `--reason` adds them; the
export is then logged first as a look at the test split, as the export API's
``include_test=1`` is (`exports.scores.export_test_rows`), by `--user` (a researcher
or admin; default: the operator's admin account, as every command acts).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError
from django.db import transaction

from analysis.exports.hub import hub_export_write
from analysis.exports.scores import (
    FORMATS,
    export_chunks,
    export_filters_check,
    export_format_check,
    export_test_rows,
)
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
    command_user,
)
from annotation.management.commands._import_cli import refused
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


class Command(DataCommand):
    help = (
        "Export a dataset's human and judge scores, one row per (response, skill, "
        "source), as CSV, JSON Lines or Parquet; or the dataset with all its scores "
        "as a Hugging Face dataset directory (--format hf --out DIR)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument(
            "--out",
            help="Write to this file (default: stdout); with --format hf, the "
            "directory to create (Hugging Face's save_to_disk layout, with a "
            "README.md dataset card).",
        )
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
        parser.add_argument(
            "--include-test",
            action="store_true",
            help="Also export the locked test split's rows (needs --reason; logged "
            "as a look at the test split).",
        )
        parser.add_argument("--reason", default="", help="Why the test split is read.")
        parser.add_argument(
            "--user",
            help="Log the look as this researcher or admin (default: an admin).",
        )

    def handle(self, *args, **options):
        dataset = command_dataset(options)
        try:
            export_format_check(options["format"])
        except DomainError as exc:
            raise refused(exc, self.stderr) from None
        if options["format"] == "parquet" and not options["out"]:
            raise CommandError("--format parquet writes a binary file: give --out FILE")
        if options["format"] == "hf" and not options["out"]:
            raise CommandError("--format hf writes a directory: give --out DIR")
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
        include = options["include_test"]
        try:
            test_rows = export_test_rows(
                dataset=dataset,
                user=command_user(options["user"]) if include else None,
                include_test=include,
                reason=options["reason"],
                run_ids=run_ids,
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from None
        if test_rows.has_split:
            self.stderr.write(
                f"{dataset.name}: {test_rows.label}"
                + (
                    ""
                    if include
                    else " (--include-test with --reason adds them, logged)"
                )
            )
        if options["format"] == "hf":
            try:
                written = hub_export_write(
                    dataset=dataset,
                    out=Path(options["out"]),
                    campaign_ids=campaign_ids,
                    run_ids=run_ids,
                    test_rows=test_rows,
                )
            except DomainError as exc:
                raise refused(exc, self.stderr) from None
            self.stderr.write(
                f"{written.responses} responses and {written.scores} scores of "
                f"{dataset.name} written to {written.path} (load it with "
                "datasets.load_from_disk; publish it with huggingface-cli upload)"
            )
            return
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
