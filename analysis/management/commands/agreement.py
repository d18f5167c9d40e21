"""`manage.py agreement --dataset NAME [--run ID ...] [--campaign ID ...]
[--reference-run ID | --retest] [--slice DIM=VALUE] [--boot N] [--seed N]
[--format json|table]`.

Prints the agreement between judge runs and human raters per skill, ability and
overall (the same numbers as the dashboard and `GET /api/datasets/{name}/agreement/`).
Defaults (the dashboard's and the API's, `analysis.selectors.agreement.agreement_defaults`):
every pointwise campaign of the dataset and, per judge, its latest finished run with
scores.
`--format json` prints the full result (shape documented in
`analysis.selectors.agreement.agreement_compute`); `table` a readable summary.
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from analysis.selectors.agreement import AgreementError, agreement_compute
from analysis.selectors.agreement.rows import CEILING_ITEMS
from annotation.models import Dataset
from flaskapp.commands import DataCommand

TABLE_STATS = (
    ("spearman", "Spearman"),
    ("kendall", "Kendall"),
    ("qwk", "QWK"),
    ("exact", "exact"),
    ("leniency", "leniency"),
)


def fmt(r: dict | None, digits: int = 2) -> str:
    """A statistic as "0.61 [0.55, 0.67]" or "n/a (n=1)"."""
    if not r or r.get("value") is None:
        return f"n/a (n={r['n'] if r else 0})"
    text = f"{r['value']:.{digits}f}"
    if r.get("ci"):
        text += f" [{r['ci'][0]:.{digits}f}, {r['ci'][1]:.{digits}f}]"
    return text


def render_table(result: dict) -> str:
    lines = [
        f"Agreement on {result['dataset']['name']} ({result['slice']['label']}); "
        f"reference: {result['reference']['label']}; "
        f"{result['n_boot']} bootstrap resamples, seed {result['seed']}",
        "n/a = not enough data (fewer than 2 items or no variance); "
        "! = the judge lowers inter-rater alpha, !! = significantly",
        "n = items the judge and the reference both scored; ceiling alpha = "
        f"Krippendorff's alpha (ordinal) among the raters on {CEILING_ITEMS}",
    ]
    used = result.get("defaults") or {}
    if used.get("campaigns") or used.get("runs"):
        lines.append(f"defaults: {used['rule']}")
    for run in result["runs"]:
        rid = str(run["id"])
        head = ["skill", "n", "ceiling alpha"] + [h for _, h in TABLE_STATS] + ["flag"]
        body = []
        for row in result["rows"]:
            j = row["judges"].get(rid)
            if j is None:
                continue
            flag = j["flag"]
            mark = "!!" if flag["significant"] else "!" if flag["below_ceiling"] else ""
            label = row["label"] if row["level"] == "skill" else row["label"].upper()
            if row.get("note"):
                body.append([label, "0", row["note"], *([""] * len(TABLE_STATS)), ""])
                continue
            body.append(
                [
                    label,
                    str(j["counts"]["scored_by_both"]),
                    fmt(row["human"].get("alpha_ordinal")),
                    *(fmt(j.get(k)) for k, _ in TABLE_STATS),
                    mark,
                ]
            )
        widths = [max(len(r[c]) for r in [head, *body]) for c in range(len(head))]
        lines += ["", f"Judge run {run['label']}"]
        for r in [head, ["-" * w for w in widths], *body]:
            lines.append(
                "  ".join(
                    cell.ljust(w) for cell, w in zip(r, widths, strict=True)
                ).rstrip()
            )
    return "\n".join(lines)


class Command(DataCommand):
    help = "Agreement between judge runs and human raters, per skill (json or table)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument(
            "--run",
            type=int,
            nargs="+",
            action="extend",
            help="Judge run ids (default: per judge, its latest finished run).",
        )
        parser.add_argument(
            "--campaign",
            type=int,
            nargs="+",
            action="extend",
            help="Human campaign ids (default: every pointwise campaign).",
        )
        parser.add_argument(
            "--reference-run",
            type=int,
            help="Compare against this run (judge vs judge).",
        )
        parser.add_argument(
            "--retest",
            action="store_true",
            help="Compare each run's sample 0 with its sample 1 (test-retest).",
        )
        parser.add_argument(
            "--slice",
            default="",
            help="DIM=VALUE, DIM one of domain, difficulty, task, hard, model.",
        )
        parser.add_argument(
            "--boot", type=int, default=1000, help="Bootstrap resamples."
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=("json", "table"), default="table")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"--dataset: no dataset named {options['dataset']!r}")
        dim, _, value = options["slice"].partition("=")
        if options["slice"] and not value:
            raise CommandError("--slice: use DIM=VALUE, e.g. difficulty=3")
        try:
            result = agreement_compute(
                dataset=dataset,
                campaign_ids=options["campaign"],  # None: the defaults
                run_ids=options["run"],
                reference_run_id=options["reference_run"],
                retest=options["retest"],
                slice_dim=dim.strip(),
                slice_value=value.strip(),
                n_boot=options["boot"],
                seed=options["seed"],
            )
        except AgreementError as exc:
            message = str(exc).replace("n_boot", "boot", 1)
            raise CommandError(f"--{message}") from exc
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=1))
        else:
            self.stdout.write(render_table(result))
