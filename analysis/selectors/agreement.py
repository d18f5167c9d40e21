"""Agreement between human raters and judges: data gathering for `judging.stats`.

Reads only. Every public function pulls what it needs with a fixed number of queries
(whatever the dataset size) into numpy arrays and hands them to the pure statistics
module; the result is a JSON-safe dict (shape: see :func:`agreement_compute`).

Conventions (the contract the dashboard, the API and ``manage.py agreement`` share):

* An *item* is a (response, skill) pair. Skills are matched by their key, so a
  campaign on one rubric version and a judge run on another compare skill by skill.
* Human side: the numeric scores of *submitted* assignments of the chosen campaigns;
  N/A is counted, never averaged.
* Judge side: one score per item and run. With several samples per item the run's
  score is the median of its numeric samples, rounded half up; an item whose samples
  are all N/A counts as judge N/A.
* References: humans (default); another judge run (``reference_run_id``: judge vs
  judge, the reference run plays the humans' part, one "rater"); or test-retest
  (``retest``: each run's sample 0 is the judge and its sample 1 the reference).
* Results are cached; the cache key contains a fingerprint of the inputs (counts and
  latest change times of the scores and of the dataset's metadata decisions), so a
  new or amended score gives a new key: stale numbers are never served.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

import numpy as np
from django.core.cache import cache
from django.db import connection

from analysis.stats import agreement as st
from annotation.models import (
    Ability,
    Assignment,
    Campaign,
    Dataset,
    Domain,
    HumanScore,
    Instruction,
    Response,
    Skill,
)
from judging.models import JudgeRun, JudgeScore, MetadataSuggestion

SLICE_DIMENSIONS = ("domain", "difficulty", "task", "hard", "model")
CACHE_SECONDS = 24 * 3600
CACHE_VERSION = "agreement-v1"
MAX_BOOT = 10000


def _workers() -> int:
    """Threads for the statistics (settings.AGREEMENT_WORKERS, default: CPUs, max 4)."""
    from django.conf import settings

    return int(getattr(settings, "AGREEMENT_WORKERS", 0) or min(os.cpu_count() or 1, 4))


class AgreementError(ValueError):
    """A bad parameter; the message names it."""


# ---------------------------------------------------------------------------
# Sources and slices
# ---------------------------------------------------------------------------


def run_label(run: JudgeRun) -> str:
    name = run.name or (run.config.name if run.config_id else "")
    return f"#{run.pk} {name}".strip()


def agreement_sources_for_user(*, user, dataset: Dataset) -> dict:
    """Pointwise campaigns and judge runs with scores on `dataset` (researcher view)."""
    campaigns = Campaign.objects.filter(dataset=dataset).order_by("-created_at")
    if hasattr(Campaign, "Kind"):
        campaigns = campaigns.filter(kind=Campaign.Kind.POINTWISE)
    scored_runs = JudgeScore.objects.filter(run__dataset=dataset).values("run_id")
    runs = (
        JudgeRun.objects.filter(dataset=dataset, pk__in=scored_runs)
        .select_related("config")
        .order_by("-created_at")
    )
    return {
        "campaigns": [
            {"id": c.pk, "name": c.name, "status": c.status} for c in campaigns
        ],
        "runs": [
            {
                "id": r.pk,
                "label": run_label(r),
                "kind": r.kind,
                "status": r.status,
                "samples": int((r.settings_snapshot or {}).get("samples") or 1),
            }
            for r in runs
        ],
    }


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _fetch(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def _placeholders(values: list) -> str:
    return ", ".join(["%s"] * len(values))


@dataclass
class _Responses:
    """The dataset's responses as parallel arrays (index = position in `ids`)."""

    ids: np.ndarray  # sorted response ids
    model: np.ndarray  # model code (index into model_names)
    model_names: list[str]
    domain_1: np.ndarray  # str
    domain_2: np.ndarray
    difficulty: np.ndarray  # 0 = unknown
    task: np.ndarray  # str
    hard: np.ndarray  # bool

    def index(self, response_ids: np.ndarray) -> np.ndarray:
        """Positions of `response_ids` (all must belong to the dataset)."""
        return np.searchsorted(self.ids, response_ids)


def _responses(dataset: Dataset) -> _Responses:
    rows = _fetch(
        f"SELECT r.id, r.model_name, i.domain_1, i.domain_2, i.difficulty, "
        f"i.source_task, i.is_hard FROM {_table(Response)} r "
        f"JOIN {_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s ORDER BY r.id",
        [dataset.pk],
    )
    if not rows:
        empty = np.array([], dtype=object)
        return _Responses(
            np.array([], np.int64), np.array([], np.int64), [], empty, empty,
            np.array([], np.int64), empty, np.array([], bool),
        )  # fmt: skip
    cols = list(zip(*rows, strict=True))
    names, codes = np.unique(np.array(cols[1], dtype=object), return_inverse=True)
    return _Responses(
        ids=np.array(cols[0], dtype=np.int64),
        model=codes.ravel().astype(np.int64),
        model_names=[str(n) for n in names],
        domain_1=np.array(cols[2], dtype=object),
        domain_2=np.array(cols[3], dtype=object),
        difficulty=np.array([d or 0 for d in cols[4]], dtype=np.int64),
        task=np.array(cols[5], dtype=object),
        hard=np.array(cols[6], dtype=bool),
    )


def agreement_slice_values(*, dataset: Dataset) -> dict[str, list[dict]]:
    """Every slice dimension's values present in `dataset`, with response counts."""
    resp = _responses(dataset)
    out: dict[str, list[dict]] = {}
    labels = dict(Domain.choices)
    out["domain"] = [
        {"value": key, "label": labels[key], "n_responses": n}
        for key in labels
        if (n := int(((resp.domain_1 == key) | (resp.domain_2 == key)).sum()))
    ]
    out["difficulty"] = [
        {"value": str(level), "label": f"level {level}", "n_responses": n}
        for level in range(1, 6)
        if (n := int((resp.difficulty == level).sum()))
    ]
    if (n := int((resp.difficulty == 0).sum())) > 0:
        out["difficulty"].append(
            {"value": "unknown", "label": "unknown", "n_responses": n}
        )
    tasks, counts = np.unique(resp.task.astype(str), return_counts=True)
    out["task"] = [
        {"value": t, "label": t or "(no task)", "n_responses": int(c)}
        for t, c in zip(tasks, counts, strict=True)
    ]
    out["hard"] = [
        {"value": v, "label": label, "n_responses": n}
        for v, label, mask in (
            ("hard", "FLASK-Hard", resp.hard),
            ("rest", "the rest", ~resp.hard),
        )
        if (n := int(mask.sum()))
    ]
    out["model"] = [
        {"value": name, "label": name, "n_responses": int((resp.model == i).sum())}
        for i, name in enumerate(resp.model_names)
    ]
    return out


def _slice_mask(resp: _Responses, dim: str, value: str) -> tuple[np.ndarray, str]:
    """Which responses belong to the slice, and its label. Raises AgreementError."""
    if not dim:
        return np.ones(len(resp.ids), dtype=bool), "all responses"
    if dim not in SLICE_DIMENSIONS:
        raise AgreementError(
            f"slice: unknown dimension {dim!r}; use one of {', '.join(SLICE_DIMENSIONS)}"
        )
    if dim == "domain":
        labels = dict(Domain.choices)
        if value not in labels:
            raise AgreementError(
                f"slice value: unknown domain {value!r}; use one of {', '.join(labels)}"
            )
        return (resp.domain_1 == value) | (resp.domain_2 == value), labels[value]
    if dim == "difficulty":
        if value == "unknown":
            return resp.difficulty == 0, "difficulty unknown"
        if value not in {"1", "2", "3", "4", "5"}:
            raise AgreementError(
                f"slice value: difficulty must be 1-5 or 'unknown', not {value!r}"
            )
        return resp.difficulty == int(value), f"difficulty {value}"
    if dim == "task":
        return resp.task.astype(str) == value, f"task {value or '(none)'}"
    if dim == "hard":
        if value not in {"hard", "rest"}:
            raise AgreementError(
                f"slice value: use 'hard' or 'rest' for FLASK-Hard, not {value!r}"
            )
        mask = resp.hard if value == "hard" else ~resp.hard
        return mask, "FLASK-Hard" if value == "hard" else "not FLASK-Hard"
    if value not in resp.model_names:
        raise AgreementError(f"slice value: no model {value!r} in this dataset")
    return resp.model == resp.model_names.index(value), f"model {value}"


# ---------------------------------------------------------------------------
# Scores into arrays
# ---------------------------------------------------------------------------


@dataclass
class _Skills:
    keys: list[str]  # ordered: by ability, then rubric position
    names: dict[str, str]
    ability: dict[str, str]
    id_to_index: dict[int, int]  # skill id -> index into keys


def _skills(dataset: Dataset, skill_ids: set[int]) -> _Skills:
    """The dataset rubric's skills plus any other skill that was scored, by key."""
    rows = list(
        Skill.objects.filter(rubric_id=dataset.rubric_id).values(
            "id", "key", "name", "ability", "position"
        )
    )
    known = {r["id"] for r in rows}
    if extra := skill_ids - known:
        rows += list(
            Skill.objects.filter(pk__in=extra).values(
                "id", "key", "name", "ability", "position"
            )
        )
    order = {a: i for i, a in enumerate(Ability.values)}
    first: dict[str, dict] = {}
    for r in sorted(rows, key=lambda r: (r["id"] not in known, r["id"])):
        first.setdefault(r["key"], r)
    keys = sorted(
        first, key=lambda k: (order.get(first[k]["ability"], 99), first[k]["position"])
    )
    index = {k: i for i, k in enumerate(keys)}
    return _Skills(
        keys=keys,
        names={k: first[k]["name"] for k in keys},
        ability={k: first[k]["ability"] for k in keys},
        id_to_index={r["id"]: index[r["key"]] for r in rows},
    )


def _human_rows(campaign_ids: list[int]) -> np.ndarray:
    """(n, 8): response id, skill id, counts of scores 1..5, N/A count per item."""
    if not campaign_ids:
        return np.zeros((0, 8), np.int64)
    sums = ", ".join(
        f"SUM(CASE WHEN hs.score = {v} THEN 1 ELSE 0 END)" for v in range(1, 6)
    )
    rows = _fetch(
        f"SELECT a.response_id, hs.skill_id, {sums}, "
        f"SUM(CASE WHEN hs.score IS NULL THEN 1 ELSE 0 END) "
        f"FROM {_table(HumanScore)} hs JOIN {_table(Assignment)} a "
        f"ON a.id = hs.assignment_id "
        f"WHERE a.campaign_id IN ({_placeholders(campaign_ids)}) AND a.status = %s "
        f"GROUP BY a.response_id, hs.skill_id",
        [*campaign_ids, Assignment.Status.SUBMITTED],
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 8)


def _judge_rows(run_ids: list[int]) -> np.ndarray:
    """(n, 5): run id, response id, skill id, sample index, score (0 = N/A)."""
    if not run_ids:
        return np.zeros((0, 5), np.int64)
    rows = _fetch(
        f"SELECT run_id, response_id, skill_id, sample_index, COALESCE(score, 0) "
        f"FROM {_table(JudgeScore)} WHERE run_id IN ({_placeholders(run_ids)})",
        list(run_ids),
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


def _median_scores(keys: np.ndarray, scores: np.ndarray):
    """Per distinct key: the median of its numeric scores rounded half up (0 if none)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    counts = np.zeros((len(uniq), 5), np.int64)
    numeric = scores > 0
    np.add.at(counts, (inv[numeric], scores[numeric] - 1), 1)
    has = counts.sum(axis=1) > 0
    med = np.zeros(len(uniq), np.int64)
    if has.any():
        med[has] = st.round_half_up(st._profile_medians(counts[has])).astype(np.int64)
    return uniq, med


def _judge_by_item(
    rows: np.ndarray, run_id: int, item_key, sample: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(item keys, judge score 0..5) of one run; one sample or the samples' median."""
    sel = rows[:, 0] == run_id
    if sample is not None:
        sel &= rows[:, 3] == sample
    r = rows[sel]
    return _median_scores(item_key(r[:, 1], r[:, 2]), r[:, 4])


# ---------------------------------------------------------------------------
# Fingerprint and cache
# ---------------------------------------------------------------------------


def _fingerprint(dataset: Dataset, campaign_ids: list[int], run_ids: list[int]):
    """Counts and latest change times of every input (3 small aggregate queries)."""
    human = [0, None, None]
    if campaign_ids:
        human = _fetch(
            f"SELECT COUNT(*), MAX(hs.id), MAX(hs.updated_at) "
            f"FROM {_table(HumanScore)} hs JOIN {_table(Assignment)} a "
            f"ON a.id = hs.assignment_id "
            f"WHERE a.campaign_id IN ({_placeholders(campaign_ids)}) AND a.status = %s",
            [*campaign_ids, Assignment.Status.SUBMITTED],
        )[0]
    judge = [0, None]
    if run_ids:
        judge = _fetch(
            f"SELECT COUNT(*), MAX(id) FROM {_table(JudgeScore)} "
            f"WHERE run_id IN ({_placeholders(run_ids)})",
            list(run_ids),
        )[0]
    meta = _fetch(
        f"SELECT COUNT(*), MAX(ms.decided_at) FROM {_table(MetadataSuggestion)} ms "
        f"JOIN {_table(Instruction)} i ON i.id = ms.instruction_id "
        f"WHERE i.dataset_id = %s AND ms.decided_at IS NOT NULL",
        [dataset.pk],
    )[0]
    responses = _fetch(
        f"SELECT COUNT(*), MAX(r.id) FROM {_table(Response)} r "
        f"JOIN {_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s",
        [dataset.pk],
    )[0]
    return [str(x) for x in (*human, *judge, *meta, *responses)]


def _cache_key(params: dict, fingerprint: list[str]) -> str:
    blob = json.dumps(
        {"p": params, "f": fingerprint, "db": connection.settings_dict.get("NAME")},
        sort_keys=True,
        default=str,
    )
    return f"{CACHE_VERSION}:{hashlib.sha256(blob.encode()).hexdigest()}"


# ---------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------


def result_dict(r: st.Result) -> dict:
    """A statistic as JSON: value (None when undefined), n, 95% CI, reason."""
    ci = None
    if r.ci_low is not None and r.ci_high is not None:
        ci = [r.ci_low, r.ci_high]
    return {
        "value": r.value,
        "n": r.n,
        "ci": ci,
        "reason": r.reason,
        "n_undefined": r.n_undefined,
    }


def _human_dict(rep: st.Report) -> dict:
    h = rep.human
    return {
        "n_items": int(h.get("n_items", 0)),
        "n_items_multi_rated": int(h.get("n_items_multi_rated", 0)),
        "scores": int(rep.counts.get("human_scores", 0)),
        "na": int(rep.counts.get("human_na", 0)),
        **{
            k: result_dict(h[k])
            for k in ("alpha_ordinal", "alpha_interval", "exact", "within1")
            if k in h
        },
    }


JUDGE_STATS = (
    "pearson",
    "spearman",
    "kendall",
    "qwk",
    "exact",
    "within1",
    "leniency",
    "mae",
    "alpha_ordinal_with_judge",
    "alpha_ordinal_gain",
    "alpha_interval_with_judge",
    "alpha_interval_gain",
)


def _flag(rep: st.Report) -> dict:
    """Below the human ceiling: adding the judge as one more rater lowers alpha."""
    gain = rep.judge.get("alpha_ordinal_gain")
    if gain is None or gain.value is None:
        return {
            "below_ceiling": False,
            "significant": False,
            "reason": "not enough data to compare with the human ceiling",
        }
    below = gain.value < 0
    significant = below and gain.ci_high is not None and gain.ci_high < 0
    if not below:
        reason = "the judge agrees with humans as well as humans agree with each other"
    elif significant:
        reason = "the judge lowers inter-rater alpha (95% CI of the change below 0)"
    else:
        reason = "the judge lowers inter-rater alpha (CI includes 0)"
    return {"below_ceiling": below, "significant": significant, "reason": reason}


def _scatter(items: st.GroupItems) -> list[list[float]]:
    """Distinct (human mean, judge score) points with their item counts."""
    hc = np.asarray(items.human_counts, dtype=np.int64)
    judge = np.asarray(items.judge, dtype=np.int64)
    m = hc.sum(axis=1)
    ok = (m > 0) & (judge > 0)
    if not ok.any():
        return []
    # A human mean is a fraction total/m; code (total, m, judge) exactly as integers.
    total = hc[ok] @ np.arange(1, 6)
    radix = int(m.max()) + 1
    code = (total * radix + m[ok]) * 8 + judge[ok]
    uniq, counts = np.unique(code, return_counts=True)
    t, rest = np.divmod(uniq, radix * 8)
    mm, j = np.divmod(rest, 8)
    pts = sorted(
        (round(float(a) / float(b), 4), int(c), int(n))
        for a, b, c, n in zip(t, mm, j, counts, strict=True)
    )
    merged: dict[tuple[float, int], int] = {}
    for mean, score, n in pts:  # 2/4 and 1/2 are the same mean
        merged[(mean, score)] = merged.get((mean, score), 0) + n
    return [[mean, score, n] for (mean, score), n in merged.items()]


def _judge_dict(rep: st.Report, items: st.GroupItems | None, names: list[str]):
    j = rep.judge
    out = {
        "counts": {k: int(v) for k, v in rep.counts.items()},
        **{k: result_dict(j[k]) for k in JUDGE_STATS if k in j},
        "confusion": np.asarray(j.get("confusion", np.zeros((5, 5))))
        .astype(int)
        .tolist(),
        "flag": _flag(rep),
        "human": _human_dict(rep),
        "models": {
            "models": [
                {
                    "model": names[m["model"]] if m["model"] < len(names) else "",
                    "n": m["n"],
                    "human_mean": result_dict(m["human_mean"]),
                    "judge_mean": result_dict(m["judge_mean"]),
                }
                for m in rep.models.get("models", [])
            ],
            **{
                k: result_dict(rep.models[k])
                for k in ("spearman", "kendall")
                if k in rep.models
            },
        },
        "scatter": _scatter(items) if items is not None else [],
    }
    return out


@dataclass
class _Inputs:
    resp: _Responses
    skills: _Skills
    human: np.ndarray  # (n, 8) rows for the slice
    judge: np.ndarray  # (n, 5) rows for the slice


def _load(dataset, campaign_ids, judge_run_ids, slice_dim, slice_value):
    resp = _responses(dataset)
    mask, slice_label = _slice_mask(resp, slice_dim, slice_value)
    human = _human_rows(campaign_ids)
    judge = _judge_rows(judge_run_ids)
    skill_ids = set(human[:, 1].tolist()) | set(judge[:, 2].tolist())
    skills = _skills(dataset, skill_ids)
    keep = set(resp.ids[mask].tolist())
    if len(human):
        human = human[np.isin(human[:, 0], list(keep))]
    if len(judge):
        judge = judge[np.isin(judge[:, 1], list(keep))]
    return _Inputs(resp, skills, human, judge), slice_label


def _item_keys(skills: _Skills):
    n_sk = max(len(skills.keys), 1)
    lookup = np.zeros(max(skills.id_to_index, default=0) + 1, np.int64)
    for sid, idx in skills.id_to_index.items():
        lookup[sid] = idx

    def key(response_ids, skill_ids):
        return np.asarray(response_ids, np.int64) * n_sk + lookup[skill_ids]

    return key, n_sk


def _group_items(
    inp: _Inputs, h_keys, h_counts, h_na, j_keys, j_scores
) -> dict[str, st.GroupItems]:
    """Per skill key: the union of items with a human or judge entry."""
    key_fn, n_sk = _item_keys(inp.skills)
    all_keys = np.union1d(h_keys, j_keys)
    counts = np.zeros((len(all_keys), 5), np.int64)
    na = np.zeros(len(all_keys), np.int64)
    judge = np.zeros(len(all_keys), np.int64)
    judge_na = np.zeros(len(all_keys), bool)
    hi = np.searchsorted(all_keys, h_keys)
    counts[hi] = h_counts
    na[hi] = h_na
    ji = np.searchsorted(all_keys, j_keys)
    judge[ji] = j_scores
    judge_na[ji] = j_scores == 0
    skill_idx = all_keys % n_sk
    model = inp.resp.model[inp.resp.index(all_keys // n_sk)] if len(all_keys) else []
    model = np.asarray(model, np.int64)
    out = {}
    for i, key in enumerate(inp.skills.keys):
        sel = skill_idx == i
        if not sel.any():
            continue
        out[key] = st.GroupItems(
            counts[sel], judge[sel], model[sel], na[sel], judge_na[sel]
        )
    return out


def _human_side(inp: _Inputs):
    key_fn, _ = _item_keys(inp.skills)
    h = inp.human
    if not len(h):
        z = np.zeros(0, np.int64)
        return z, np.zeros((0, 5), np.int64), z
    keys = key_fn(h[:, 0], h[:, 1])
    # Two skill ids with one key (two rubric versions) on one response: add them up.
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    counts = np.zeros((len(uniq), 5), np.int64)
    na = np.zeros(len(uniq), np.int64)
    np.add.at(counts, inv, h[:, 2:7])
    np.add.at(na, inv, h[:, 7])
    return uniq, counts, na


def _abilities(skills: _Skills, present: set[str]) -> dict[str, list[str]]:
    labels = dict(Ability.choices)
    out: dict[str, list[str]] = {}
    for key in skills.keys:
        if key in present:
            out.setdefault(
                labels.get(skills.ability[key], skills.ability[key]), []
            ).append(key)
    return out


def _rows_skeleton(skills: _Skills, present: set[str]) -> list[dict]:
    rows = []
    for ability, keys in _abilities(skills, present).items():
        for key in keys:
            rows.append(
                {
                    "key": f"skill:{key}",
                    "level": "skill",
                    "skill": key,
                    "label": skills.names[key],
                    "ability": ability,
                }
            )
        rows.append(
            {
                "key": f"ability:{ability}",
                "level": "ability",
                "skill": None,
                "label": ability,
                "ability": ability,
            }
        )
    rows.append(
        {
            "key": "overall",
            "level": "overall",
            "skill": None,
            "label": "Overall",
            "ability": None,
        }
    )
    return rows


def _check_params(dataset, campaign_ids, run_ids, reference_run_id, retest, n_boot):
    if n_boot < 0 or n_boot > MAX_BOOT:
        raise AgreementError(f"n_boot: must be between 0 and {MAX_BOOT}, not {n_boot}")
    found = set(
        Campaign.objects.filter(pk__in=campaign_ids, dataset=dataset).values_list(
            "pk", flat=True
        )
    )
    if missing := [c for c in campaign_ids if c not in found]:
        raise AgreementError(
            f"campaign: {', '.join(map(str, missing))} not found in dataset {dataset.name!r}"
        )
    wanted = [*run_ids, *([reference_run_id] if reference_run_id else [])]
    runs = {
        r.pk: r
        for r in JudgeRun.objects.filter(pk__in=wanted, dataset=dataset).select_related(
            "config"
        )
    }
    if missing := [r for r in wanted if r not in runs]:
        raise AgreementError(
            f"run: {', '.join(map(str, missing))} not found in dataset {dataset.name!r}"
        )
    if not run_ids:
        raise AgreementError("run: choose at least one judge run")
    if reference_run_id and retest:
        raise AgreementError(
            "reference_run: choose a reference run or test-retest, not both"
        )
    if reference_run_id in run_ids:
        raise AgreementError("reference_run: must differ from the compared runs")
    if not (campaign_ids or reference_run_id or retest):
        raise AgreementError(
            "campaign: choose a human campaign (or a reference run, or test-retest)"
        )
    return runs


def agreement_compute(
    *,
    dataset: Dataset,
    campaign_ids: list[int] | None = None,
    run_ids: list[int] | None = None,
    reference_run_id: int | None = None,
    retest: bool = False,
    slice_dim: str = "",
    slice_value: str = "",
    n_boot: int = 1000,
    seed: int = 0,
    use_cache: bool = True,
) -> dict:
    """Every agreement statistic, per skill, ability and overall, for each run.

    Shape: /work/notes contract, repeated in README "Agreement". Raises
    AgreementError (message names the parameter) for unknown campaigns/runs/slices.
    Queries: a fixed number (fingerprint 4, then responses, human scores, judge
    scores, skills), whatever the data size; nothing when the cache has the result.
    """
    campaign_ids = sorted({int(c) for c in campaign_ids or []})
    run_ids = list(dict.fromkeys(int(r) for r in run_ids or []))
    reference_run_id = int(reference_run_id) if reference_run_id else None
    runs = _check_params(
        dataset, campaign_ids, run_ids, reference_run_id, retest, n_boot
    )
    if reference_run_id or retest:
        campaign_ids_used: list[int] = []
    else:
        campaign_ids_used = campaign_ids
    all_runs = [*run_ids, *([reference_run_id] if reference_run_id else [])]
    params = {
        "dataset": dataset.pk,
        "campaigns": campaign_ids_used,
        "runs": run_ids,
        "reference_run": reference_run_id,
        "retest": bool(retest),
        "slice": [slice_dim, slice_value],
        "n_boot": n_boot,
        "seed": seed,
    }
    key = None
    if use_cache:
        key = _cache_key(params, _fingerprint(dataset, campaign_ids_used, all_runs))
        hit = cache.get(key)
        if hit is not None:
            return hit
    inp, slice_label = _load(
        dataset, campaign_ids_used, all_runs, slice_dim, slice_value
    )
    key_fn, _ = _item_keys(inp.skills)

    reference_label = "human raters"
    if reference_run_id:
        reference_label = f"judge run {run_label(runs[reference_run_id])}"
    elif retest:
        reference_label = "the same run's second sample (test-retest)"

    per_run: dict[int, dict[str, st.GroupItems]] = {}
    for rid in run_ids:
        if retest:
            j_keys, j_scores = _judge_by_item(inp.judge, rid, key_fn, sample=0)
            r_keys, r_scores = _judge_by_item(inp.judge, rid, key_fn, sample=1)
        else:
            j_keys, j_scores = _judge_by_item(inp.judge, rid, key_fn)
        if reference_run_id:
            r_keys, r_scores = _judge_by_item(inp.judge, reference_run_id, key_fn)
        if reference_run_id or retest:
            h_keys, h_counts, h_na = _one_rater(r_keys, r_scores)
        else:
            h_keys, h_counts, h_na = _human_side(inp)
        per_run[rid] = _group_items(inp, h_keys, h_counts, h_na, j_keys, j_scores)

    present = set().union(*(set(g) for g in per_run.values())) if per_run else set()
    abilities = _abilities(inp.skills, present)
    rows = _rows_skeleton(inp.skills, present)
    by_key = {r["key"]: r for r in rows}
    for r in rows:
        r["human"] = None
        r["judges"] = {}
    for rid, groups in per_run.items():
        table = st.agreement_table(
            groups, abilities, n_boot=n_boot, seed=seed, workers=_workers()
        )
        pooled = {
            f"ability:{a}": st.GroupItems.concat([groups[k] for k in ks])
            for a, ks in abilities.items()
        }
        pooled["overall"] = (
            st.GroupItems.concat(list(groups.values())) if groups else None
        )
        for label, rep in table.items():
            row = by_key.get(label)
            if row is None:
                continue
            items = groups.get(row["skill"]) if row["skill"] else pooled.get(label)
            row["judges"][str(rid)] = _judge_dict(rep, items, inp.resp.model_names)
            # The human ceiling shown on the row: the first run's items (usually all
            # runs judge the same items; each run keeps its own under "human").
            if row["human"] is None:
                row["human"] = dict(row["judges"][str(rid)]["human"])
    if not (reference_run_id or retest):
        _add_human_model_means(inp, rows)

    result = {
        "dataset": {"id": dataset.pk, "name": dataset.name},
        "n_boot": n_boot,
        "seed": seed,
        "slice": {"dim": slice_dim, "value": slice_value, "label": slice_label},
        "reference": {
            "kind": "run" if reference_run_id else "retest" if retest else "humans",
            "label": reference_label,
        },
        "campaigns": [
            {"id": c.pk, "name": c.name}
            for c in Campaign.objects.filter(pk__in=campaign_ids_used).order_by("pk")
        ],
        "runs": [{"id": rid, "label": run_label(runs[rid])} for rid in run_ids],
        "models": inp.resp.model_names,
        "rows": rows,
    }
    if key is not None:
        cache.set(key, result, CACHE_SECONDS)
    return result


def _add_human_model_means(inp: _Inputs, rows: list[dict]) -> None:
    """row["human"]["models"]: per model, the mean over items of the humans' mean
    score, on every item humans scored (whatever the runs scored); no CI."""
    h_keys, h_counts, _ = _human_side(inp)
    _, n_sk = _item_keys(inp.skills)
    m = h_counts.sum(axis=1)
    ok = m > 0
    keys, mean = h_keys[ok], (h_counts[ok] @ st.VALUES) / m[ok]
    skill_idx = keys % n_sk
    model = inp.resp.model[inp.resp.index(keys // n_sk)] if len(keys) else keys
    n_models = len(inp.resp.model_names)
    for row in rows:
        if row["human"] is None:
            continue
        if row["level"] == "skill":
            wanted = [inp.skills.keys.index(row["skill"])]
        elif row["level"] == "ability":
            wanted = [
                i for i, k in enumerate(inp.skills.keys)
                if row["key"] == f"ability:{_ability_label(inp.skills.ability[k])}"
            ]  # fmt: skip
        else:
            wanted = list(range(n_sk))
        sel = np.isin(skill_idx, wanted)
        n = np.bincount(model[sel], minlength=n_models)
        total = np.bincount(model[sel], weights=mean[sel], minlength=n_models)
        row["human"]["models"] = [
            {
                "model": name,
                "n": int(n[i]),
                "mean": result_dict(
                    st.make_result(
                        total[i] / n[i] if n[i] else np.nan,
                        None,
                        int(n[i]),
                        "no human score for this model",
                    )
                ),
            }  # fmt: skip
            for i, name in enumerate(inp.resp.model_names)
        ]


def _ability_label(ability: str) -> str:
    return dict(Ability.choices).get(ability, ability)


def _one_rater(keys: np.ndarray, scores: np.ndarray):
    """A reference run as one "rater": counts with a single 1 (or an N/A)."""
    counts = np.zeros((len(keys), 5), np.int64)
    numeric = scores > 0
    counts[np.flatnonzero(numeric), scores[numeric] - 1] = 1
    return keys, counts, (~numeric).astype(np.int64)


# ---------------------------------------------------------------------------
# Drill-down
# ---------------------------------------------------------------------------


def agreement_disagreements(
    *,
    dataset: Dataset,
    campaign_ids: list[int],
    run_id: int,
    skill_key: str,
    slice_dim: str = "",
    slice_value: str = "",
    limit: int = 25,
) -> list[dict]:
    """The items of one skill where the run and the humans disagree most.

    Ordered by |judge score - human mean| (largest first), then by response id.
    Raters are shown as "rater 1", "rater 2", ... (numbered by account, stable
    within the answer). Raises AgreementError naming a bad parameter.
    """
    campaign_ids = sorted({int(c) for c in campaign_ids or []})
    _check_params(dataset, campaign_ids, [int(run_id)], None, False, 0)
    if not campaign_ids:
        raise AgreementError("campaign: choose a human campaign")
    if not 1 <= limit <= 500:
        raise AgreementError(f"limit: must be between 1 and 500, not {limit}")
    inp, _ = _load(dataset, campaign_ids, [int(run_id)], slice_dim, slice_value)
    if skill_key not in inp.skills.keys:
        raise AgreementError(f"skill: unknown skill {skill_key!r}")
    key_fn, n_sk = _item_keys(inp.skills)
    h_keys, h_counts, _ = _human_side(inp)
    j_keys, j_scores = _judge_by_item(inp.judge, int(run_id), key_fn)
    want = inp.skills.keys.index(skill_key)
    both, hi, ji = np.intersect1d(h_keys, j_keys, return_indices=True)
    m = h_counts[hi].sum(axis=1)
    ok = (both % n_sk == want) & (m > 0) & (j_scores[ji] > 0)
    both, hi, ji, m = both[ok], hi[ok], ji[ok], m[ok]
    mean = (h_counts[hi] @ st.VALUES) / m
    diff = j_scores[ji] - mean
    order = np.lexsort((both, -np.abs(diff)))[:limit]
    response_ids = [int(both[i] // n_sk) for i in order]
    if not response_ids:
        return []
    skill_ids = [sid for sid, idx in inp.skills.id_to_index.items() if idx == want]
    responses = {
        r.pk: r
        for r in Response.objects.filter(pk__in=response_ids).select_related(
            "instruction"
        )
    }
    rationales: dict[int, str] = {}
    for s in (
        JudgeScore.objects.filter(
            run_id=run_id, response_id__in=response_ids, skill_id__in=skill_ids
        )
        .order_by("response_id", "sample_index")
        .values("response_id", "rationale")
    ):
        rationales.setdefault(s["response_id"], s["rationale"])
    humans: dict[int, list[dict]] = {}
    for s in (
        HumanScore.objects.filter(
            assignment__campaign_id__in=campaign_ids,
            assignment__status=Assignment.Status.SUBMITTED,
            assignment__response_id__in=response_ids,
            skill_id__in=skill_ids,
        )
        .order_by("assignment__rater_id", "pk")
        .values("assignment__response_id", "assignment__rater_id", "score", "rationale")
    ):
        humans.setdefault(s["assignment__response_id"], []).append(s)
    out = []
    for i, rid in zip(order, response_ids, strict=True):
        r = responses[rid]
        raters = sorted({h["assignment__rater_id"] for h in humans.get(rid, [])})
        out.append(
            {
                "response_id": rid,
                "instruction_id": r.instruction_id,
                "instruction_external_id": r.instruction.external_id,
                "instruction_text": r.instruction.text,
                "model": r.model_name,
                "response_text": r.text,
                "judge_score": int(j_scores[ji[i]]),
                "judge_rationale": rationales.get(rid, ""),
                "human_mean": float(mean[i]),
                "difference": float(diff[i]),
                "human": [
                    {
                        "rater": f"rater {raters.index(h['assignment__rater_id']) + 1}",
                        "score": h["score"],
                        "rationale": h["rationale"],
                    }
                    for h in humans.get(rid, [])
                ],
            }
        )
    return out
