"""`manage.py metaeval --dataset NAME [--run ID ...] [--sections JSON_OR_FILE]
[--crun ID ...] [--campaign ID ...] [--boot N] [--seed N] [--format json|table]`.

Meta-evaluates pairwise judge runs against the human preferences of a dataset:
accuracy per order, mean and both-orders, kappa, ties conventions, positional
consistency and order bias, the human leave-one-out ceiling, reward-model style
accuracy and section scores, and the bias probes (order, length, self-preference,
bandwagon / attention for probe runs), overall and per category, with counts and
bootstrap CIs. Same numbers as `GET /api/datasets/{id}/metaeval/`.
Default runs: every pairwise run of the dataset without a probe. Classification runs
(`--crun`, default: every run with labels on a categorical criterion) are measured
against the human majority of `--campaign` (default: the agreement defaults).
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from analysis.management.commands.agreement import render_categorical
from analysis.management.text import stat_text, text_table
from analysis.selectors.metaeval import (
    MetaevalError,
    metaeval_with_classification,
    parse_sections,
)
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
)
from flaskapp.commands import DataCommand

FIGURES = (
    ("accuracy_ab", "acc A/B"),
    ("accuracy_ba", "acc B/A"),
    ("accuracy_mean", "acc mean"),
    ("accuracy_both", "both orders"),
    ("accuracy_mean_no_ties", "acc no ties"),
    ("kappa", "kappa"),
    ("consistency", "consistency"),
    ("rm_accuracy", "RM acc"),
    ("human_loo", "human LOO"),
)


def render_table(result: dict) -> str:
    counts = (
        f"{result['pairs']} pairs, {result['votes']} human votes; "
        if result["runs"]
        else "no pairwise judge run; "
    )
    lines = [
        f"Meta-evaluation on {result['dataset']['name']}: {counts}"
        f"{result['n_boot']} bootstrap resamples",
        "n/a = not enough data; figures as value [95% CI]",
    ]
    for run in result["runs"]:
        rep = run["report"]
        lines += [
            "",
            f"Judge run {run['label']}"
            + (f" (probe: {run['probe']})" if run["probe"] else ""),
        ]
        head = ["group", "pairs"] + [h for _, h in FIGURES]
        rows = [head]
        groups = [("OVERALL", rep["overall"])] + sorted(rep["categories"].items())
        for name, g in groups:
            pairs = str(
                g["counts"].get("pairs", g["counts"].get("pairs_with_votes", ""))
            )
            rows.append(
                [name or "(none)", pairs] + [stat_text(g.get(k)) for k, _ in FIGURES]
            )
        lines += text_table(rows)
        if rep.get("sections"):
            lines.append("sections (example-weighted, tie/error = 0.5):")
            for name, sec in rep["sections"].items():
                lines.append(f"  {name}: {stat_text(sec['score'])}")
        lines.append("bias probes (value, count, CI; random baseline):")
        probes = dict(rep.get("probes", {}))
        if run.get("cue"):
            probes[run["cue"]["name"]] = run["cue"]
        for name, p in probes.items():
            v = p["value"]
            lines.append(
                f"  {name:16s} {stat_text(v, 3)} n={v['n']}  baseline {p['baseline']}"
            )
    classification = result.get("classification")
    if classification:
        lines.append(render_categorical(classification))
    return "\n".join(lines)


class Command(DataCommand):
    help = (
        "Meta-evaluate pairwise judge runs against human preferences (json or table)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument("--run", type=int, nargs="+", action="extend")
        parser.add_argument(
            "--sections",
            default="",
            help='JSON {"section": ["subset", ...]} or a path to such a file.',
        )
        parser.add_argument(
            "--crun",
            type=int,
            nargs="+",
            action="extend",
            help="Classification run ids (default: every run with labels on a "
            "categorical criterion).",
        )
        parser.add_argument(
            "--campaign",
            type=int,
            nargs="+",
            action="extend",
            help="Campaigns whose human labels the classification runs are "
            "measured against (default: the agreement defaults).",
        )
        parser.add_argument("--boot", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=("json", "table"), default="table")

    def handle(self, *args, **options):
        dataset = command_dataset(options)
        try:
            result = metaeval_with_classification(
                dataset=dataset,
                run_ids=options["run"],
                crun_ids=options["crun"],
                campaign_ids=options["campaign"],
                sections=parse_sections(options["sections"]),
                n_boot=options["boot"],
                seed=options["seed"],
            )
        except (MetaevalError, ValueError) as exc:
            message = str(exc).replace("n_boot", "boot", 1)
            raise CommandError(f"--{message}") from exc
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=1))
        else:
            self.stdout.write(render_table(result))
