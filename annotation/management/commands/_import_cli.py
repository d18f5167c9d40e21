"""Shared by the import commands: their common options, reading files, the outcome.

Not a command itself (Django skips command modules whose name starts with `_`).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation.importers.base import FileData
from annotation.management.commands._cli import add_workspace_option
from annotation.services.imports import ImportReport, import_check_sizes
from flaskapp.errors import DomainError


def add_file_options(parser, *, fields, dataset_help: str = "Dataset name.") -> None:
    """The options every row-file import takes: FILE, --dataset, --format and the
    repeatable --map FIELD=COLUMN (parsed by `importers.base.parse_field_map`)."""
    parser.add_argument(
        "file",
        help="The file: JSON Lines, CSV, a JSON array or Parquet, any of them "
        "gzip-compressed (.gz); recognised by content.",
    )
    parser.add_argument("--dataset", required=True, help=dataset_help)
    add_workspace_option(parser, creates=True)
    parser.add_argument(
        "--format",
        choices=["jsonl", "csv"],
        help="jsonl or csv (default: from the extension; JSON arrays, Parquet and gzip "
        "are recognised by their content whatever this says).",
    )
    add_strict_option(parser)
    parser.add_argument(
        "--map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help=f"Read FIELD from COLUMN (repeatable). Fields: {', '.join(fields)}. "
        "An unmapped field is read from the column of the same name.",
    )


def add_strict_option(
    parser, *, examples: str = "empty or identical responses, repeated votes"
) -> None:
    """--strict; `examples` names the importer's warnings in the help text."""
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"Refuse the file when it has warnings ({examples}) instead of importing "
        "it and listing them.",
    )


# File name endings -> the --format to assume; compression and Parquet are recognised
# by content, so `.jsonl.gz`, `.json` and `.parquet` read as JSON-like rows.
SUFFIX_FORMATS = {
    ".csv": "csv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".parquet": "jsonl",
}


def format_from_name(path: Path, by_suffix: dict[str, str] | None = None) -> str | None:
    """The format a file name implies (`.gz` looked through), or None."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    if not suffixes:
        return None
    return (by_suffix or SUFFIX_FORMATS).get(suffixes[-1])


def print_warnings(
    command: BaseCommand, warnings: list, total: int | None = None
) -> None:
    """Every warning of an import report, one per line, after a count. `total`: the
    count when `warnings` holds only the first of them (a capped stored list)."""
    total = len(warnings) if total is None else total
    if not total:
        return
    command.stdout.write(
        f"  warnings:      {total:,} (imported; --strict refuses them):"
    )
    for warning in warnings:
        command.stdout.write(f"    {warning}")
    if total > len(warnings):
        command.stdout.write(f"    ... and {total - len(warnings):,} more")


def read_files(paths: list[Path]) -> list[tuple[str, FileData]]:
    """(name, path) per path; refuses a missing or oversized file before reading it.

    Files are named by their path as given, so problems point at the file the user
    typed, and output files keep their stem (the model name). Each comes as (name,
    path): the services read a file as they parse it, so a command holds no whole
    file in memory.
    """
    for path in paths:
        if not path.is_file():
            raise CommandError(f"{path}: no such file")
    try:
        import_check_sizes(sizes=[(str(p), p.stat().st_size) for p in paths])
    except DomainError as exc:
        raise refused(exc) from exc
    return [(str(p), p) for p in paths]


def refused(exc: DomainError, stderr=None) -> CommandError:
    """Print every problem to `stderr` (one per line), return the CommandError to raise.

    The CommandError message names the first problem, so a caller that sees only the
    exception (`call_command`, a CI log tail) still learns which line to fix.
    """
    problems = exc.problems
    if stderr is not None and problems:
        for problem in problems:
            stderr.write(str(problem))
    if not problems:
        return CommandError(exc.message)
    more = (
        f" ({len(problems)} problems; all are listed above)"
        if len(problems) > 1
        else ""
    )
    return CommandError(f"{exc.message}{more}: {problems[0]}")


def print_report(command: BaseCommand, report: ImportReport, seconds: float) -> None:
    """The import summary: rows, created, unchanged, models, time."""
    out = command.stdout
    verb = "would create" if report.dry_run else "created"
    prefix = "Dry run, nothing written. " if report.dry_run else ""
    out.write(f"{prefix}Dataset '{report.dataset}' (rubric {report.rubric or '-'})")
    out.write(f"  rows read:     {report.rows:,}")
    out.write(
        f"  {verb + ':':<14} {report.created_instructions:,} instructions, "
        f"{report.created_responses:,} responses"
    )
    out.write(
        f"  unchanged:     {report.unchanged:,} (already imported with the same content)"
    )
    models = ", ".join(report.models) if report.models else "-"
    out.write(f"  models:        {len(report.models)} ({models})")
    if report.hard_marked or report.hard_unmatched:
        out.write(f"  FLASK-Hard:    {report.hard_marked:,} instructions marked")
        if report.hard_unmatched:
            out.write(
                f"  not matched:   {len(report.hard_unmatched)} FLASK-Hard instructions have "
                "no instruction with the same text in the dataset:"
            )
            for where in report.hard_unmatched:
                out.write(f"    {where}")
    if report.human_scores or report.unchanged_scores:
        verb_scores = "would store" if report.dry_run else "stored"
        out.write(
            f"  human scores:  {report.human_scores:,} {verb_scores}, "
            f"{report.unchanged_scores:,} already imported; raters: "
            + (", ".join(report.raters) or "-")
        )
        if report.campaign_id is not None:
            out.write(
                f"  campaign:      {report.campaign_id} ({report.campaign}, closed)"
            )
    print_warnings(command, report.warnings)
    rate = (report.rows / seconds) if seconds > 0 else 0.0
    out.write(f"  time:          {seconds:.2f} s ({rate:,.0f} rows/s)")
