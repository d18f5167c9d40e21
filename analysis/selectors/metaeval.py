"""Judge meta-evaluation against human preferences, and bias probes: data gathering.

Reads only. Pulls pairwise verdicts, human votes, pair metadata and (for pointwise
probes) scores with a fixed number of queries into arrays for the pure functions of
:mod:`analysis.stats.metaeval` and :mod:`analysis.stats.probes`, and returns JSON-safe
dicts (every figure a result dict as in
:func:`analysis.selectors.agreement.rows.result_dict`).

Conventions

* A pairwise run's verdicts come from sample 0 of each (pair, order); labels are in the
  pair's original numbering (``PairwiseVerdict.verdict``), ``""`` = no usable verdict.
* Human votes: every HumanPreference of the pair (imported votes and campaign votes).
* Self-preference: a response is the judge's "own" when the EvaluatedModel (of the
  dataset's workspace: each maps its own models) of its model
  name has the same (non-empty) family as the run's judge config ``model_family``.
  When no response of the data is the judge's own, the probe's undefined figures say
  so (:func:`no_own_family_reason`) instead of a generic reason.
* Lengths are characters of the response text.
* Cue probes (bandwagon, attention): a run with ``probe`` set is compared with the
  plain pairwise run of the same judge config on the same dataset (the newest one,
  or ``probe_settings["base_run"]`` when given); the cue target per (pair, order) is
  read from the probe run's calls (``JudgeCall.parsed["probe"]["cue_target_original"]``,
  original numbering, as `judging.services.runs` records it) or ``probe_settings["cue_target"]`` for a fixed target ("1"/"2", or
  "A"/"B" for a fixed presented position, mapped per order).
"""

from __future__ import annotations

import json

import numpy as np
from django.db import connection
from django.db.models.functions import Length

from analysis import compare
from analysis.glossary import figure
from analysis.selectors.agreement.inputs import (
    fetch,
    item_keys,
    load_inputs,
    placeholders,
    quoted_table,
    scored_by_both,
)
from analysis.selectors.agreement.rows import result_dict
from analysis.selectors.agreement.sources import (
    AgreementError,
    check_params,
    check_resampling,
    run_label,
)
from analysis.stats.metaeval import metaeval_report
from analysis.stats.pairwise import PairwiseData
from analysis.stats.probes import (
    Probe,
    cue_probe,
    halo_probe,
    pointwise_length_probe,
    score_inflation_probe,
)
from analysis.stats.results import Result, make_result
from annotation.labels import map_verdict
from annotation.models import (
    Dataset,
    HumanPreference,
    PreferencePair,
    Response,
)
from annotation.selectors.exclusions import exclusions_note
from annotation.selectors.preferences import evaluated_model_families
from flaskapp.bounds import N_BOOT
from flaskapp.untrusted import JSONInputError, json_loads
from judging.models import JudgeCall, JudgeRun, PairwiseVerdict

MAX_BOOT = N_BOOT.high


class MetaevalError(AgreementError):
    """A bad parameter; the message starts with its name."""


def pairwise_runs(dataset: Dataset) -> list[JudgeRun]:
    """Runs with pairwise verdicts on `dataset`, newest first."""
    with_verdicts = PairwiseVerdict.objects.filter(run__dataset=dataset).values(
        "run_id"
    )
    return list(
        JudgeRun.objects.filter(dataset=dataset, pk__in=with_verdicts)
        .select_related("config")
        .order_by("-created_at", "-pk")
    )


def _json(value):
    """Results, probes and numpy scalars to plain JSON types (recursively)."""
    if isinstance(value, Result):
        return result_dict(value)
    if isinstance(value, Probe):
        return {
            "name": value.name,
            "value": result_dict(value.value),
            "baseline": value.baseline,
            "details": _json(value.details),
        }
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.ndarray):
        return _json(value.tolist())
    return value


LABELS = np.array(["", "1", "2", "tie", "A", "B"], dtype=object)
_LABEL_SQL = (
    "CASE {col} WHEN '1' THEN 1 WHEN '2' THEN 2 WHEN 'tie' THEN 3 "
    "WHEN 'A' THEN 4 WHEN 'B' THEN 5 ELSE 0 END"
)


def _pairs(dataset: Dataset) -> dict:
    """Per pair of the dataset: ids, category, lengths, model names (2 queries).

    Strings travel once per distinct value: pairs come back as integers (ids,
    response ids), the responses' model names and lengths in a second query.
    """
    rows = fetch(
        f"SELECT id, category, response_1_id, response_2_id "
        f"FROM {quoted_table(PreferencePair)} WHERE dataset_id = %s ORDER BY id",
        [dataset.pk],
    )
    if not rows:
        return {"id": np.zeros(0, np.int64)}
    ids, cats, r1, r2 = zip(*rows, strict=True)
    resp = fetch(
        f"SELECT r.id, r.model_name, LENGTH(r.text) FROM {quoted_table(Response)} r "
        f"WHERE r.id IN (SELECT response_1_id FROM {quoted_table(PreferencePair)} "
        f"WHERE dataset_id = %s UNION SELECT response_2_id FROM "
        f"{quoted_table(PreferencePair)} WHERE dataset_id = %s) ORDER BY r.id",
        [dataset.pk, dataset.pk],
    )
    rid, names, lengths = zip(*resp, strict=True)
    rid = np.array(rid, np.int64)
    model_names, model_code = np.unique(
        np.array(names, dtype=object), return_inverse=True
    )
    lengths = np.array(lengths, float)
    i1 = np.searchsorted(rid, np.array(r1, np.int64))
    i2 = np.searchsorted(rid, np.array(r2, np.int64))
    model_code = model_code.ravel()
    return {
        "id": np.array(ids, np.int64),
        "category": np.array(cats, dtype=object),
        "model_names": [str(n) for n in model_names],
        "model_1": model_code[i1],
        "model_2": model_code[i2],
        "length_1": lengths[i1],
        "length_2": lengths[i2],
    }


def _votes(dataset: Dataset) -> tuple[np.ndarray, np.ndarray]:
    rows = fetch(
        f"SELECT h.pair_id, {_LABEL_SQL.format(col='h.label')} "
        f"FROM {quoted_table(HumanPreference)} h "
        f"JOIN {quoted_table(PreferencePair)} p ON p.id = h.pair_id "
        f"WHERE p.dataset_id = %s ORDER BY h.id",
        [dataset.pk],
    )
    if not rows:
        return np.zeros(0, np.int64), np.zeros(0, dtype=object)
    arr = np.array(rows, np.int64)
    return arr[:, 0], LABELS[arr[:, 1]]


def no_own_family_reason(family: str) -> str:
    """Why a self-preference figure is undefined when nothing is the judge's own."""
    return (
        f"no response in this data comes from the judge's own model family ({family})"
    )


def _explain_no_own_family(probe: dict, family: str) -> dict:
    """A self-preference probe (as JSON) on data without one response of the judge's
    family: its undefined figures give that as their reason instead of a generic
    "not enough data" (their counts stay)."""
    reason = no_own_family_reason(family)
    for r in [probe.get("value"), *(probe.get("details") or {}).values()]:
        if isinstance(r, dict) and r.get("value") is None and "reason" in r:
            r["reason"] = reason
    return probe


def _verdict_rows(run_ids: list[int]) -> dict[int, tuple]:
    """Per run: (pair ids, orders, verdicts) of sample 0 (1 query, integers only)."""
    empty = (
        np.zeros(0, np.int64),
        np.zeros(0, dtype=object),
        np.zeros(0, dtype=object),
    )
    if not run_ids:
        return {}
    rows = fetch(
        f"SELECT run_id, pair_id, "
        f"CASE {connection.ops.quote_name('order')} WHEN 'ab' THEN 0 ELSE 1 END, "
        f"{_LABEL_SQL.format(col='verdict')} "
        f"FROM {quoted_table(PairwiseVerdict)} WHERE sample_index = 0 "
        f"AND run_id IN ({placeholders(run_ids)})",
        list(run_ids),
    )
    arr = np.array(rows, np.int64).reshape(-1, 4)
    orders = np.array(["ab", "ba"], dtype=object)
    out = {}
    for rid in run_ids:
        sel = arr[arr[:, 0] == rid]
        out[rid] = (
            (sel[:, 1], orders[sel[:, 2]], LABELS[sel[:, 3]]) if len(sel) else empty
        )
    return out


def _check(dataset, run_ids, n_boot, seed=0):
    check_resampling(n_boot, seed, MetaevalError)
    runs = {r.pk: r for r in pairwise_runs(dataset)}
    if not run_ids:
        run_ids = [
            pk for pk, r in runs.items() if not (getattr(r, "probe", "") or "")
        ] or list(runs)
    if missing := [r for r in run_ids if r not in runs]:
        raise MetaevalError(
            f"run: {', '.join(map(str, missing))} has no pairwise verdicts on "
            f"dataset {dataset.name!r}"
        )
    if not run_ids:
        raise MetaevalError(f"run: dataset {dataset.name!r} has no pairwise judge run")
    return run_ids, runs


def metaeval_compute(
    *,
    dataset: Dataset,
    run_ids: list[int] | None = None,
    sections: dict[str, list[str]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """Every meta-evaluation figure per pairwise run, overall and per category.

    Returns {"dataset", "n_boot", "seed", "pairs", "votes", "runs": [{"id", "label",
    "probe", "report": {"overall", "categories", "sections", "probes"},
    "cue": probe or None}]}. Raises MetaevalError naming a bad parameter.
    Queries: a fixed number, whatever the number of pairs and verdicts.
    """
    run_ids = list(dict.fromkeys(int(r) for r in run_ids or []))
    run_ids, runs = _check(dataset, run_ids, n_boot, seed)
    if sections is not None and not (
        isinstance(sections, dict)
        and all(
            isinstance(v, list) and all(isinstance(s, str) for s in v)
            for v in sections.values()
        )
    ):
        raise MetaevalError("sections: must map a section name to a list of subsets")
    pairs = _pairs(dataset)
    vote_pair, vote_label = _votes(dataset)
    families = evaluated_model_families(
        dataset.workspace_id, set(pairs.get("model_names", []))
    )
    base_ids = {rid: _base_run(runs[rid], runs) for rid in run_ids}
    needed = sorted(set(run_ids) | {b for b in base_ids.values() if b})
    verdicts = _verdict_rows(needed)
    cue_targets = _cue_targets([rid for rid in run_ids if base_ids[rid]])
    out_runs = []
    for rid in run_ids:
        run = runs[rid]
        family = (run.config.model_family if run.config_id else "") or ""
        per_pair = {
            "category": pairs.get("category"),
            "length_1": pairs.get("length_1"),
            "length_2": pairs.get("length_2"),
        }
        any_own = False
        if family and len(pairs["id"]):
            own = np.array([families.get(m) == family for m in pairs["model_names"]])
            per_pair["own_1"] = own[pairs["model_1"]]
            per_pair["own_2"] = own[pairs["model_2"]]
            any_own = bool(per_pair["own_1"].any() or per_pair["own_2"].any())
        vp, vo, vv = verdicts[rid]
        data = PairwiseData.from_verdict_rows(
            pairs["id"],
            vp,
            vo,
            vv,
            vote_pair,
            vote_label,
            **{k: v for k, v in per_pair.items() if v is not None},
        )
        report = _json(
            metaeval_report(data, sections=sections, n_boot=n_boot, seed=seed)
        )
        if "self_preference" in report["probes"] and not any_own:
            _explain_no_own_family(report["probes"]["self_preference"], family)
        cue = None
        if base_ids[rid]:
            cue = _cue_probe(
                run, verdicts[base_ids[rid]], vp, vo, vv, cue_targets, n_boot, seed
            )
        out_runs.append(
            {
                "id": rid,
                "label": run_label(run),
                "probe": getattr(run, "probe", "") or "",
                "base_run": base_ids[rid],
                "model_family": family,
                "report": report,
                "cue": _json(cue) if cue is not None else None,
            }
        )
    return {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "n_boot": n_boot,
        "seed": seed,
        "pairs": int(len(pairs["id"])),
        "votes": int(len(vote_pair)),
        "runs": out_runs,
    }


def metaeval_with_classification(
    *,
    dataset: Dataset,
    run_ids: list[int] | None = None,
    crun_ids: list[int] | None = None,
    campaign_ids: list[int] | None = None,
    sections: dict[str, list[str]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """The whole meta-evaluation of a dataset's judge runs (what the API and
    `manage.py metaeval` answer): :func:`metaeval_compute` of the pairwise runs
    (`run_ids`, default: every non-probe pairwise run), plus ``classification``, the
    figures of the classification runs (`crun_ids`, default: every run with labels on
    a categorical criterion) against the human majority of `campaign_ids` (default:
    the agreement defaults), in the shape of `classification_compute`; None when none
    is chosen and the dataset has none. A dataset with classification runs and no
    pairwise run gives ``runs: []``; one with neither raises `MetaevalError` naming
    ``run``. A refusal of the classification part names ``crun`` (or ``campaign``)."""
    from analysis.selectors.classification import (
        classification_compute,
        classification_runs,
    )

    crun_ids = list(crun_ids or []) or sorted(
        r.pk for r in classification_runs(dataset)
    )
    classification = None
    if crun_ids:
        try:
            classification = classification_compute(
                dataset=dataset,
                campaign_ids=campaign_ids or [],
                run_ids=crun_ids,
                n_boot=n_boot,
                seed=seed,
            )
        except AgreementError as exc:
            message = str(exc)
            if message.startswith("run:"):
                message = "crun:" + message[4:]
            raise MetaevalError(message) from exc
    if classification and not run_ids and not pairwise_runs(dataset):
        result = {
            "dataset": {"id": dataset.pk, "name": dataset.name},
            "n_boot": n_boot,
            "seed": seed,
            "runs": [],
        }
    else:
        result = metaeval_compute(
            dataset=dataset,
            run_ids=run_ids or [],
            sections=sections,
            n_boot=n_boot,
            seed=seed,
        )
    return {**result, "classification": classification}


def _base_run(run: JudgeRun, runs: dict[int, JudgeRun]) -> int | None:
    """The plain run a cue probe run is compared with (None for a plain run)."""
    if not (getattr(run, "probe", "") or ""):
        return None
    settings = getattr(run, "probe_settings", None) or {}
    if settings.get("base_run") in runs:
        return int(settings["base_run"])
    for other in runs.values():  # newest first
        if (
            other.pk != run.pk
            and not (getattr(other, "probe", "") or "")
            and other.config_id == run.config_id
        ):
            return other.pk
    return None


def _cue_targets(run_ids: list[int]) -> dict[tuple[int, int, str], str]:
    """(run, pair, order) -> cue target in the original numbering, from the calls."""
    out = {}
    if not run_ids:
        return out
    for rid, pair, order, parsed in JudgeCall.objects.filter(
        run_id__in=run_ids, pair__isnull=False, sample_index=0
    ).values_list("run_id", "pair_id", "order", "parsed"):
        parsed = parsed if isinstance(parsed, dict) else {}
        probe = parsed.get("probe") if isinstance(parsed.get("probe"), dict) else {}
        target = probe.get("cue_target_original") or parsed.get("cue_target")
        if target in ("A", "B"):
            target = map_verdict(target, order)
        if target:
            out[(rid, pair, order)] = str(target)
    return out


def _flip_probe(run, base_rows, vp, vo, vv, n_boot, seed) -> Probe:
    """Attention probe: share of (pair, order) verdicts that change when an irrelevant
    sentence is added, among slots with a usable verdict in both runs. Baseline 0 (a
    judge that ignores the sentence never changes). Pairs are resampled (both orders
    together): a pair is a cell (usable slots, changed slots), so a resample is a
    multinomial over at most 9 cells."""
    base = {(int(p), o): v for p, o, v in zip(*base_rows, strict=True)}
    per_pair: dict[int, list[int]] = {}
    for p, o, v in zip(vp, vo, vv, strict=True):
        b = base.get((int(p), o))
        if not b or not v:
            continue
        cell = per_pair.setdefault(int(p), [0, 0])
        cell[0] += 1
        cell[1] += int(b != v)
    cells = np.array(list(per_pair.values()), np.int64).reshape(-1, 2)
    keys, counts = np.unique(cells, axis=0, return_counts=True) if len(cells) else (
        np.zeros((0, 2), np.int64), np.zeros(0, np.int64))  # fmt: skip
    n = int(counts.sum())
    w = np.vstack(
        [counts[None, :], np.random.default_rng(seed).multinomial(
            n, counts / max(n, 1), size=n_boot) if n and n_boot else
         np.zeros((n_boot, len(counts)))]
    ).astype(float)  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = (
            (w @ keys[:, 1]) / (w @ keys[:, 0])
            if len(keys)
            else np.full(n_boot + 1, np.nan)
        )
    slots = int(keys[:, 0] @ counts) if len(keys) else 0
    value = make_result(rate[0], rate[1:], slots, "no verdict slot usable in both runs")
    return Probe(
        name=run.probe or "attention",
        value=value,
        baseline=0.0,
        details={
            "pairs": n,
            "changed_slots": int(keys[:, 1] @ counts) if len(keys) else 0,
        },
    )


def _cue_probe(run, base_rows, vp, vo, vv, targets, n_boot, seed):
    """Share of verdicts following the cue vs the same (pair, order) without it.

    Attention probes have no target: they report how often the verdict changes."""
    if getattr(run, "probe", "") == "attention":
        return _flip_probe(run, base_rows, vp, vo, vv, n_boot, seed)
    base = {(int(p), o): v for p, o, v in zip(*base_rows, strict=True)}
    fixed = str((getattr(run, "probe_settings", None) or {}).get("cue_target") or "")
    b, c, t, ids = [], [], [], []
    for p, o, v in zip(vp, vo, vv, strict=True):
        key = (int(p), o)
        target = targets.get((run.pk, int(p), o)) or fixed
        if target in ("A", "B"):  # a presented position: its response in this order
            target = map_verdict(target, o)
        if key not in base or not target:
            continue
        b.append(base[key])
        c.append(v)
        t.append(target)
        ids.append(int(p))
    return cue_probe(
        np.array(b, dtype=object),
        np.array(c, dtype=object),
        np.array(t, dtype=object),
        pair_id=np.array(ids, dtype=np.int64),
        n_boot=n_boot,
        seed=seed,
        name=run.probe,
    )


# ---------------------------------------------------------------------------
# Pointwise probes: length, self-preference (score inflation), halo
# ---------------------------------------------------------------------------


def pointwise_probes(
    *,
    dataset: Dataset,
    campaign_ids: list[int],
    run_id: int,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """Length, score-inflation and halo probes of one pointwise run vs the humans.

    Items are (response, skill) pairs both sides scored; the human score is the mean
    of the raters. Halo uses responses with at least 2 skills scored by both sides.
    Raises AgreementError naming a bad parameter (campaign, run, n_boot).
    """
    if not campaign_ids:
        raise MetaevalError("campaign: choose a human campaign")
    check_params(dataset, campaign_ids, [run_id], None, False, n_boot, seed)
    inp, _ = load_inputs(dataset, campaign_ids, [run_id], "", "")
    _, n_sk = item_keys(inp.skills)
    both, human, judge = scored_by_both(inp, run_id)
    judge = judge.astype(float)
    response_ids = both // n_sk
    lengths = dict(_fetch_lengths(sorted(set(response_ids.tolist()))))
    length = np.array([lengths.get(int(r), 0) for r in response_ids], float)
    out = {"length": pointwise_length_probe(judge, human, length, n_boot, seed)}
    run = JudgeRun.objects.select_related("config").get(pk=run_id)
    family = (run.config.model_family if run.config_id else "") or ""
    if family:
        names = inp.resp.model_names
        fam = evaluated_model_families(dataset.workspace_id, set(names))
        own_model = np.array([fam.get(n) == family for n in names])
        own = own_model[inp.resp.model[inp.resp.index(response_ids)]]
        out["score_inflation"] = score_inflation_probe(judge, human, own, n_boot, seed)
    # halo: responses x skills matrices (NaN where missing)
    uniq, row = np.unique(response_ids, return_inverse=True)
    col = both % n_sk
    jm = np.full((len(uniq), n_sk), np.nan)
    hm = np.full((len(uniq), n_sk), np.nan)
    jm[row.ravel(), col] = judge
    hm[row.ravel(), col] = human
    out["halo"] = halo_probe(jm, hm, n_boot, seed)
    probes = _json(out)
    if family and not own.any():
        _explain_no_own_family(probes["score_inflation"], family)
    return {"run": {"id": run.pk, "label": run_label(run)}, "family": family,
            "probes": probes,
            # The raters these figures leave out (open exclusions), said on the page.
            "exclusions": exclusions_note(campaign_ids)}  # fmt: skip


def _fetch_lengths(response_ids: list[int]):
    if not response_ids:
        return []
    return (
        Response.objects.filter(pk__in=response_ids)
        .annotate(n=Length("text"))
        .values_list("pk", "n")
    )


def parse_sections(text: str) -> dict[str, list[str]] | None:
    """`sections` given as JSON text or a path to a JSON file; None when empty."""
    text = (text or "").strip()
    if not text:
        return None
    if not text.startswith("{"):
        try:
            with open(text, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise MetaevalError(f"sections: cannot read {text!r}: {exc}") from exc
    try:
        value = json_loads(text)
    except JSONInputError as exc:
        raise MetaevalError(f"sections: {exc.message}") from exc
    except json.JSONDecodeError as exc:
        raise MetaevalError(f"sections: not valid JSON ({exc})") from exc
    return value


# The meta-evaluation's judges grid: pairwise accuracy (both orders together) held
# against the humans' own leave-one-out agreement, the accuracy a judge can hope for.
GRID_STAT, GRID_CEILING = "accuracy_mean", "human_loo"


def metaeval_comparison(result: dict) -> dict:
    """The judges side by side of :func:`metaeval_compute`'s result (a pure
    function): one row per category (sorted) then "Overall", one column per run,
    `GRID_STAT` in each cell and `GRID_CEILING` as the row's human ceiling
    (:func:`analysis.compare.judges_grid`). Every run's ceiling of a category is the
    same votes' figure, so the first run's is shown."""
    runs = result.get("runs") or []
    categories = sorted(
        {name for run in runs for name in run["report"].get("categories", {})}
    )
    by_id = {run["id"]: run["report"] for run in runs}

    def group(report: dict, key: str) -> dict:
        if key == "overall":
            return report.get("overall") or {}
        return report.get("categories", {}).get(key) or {}

    rows = (
        [(name, name or "(none)") for name in categories] if len(categories) > 1 else []
    )
    rows.append(("overall", "Overall"))
    first = runs[0]["report"] if runs else {}
    return compare.judges_grid(
        rows=rows,
        judges=[(run["id"], run["label"]) for run in runs],
        cell=lambda rid, key: group(by_id[rid], key).get(GRID_STAT),
        ceiling=lambda key: group(first, key).get(GRID_CEILING),
        stat_name=figure(GRID_STAT).label,
        ceiling_name="leave-one-out agreement",
    )
