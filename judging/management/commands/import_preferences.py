"""`manage.py import_preferences FILE --dataset NAME [--format jsonl|csv] [--map F=COL ...]
[--label-scheme one-based|zero-based] [--judge NAME] [--swapped-mapped-back] [--dry-run]`.

Imports pairwise preference data (prompt, two responses, a human label) and, with
`--judge`, a judge's verdicts on the same pairs. Fields and accepted values: see
`annotation.importers.preferences`.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import CommandError

from annotation.importers.preferences import FIELDS, LABEL_SCHEMES
from annotation.management.commands._cli import command_workspace
from annotation.management.commands._import_cli import (
    add_file_options,
    format_from_name,
    print_warnings,
    read_files,
    refused,
)
from annotation.models import ImportJob
from annotation.services.preference_imports import preferences_import
from annotation.services.preferences import PreferenceImportReport
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError, Problem
from judging.services.verdicts import imported_verdicts


class Command(DataCommand):
    help = (
        "Import pairwise preferences (prompt, response_1, response_2, label 1/2/tie) "
        "from JSONL or CSV into a dataset, optionally with a judge's verdicts in both "
        "orders. A bad file changes nothing; every problem is printed with its line "
        "and field. Importing the same rows again adds nothing."
    )

    def add_arguments(self, parser):
        add_file_options(
            parser, fields=FIELDS, dataset_help="Dataset name (created if new)."
        )
        parser.add_argument(
            "--label-scheme",
            choices=LABEL_SCHEMES,
            default="one-based",
            help="one-based: 1, 2, tie (default). zero-based: 0 = response 1, "
            "1 = response 2, 2 = tie (applies to numeric verdicts too).",
        )
        parser.add_argument(
            "--judge",
            metavar="NAME",
            help="Also import judge verdicts (fields verdict, verdict_swapped) as an "
            "imported run of the judge config NAME (created if missing). Rows may "
            "then have no label.",
        )
        parser.add_argument(
            "--swapped-mapped-back",
            action="store_true",
            help="verdict_swapped already uses the original numbering (1 = "
            "response_1); without it, it names the presented position (A or 1 = "
            "response_2, shown first).",
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
        ((name, data),) = read_files([path])
        try:
            report = preferences_import(
                source=ImportJob.Source.COMMAND,
                dataset_name=options["dataset"],
                file=name,
                data=data,
                fmt=fmt,
                mapping=options["map"],
                label_scheme=options["label_scheme"],
                judge=options["judge"],
                swapped_mapped_back=options["swapped_mapped_back"],
                dry_run=options["dry_run"],
                verdict_writer=imported_verdicts,
                strict=options["strict"],
                workspace=command_workspace(options),
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from exc
        self._print(report, time.perf_counter() - started)

    def _print(self, report: PreferenceImportReport, seconds: float) -> None:
        out = self.stdout
        verb = "would create" if report.dry_run else "created"
        prefix = "Dry run, nothing written. " if report.dry_run else ""
        new = " (new)" if report.dataset_created else ""
        out.write(f"{prefix}Dataset '{report.dataset}'{new} from {report.file}")
        out.write(f"  rows read:     {report.rows:,}")
        out.write(
            f"  {verb + ':':<14} {report.created_instructions:,} instructions, "
            f"{report.created_responses:,} responses, {report.created_pairs:,} pairs, "
            f"{report.created_preferences:,} human preferences"
        )
        out.write(
            f"  reused:        {report.reused_instructions:,} instructions, "
            f"{report.reused_responses:,} responses, {report.reused_pairs:,} pairs"
        )
        out.write(
            f"  unchanged:     {report.unchanged_preferences:,} human preferences "
            "(imported before)"
        )
        if report.labels:
            labels = ", ".join(f"{k}: {v:,}" for k, v in sorted(report.labels.items()))
            out.write(f"  new labels:    {labels}")
        if report.judge:
            if report.run_created:
                run = "a new run" if report.dry_run else f"new run {report.run_id}"
            else:
                run = f"run {report.run_id} (same file imported before)"
            config = " (new placeholder config)" if report.judge_config_created else ""
            out.write(f"  judge:         {report.judge}{config}, {run}")
            out.write(
                f"  verdicts:      {report.created_verdicts:,} {verb}, "
                f"{report.unchanged_verdicts:,} unchanged, "
                f"{report.unusable_verdicts:,} with no usable verdict"
            )
        if report.ignored_verdicts:
            out.write(
                f"  note:          {report.ignored_verdicts:,} rows have judge verdicts, "
                "which were not imported; pass --judge NAME to import them"
            )
        print_warnings(self, [Problem(**_fields(w)) for w in report.warnings])
        out.write(f"  time:          {seconds:.2f} s")


def _fields(warning: dict) -> dict:
    """A report's warning dict back to `Problem` fields (for printing)."""
    return {k: warning.get(k) for k in ("message", "line", "field", "file")}
