"""`manage.py experiment ...`: the judge workbench from the command line.

    experiment split   --dataset NAME --test-fraction 0.2 [--seed N]
    experiment create  --dataset NAME --name NAME --runs ID [ID ...] [--baseline ID]
                       [--campaign ID ...]
    experiment add-run ID --run RUN_ID
    experiment show    ID [--part dev|all|test --reason TEXT] [--boot N]
                       [--format table|json]

`show --part test` is an evaluation on the locked test split: it is logged (who,
when, which runs, `--reason`) before the figures are computed, like the page's
button. Every write goes through `judging.services` as `--user` (default: the first
admin); bad input is an error naming the field, and nothing is written.
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from analysis.selectors.agreement.sources import AgreementError
from analysis.selectors.experiments import PARTS, experiment_figures
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
    command_user,
)
from annotation.models import Dataset
from flaskapp import bounds
from flaskapp.commands import DataCommand
from flaskapp.errors import DomainError
from flaskapp.numbers import count, money
from flaskapp.params import BadParameter, parse_int
from judging.models import Experiment
from judging.selectors.splits import eval_split_of
from judging.services.experiments import experiment_add_run, experiment_create
from judging.services.splits import eval_split_create, eval_split_look_record


def _fmt(r: dict | None) -> str:
    if not r or r.get("value") is None:
        return "n/a"
    text = f"{r['value']:.3f}"
    if r.get("ci"):
        text += f" [{r['ci'][0]:.3f}, {r['ci'][1]:.3f}]"
    return text


def render(figures: dict) -> str:
    """The figures as a table: per run and row, each statistic and its difference
    with the baseline (and which is better, when the interval excludes 0)."""
    lines = [
        f"Experiment {figures['experiment']['name']} on {figures['dataset']['name']}: "
        f"{figures['part_label']}; {figures['n_boot']} paired resamples",
    ]
    for run in figures["runs"]:
        lines.append("")
        head = f"run {run['id']} {run['label']}"
        lines.append(head + (" (baseline)" if run["is_baseline"] else ""))
        lines.append(
            f"  calls {run['calls']}, failed {run['failed_calls']}, parse failures "
            f"{run['parse_failures']}, tokens {count(run['tokens'])}, cost {money(run['cost'])}"
        )
        for row in figures["rows"]:
            fig = run["figures"].get(row["key"]) or {}
            cells = [f"{s} {_fmt(fig.get(s))}" for s in figures["stats"]]
            lines.append(f"  {row['name']} (n={fig.get('n', 0)}): " + "; ".join(cells))
            vs = (run["vs_baseline"] or {}).get(row["key"])
            if vs:
                diffs = [
                    f"{s} {_fmt(vs['diff'][s])}"
                    + (f" {vs['winner'][s]} better" if vs["winner"][s] else "")
                    for s in figures["stats"]
                ]
                lines.append(f"    vs baseline (n={vs['n']}): " + "; ".join(diffs))
    return "\n".join(lines)


class Command(DataCommand):
    help = "The judge workbench: splits, experiments and their figures."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        split = sub.add_parser("split", help="Make the dataset's dev / test split.")
        split.add_argument("--dataset", required=True)
        add_workspace_option(split)
        split.add_argument("--test-fraction", required=True)
        split.add_argument("--seed", default="0")
        create = sub.add_parser("create", help="Create an experiment.")
        create.add_argument("--dataset", required=True)
        add_workspace_option(create)
        create.add_argument("--name", required=True)
        create.add_argument("--runs", nargs="+", default=[], metavar="ID")
        create.add_argument("--baseline")
        create.add_argument("--campaign", nargs="*", default=[], metavar="ID")
        create.add_argument("--description", default="")
        add = sub.add_parser("add-run", help="Add a run to an experiment.")
        add.add_argument("experiment")
        add.add_argument("--run", required=True)
        show = sub.add_parser("show", help="Print an experiment's figures.")
        show.add_argument("experiment")
        show.add_argument("--part", choices=PARTS)
        show.add_argument("--reason", default="")
        show.add_argument("--boot", type=int, default=1000)
        show.add_argument("--seed", type=int, default=0)
        show.add_argument("--format", choices=("table", "json"), default="table")
        for p in (split, create, add, show):
            p.add_argument(
                "--user", help="As this researcher or admin (default: the first admin)."
            )

    def handle(self, *args, **options):
        user = command_user(options.get("user"))
        try:
            getattr(self, "_" + options["action"].replace("-", "_"))(user, options)
        except DomainError as exc:
            raise CommandError(str(exc)) from exc
        except AgreementError as exc:
            raise CommandError(str(exc)) from exc

    def _dataset(self, name: str, options: dict) -> Dataset:
        return command_dataset({**options, "dataset": name})

    def _experiment(self, raw) -> Experiment:
        try:
            pk = parse_int(raw, "experiment", **bounds.ID.field_kwargs())
        except BadParameter as exc:
            raise CommandError(str(exc)) from exc
        experiment = Experiment.objects.select_related("dataset").filter(pk=pk).first()
        if experiment is None:
            raise CommandError(f"experiment: no experiment {pk}")
        return experiment

    def _split(self, user, options):
        split = eval_split_create(
            dataset=self._dataset(options["dataset"], options),
            user=user,
            test_fraction=options["test_fraction"],
            seed=options["seed"],
        )
        n_test = split.members.filter(part="test").count()
        self.stdout.write(
            f"Split {split.pk}: {split.members.count() - n_test} development and "
            f"{n_test} test instructions (seed {split.seed})"
        )

    def _create(self, user, options):
        experiment = experiment_create(
            user=user,
            dataset=self._dataset(options["dataset"], options),
            name=options["name"],
            run_ids=options["runs"],
            baseline_id=options["baseline"],
            campaign_ids=options["campaign"],
            description=options["description"],
        )
        self.stdout.write(str(experiment.pk))

    def _add_run(self, user, options):
        experiment = experiment_add_run(
            user=user,
            experiment=self._experiment(options["experiment"]),
            run_id=options["run"],
        )
        self.stdout.write(f"Experiment {experiment.pk}: {experiment.runs.count()} runs")

    def _show(self, user, options):
        experiment = self._experiment(options["experiment"])
        look = None
        if options["part"] == "test":
            split = eval_split_of(dataset=experiment.dataset)
            if split is None:
                raise CommandError(
                    "--part: the dataset has no development / test split"
                )
            look = eval_split_look_record(
                split=split,
                user=user,
                run_ids=list(experiment.runs.values_list("pk", flat=True)),
                experiment=experiment,
                reason=options["reason"],
            )
            self.stderr.write(f"Logged look {look.pk} at the test split.")
        figures = experiment_figures(
            experiment=experiment,
            part=options["part"],
            test_look=look,
            n_boot=options["boot"],
            seed=options["seed"],
        )
        if options["format"] == "json":
            figures = {
                **figures,
                "split": None
                if not figures.get("split")
                else {k: v for k, v in figures["split"].items() if k != "last_look"},
            }
            self.stdout.write(json.dumps(figures, default=str, indent=1))
        else:
            self.stdout.write(render(figures))
