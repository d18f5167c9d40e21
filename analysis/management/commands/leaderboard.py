"""`manage.py leaderboard --dataset NAME --pairwise [--source humans|RUN]
[--compare humans|RUN] [--length-control] [--boot N] [--seed N]
[--format table|json]`;
`manage.py leaderboard --dataset NAME --profiles [--campaign ID ...] [--run ID ...]
[--slice DIM:VALUE] [--boot N] [--seed N] [--format table|json]`.

Leaderboards of a dataset's evaluated models. One mode per flag, each a function of
its own (`pairwise_mode`, ...); ``--pairwise``: Bradley-Terry ratings from human
votes or from one pairwise judge run (both orders), ties as half wins, on the Elo
scale anchored at a mean of 1000, with bootstrap CIs over votes; ranks, wins,
losses, ties; optionally length-controlled ratings and the rank correlation with
another source. Same numbers as `GET /api/datasets/{id}/leaderboard/pairwise/`.
``--profiles`` (`profiles_mode`): FLASK skill profiles, the mean per model and
criterion, group and overall from the humans and each judge run side by side, with
bootstrap CIs clustered by instruction and ranks; same numbers as
`GET /api/datasets/{id}/leaderboard/profiles/`.
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from analysis.management.text import text_table
from analysis.selectors.agreement import AgreementError
from analysis.selectors.leaderboard import (
    HUMANS,
    LeaderboardError,
    pairwise_leaderboard,
)
from analysis.selectors.skill_profiles import skill_profiles
from annotation.management.commands._cli import add_workspace_option, command_workspace
from annotation.models import Dataset
from flaskapp.commands import DataCommand


def _ci(r: dict, digits: int = 0) -> str:
    if r.get("value") is None:
        return "n/a"
    text = f"{r['value']:.{digits}f}"
    if r.get("ci"):
        text += f" [{r['ci'][0]:.{digits}f}, {r['ci'][1]:.{digits}f}]"
    return text


def render_pairwise(result: dict) -> str:
    """The pairwise leaderboard as a text table."""
    lines = [
        f"Pairwise leaderboard of {result['dataset']['name']}: "
        f"{result['source']['label']}, {result['votes']} votes, "
        f"{result['n_boot']} bootstrap resamples",
        "Bradley-Terry, ties as half wins; mean rating 1000; value [95% CI]",
    ]
    lc = result["length"] is not None
    head = ["rank", "model", "rating"]
    head += ["length-controlled", "lc rank"] if lc else []
    rows = [head + ["wins", "losses", "ties"]]
    for m in result["models"]:
        row = [
            f"{m['rank']} [{m['rank_ci'][0]}-{m['rank_ci'][1]}]",
            m["name"] + (" (unbounded)" if m["unbounded"] else ""),
            _ci(m["rating"]),
        ]
        if lc:
            c = m["length_controlled"]
            row += [_ci(c["rating"]), str(c["rank"])]
        rows.append(row + [str(m["wins"]), str(m["losses"]), str(m["ties"])])
    lines += text_table(rows)
    if lc:
        lines.append(
            f"length coefficient: {_ci(result['length']['beta'], 3)} log-odds per SD "
            "of the normalised length difference"
        )
    if result["unusable"]:
        lines.append(f"{result['unusable']} verdicts without a usable label left out")
    comp = result.get("comparison")
    if comp:
        lines.append(
            f"vs {comp['source']['label']} ({len(comp['models'])} common models): "
            f"Spearman {_ci(comp['spearman'], 2)}, Kendall {_ci(comp['kendall'], 2)}"
        )
    return "\n".join(lines)


def pairwise_mode(dataset: Dataset, options: dict) -> tuple[dict, str]:
    """--pairwise: (result, its table). CommandError names the option."""
    try:
        result = pairwise_leaderboard(
            dataset=dataset,
            source=options["source"],
            n_boot=options["boot"],
            seed=options["seed"],
            length_control=options["length_control"],
            compare=options["compare"],
        )
    except LeaderboardError as exc:
        message = str(exc).replace("n_boot", "boot", 1)
        raise CommandError(f"--{message}") from exc
    return result, render_pairwise(result)


def render_profiles(result: dict) -> str:
    """The skill profiles as text: per row, each model's mean [95% CI] (n) and rank
    under each source."""
    sources = result["sources"]
    lines = [
        f"Skill profiles of {result['dataset']['name']} ({result['slice']['label']}): "
        f"{result['aggregation']}; {result['n_boot']} resamples of "
        f"{result['bootstrap']['instructions']} instructions (clustered by instruction)"
    ]
    for row in result["rows"]:
        lines += ["", f"{row['label']} ({row['values_scale']})"]
        table = [["model", *(s["label"] for s in sources)]]
        for m, model in enumerate(result["models"]):
            cells = []
            for s in sources:
                e = row["sources"].get(s["key"], {}).get("models", [])
                e = e[m] if m < len(e) else {}
                text = _ci({"value": e.get("mean"), "ci": e.get("ci")}, 2)
                rank = f" #{e['rank']:g}" if e.get("rank") is not None else ""
                cells.append(f"{text} (n={e.get('n', 0)}){rank}")
            table.append([model, *cells])
        lines += text_table(table)
        lines += [
            f"{s['label']}: {row['sources'][s['key']]['ranking']}"
            for s in sources
            if row["sources"].get(s["key"], {}).get("ranking")
        ]
    return "\n".join(lines)


def profiles_mode(dataset: Dataset, options: dict) -> tuple[dict, str]:
    """--profiles: (result, its table). CommandError names the option."""
    dim, _, value = (options.get("slice") or "").partition(":")
    try:
        result = skill_profiles(
            dataset=dataset,
            campaign_ids=options.get("campaign") or None,
            run_ids=options.get("run") or None,
            slice_dim=dim,
            slice_value=value,
            n_boot=options["boot"],
            seed=options["seed"],
        )
    except AgreementError as exc:
        message = str(exc).replace("n_boot", "boot", 1)
        raise CommandError(f"--{message}") from exc
    return result, render_profiles(result)


class Command(DataCommand):
    help = "Leaderboards of a dataset's models (--pairwise: Bradley-Terry)."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        add_workspace_option(parser)
        parser.add_argument(
            "--pairwise", action="store_true", help="Bradley-Terry from pairwise votes."
        )
        parser.add_argument(
            "--source", default=HUMANS, help="humans (default) or a judge run id."
        )
        parser.add_argument(
            "--compare", default=None, help="Another source to correlate ranks with."
        )
        parser.add_argument("--length-control", action="store_true")
        parser.add_argument(
            "--profiles", action="store_true", help="Skill profiles per criterion."
        )
        parser.add_argument(
            "--campaign", type=int, nargs="*", help="Human campaigns (--profiles)."
        )
        parser.add_argument(
            "--run", type=int, nargs="*", help="Judge runs (--profiles)."
        )
        parser.add_argument(
            "--slice", default="", help="DIM:VALUE, e.g. domain:math (--profiles)."
        )
        parser.add_argument("--boot", type=int, default=1000)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--format", choices=("json", "table"), default="table")

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(
            name=options["dataset"], workspace=command_workspace(options)
        ).first()
        if dataset is None:
            raise CommandError(f"--dataset: no dataset named {options['dataset']!r}")
        if not (options["pairwise"] or options.get("profiles")):
            raise CommandError("choose a mode: --pairwise or --profiles")
        mode = pairwise_mode if options["pairwise"] else profiles_mode
        result, table = mode(dataset, options)
        if options["format"] == "json":
            self.stdout.write(json.dumps(result, indent=1))
        else:
            self.stdout.write(table)
