"""The agreement dashboard's reading of the query string and its shaping of
`agreement_compute()`'s result into table rows, chart SVGs and CSV lines.

Pure functions of plain data (a QueryDict-like `params`, the typed result), no
database access: the views in `views_agreement` stay thin and these rules are
tested through them. The query string every dashboard URL shares:

    campaign=<id> (repeatable)   human campaigns (the reference, by default); none:
                                 the defaults (`agreement_defaults`)
    run=<id> (repeatable)        judge runs to compare (baselines and imports included);
                                 none: per judge, its latest finished run
    reference=<id>               compare the runs with this judge run instead (judge vs judge)
    retest=1                     compare each run's sample 0 with its sample 1
    human_reference=adjudicated  the raters' scores, with a reviewer's settled value
                                 in their place where a dispute was adjudicated
    judge_score=expected         the judge's probability-weighted score in the
                                 correlations (QWK and exact stay on its integer)
    n_boot=<0..MAX_BOOT>         bootstrap resamples for the 95% intervals
    slice=<dim>:<value>          domain, difficulty, task, hard or model, or a facet
                                 the dataset's own taxonomy declares (facet.NAME)
    full=1                       the full table (every statistic); without it the
                                 compact one (`analysis.headline`); a sort implies it
    sort=<column>&dir=asc|desc   table order (server side; htmx swaps the fragment)
    chart=<row key>              the skill (or ability, "overall") the charts show
    radar=shared|all             the radars' item set (`charts.RADAR_VIEWS`): items
                                 every source scored (default) or all each scored
    judge=<run id>, model=<name> the run of a drill-down or chart, the model of a radar
    job=<id>                     the background job a progress state polls (a large
                                 table not cached: `analysis.services.agreement`)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis import charts, statistics
from analysis.selectors.agreement import HUMAN_REFERENCES, JUDGE_SCORES, MAX_BOOT
from analysis.selectors.agreement.result import AgreementResult, Row, Stat
from annotation.importers.taxonomy import FACET_PREFIX
from flaskapp.params import ascii_int

N_BOOT_DEFAULT = 1000
N_BOOT_MAX = MAX_BOOT
SLICE_DIMS = {
    "domain": "Domain",
    "difficulty": "Difficulty",
    "task": "Source task",
    "hard": "FLASK-Hard",
    "model": "Model",
}
CHART_KINDS = ("radar", "heatmap", "scatter", "ranks")


def slice_dims(slice_values: dict) -> dict[str, str]:
    """The slice dimensions a dataset offers, with their headings: `SLICE_DIMS`,
    then the facets its own taxonomy declares (``facet.channel``: "channel")."""
    facets = {
        dim: dim.removeprefix(FACET_PREFIX)
        for dim in slice_values
        if dim.startswith(FACET_PREFIX)
    }
    return {**SLICE_DIMS, **facets}


DRILL_LIMIT = 25


class BadChoice(Exception):
    """A download or drill-down asked for something the result does not have."""


@dataclass
class Choice:
    """What the researcher asked to see, checked against what the dataset has."""

    campaign_ids: list[int] = field(default_factory=list)
    run_ids: list[int] = field(default_factory=list)
    reference_run_id: int | None = None
    retest: bool = False
    human_reference: str = "raters"
    judge_score: str = "integer"
    n_boot: int = N_BOOT_DEFAULT
    slice_dim: str = ""
    slice_value: str = ""
    sort: str = ""
    descending: bool = True
    chart: str = ""
    full: bool = False
    radar: str = "shared"
    errors: list[str] = field(default_factory=list)
    # Why the defaults give nothing to compute (no error of the researcher's).
    no_defaults: str = ""
    # `job`: the background job a progress state polls (a large table not cached),
    # and that job once read (`analysis.services.agreement`).
    job_id: int | None = None
    job: object = None

    @property
    def ready(self) -> bool:
        """Every parameter is valid; what was not chosen comes from the defaults."""
        return not self.errors

    @property
    def explicit(self) -> bool:
        """Some source was chosen (otherwise everything is a default)."""
        return bool(
            self.campaign_ids
            or self.run_ids
            or self.reference_run_id is not None
            or self.retest
        )

    def adopt_sources(self, campaign_ids: list[int], run_ids: list[int]) -> None:
        """Take the campaigns and runs a result used (the defaults, where none were
        chosen), so the form shows them ticked and the drill-down uses them."""
        if not self.campaign_ids:
            self.campaign_ids = list(campaign_ids)
        if not self.run_ids:
            self.run_ids = list(run_ids)

    def compute_kwargs(self) -> dict:
        return {
            "campaign_ids": self.campaign_ids,
            "run_ids": self.run_ids,
            "reference_run_id": self.reference_run_id,
            "retest": self.retest,
            "human_reference": self.human_reference,
            "slice_dim": self.slice_dim,
            "slice_value": self.slice_value,
            "n_boot": self.n_boot,
            # Only when chosen: the default's cache keys and job parameters stay.
            **(
                {"judge_score": self.judge_score}
                if self.judge_score != "integer"
                else {}
            ),
        }


def _ids(params, name: str, known: dict, errors: list[str]) -> list[int]:
    ids: list[int] = []
    for raw in params.getlist(name):
        raw = raw.strip()
        if not raw:
            continue
        value = ascii_int(raw)
        if value is None:
            errors.append(f"`{name}`: “{raw[:40]}” is not an id.")
        elif value not in known:
            errors.append(
                f"`{name}`: {value} is not one of this dataset's "
                f"{'human campaigns' if name == 'campaign' else 'judge runs'}."
            )
        elif value not in ids:
            ids.append(value)
    return ids


def _job_id(params, errors: list[str]) -> int | None:
    """``job``: the id of the job a progress state polls (None: absent)."""
    raw = params.get("job", "").strip()
    if not raw:
        return None
    value = ascii_int(raw)
    if value is None or value < 1:
        errors.append(f"`job`: “{raw[:40]}” is not a job id.")
        return None
    return value


def _judge_score(params, errors: list[str]) -> str:
    """``judge_score``: "integer" (absent) or "expected"; a problem naming it."""
    raw = params.get("judge_score", "").strip()
    if not raw or raw in JUDGE_SCORES:
        return raw or "integer"
    errors.append(
        f"`judge_score`: “{raw[:40]}” must be one of {', '.join(JUDGE_SCORES)}."
    )
    return "integer"


def parse_choice(params, sources: dict, slice_values: dict) -> Choice:
    """Read the query string; every problem names its parameter."""
    errors: list[str] = []
    campaigns = {c["id"]: c for c in sources["campaigns"]}
    runs = {r["id"]: r for r in sources["runs"]}
    choice = Choice(errors=errors)
    choice.campaign_ids = _ids(params, "campaign", campaigns, errors)
    choice.run_ids = _ids(params, "run", runs, errors)
    reference = params.get("reference", "").strip()
    if reference:
        found = _ids(params, "reference", runs, errors)
        if found:
            choice.reference_run_id = found[0]
            if found[0] in choice.run_ids:
                errors.append(
                    f"`reference`: run {found[0]} is also one of the compared runs; "
                    "choose another run as the reference."
                )
    choice.retest = params.get("retest", "") in ("1", "on", "true")
    if choice.retest and choice.reference_run_id is not None:
        errors.append("`retest`: choose a reference run or test-retest, not both.")
    raw = params.get("human_reference", "").strip()
    if raw:
        if raw in HUMAN_REFERENCES:
            choice.human_reference = raw
        else:
            errors.append(
                f"`human_reference`: “{raw[:40]}” must be one of "
                f"{', '.join(HUMAN_REFERENCES)}."
            )
    choice.judge_score = _judge_score(params, errors)
    raw = params.get("n_boot", "").strip()
    if raw:
        value = ascii_int(raw)
        if value is None or not 0 <= value <= N_BOOT_MAX:
            errors.append(
                f"`n_boot`: “{raw[:40]}” must be a whole number from 0 to {N_BOOT_MAX}."
            )
        else:
            choice.n_boot = value
    raw = params.get("slice", "").strip()
    if raw:
        dim, _, value = raw.partition(":")
        allowed = {v["value"] for v in slice_values.get(dim, [])}
        dims = slice_dims(slice_values)
        if dim not in dims:
            errors.append(
                f"`slice`: “{dim[:60]}” is not a slice; use one of {', '.join(dims)}."
            )
        elif value not in allowed:
            errors.append(
                f"`slice`: {dims[dim].lower()} “{value[:60]}” does not occur in "
                "this dataset."
            )
        else:
            choice.slice_dim, choice.slice_value = dim, value
    choice.job_id = _job_id(params, errors)
    choice.sort = params.get("sort", "").strip()
    choice.descending = params.get("dir", "desc") != "asc"
    choice.chart = params.get("chart", "").strip()
    choice.full = params.get("full", "") in ("1", "on", "true") or bool(choice.sort)
    radar = params.get("radar", "").strip()
    if radar and radar not in charts.RADAR_VIEWS:
        errors.append(
            f"`radar`: “{radar[:40]}” is not a view; use {' or '.join(charts.RADAR_VIEWS)}."
        )
    elif radar:
        choice.radar = radar
    return choice


# --- The table and the charts -----------------------------------------------------------------


def _sort_value(row: Row, sort: str) -> float | None:
    if sort == "human":
        stat = row.human.stat("alpha_ordinal")
    else:
        run_id, _, key = sort.partition(".")
        judge = row.judge(run_id)
        stat = judge.stat(key) if judge else None
    return stat.value if stat else None


def _sorted_rows(rows: list[Row], sort: str, descending: bool) -> list[Row]:
    """Skills by the column, then abilities by the column, then overall; undefined
    values last whichever the direction. Without `sort`: the contract's grouped order."""
    if not sort:
        return rows

    def key(row):
        v = _sort_value(row, sort)
        return (v is None, 0 if v is None else (-v if descending else v))

    levels = ("skill", "ability", "overall")
    out = []
    for level in levels:
        out += sorted((r for r in rows if r.level == level), key=key)
    out += [r for r in rows if r.level not in levels]
    return out


def table_context(result: AgreementResult, choice: Choice) -> dict:
    """Rows and columns of the per-skill table, in the order asked for: the
    registry's table statistics (`analysis.statistics`) per run."""
    runs = result.run_labels
    columns = statistics.shown_in("table")
    known_sorts = {"human"} | {f"{rid}.{s.key}" for rid, _ in runs for s in columns}
    sort = choice.sort if choice.sort in known_sorts else ""
    rows = []
    for row in _sorted_rows(result.rows, sort, choice.descending):
        judges = []
        for rid, label in runs:
            judge = row.judge(rid)
            judges.append(
                {
                    "run_id": rid,
                    "label": label,
                    "cells": [
                        (judge.stat(s.key) if judge else None, s.format)
                        for s in columns
                    ],
                    "flag": judge.flag if judge else {},
                    "counts": judge.counts if judge else {},
                }
            )
        rows.append(
            {
                "row": row,
                "human": row.human,
                "ceiling": row.human.stat("alpha_ordinal"),
                "judges": judges,
            }
        )

    ceiling = statistics.get("alpha_ordinal", side="raters")

    def header(key: str, label: str, abbr: str) -> dict:
        current = key == sort
        return {
            "key": key,
            "label": label,
            "abbr": abbr,
            "aria_sort": ("descending" if choice.descending else "ascending")
            if current
            else "none",
            "next_dir": "asc" if current and choice.descending else "desc",
        }

    return {
        "rows": rows,
        "runs": runs,
        "human_header": header("human", ceiling.label, ceiling.abbreviation),
        "run_headers": [
            (
                rid,
                label,
                [header(f"{rid}.{s.key}", s.label, s.abbreviation) for s in columns],
            )
            for rid, label in runs
        ],
        "columns": columns,
        # cells right of the row label (a row without items spans them with one)
        "span": 1 + len(runs) * (len(columns) + 1),
        "sort": sort,
        "descending": choice.descending,
        "grouped": not sort,
    }


def _chart_rows(result: AgreementResult) -> list[Row]:
    levels = ("skill", "ability", "overall")
    return [r for r in result.rows if r.level in levels]


def _models_with_means(result: AgreementResult) -> list[str]:
    """The result's models that have a mean on some row (a slice by model, or a run
    that skipped a model, leaves the others without any)."""
    scored = set()
    for row in result.rows:
        for judge in row.judges.values():
            for m in judge.models.models:
                if m.human_mean.defined or m.judge_mean.defined:
                    scored.add(m.model)
    return [m for m in result.models if m in scored]


def charts_context(result: AgreementResult, choice: Choice) -> dict:
    """The SVGs of the charts section: a radar per model with scores; for the chosen
    row a heatmap and a scatter per run and the rank bars."""
    rows = _chart_rows(result)
    models = _models_with_means(result)
    keys = [r.key for r in rows]
    chart = choice.chart if choice.chart in keys else (keys[0] if keys else "")
    runs = result.run_labels
    chart_row = result.row(chart)
    return {
        "chart_rows": rows,
        "chart": chart,
        "chart_label": chart_row.label if chart_row else chart,
        "radars": [
            (m, charts.radar_from_agreement(result, m, choice.radar)) for m in models
        ],
        "radar_view": choice.radar,
        "radar_views": list(charts.RADAR_VIEWS.items()),
        "models_without_scores": len(result.models) - len(models),
        "per_run": [
            {
                "run_id": rid,
                "label": label,
                "heatmap": charts.heatmap_from_agreement(result, chart, rid),
                "scatter": charts.scatter_from_agreement(result, chart, rid),
            }
            for rid, label in runs
        ],
        "ranks": charts.rank_bars_from_agreement(result, chart),
    }


# --- Downloads -------------------------------------------------------------------------


def chart_svg(kind: str, params, result: AgreementResult) -> tuple[str, list]:
    """One chart of the dashboard and the parts of its file name; BadChoice names a
    parameter (`model`, `chart`, `judge`) the result does not have."""
    if kind == "radar":
        model = params.get("model", "")
        if model not in result.models:
            raise BadChoice(f"`model`: “{model}” is not a model of this result.")
        view = params.get("radar", "") or "shared"
        if view not in charts.RADAR_VIEWS:
            raise BadChoice(f"`radar`: “{view[:40]}” is not a view.")
        return charts.radar_from_agreement(result, model, view), [model, view]
    row = params.get("chart", "")
    if result.row(row) is None:
        raise BadChoice(f"`chart`: “{row}” is not a row of the table.")
    if kind == "ranks":
        return charts.rank_bars_from_agreement(result, row), [row]
    judge = params.get("judge", "")
    if judge not in dict(result.run_labels):
        raise BadChoice(f"`judge`: “{judge}” is not one of the compared runs.")
    render_chart = (
        charts.heatmap_from_agreement
        if kind == "heatmap"
        else charts.scatter_from_agreement
    )
    return render_chart(result, row, judge), [row, f"run{judge}"]


def _stat_line(prefix: list, name: str, stat: Stat | None) -> list:
    if stat is None:
        return prefix + [name, None, None, None, None, None, ""]
    lo, hi = stat.ci or (None, None)
    return prefix + [name, stat.value, lo, hi, stat.n, stat.n_undefined, stat.reason]


TABLE_CSV_HEADER = [
    "row",
    "level",
    "ability",
    "label",
    "source",
    "source_label",
    "statistic",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "n_undefined",
    "reason",
]


def table_csv_lines(result: AgreementResult) -> list[list]:
    """The table in long form: one line per row, source and statistic, with the
    reference's ceiling (source "reference"), every statistic of the registry
    (`analysis.statistics`) and each run's flag."""
    lines = [TABLE_CSV_HEADER]
    runs = result.run_labels
    for row in result.rows:
        base = [row.key, row.level, row.ability, row.label]
        human = row.human
        ref = base + ["reference", result.reference_label]
        for name in ("n_items", "n_items_multi_rated", "scores", "na"):
            lines.append(ref + [name, getattr(human, name), None, None, None, None, ""])
        for name in statistics.keys("raters"):
            lines.append(_stat_line(ref, name, human.stat(name)))
        for rid, label in runs:
            judge = row.judge(rid)
            src = base + [f"run:{rid}", label]
            for name, count in (judge.counts if judge else {}).items():
                lines.append(src + [f"count_{name}", count, None, None, None, None, ""])
            for name in statistics.keys("judge"):
                stat = judge.stat(name) if judge else None
                lines.append(_stat_line(src, name, stat))
            flag = judge.flag if judge else None
            for name in ("below_ceiling", "significant"):
                value = getattr(flag, name) if flag else None
                text = "" if value is None else ("true" if value else "false")
                reason = flag.reason if flag else ""
                lines.append(
                    src + [f"flag_{name}", text, None, None, None, None, reason]
                )
    return lines


def model_csv_lines(result: AgreementResult) -> list[list]:
    """Model means behind the radar and rank charts: one line per row, run and model."""
    lines = [
        [
            "row",
            "label",
            "source",
            "source_label",
            "model",
            "n",
            "human_mean",
            "human_mean_n",
            "judge_mean",
            "judge_mean_n",
        ]
    ]
    for row in result.rows:
        for rid, label in result.run_labels:
            judge = row.judge(rid)
            for m in judge.models.models if judge else ():
                h, j = m.human_mean, m.judge_mean
                lines.append(
                    [
                        row.key,
                        row.label,
                        f"run:{rid}",
                        label,
                        m.model,
                        m.n,
                        h.value,
                        h.n,
                        j.value,
                        j.n,
                    ]
                )
    return lines


DISAGREEMENT_CSV_HEADER = [
    "response_id",
    "instruction_external_id",
    "model",
    "judge_run",
    "judge_score",
    "human_mean",
    "difference",
    "rater",
    "human_score",
    "human_rationale",
    "judge_rationale",
]


def disagreement_csv_lines(items: list[dict], judge: str) -> list[list]:
    """The drill-down in long form: one line per (response, human rater)."""
    lines = [DISAGREEMENT_CSV_HEADER]
    for item in items:
        for human in item.get("human") or [{}]:
            lines.append(
                [
                    item.get("response_id"),
                    item.get("instruction_external_id"),
                    item.get("model"),
                    judge,
                    item.get("judge_score"),
                    item.get("human_mean"),
                    item.get("difference"),
                    human.get("rater"),
                    human.get("score"),
                    human.get("rationale"),
                    item.get("judge_rationale"),
                ]
            )
    return lines
