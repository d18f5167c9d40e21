"""Scores into numpy arrays: responses, slices, skills, human and judge scores.

Every loader runs one query whatever the data size. An *item* is a (response, skill)
pair, keyed as ``response_id * n_skills + skill index`` (:func:`item_keys`); skills
are matched by key, so two rubric versions compare skill by skill.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from django.db import connection

from analysis.selectors.agreement.sources import AgreementError
from analysis.stats.report import GroupItems
from analysis.stats.scale import mean_from_counts, median_from_counts, round_half_up
from annotation.models import (
    Ability,
    Assignment,
    Dataset,
    Domain,
    HumanScore,
    Instruction,
    Response,
    Skill,
)
from judging.models import JudgeScore

SLICE_DIMENSIONS = ("domain", "difficulty", "task", "hard", "model")


def quoted_table(model) -> str:
    """The model's table name, quoted for raw SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def fetch(sql: str, params: list) -> list[tuple]:
    """All rows of one parameterised query (the loaders' one query each)."""
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def placeholders(values: list) -> str:
    """``%s, %s, ...`` for an ``IN (...)`` of ``values``."""
    return ", ".join(["%s"] * len(values))


@dataclass
class Responses:
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


def dataset_responses(dataset: Dataset) -> Responses:
    """Every response of `dataset` with its instruction's slice fields (one query)."""
    rows = fetch(
        f"SELECT r.id, r.model_name, i.domain_1, i.domain_2, i.difficulty, "
        f"i.source_task, i.is_hard FROM {quoted_table(Response)} r "
        f"JOIN {quoted_table(Instruction)} i ON i.id = r.instruction_id "
        f"WHERE i.dataset_id = %s ORDER BY r.id",
        [dataset.pk],
    )
    if not rows:
        empty = np.array([], dtype=object)
        return Responses(
            np.array([], np.int64), np.array([], np.int64), [], empty, empty,
            np.array([], np.int64), empty, np.array([], bool),
        )  # fmt: skip
    cols = list(zip(*rows, strict=True))
    names, codes = np.unique(np.array(cols[1], dtype=object), return_inverse=True)
    return Responses(
        ids=np.array(cols[0], dtype=np.int64),
        model=codes.ravel().astype(np.int64),
        model_names=[str(n) for n in names],
        domain_1=np.array(cols[2], dtype=object),
        domain_2=np.array(cols[3], dtype=object),
        difficulty=np.array([d or 0 for d in cols[4]], dtype=np.int64),
        task=np.array(cols[5], dtype=object),
        hard=np.array(cols[6], dtype=bool),
    )


def slice_mask(resp: Responses, dim: str, value: str) -> tuple[np.ndarray, str]:
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


@dataclass
class Skills:
    """The skills present, by key (see :func:`dataset_skills`)."""

    keys: list[str]  # ordered: by ability, then rubric position
    names: dict[str, str]
    ability: dict[str, str]
    id_to_index: dict[int, int]  # skill id -> index into keys


def dataset_skills(dataset: Dataset, skill_ids: set[int]) -> Skills:
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
    return Skills(
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
    rows = fetch(
        f"SELECT a.response_id, hs.skill_id, {sums}, "
        f"SUM(CASE WHEN hs.score IS NULL THEN 1 ELSE 0 END) "
        f"FROM {quoted_table(HumanScore)} hs JOIN {quoted_table(Assignment)} a "
        f"ON a.id = hs.assignment_id "
        f"WHERE a.campaign_id IN ({placeholders(campaign_ids)}) AND a.status = %s "
        f"GROUP BY a.response_id, hs.skill_id",
        [*campaign_ids, Assignment.Status.SUBMITTED],
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 8)


def _judge_rows(run_ids: list[int]) -> np.ndarray:
    """(n, 5): run id, response id, skill id, sample index, score (0 = N/A)."""
    if not run_ids:
        return np.zeros((0, 5), np.int64)
    rows = fetch(
        f"SELECT run_id, response_id, skill_id, sample_index, COALESCE(score, 0) "
        f"FROM {quoted_table(JudgeScore)} WHERE run_id IN ({placeholders(run_ids)})",
        list(run_ids),
    )
    return np.array(rows, dtype=np.int64).reshape(-1, 5)


def _median_scores(keys: np.ndarray, scores: np.ndarray):
    """Per distinct key: the median of its numeric scores rounded half up (0 if none),
    and the number of N/A scores left out of that median (0 when all are N/A: the
    item then counts as one judge N/A)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    counts = np.zeros((len(uniq), 5), np.int64)
    numeric = scores > 0
    np.add.at(counts, (inv[numeric], scores[numeric] - 1), 1)
    has = counts.sum(axis=1) > 0
    med = np.zeros(len(uniq), np.int64)
    if has.any():
        med[has] = round_half_up(median_from_counts(counts[has])).astype(np.int64)
    na = np.bincount(inv[~numeric], minlength=len(uniq)).astype(np.int64)
    return uniq, med, np.where(has, na, 0)


def judge_by_item_counted(
    rows: np.ndarray, run_id: int, item_key, sample: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item keys, judge score 0..5, N/A samples left out) of one run: one sample,
    or the median of the numeric samples; the third array counts, per item, the N/A
    samples of an item that also has a numeric sample (the median skips them)."""
    sel = rows[:, 0] == run_id
    if sample is not None:
        sel &= rows[:, 3] == sample
    r = rows[sel]
    return _median_scores(item_key(r[:, 1], r[:, 2]), r[:, 4])


def judge_by_item(
    rows: np.ndarray, run_id: int, item_key, sample: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(item keys, judge score 0..5) of one run; one sample or the samples' median."""
    keys, scores, _ = judge_by_item_counted(rows, run_id, item_key, sample)
    return keys, scores


@dataclass
class Inputs:
    """Everything one computation reads, restricted to the slice's responses."""

    resp: Responses
    skills: Skills
    human: np.ndarray  # (n, 8) rows for the slice
    judge: np.ndarray  # (n, 5) rows for the slice


def load_inputs(
    dataset, campaign_ids, judge_run_ids, slice_dim, slice_value, responses=None
):
    """(Inputs, slice label) of the campaigns' and runs' scores in the slice.

    One query each for the responses (none when `responses`, the dataset's
    :func:`dataset_responses`, is given), human scores, judge scores and skills (two
    when skills of another rubric were scored); raises AgreementError for a bad slice.
    """
    resp = dataset_responses(dataset) if responses is None else responses
    mask, slice_label = slice_mask(resp, slice_dim, slice_value)
    human = _human_rows(campaign_ids)
    judge = _judge_rows(judge_run_ids)
    skill_ids = set(human[:, 1].tolist()) | set(judge[:, 2].tolist())
    skills = dataset_skills(dataset, skill_ids)
    keep = set(resp.ids[mask].tolist())
    if len(human):
        human = human[np.isin(human[:, 0], list(keep))]
    if len(judge):
        judge = judge[np.isin(judge[:, 1], list(keep))]
    return Inputs(resp, skills, human, judge), slice_label


def item_keys(skills: Skills):
    """(key function of (response ids, skill ids), number of skills) for item keys.

    key = response id * n_skills + the skill's index by key: two skill ids with one
    key (two rubric versions) give the same item.
    """
    n_sk = max(len(skills.keys), 1)
    lookup = np.zeros(max(skills.id_to_index, default=0) + 1, np.int64)
    for sid, idx in skills.id_to_index.items():
        lookup[sid] = idx

    def key(response_ids, skill_ids):
        return np.asarray(response_ids, np.int64) * n_sk + lookup[skill_ids]

    return key, n_sk


def group_items(
    inp: Inputs, h_keys, h_counts, h_na, j_keys, j_scores, j_na_samples=None
) -> dict[str, GroupItems]:
    """Per skill key: the union of items with a human or judge entry (`j_na_samples`:
    the judge's N/A samples left out of each item's median, see
    :func:`judge_by_item_counted`)."""
    _, n_sk = item_keys(inp.skills)
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
    na_samples = np.zeros(len(all_keys), np.int64)
    if j_na_samples is not None:
        na_samples[ji] = j_na_samples
    skill_idx = all_keys % n_sk
    model = inp.resp.model[inp.resp.index(all_keys // n_sk)] if len(all_keys) else []
    model = np.asarray(model, np.int64)
    out = {}
    for i, key in enumerate(inp.skills.keys):
        sel = skill_idx == i
        if not sel.any():
            continue
        out[key] = GroupItems(
            counts[sel], judge[sel], model[sel], na[sel], judge_na[sel], na_samples[sel]
        )
    return out


def human_side(inp: Inputs):
    """(item keys, counts of human scores 1..5 (n, 5), N/A counts) per item."""
    key_fn, _ = item_keys(inp.skills)
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


def scored_by_both(inp: Inputs, run_id: int):
    """Items the run and the humans both scored numerically, by item key.

    Returns (item keys, the humans' mean score, the run's score 1..5), sorted by key.
    """
    key_fn, _ = item_keys(inp.skills)
    h_keys, h_counts, _ = human_side(inp)
    j_keys, j_scores = judge_by_item(inp.judge, run_id, key_fn)
    both, hi, ji = np.intersect1d(h_keys, j_keys, return_indices=True)
    ok = (h_counts[hi].sum(axis=1) > 0) & (j_scores[ji] > 0)
    return both[ok], mean_from_counts(h_counts[hi[ok]]), j_scores[ji[ok]]


def one_rater(keys: np.ndarray, scores: np.ndarray):
    """A reference run as one "rater": counts with a single 1 (or an N/A)."""
    counts = np.zeros((len(keys), 5), np.int64)
    numeric = scores > 0
    counts[np.flatnonzero(numeric), scores[numeric] - 1] = 1
    return keys, counts, (~numeric).astype(np.int64)
