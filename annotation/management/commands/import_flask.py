"""`manage.py import_flask EVAL_SET.jsonl [--outputs FILE_OR_DIR ...] [--dataset NAME]`.

Imports a FLASK release (evaluation set, model outputs, optionally the FLASK-Hard set
and FLASK's own rubric file) in one transaction: either everything or nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

from django.core.management.base import CommandError
from django.utils import timezone

from annotation.management.commands._cli import add_workspace_option, command_workspace
from annotation.management.commands._import_cli import (
    add_strict_option,
    print_report,
    read_files,
    refused,
)
from annotation.models import ImportJob
from annotation.services.flask import dataset_import_flask
from annotation.services.import_jobs import import_job_record_command
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


def output_paths(values: list[str]) -> list[Path]:
    """Files as given; a directory means every `*.jsonl` in it, sorted by name."""
    paths: list[Path] = []
    for value in values:
        path = Path(value)
        if path.is_dir():
            found = sorted(p for p in path.glob("*.jsonl") if p.is_file())
            if not found:
                raise CommandError(f"{path}: the directory has no *.jsonl file")
            paths.extend(found)
        else:
            paths.append(path)
    return paths


class Command(DataCommand):
    help = (
        "Import a FLASK evaluation set (current or legacy schema) and, optionally, model "
        "outputs, into one dataset, in one transaction. A bad file changes nothing; every "
        "problem is printed with its file, line and field."
    )

    def add_arguments(self, parser):
        parser.add_argument("eval_set", help="FLASK evaluation set (JSONL).")
        parser.add_argument(
            "--outputs",
            nargs="+",
            action="extend",
            default=[],
            metavar="FILE_OR_DIR",
            help="Model output files, or directories (every *.jsonl in them). The model "
            "name is the file name without `.jsonl` and `_review`.",
        )
        parser.add_argument(
            "--dataset",
            help="Dataset name (default: the eval file's name without .jsonl).",
        )
        add_workspace_option(parser, creates=True)
        parser.add_argument(
            "--rubric",
            metavar="FILE",
            help="FLASK's skillset_description.json: imported as a new version of the "
            "rubric 'FLASK (imported)' and used by the new dataset. Only for a new dataset.",
        )
        hard = parser.add_mutually_exclusive_group()
        hard.add_argument(
            "--hard", action="store_true", help="Mark every instruction as FLASK-Hard."
        )
        hard.add_argument(
            "--hard-set",
            metavar="FILE",
            help="A FLASK-Hard evaluation set: instructions of the dataset with exactly "
            "the same text are marked FLASK-Hard; unmatched ones are listed.",
        )
        parser.add_argument(
            "--model", help="The model's name, when a single outputs file is given."
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Validate and count; write nothing."
        )
        add_strict_option(parser)

    def handle(self, *args, **options):
        started = time.perf_counter()
        eval_path = Path(options["eval_set"])
        outputs = output_paths(options["outputs"])
        if options["model"] and len(outputs) != 1:
            raise CommandError(
                "--model names the model of one outputs file; "
                f"{len(outputs)} were given"
            )
        extra = [Path(options["rubric"])] if options["rubric"] else []
        hard_path = Path(options["hard_set"]) if options["hard_set"] else None
        # Files are read one at a time by the import, when it needs them (output files
        # as it writes them); the rubric is small and read here.
        rubric_file = None
        if extra:
            ((rubric_name, rubric_path),) = read_files(extra)
            rubric_file = (rubric_name, rubric_path.read_bytes())  # a small JSON file
        eval_files = read_files([eval_path])
        output_files = read_files(outputs)
        hard_files = read_files([hard_path]) if hard_path else []
        service_options = {}
        if options["model"]:
            service_options["model"] = options["model"]
        if options["hard"]:
            service_options["hard"] = True
        if options["strict"]:
            service_options["strict"] = True
        record = {
            "dataset_name": options["dataset"] or eval_path.stem,
            "fmt": ImportJob.Format.FLASK,
            "paths": [eval_path, *outputs, *([hard_path] if hard_path else []), *extra],
            "options": service_options,
            "started_at": timezone.now(),
            "workspace": command_workspace(options),
        }
        try:
            report = dataset_import_flask(
                dataset_name=options["dataset"] or eval_path.stem,
                eval_files=eval_files,
                output_files=output_files,
                hard_files=hard_files,
                rubric_file=rubric_file,
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
