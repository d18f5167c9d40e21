"""`manage.py agreement --dataset NAME [--run ID ...] [--campaign ID ...]
[--reference-run ID | --retest] [--slice DIM=VALUE] [--boot N] [--seed N]
[--format json|table]`.

Prints the agreement between judge runs and human raters per skill, ability and
overall (the same numbers as the dashboard and `GET /api/datasets/{name}/agreement/`).
Defaults (the dashboard's and the API's, `analysis.selectors.agreement.agreement_defaults`):
every pointwise campaign of the dataset and, per judge, its latest finished run with
scores.
`--format json` prints the full result (shape documented in
`analysis.selectors.agreement.agreement_compute`, with the API's ``categorical``
key when the rubric has categorical criteria: `analysis.selectors.classification`);
`table` a readable summary, the categorical criteria's figures after the ordinal ones.
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from analysis import statistics
from analysis.management.text import stat_text, text_table
from analysis.selectors.agreement import (
    HUMAN_REFERENCES,
    AgreementError,
    agreement_compute,
)
from analysis.selectors.agreement.result import AgreementResult
from analysis.selectors.agreement.rows import CEILING_ITEMS
from analysis.selectors.classification import classification_for_agreement
from annotation.management.commands._cli import (
    add_workspace_option,
    command_dataset,
)
from flaskapp.commands import DataCommand


def render_table(result: AgreementResult, *, ordinal: bool = True) -> str:
    """The summary; without `ordinal` (a rubric of categorical criteria only) just
    its heading, without the per-run tables of ordinal statistics."""
    lines = [
        f"Agreement on {result.dataset.name} ({result.slice.label}); "
        f"reference: {result.reference.label}; "
        f"{result.n_boot} bootstrap resamples, seed {result.seed}",
        "n/a = not enough data (fewer than 2 items or no variance); "
        "! = the judge lowers inter-rater alpha, !! = significantly",
        "n = items the judge and the reference both scored; ceiling alpha = "
        f"Krippendorff's alpha (ordinal) among the raters on {CEILING_ITEMS}",
    ]
    used = result.defaults
    if used.campaigns or used.runs:
        lines.append(f"defaults: {used.rule}")
    columns = statistics.shown_in("command")
    for run in result.runs if ordinal else ():
        rid = str(run.id)
        head = ["skill", "n", "ceiling alpha"] + [s.short for s in columns] + ["flag"]
        body = []
        for row in result.rows:
            j = row.judge(rid)
            if j is None:
                continue
            mark = "!!" if j.flag.significant else "!" if j.flag.below_ceiling else ""
            label = row.label if row.level == "skill" else row.label.upper()
            if row.note:
                body.append([label, "0", row.note, *([""] * len(columns)), ""])
                continue
            body.append(
                [
                    label,
                    str(j.scored_by_both),
                    stat_text(row.human.stat("alpha_ordinal")),
                    *(stat_text(j.stat(s.key)) for s in columns),
                    mark,
                ]
            )
        lines += ["", f"Judge run {run.label}", *text_table([head, *body])]
    return "\n".join(lines)


def render_categorical(section: dict) -> str:
    """The categorical criteria: the raters' agreement, then per run the judge
    against the human majority, per criterion and per label."""
    lines = [
        "",
        "Categorical criteria (judge vs the human majority)",
        section["rules"],
    ]
    for crit in section["criteria"]:
        h = crit["humans"]
        lines += [
            "",
            f"{crit['name']} ({' / '.join(lab['key'] for lab in crit['labels'])}): "
            f"{h['n_items']} items; raters: Fleiss kappa {stat_text(h['fleiss'])}, "
            f"Krippendorff nominal alpha {stat_text(h['alpha_nominal'])}, leave-one-out "
            f"ceiling accuracy {stat_text(h['ceiling']['accuracy'])}, "
            f"kappa {stat_text(h['ceiling']['kappa'])}",
        ]
        head = ["run", "n", "accuracy", "Cohen kappa", "alpha with judge", "macro F1"]
        body = []
        for run in section["runs"]:
            j = crit["judges"].get(str(run["id"]))
            if j is None:
                continue
            macro = "n/a" if j["macro_f1"] is None else f"{j['macro_f1']:.2f}"
            body.append(
                [
                    run["label"],
                    str(j["n_items"]),
                    stat_text(j["accuracy"]),
                    stat_text(j["kappa"]),
                    stat_text(j["alpha_with_judge"]),
                    macro,
                ]
            )
            labels = [
                [
                    f"  {lab['key']}",
                    str(lab["support"]),
                    *(
                        "n/a" if lab[k] is None else f"{lab[k]:.2f}"
                        for k in ("precision", "recall", "f1")
                    ),
                    "",
                ]
                for lab in j["per_label"]
            ]
            body += labels
        if body:
            lines += text_table([head, *body])
            lines.append("  (label rows: support, precision, recall, F1)")
    return "\n".join(lines)


class Command(DataCommand):
    help = "Agreement between judge runs and human raters, per skill (json or table)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
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
            "--human-reference",
            choices=HUMAN_REFERENCES,
            default="raters",
            help="raters (default: their mean for correlations, their rounded "
            "median for QWK); mean, median: one rounded score per item; "
            "adjudicated: a reviewer's settled value in "
            "place of the raters' scores where a dispute was settled; latent: each "
            "item's latent score from a Dawid-Skene fit of the raters.",
        )
        parser.add_argument(
            "--slice",
            default="",
            help="DIM=VALUE, DIM one of domain, difficulty, task, hard, model, or "
            "facet.NAME (a facet of the dataset's own taxonomy).",
        )
        parser.add_argument(
            "--boot", type=int, default=1000, help="Bootstrap resamples."
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=("json", "table"), default="table")

    def handle(self, *args, **options):
        dataset = command_dataset(options)
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
                human_reference=options["human_reference"],
                slice_dim=dim.strip(),
                slice_value=value.strip(),
                n_boot=options["boot"],
                seed=options["seed"],
            )
        except AgreementError as exc:
            message = str(exc).replace("n_boot", "boot", 1)
            raise CommandError(f"--{message}") from exc
        categorical = classification_for_agreement(dataset=dataset, result=result)
        if categorical is not None:
            result = result.with_extra(categorical=categorical)
        if options["format"] == "json":
            self.stdout.write(json.dumps(result.to_dict(), indent=1))
        else:
            only_categorical = bool(categorical and categorical["classification"])
            text = render_table(result, ordinal=not only_categorical)
            if categorical is not None:
                text += "\n" + render_categorical(categorical)
            self.stdout.write(text)
