"""`manage.py export_training --dataset NAME [--kinds pointwise,pairwise]
[--validation-fraction 0.1] [--seed 0] [--dedupe none|exact|input] [--out FILE]`.

Writes the dataset's human judgments as autorater training examples, one JSON line
each (`analysis.exports.training`), to stdout or FILE, streamed (flat memory without
de-duplication). Always prints one summary line to stderr: examples per kind and
split. The output is byte for byte what the training-export API returns for the same
options.
"""

from __future__ import annotations

from collections import Counter

from django.db import transaction

from analysis.exports.scores import export_jsonl
from analysis.exports.training import (
    DEDUPE_MODES,
    DEFAULT_VALIDATION_FRACTION,
    KINDS,
    training_examples,
    training_options_parse,
    training_summary,
)
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
)
from annotation.management.commands._import_cli import refused
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError


class Command(DataCommand):
    help = (
        "Export a dataset's human judgments (pointwise scores, pairwise preferences) "
        "as autorater training examples in the FLAMe text-to-text layout (JSON Lines)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument(
            "--kinds",
            default=",".join(KINDS),
            help=f"Comma-separated task kinds (default: {','.join(KINDS)}).",
        )
        parser.add_argument(
            "--validation-fraction",
            default=str(DEFAULT_VALIDATION_FRACTION),
            help="Share of instructions whose examples go to validation (0 to 1).",
        )
        parser.add_argument(
            "--seed", default="0", help="Seed of the split by instruction."
        )
        parser.add_argument("--dedupe", default="none", choices=DEDUPE_MODES)
        parser.add_argument("--out", help="Write to this file (default: stdout).")

    def handle(self, *args, **options):
        dataset = command_dataset(options)
        try:
            parsed = training_options_parse(
                kinds=options["kinds"],
                validation_fraction=options["validation_fraction"],
                seed=options["seed"],
                dedupe=options["dedupe"],
            )
        except DomainError as exc:
            raise refused(exc, self.stderr) from None
        tally: Counter = Counter()
        chunks = export_jsonl(
            training_examples(dataset=dataset, options=parsed, tally=tally)
        )
        # In a transaction PostgreSQL's server-side cursors stream (see `export`).
        with transaction.atomic():
            if options["out"]:
                with open(options["out"], "w", encoding="utf-8", newline="") as out:
                    for chunk in chunks:
                        out.write(chunk)
            else:
                for chunk in chunks:
                    self.stdout.write(chunk, ending="")
        where = f" written to {options['out']}" if options["out"] else ""
        self.stderr.write(training_summary(dataset, parsed, tally) + where)
