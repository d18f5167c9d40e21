"""`manage.py report --dataset NAME [--campaign ID ...] [--run ID ...] [--boot N]
[--seed N] (--out DIR | --zip FILE)`.

Writes the report of `analysis.exports.report` (agreement, skill profiles,
leaderboards and meta-evaluation as CSV and LaTeX tables, the charts as SVG and PNG,
and a README with the data, methods and seeds) to a folder or a zip. The same data
and seed give the same files. Prints the files written.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import CommandError

from analysis.exports.report import report_files, report_zip
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
)
from flaskapp.bounds import N_BOOT, SEED
from flaskapp.commands import DataCommand


class Command(DataCommand):
    help = "Write a dataset's report (tables as CSV and LaTeX, charts as SVG and PNG)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument("--campaign", nargs="*", type=int, default=None)
        parser.add_argument("--run", nargs="*", type=int, default=None)
        parser.add_argument("--boot", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        where = parser.add_mutually_exclusive_group(required=True)
        where.add_argument("--out", help="A folder to write the files into.")
        where.add_argument("--zip", help="A zip file to write.")

    def handle(self, *args, **options):
        dataset = command_dataset(options)
        if not N_BOOT.contains(options["boot"]):
            raise CommandError(f"--boot: {N_BOOT.message()}")
        if not SEED.contains(options["seed"]):
            raise CommandError(f"--seed: {SEED.message()}")
        files = report_files(
            dataset=dataset,
            campaign_ids=options["campaign"],
            run_ids=options["run"],
            n_boot=options["boot"],
            seed=options["seed"],
        )
        if options["zip"]:
            path = Path(options["zip"])
            path.write_bytes(report_zip(files, folder=path.stem))
            self.stdout.write(f"{path}: {len(files)} files")
            return
        root = Path(options["out"])
        for name, data in files.items():
            target = root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self.stdout.write(f"{root}: {len(files)} files")
        for name in files:
            self.stdout.write(f"  {name}")
