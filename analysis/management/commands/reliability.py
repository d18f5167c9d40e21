"""`manage.py reliability --campaign ID [--format table|json] [--model M]`: each
rater's reliability in a pointwise campaign, the same figures as
`GET /api/campaigns/{id}/reliability/` and the reliability page: items, median active
seconds, gold accuracy, agreement with the others' leave-one-out consensus (exact,
within 1, Spearman, QWK), severity, straight-lining, speed outliers, drift and the
flags with their reasons.

With `--model dawid_skene|mace|glad`: the rater models instead, as
`GET /api/campaigns/{id}/rater-models/` gives them: per criterion every annotator
(human raters and judge runs) by competence, and where each judge ranks among the
humans."""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from analysis.management.text import text_table
from analysis.selectors.competence import (
    METHODS,
    campaign_rater_models,
    rater_models_dict,
)
from analysis.selectors.reliability import campaign_reliability, reliability_dict
from annotation.models import Campaign
from flaskapp.commands import DataCommand


def _f(value, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def render_table(report) -> str:
    rows = [["rater", "items", "med s", "gold", "shared", "exact", "within1",
             "spearman", "qwk", "severity", "straight", "fast", "flags"]]  # fmt: skip
    for r in report.raters:
        o = r.overall
        rows.append([
            r.username + (" (excluded)" if r.excluded else "")
            + (" (paused)" if r.paused else ""),
            str(r.items),
            _f(r.median_active_seconds, 0),
            _f(r.gold_accuracy),
            str(o.n),
            _f(o.exact),
            _f(o.within1),
            _f(o.spearman),
            _f(o.qwk),
            _f(o.severity),
            f"{r.straight}/{r.straight_items}",
            str(r.fast),
            str(len(r.flags)),
        ])  # fmt: skip
    lines = text_table(rows)
    for r in report.raters:
        for flag in r.flags:
            lines.append(f"{r.username}: {flag}")
    return "\n".join(lines)


def render_models_table(report) -> str:
    """Per criterion: its annotators by rank, then each judge's place."""
    lines = [f"{report.method_name}: competence = {report.competence_rule}."]
    if report.excluded:
        lines.append(f"Left out (excluded): {', '.join(report.excluded)}.")
    for c in report.criteria:
        lines += ["", f"{c.name} ({c.n_tasks} responses, {c.n_labels} labels)"]
        if not c.annotators:
            lines.append(f"  {c.note}")
            continue
        rows = [["rank", "annotator", "kind", "labels", "competence"]]
        for a in c.annotators:
            rows.append([str(a.rank), a.name, a.kind, str(a.n_labels),
                         _f(a.competence, 3)])  # fmt: skip
        lines += ["  " + line for line in text_table(rows)]
        if c.note:
            lines.append(f"  note: {c.note}")
        lines += [f"  {j.sentence}" for j in c.judges]
    return "\n".join(lines)


class Command(DataCommand):
    help = "Rater reliability of a pointwise campaign (table or JSON)."

    def add_arguments(self, parser):
        parser.add_argument("--campaign", type=int, required=True, help="Campaign id.")
        parser.add_argument("--format", choices=["table", "json"], default="table")
        parser.add_argument(
            "--model",
            choices=list(METHODS),
            help="Print the rater models of this kind (competence per annotator, "
            "judges among the raters) instead of the reliability report.",
        )

    def handle(self, *args, **options):
        campaign = Campaign.objects.filter(pk=options["campaign"]).first()
        if campaign is None:
            raise CommandError(f"--campaign: no campaign {options['campaign']}")
        if campaign.kind != Campaign.Kind.POINTWISE:
            raise CommandError(
                f"--campaign: campaign {campaign.pk} is pairwise; reliability covers "
                "pointwise campaigns"
            )
        if options["model"]:
            models = campaign_rater_models(campaign=campaign, method=options["model"])
            if options["format"] == "json":
                self.stdout.write(json.dumps(rater_models_dict(models), indent=2))
            else:
                self.stdout.write(render_models_table(models))
            return
        report = campaign_reliability(campaign=campaign)
        if options["format"] == "json":
            self.stdout.write(json.dumps(reliability_dict(report), indent=2))
        else:
            self.stdout.write(render_table(report))
