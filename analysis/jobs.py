"""The kinds of background job (`analysis.models.Job`): one entry per kind in
`JOB_KINDS`, which the service (`analysis.services.jobs`), the pages and the API
iterate; none of them branches on a kind. The kinds: the report, the rater models of
a large campaign, and a large agreement table not in the cache (computed and cached
for the dashboard's and the API's next identical request).

A kind says what its parameters are (`check`), how to describe them, and how to run
(`run(job, progress) -> JobOutput`): `progress(done, total)` may be called as steps
finish; a `JobFailed` raised by `run` is a failure whose message the owner reads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flaskapp.bounds import N_BOOT, SEED
from flaskapp.errors import DomainError, Problem

Progress = Callable[[int, int], None]


class JobFailed(Exception):
    """The job could not do its work, for a reason its owner can act on."""


@dataclass
class JobOutput:
    result: dict | None = None
    file: bytes | None = None
    file_name: str = ""


@dataclass(frozen=True)
class JobKind:
    key: str
    label: str
    check: Callable[[dict], dict]  # params -> cleaned params; DomainError if bad
    describe: Callable[[dict], str]
    run: Callable[..., JobOutput]  # (job, progress) -> JobOutput
    # job -> the page that shows a finished job's result (None: its download only)
    result_url: Callable[..., str] | None = None


def _slug(text: str) -> str:
    return (
        "".join(c if c.isalnum() or c in "-_" else "-" for c in text)[:80] or "report"
    )


# --- the report ----------------------------------------------------------------------


def _report_check(params: dict) -> dict:
    problems = [
        p
        for p in (
            N_BOOT.problem(params.get("n_boot"), "n_boot"),
            SEED.problem(params.get("seed"), "seed"),
        )
        if p
    ]
    from analysis.exports.report import PART_KEYS

    cleaned = {"n_boot": params.get("n_boot"), "seed": params.get("seed")}
    # The page's choices (absent: everything, and the agreement's default sources).
    parts = params.get("parts")
    if parts is not None:
        unknown = [p for p in parts if p not in PART_KEYS] if isinstance(
            parts, list) else [parts]  # fmt: skip
        if unknown:
            problems.append(
                Problem(
                    f"unknown parts {unknown!r} (known: {', '.join(PART_KEYS)})",
                    field="parts",
                )  # fmt: skip
            )
        else:
            cleaned["parts"] = [p for p in PART_KEYS if p in parts]
    for name in ("campaign_ids", "run_ids"):
        ids = params.get(name)
        if ids is None:
            continue
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            problems.append(Problem("must be a list of ids", field=name))
        else:
            cleaned[name] = sorted(set(ids))
    if problems:
        raise DomainError("Bad report parameters", problems)
    return cleaned


def _report_run(job, progress: Progress) -> JobOutput:
    from analysis.exports.report import report_files, report_zip

    files = report_files(
        dataset=job.dataset,
        n_boot=job.params["n_boot"],
        seed=job.params["seed"],
        parts=job.params.get("parts"),
        campaign_ids=job.params.get("campaign_ids"),
        run_ids=job.params.get("run_ids"),
        progress=progress,
    )
    name = f"report-{_slug(job.dataset.name)}-seed{job.params['seed']}"
    return JobOutput(
        result={"files": len(files)},
        file=report_zip(files, folder=name),
        file_name=f"{name}.zip",
    )


# --- the rater models of a campaign -------------------------------------------------------


def _rater_models_check(params: dict) -> dict:
    from analysis.selectors.competence import RaterModelError, parse_method

    try:
        method = parse_method(params.get("method"))
    except RaterModelError as exc:
        raise DomainError(
            "Bad rater model", [Problem(str(exc).removeprefix("model: "), "model")]
        ) from exc
    campaign_id = params.get("campaign_id")
    if not isinstance(campaign_id, int) or isinstance(campaign_id, bool):
        raise DomainError("Bad campaign", [Problem("must be an id", "campaign")])
    return {"campaign_id": campaign_id, "method": method}


def _rater_models_run(job, progress: Progress) -> JobOutput:
    from analysis.selectors.competence import (
        RaterModelError,
        campaign_rater_models,
        rater_models_dict,
    )
    from annotation.models import Campaign

    campaign = Campaign.objects.filter(
        pk=job.params["campaign_id"], dataset=job.dataset
    ).first()
    if campaign is None:
        raise JobFailed("the campaign no longer exists")
    progress(0, 1)
    try:
        report = campaign_rater_models(campaign=campaign, method=job.params["method"])
    except RaterModelError as exc:
        raise JobFailed(str(exc)) from exc
    return JobOutput(result=rater_models_dict(report))


# --- a large agreement table -------------------------------------------------------------

# The agreement job's parameters: `agreement_compute`'s keyword arguments, as the
# dashboard and the API pass them (so the job caches under the key their next
# identical request reads).
_AGREEMENT_IDS = ("campaign_ids", "run_ids")
_AGREEMENT_TEXT = ("human_reference", "slice_dim", "slice_value")


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _agreement_check(params: dict) -> dict:
    problems = [
        Problem("must be a list of ids", name)
        for name in _AGREEMENT_IDS
        if not isinstance(params.get(name, []), list)
        or not all(_is_int(v) for v in params.get(name, []))
    ]
    reference = params.get("reference_run_id")
    if reference is not None and not _is_int(reference):
        problems.append(Problem("must be an id", "reference_run_id"))
    problems += [
        Problem("must be text", name)
        for name in _AGREEMENT_TEXT
        if not isinstance(params.get(name, ""), str)
    ]
    problems += [
        p
        for p in (
            N_BOOT.problem(params.get("n_boot"), "n_boot"),
            SEED.problem(params.get("seed", 0), "seed"),
        )
        if p
    ]
    if problems:
        raise DomainError("Bad agreement parameters", problems)
    return {
        **{name: sorted(set(params.get(name, []))) if name == "campaign_ids"
           else list(dict.fromkeys(params.get(name, []))) for name in _AGREEMENT_IDS},
        "reference_run_id": reference,
        "retest": bool(params.get("retest", False)),
        "human_reference": params.get("human_reference", "raters"),
        "slice_dim": params.get("slice_dim", ""),
        "slice_value": params.get("slice_value", ""),
        "n_boot": params["n_boot"],
        "seed": params.get("seed", 0),
        **_judge_score(params),
    }  # fmt: skip


def _judge_score(params: dict) -> dict:
    """The agreement job's `judge_score`, kept only when not the default (so the
    default's parameters, and the jobs they dedupe with, stay as they were)."""
    value = params.get("judge_score", "integer")
    if not isinstance(value, str):
        raise DomainError(
            "Bad agreement parameters", [Problem("must be text", "judge_score")]
        )
    return {} if value == "integer" else {"judge_score": value}


def _agreement_describe(p: dict) -> str:
    slice_text = (
        f", slice {p['slice_dim']}:{p['slice_value']}" if p["slice_dim"] else ""
    )
    return (
        f"{len(p['campaign_ids']) or 'default'} campaign(s), "
        f"{len(p['run_ids']) or 'default'} run(s){slice_text}, "
        f"{p['n_boot']} resamples, seed {p['seed']}"
    )


def _agreement_run(job, progress: Progress) -> JobOutput:
    from analysis.selectors.agreement import AgreementError, agreement_compute

    progress(0, 1)
    try:
        result = agreement_compute(dataset=job.dataset, **job.params)
    except AgreementError as exc:
        raise JobFailed(str(exc)) from exc
    return JobOutput(
        result={
            "rows": len(result.rows),
            "runs": [r.id for r in result.runs],
            "campaigns": [c.id for c in result.campaigns],
            "n_boot": result.n_boot,
        }
    )


def _agreement_url(job) -> str:
    """The dashboard of the job's table (read from the cache once the job is done)."""
    from urllib.parse import urlencode

    from django.urls import reverse

    p = job.params
    query = [
        *(("campaign", c) for c in p["campaign_ids"]),
        *(("run", r) for r in p["run_ids"]),
        *([("reference", p["reference_run_id"])] if p["reference_run_id"] else []),
        *([("retest", 1)] if p["retest"] else []),
        ("human_reference", p["human_reference"]),
        *(
            [("slice", f"{p['slice_dim']}:{p['slice_value']}")]
            if p["slice_dim"]
            else []
        ),
        ("n_boot", p["n_boot"]),
        *([("judge_score", p["judge_score"])] if p.get("judge_score") else []),
    ]
    return f"{reverse('analysis:agreement', args=[job.dataset_id])}?{urlencode(query)}"


JOB_KINDS: dict[str, JobKind] = {
    kind.key: kind
    for kind in (
        JobKind(
            key="report",
            label="Report",
            check=_report_check,
            describe=lambda p: f"{p['n_boot']} resamples, seed {p['seed']}",
            run=_report_run,
        ),
        JobKind(
            key="rater_models",
            label="Rater models",
            check=_rater_models_check,
            describe=lambda p: f"campaign {p['campaign_id']}, {p['method']}",
            run=_rater_models_run,
        ),
        JobKind(
            key="agreement",
            label="Agreement table",
            check=_agreement_check,
            describe=_agreement_describe,
            run=_agreement_run,
            result_url=_agreement_url,
        ),
    )
}
