"""`manage.py import_dataset FILE --dataset NAME [--format jsonl|csv] [--rubric NAME]
[--map F=COL ...] [--map score.KEY=COL ...] [--taxonomy FILE] [--facet COLUMN ...]`.

Imports a generic JSONL, CSV or Parquet file (or a Hugging Face dataset directory:
`save_to_disk`'s, or a Hub dataset's files, `--split` choosing among its splits) of
instructions, optionally with model
responses and the human scores people gave them on the dataset's rubric (which
columns are scores: `annotation.importers.scores`). The scores become one closed
campaign of the dataset (`annotation.services.score_imports`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml
from django.core.management.base import CommandError
from django.utils import timezone

from annotation.importers.generic import FIELDS
from annotation.importers.hub import hub_directory
from annotation.management.commands._cli import command_workspace
from annotation.management.commands._import_cli import (
    add_file_options,
    format_from_name,
    print_report,
    read_files,
    refused,
)
from annotation.services.import_jobs import import_job_record_command
from annotation.services.imports import (
    dataset_import_files,
    import_check_sizes,
    rubric_named,
)
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError
from flaskapp.untrusted import JSONInputError, json_loads


def read_taxonomy(path: Path):
    """The declaration in a --taxonomy file (JSON, or YAML); its checks are the
    service's (`taxonomy_parse`)."""
    if not path.is_file():
        raise CommandError(f"{path}: no such file (--taxonomy)")
    if path.stat().st_size > MAX_TAXONOMY_BYTES:
        raise CommandError(f"{path}: a taxonomy file is at most 1 MB (--taxonomy)")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            return yaml.safe_load(text)
        return json_loads(text)
    except (JSONInputError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise CommandError(
            f"{path}: not valid {'YAML' if path.suffix.lower() in ('.yaml', '.yml') else 'JSON'} "
            f"(--taxonomy): {str(exc)[:200]}"
        ) from exc


MAX_TAXONOMY_BYTES = 1 << 20


def read_hub(path: Path, split: str | None) -> list:
    """The one (name, rows) file of a Hugging Face dataset directory's split,
    refused (every problem printed) when it is none or too large."""
    try:
        hub = hub_directory(path, split)
        import_check_sizes(sizes=[(str(path), hub.size)])
    except DomainError as exc:
        raise refused(exc) from exc
    return [(str(path), hub)]


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
            "--split",
            help="FILE is a Hugging Face dataset directory (save_to_disk, or a Hub "
            "dataset's Parquet / JSON Lines files) with several splits: import this "
            "one.",
        )
        parser.add_argument(
            "--taxonomy",
            metavar="FILE",
            help="A new dataset's own slicing taxonomy, a JSON or YAML file: "
            '{"domains": [...], "difficulty": {"1": "label", ...}, "facets": [...]} '
            "(annotation.importers.taxonomy); default FLASK's domains and levels.",
        )
        parser.add_argument(
            "--facet",
            action="append",
            default=[],
            metavar="COLUMN",
            help="A categorical column the dashboards slice by, its values inferred "
            "from the file (repeatable; a new dataset's, like --taxonomy).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Validate and count; write nothing."
        )

    def handle(self, *args, **options):
        started = time.perf_counter()
        path = Path(options["file"])
        if options["split"] and not path.is_dir():
            raise CommandError(
                f"--split: {path} is not a directory; a split is chosen in a Hugging "
                "Face dataset directory"
            )
        fmt = options["format"] or (
            "jsonl" if path.is_dir() else format_from_name(path)
        )
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
        if options["taxonomy"]:
            service_options["taxonomy"] = read_taxonomy(Path(options["taxonomy"]))
        if options["facet"]:
            service_options["facets"] = options["facet"]
        if options["rubric"]:
            try:
                service_options["rubric_id"] = rubric_named(
                    options["rubric"], command_workspace(options)
                ).pk
            except DomainError as exc:
                raise refused(exc, self.stderr) from exc
        files = (
            read_hub(path, options["split"]) if path.is_dir() else read_files([path])
        )
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
