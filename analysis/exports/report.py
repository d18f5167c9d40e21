"""A report to put in a paper: the dataset's figures as files.

:func:`report_files` returns {relative path: bytes}, :func:`report_zip` the same as a
zip archive. Every table comes as CSV (every statistic, long form) and as a LaTeX
``tabular`` (the headline statistics with their 95% CIs); every chart as SVG (the
app's own charts, `analysis.charts`) and PNG (the same SVG rasterised on the server
by resvg, no browser); ``README.md`` states the data (counts, campaigns, runs, the
raters excluded), the methods and the seeds.

Byte-stable: the same data, parameters and seed give the same bytes (no timestamp,
no random order: files sorted by path, zip entries dated 1980-01-01, fixed modes).
Sections without data (no pairwise votes, no judge run) are left out and the README
says why; so are the parts (`PARTS`) the researcher did not tick, "by choice".
Categorical criteria have their own files (agreement/categorical.*) with the
dashboard's figures: exact agreement, Cohen's kappa and F1 with the human majority.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from pathlib import Path

from django.db.models import Count

from analysis import statistics
from analysis.charts import agreement as agreement_charts
from analysis.display import model_csv_lines, table_csv_lines
from analysis.exports.encoding import csv_text
from analysis.selectors.agreement import AgreementError, agreement_compute
from analysis.selectors.agreement.result import AgreementResult, Stat
from annotation.models import (
    Campaign,
    Dataset,
    HumanScore,
    Instruction,
    RaterExclusion,
    Response,
)
from judging.models import JudgeRun, JudgeScore

LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
ZIP_DATE = (1980, 1, 1, 0, 0, 0)
# The PNG charts' text is drawn with fonts the project ships (DejaVu Sans, regular and
# bold; licence in fonts/LICENSE), never the machine's. The charts name "system-ui,
# ..., Arial, sans-serif" and resvg maps the generic sans-serif to Arial unless told:
# on a machine with none of those fonts the PNGs had no text at all. With the system's
# fonts skipped, one SVG gives the same PNG on every machine.
FONT_FAMILY = "DejaVu Sans"
FONT_FILES = tuple(
    str(p) for p in sorted((Path(__file__).resolve().parent / "fonts").glob("*.ttf"))
)


def latex_escape(text) -> str:
    """Text as LaTeX source: the ten special characters escaped, nothing else."""
    return "".join(LATEX_SPECIAL.get(c, c) for c in str(text))


def latex_row(cells: list) -> str:
    """One ``tabular`` row, its cells escaped, starting with ``{}``: LaTeX reads a
    ``[`` or ``*`` right after the previous row's ``\\`` as that command's argument
    (a model named "[2cm] x" was spacing, "*x" a star), and an empty group first
    ends that search."""
    return "{}" + " & ".join(latex_escape(c) for c in cells) + r" \\"


def latex_table(header: list[str], rows: list[list[str]], caption: str) -> str:
    """A ``table`` with a ``tabular`` (first column left, the others right), the
    cells escaped, every row started safely (`latex_row`); needs nothing beyond
    LaTeX itself."""
    cols = "l" + "r" * (len(header) - 1)
    lines = [
        r"\begin{table}[ht]",
        r"\centering",
        rf"\caption{{{latex_escape(caption)}}}",
        rf"\begin{{tabular}}{{{cols}}}",
        r"\hline",
        latex_row(header),
        r"\hline",
    ]
    lines += [latex_row(row) for row in rows]
    lines += [r"\hline", r"\end{tabular}", r"\end{table}", ""]
    return "\n".join(lines)


def file_slug(text, default: str = "x") -> str:
    """`text` as one safe part of a file name: letters, digits, ``-``, ``_`` and
    ``.`` kept, anything else (``/``, ``\\``, ``:``, spaces) a ``-``, no leading
    ``.`` or ``-`` (so never ``..``), at most 80 characters; `default` if none is
    left. Every name in the report's folder and zip is made of these."""
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in str(text))
    return slug.lstrip(".-")[:80] or default


def _safe_path(path: str) -> str:
    return "/".join(file_slug(part) for part in path.split("/"))


def fmt_stat(stat: dict | Stat | None) -> str:
    """ "0.61 [0.55, 0.67]", or "n/a" for an undefined statistic (an agreement
    :class:`Stat`, or the JSON of another section's figure)."""
    if isinstance(stat, dict):
        stat = Stat.of(stat)
    if stat is None or stat.value is None:
        return "n/a"
    text = f"{stat.value:.2f}"
    if stat.ci:
        text += f" [{stat.ci[0]:.2f}, {stat.ci[1]:.2f}]"
    return text


def png_of(svg: str) -> bytes:
    """The SVG rasterised (resvg, white background, twice the size for print), its
    text in the shipped fonts (``FONT_FILES``) whatever family the SVG names."""
    import resvg_py

    return bytes(
        resvg_py.svg_to_bytes(
            svg_string=svg,
            background="#ffffff",
            zoom=2.0,
            skip_system_fonts=True,
            font_files=list(FONT_FILES),
            font_family=FONT_FAMILY,
            sans_serif_family=FONT_FAMILY,
            serif_family=FONT_FAMILY,
            monospace_family=FONT_FAMILY,
        )
    )


def _chart(files: dict, path: str, svg: str) -> None:
    files[f"{path}.svg"] = svg.encode()
    files[f"{path}.png"] = png_of(svg)


def _agreement(files: dict, notes: list, dataset, campaign_ids, run_ids, n_boot, seed):
    try:
        result = agreement_compute(
            dataset=dataset,
            campaign_ids=campaign_ids,
            run_ids=run_ids,
            n_boot=n_boot,
            seed=seed,
        )
    except AgreementError as exc:
        notes.append(f"Agreement: left out ({exc}).")
        return None
    if not result.runs:
        notes.append("Agreement: left out (no judge run with scores).")
        return result
    files["agreement/table.csv"] = csv_text(table_csv_lines(result)).encode()
    files["agreement/models.csv"] = csv_text(model_csv_lines(result)).encode()
    runs = result.run_labels
    columns = statistics.shown_in("report")
    items_of = statistics.headline().key  # its n: the items the row stands on
    header = ["Row", "Items"] + [
        f"{label}: {s.short[:1].upper()}{s.short[1:]}"
        for _, label in runs
        for s in columns
    ]
    rows = []
    for row in result.rows:
        cells = [row.judge(rid) for rid, _ in runs]
        n = max((c.stat(items_of).n if c and c.stat(items_of) else 0) for c in cells)
        rows.append(
            [row.label or row.key, str(n)]
            + [fmt_stat(c.stat(s.key) if c else None) for c in cells for s in columns]
        )
    files["agreement/table.tex"] = latex_table(
        header,
        rows,
        f"Judge-human agreement on {dataset.name} (95% bootstrap CIs, "
        f"{n_boot} resamples, seed {seed})",
    ).encode()
    if result.row("overall"):
        _chart(
            files,
            "agreement/ranks-overall",
            agreement_charts.rank_bars_from_agreement(result, "overall"),
        )
    for model in result.models:
        slug = file_slug(model)
        _chart(
            files,
            f"agreement/radar-{slug}",
            agreement_charts.radar_from_agreement(result, model),
        )
    return result


def _readme(
    dataset: Dataset,
    result: AgreementResult | None,
    notes: list[str],
    n_boot: int,
    seed: int,
) -> str:
    campaigns = list(
        Campaign.objects.filter(dataset=dataset).order_by("pk").values("pk", "name")
    )
    scores = dict(
        HumanScore.objects.filter(assignment__campaign__dataset=dataset)
        .values("assignment__campaign_id")
        .annotate(n=Count("id"))
        .order_by()
        .values_list("assignment__campaign_id", "n")
    )
    lines = [
        f"# Report: {dataset.name}",
        "",
        "Made by FLASK Eval (`manage.py report`). The same data, parameters and seed "
        "give the same files.",
        "",
        "## Data",
        "",
        f"- Instructions: {Instruction.objects.filter(dataset=dataset).count()}",
        f"- Responses: {Response.objects.filter(instruction__dataset=dataset).count()}",
        "- Human scores: "
        f"{HumanScore.objects.filter(assignment__campaign__dataset=dataset).count()}",
        f"- Judge scores: {JudgeScore.objects.filter(run__dataset=dataset).count()}",
        "",
        "Campaigns:",
    ]
    for c in campaigns:
        lines.append(
            f"- {c['pk']}: {c['name']} ({scores.get(c['pk'], 0)} human scores)"
        )
    lines.append("")
    lines.append("Judge runs:")
    for run in JudgeRun.objects.filter(dataset=dataset).order_by("pk"):
        note = f" ({run.source_note})" if run.source_note else ""
        lines.append(f"- {run.pk}: {run} [{run.kind}, {run.status}]{note}")
    exclusions = RaterExclusion.objects.filter(
        campaign__dataset=dataset, ended_at__isnull=True
    ).order_by("pk")
    lines += ["", "Raters excluded from the figures (open exclusions):"]
    lines += [
        f"- rater {x.rater_id} in campaign {x.campaign_id} ({x.kind}): {x.reason}"
        for x in exclusions
    ] or ["- none"]
    if result is not None:
        used = ", ".join(str(c.id) for c in result.campaigns) or "none"
        runs = ", ".join(str(r.id) for r in result.runs) or "none"
        lines += ["", f"Agreement: campaigns {used}; runs {runs}."]
    lines += [
        "",
        "## Methods",
        "",
        "- Agreement (agreement/): per criterion, group and overall, each judge run "
        "against the raters: Spearman and Pearson with the raters' mean, QWK and exact "
        "agreement with their median rounded half up; Krippendorff's alpha of the "
        "raters (the ceiling). N/A is not a score.",
        "- Categorical criteria (agreement/categorical.*): per criterion, each judge "
        "run against the raters' majority label (ties left out): exact agreement, "
        "Cohen's kappa, nominal alpha with the judge, per-label precision, recall and "
        "F1; the raters' Fleiss kappa, nominal alpha and leave-one-out ceiling.",
        f"- Intervals: 95% percentile bootstrap, {n_boot} resamples of items (within "
        f"each criterion), seed {seed}.",
        "- Skill profiles (profiles/): per source (the raters' mean of an item, or a "
        "judge run's score), model and criterion, group and overall, the mean over "
        "every item the source scored (FLASK's aggregation), 95% CI by a bootstrap "
        "clustered by instruction (an instruction's responses and criteria drawn "
        "together), the same resamples giving each model's rank.",
        "- Leaderboards (leaderboard/): Bradley-Terry ratings from pairwise votes "
        "(ties as half a win to each side; judge runs with both orders as two votes), "
        "on an Elo-like scale with mean 1000, 95% CIs over resampled votes.",
        "- Tables: CSV has every statistic in long form; LaTeX the headline ones with "
        "their intervals. Charts: SVG, and PNG rasterised from the same SVG.",
    ]
    if notes:
        lines += ["", "## Left out", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def _figures(group: dict) -> list[tuple[str, dict]]:
    """(name, statistic) of a meta-evaluation group's figures with a value field."""
    return [(k, v) for k, v in group.items() if isinstance(v, dict) and "value" in v]


def metaeval_section(files: dict, notes: list, dataset: Dataset, params: dict) -> None:
    """Each pairwise judge run against the human votes (analysis.selectors.metaeval):
    metaeval/figures.csv (every figure, overall and per category) and .tex."""
    from analysis.selectors.metaeval import (
        MetaevalError,
        metaeval_compute,
        pairwise_runs,
    )

    if not pairwise_runs(dataset):
        notes.append("Meta-evaluation: left out (no pairwise judge run).")
        return
    try:
        result = metaeval_compute(
            dataset=dataset, n_boot=params["n_boot"], seed=params["seed"]
        )
    except MetaevalError as exc:
        notes.append(f"Meta-evaluation: left out ({exc}).")
        return
    lines = [["run", "run_label", "group", "figure", "value", "ci_low", "ci_high", "n"]]
    rows = []
    for run in result["runs"]:
        report = run["report"]
        groups = [("overall", report["overall"])] + sorted(
            (report.get("categories") or {}).items()
        )
        for name, group in groups:
            for figure, stat in _figures(group):
                ci = stat.get("ci") or [None, None]
                lines.append(
                    [run["id"], run["label"], name, figure, stat.get("value"), *ci,
                     stat.get("n")]
                )  # fmt: skip
        rows += [
            [run["label"], figure, fmt_stat(stat), str(stat.get("n") or 0)]
            for figure, stat in _figures(report["overall"])
        ]
    files["metaeval/figures.csv"] = csv_text(lines).encode()
    files["metaeval/figures.tex"] = latex_table(
        ["Run", "Figure", "Value [95% CI]", "n"],
        rows,
        f"Pairwise judges against human votes on {dataset.name}",
    ).encode()


def categorical_section(files: dict, notes: list, dataset, params: dict) -> None:
    """The categorical criteria (`analysis.selectors.classification`, the dashboard's
    figures): per criterion the raters' agreement (Fleiss' kappa, nominal alpha, the
    leave-one-out ceiling) and per run the judge against the human majority (exact
    agreement, Cohen's kappa, macro F1): agreement/categorical.csv (with the
    per-label rows) and .tex. A rubric without one adds nothing; a criterion without
    figures is named in the README's "Left out" with the reason."""
    from analysis.selectors.classification import (
        classification_compute,
        dataset_has_categorical,
    )

    if not dataset_has_categorical(dataset):
        return
    result = params.get("agreement")
    campaign_ids = params["campaign_ids"]
    run_ids = params["run_ids"]
    if result is not None:
        campaign_ids = [c.id for c in result.campaigns] or campaign_ids
        run_ids = [r.id for r in result.runs] or run_ids
    try:
        section = classification_compute(
            dataset=dataset, campaign_ids=campaign_ids, run_ids=run_ids,
            n_boot=params["n_boot"], seed=params["seed"],
        )  # fmt: skip
    except AgreementError as exc:
        notes.append(f"Categorical criteria: left out ({exc}).")
        return
    lines = [["criterion", "name", "source", "figure", "label", "value", "ci_low",
              "ci_high", "n"]]  # fmt: skip
    rows = []
    runs = [(str(r["id"]), r["label"]) for r in section["runs"]]
    for crit in section["criteria"]:
        humans = crit["humans"]
        for figure, stat in (
            ("fleiss_kappa", humans["fleiss"]),
            ("alpha_nominal", humans["alpha_nominal"]),
            ("ceiling_accuracy", humans["ceiling"]["accuracy"]),
            ("ceiling_kappa", humans["ceiling"]["kappa"]),
        ):
            ci = (stat or {}).get("ci") or [None, None]
            lines.append([crit["key"], crit["name"], "raters", figure, "",
                          (stat or {}).get("value"), *ci, (stat or {}).get("n")])  # fmt: skip
        judged = [(label, crit["judges"].get(rid)) for rid, label in runs]
        judged = [(label, j) for label, j in judged if j and j["n_items"]]
        if not humans["n_items"] or not judged:
            why = "no item labelled by the raters" if not humans["n_items"] else (
                "no judge run labelled it")  # fmt: skip
            notes.append(f"Categorical criterion {crit['name']}: no judge figures "
                         f"({why}).")  # fmt: skip
        for label, j in judged:
            for figure in ("accuracy", "kappa", "alpha_with_judge"):
                stat = j[figure] or {}
                ci = stat.get("ci") or [None, None]
                lines.append([crit["key"], crit["name"], label, figure, "",
                              stat.get("value"), *ci, stat.get("n")])  # fmt: skip
            lines.append([crit["key"], crit["name"], label, "macro_f1", "",
                          j["macro_f1"], None, None, j["n_items"]])  # fmt: skip
            for lab in j["per_label"]:
                for figure in ("precision", "recall", "f1"):
                    lines.append([crit["key"], crit["name"], label, figure,
                                  lab["key"], lab[figure], None, None,
                                  lab["support"]])  # fmt: skip
            rows.append(
                [crit["name"], label, str(j["n_items"]), fmt_stat(j["accuracy"]),
                 fmt_stat(j["kappa"]), fmt_stat(humans["ceiling"]["kappa"])]
            )  # fmt: skip
    files["agreement/categorical.csv"] = csv_text(lines).encode()
    files["agreement/categorical.tex"] = latex_table(
        ["Criterion", "Run", "Items", "Exact agreement", "Cohen's kappa",
         "Raters' kappa (ceiling)"],
        rows,
        f"Categorical criteria on {dataset.name}: judges against the human majority "
        f"(95% bootstrap CIs, {params['n_boot']} resamples, seed {params['seed']})",
    )  # fmt: skip
    files["agreement/categorical.tex"] = files["agreement/categorical.tex"].encode()


def leaderboard_section(files: dict, notes: list, dataset, params: dict) -> None:
    """Bradley-Terry leaderboards (analysis.selectors.leaderboard) of the human votes
    and of each pairwise judge run: leaderboard/<source>.csv and .tex, the ratings and
    win-rate charts."""
    from analysis.charts.leaderboard import (
        ratings_from_leaderboard,
        win_rate_from_leaderboard,
    )
    from analysis.selectors.leaderboard import (
        HUMANS,
        LeaderboardError,
        leaderboard_sources,
        pairwise_leaderboard,
    )

    sources = leaderboard_sources(dataset)
    wanted = ([HUMANS] if sources["human_votes"] else []) + [
        r["id"] for r in sources["runs"]
    ]
    if not wanted:
        notes.append("Leaderboards: left out (no pairwise votes).")
        return
    for source in wanted:
        name = "humans" if source == HUMANS else f"run-{source}"
        try:
            board = pairwise_leaderboard(
                dataset=dataset, source=source, n_boot=params["n_boot"],
                seed=params["seed"],
            )  # fmt: skip
        except LeaderboardError as exc:
            notes.append(f"Leaderboard of {name}: left out ({exc}).")
            continue
        lines = [["model", "rating", "ci_low", "ci_high", "rank", "wins", "losses",
                  "ties", "votes"]]  # fmt: skip
        rows = []
        for m in board["models"]:
            ci = m["rating"].get("ci") or [None, None]
            lines.append(
                [m["name"], m["rating"].get("value"), *ci, m["rank"], m["wins"],
                 m["losses"], m["ties"], m["votes"]]
            )  # fmt: skip
            value = m["rating"].get("value")
            text = "n/a" if value is None else f"{value:.0f}"
            if m["rating"].get("ci"):
                text += f" [{ci[0]:.0f}, {ci[1]:.0f}]"
            rows.append([m["name"], text, str(m["rank"]), str(m["votes"])])
        files[f"leaderboard/{name}.csv"] = csv_text(lines).encode()
        files[f"leaderboard/{name}.tex"] = latex_table(
            ["Model", "Rating [95% CI]", "Rank", "Votes"],
            rows,
            f"Bradley-Terry ratings of {board['source']['label']} on {dataset.name} "
            "(ties as half wins)",
        ).encode()
        _chart(files, f"leaderboard/{name}-ratings", ratings_from_leaderboard(board))
        _chart(files, f"leaderboard/{name}-win-rates", win_rate_from_leaderboard(board))


def profiles_section(files: dict, notes: list, dataset, params: dict) -> None:
    """FLASK skill profiles (analysis.selectors.skill_profiles): per source, model and
    row the mean over every item the source scored with its CI clustered by
    instruction: profiles/profiles.csv and .tex, a radar per source, bars per row."""
    from analysis.charts.profiles import bars_from_profiles, radar_from_profiles
    from analysis.selectors.skill_profiles import skill_profiles

    try:
        result = skill_profiles(
            dataset=dataset, campaign_ids=params["campaign_ids"],
            run_ids=params["run_ids"], n_boot=params["n_boot"], seed=params["seed"],
        )  # fmt: skip
    except AgreementError as exc:
        notes.append(f"Skill profiles: left out ({exc}).")
        return
    if not result["sources"] or not result["models"]:
        notes.append("Skill profiles: left out (no scores).")
        return
    lines = [["row", "label", "source", "model", "mean", "ci_low", "ci_high", "n",
              "n_instructions", "rank"]]  # fmt: skip
    labels = {s["key"]: s["label"] for s in result["sources"]}
    header = ["Model"] + [f"{labels[k]}: {row['label']}" for row in result["rows"]
                          if row["level"] == "overall" for k in labels]  # fmt: skip
    table: dict[str, list[str]] = {m: [m] for m in result["models"]}
    for row in result["rows"]:
        for key, source in row["sources"].items():
            for m in source["models"]:
                ci = m.get("ci") or [None, None]
                lines.append(
                    [row["key"], row["label"], labels.get(key, key), m["model"],
                     m.get("mean"), *ci, m.get("n"), m.get("n_instructions"),
                     m.get("rank")]
                )  # fmt: skip
                if row["level"] == "overall" and m["model"] in table:
                    stat = {"value": m.get("mean"), "ci": m.get("ci")}
                    table[m["model"]].append(fmt_stat(stat))
    files["profiles/profiles.csv"] = csv_text(lines).encode()
    files["profiles/overall.tex"] = latex_table(
        header,
        [r for r in table.values() if len(r) == len(header)],
        f"Overall mean score per model on {dataset.name} (95% CIs, bootstrap "
        "clustered by instruction)",
    ).encode()
    for source in result["sources"]:
        slug = file_slug(source["key"])
        _chart(
            files, f"profiles/radar-{slug}", radar_from_profiles(result, source["key"])
        )
    for row in result["rows"]:
        slug = file_slug(row["key"])
        _chart(files, f"profiles/bars-{slug}", bars_from_profiles(result, row["key"]))


# Further sections (name, function(files, notes, dataset, params) -> None), run in
# order after the agreement; each adds its files or a note saying why it has none.
SECTIONS: list[tuple[str, Callable]] = [
    ("categorical", categorical_section),
    ("profiles", profiles_section),
    ("leaderboard", leaderboard_section),
    ("metaeval", metaeval_section),
]
# What a researcher may choose on the report page (key, what it is, its files), in
# the zip's order: the agreement first, then `SECTIONS`. The README always comes.
PARTS: list[tuple[str, str, str]] = [
    ("agreement", "Agreement of the judges with the raters (ordinal criteria)",
     "agreement/table.csv, table.tex, models.csv, rank and radar charts"),
    ("categorical", "Categorical criteria: exact agreement and kappa with the human "
     "majority", "agreement/categorical.csv, categorical.tex"),
    ("profiles", "Skill profiles: each model's mean per criterion",
     "profiles/profiles.csv, overall.tex, radar and bar charts"),
    ("leaderboard", "Leaderboards from pairwise votes (Bradley-Terry)",
     "leaderboard/<source>.csv, .tex, ratings and win-rate charts"),
    ("metaeval", "Pairwise judges against the human votes",
     "metaeval/figures.csv, figures.tex"),
]  # fmt: skip
PART_KEYS = tuple(key for key, _, _ in PARTS)


def report_files(  # noqa: PLR0913 - keyword-only options mirrored by the page, the job and the command
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    parts: list[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, bytes]:
    """Every file of the report, by relative path (sorted), each part of it a
    `file_slug` (no ``..``, no absolute path, whatever the names in the data).
    `parts`: the keys of `PARTS` to build (None: all); each one not chosen is named
    in the README's "Left out" as left out by choice. The agreement is computed
    whenever a chosen part needs its campaigns and runs. Read-only; no permission
    check (callers do it). `progress(done, total)` is called before the first
    section and after each (a background job's bar)."""
    chosen = set(PART_KEYS if parts is None else parts)
    files: dict[str, bytes] = {}
    notes: list[str] = []
    total = 2 + len(SECTIONS)  # the agreement, the sections, the README
    report_progress = progress or (lambda done, total: None)
    report_progress(0, total)
    labels = {key: label for key, label, _ in PARTS}
    result = None
    if "agreement" in chosen:
        result = _agreement(files, notes, dataset, campaign_ids, run_ids, n_boot, seed)
    report_progress(1, total)
    params = {"campaign_ids": campaign_ids, "run_ids": run_ids, "n_boot": n_boot}
    params["seed"] = seed
    params["agreement"] = result
    for done, (name, section) in enumerate(SECTIONS, start=2):
        if name in chosen:
            section(files, notes, dataset, params)
        report_progress(done, total)
    notes += [
        f"{labels[key]}: left out by choice." for key in PART_KEYS if key not in chosen
    ]
    files["README.md"] = _readme(dataset, result, notes, n_boot, seed).encode()
    return dict(sorted((_safe_path(p), data) for p, data in files.items()))


def report_zip(files: dict[str, bytes], folder: str) -> bytes:
    """The files in a zip under `folder/`, byte-stable (fixed dates and modes);
    every part of every entry's name a `file_slug`."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in sorted(files.items()):
            name = _safe_path(f"{file_slug(folder, 'report')}/{path}")
            info = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return out.getvalue()
