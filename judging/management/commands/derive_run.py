"""`manage.py derive_run panel --dataset NAME --runs 3 4 5 --method weighted` and
`manage.py derive_run calibrate --run 7`.

Makes a derived run (`judging.services.derived`): a panel of runs of one dataset,
or a run calibrated on the dataset's development split. Prints the new run's id
first on its line. A refusal prints every problem and changes nothing.
"""

from __future__ import annotations

from django.core.management.base import CommandError

from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
    command_user,
)
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError
from judging.models import JudgeRun
from judging.panels import METHODS
from judging.services.derived import judge_run_calibrate, judge_run_panel_create


class Command(DataCommand):
    help = (
        "Make a derived run: a panel combining several runs' scores, or a run "
        "calibrated to the humans on the development split. Prints the new run id."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        panel = sub.add_parser("panel", help="Combine the scores of 2 or more runs.")
        panel.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(panel)
        panel.add_argument("--runs", type=int, nargs="+", required=True)
        panel.add_argument("--method", required=True, help=", ".join(METHODS))
        calibrate = sub.add_parser(
            "calibrate", help="Isotonic calibration on the development split."
        )
        calibrate.add_argument("--run", type=int, required=True)
        for p in (panel, calibrate):
            p.add_argument("--name", default="", help="Run name.")
            p.add_argument(
                "--campaigns",
                type=int,
                nargs="+",
                help="Human campaigns to fit on (default: every pointwise one).",
            )
            p.add_argument(
                "--user", help="Act as this user (default: the first admin)."
            )

    def handle(self, *args, **options):
        user = command_user(options["user"])
        try:
            if options["action"] == "panel":
                dataset = command_dataset(options)
                run = judge_run_panel_create(
                    user=user,
                    dataset=dataset,
                    run_ids=options["runs"],
                    method=options["method"],
                    name=options["name"],
                    campaign_ids=options["campaigns"],
                )
            else:
                source = JudgeRun.objects.filter(pk=options["run"]).first()
                if source is None:
                    raise CommandError(f"no run with id {options['run']}")
                run = judge_run_calibrate(
                    user=user,
                    run=source,
                    name=options["name"],
                    campaign_ids=options["campaigns"],
                )
        except DomainError as exc:
            lines = [str(p) for p in exc.problems] or [exc.message]
            raise CommandError(
                f"{exc.message}:\n" + "\n".join(f"  {line}" for line in lines)
            ) from exc
        self.stdout.write(f"{run.pk}")
        self.stdout.write(f"Run {run.pk}: {run.name} · {run.source_note}")
