"""Scores into numpy arrays: responses, slices, skills, human and judge scores.

Every loader runs one query whatever the data size. An *item* is a (response, skill)
pair, keyed as ``response_id * n_skills + skill index`` (:func:`item_keys`); skills
are matched by key, so two rubric versions compare skill by skill.

Scales: only ordinal criteria enter these arrays (categorical ones are left out;
their scores are dropped here). A skill key's scale is that of its first skill
(the dataset rubric's, else the lowest id), from :func:`annotation.scales.scale_of`.
Scores are held as *codes*: code c (1..V) is the c-th value of the skill's scale,
0 = no numeric score (N/A, or a value outside the key's scale). Human counts are
(n, W) per code, W the widest scale present (columns past a skill's own size stay
0). On FLASK's 1..5 a code is the score itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from django.db import connection
from django.db.models.fields.json import KeyTextTransform

from analysis.selectors.agreement.arrays import int_rows
from analysis.selectors.agreement.examples import judge_rows_without_examples
from analysis.selectors.agreement.sources import AgreementError
from analysis.stats.report import GroupItems
from analysis.stats.scale import (
    VALUES,
    mean_from_counts,
    median_from_counts,
    round_half_up,
    scale_values,
)
from annotation.importers.taxonomy import FACET_PREFIX, FLASK, Taxonomy
from annotation.models import (
    Ability,
    Assignment,
    Dataset,
    HumanScore,
    Instruction,
    RaterExclusion,
    Response,
    Skill,
)
from annotation.scales import scale_of
from judging.models import JudgeScore

SLICE_DIMENSIONS = ("domain", "difficulty", "task", "hard", "model", "split")
TEST_LOCKED = (
    "slice value: the test split is locked; evaluating on it is logged: use "
    "'Evaluate on the test split' on the workbench or experiment page"
)


def quoted_table(model) -> str:
    """The model's table name, quoted for raw SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def not_excluded_sql(alias: str = "a") -> str:
    """A WHERE condition on assignment `alias`: its rater is not excluded from the
    analyses of its campaign (no open `RaterExclusion` of kind exclude). Every raw
    reader of human scores ANDs it in; the ORM readers use
    `annotation.selectors.excluded_scores`."""
    x = quoted_table(RaterExclusion)
    return (
        f"NOT EXISTS (SELECT 1 FROM {x} x WHERE x.campaign_id = {alias}.campaign_id "
        f"AND x.rater_id = {alias}.rater_id AND x.kind = 'exclude' "
        f"AND x.ended_at IS NULL)"
    )


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
    # The dataset's taxonomy (labels of its domains and levels, its facets) and
    # each facet's value per response (str, None = unknown).
    taxonomy: Taxonomy = FLASK
    facets: dict[str, np.ndarray] = field(default_factory=dict)

    def index(self, response_ids: np.ndarray) -> np.ndarray:
        """Positions of `response_ids` (all must belong to the dataset)."""
        return np.searchsorted(self.ids, response_ids)


def _facet_columns(dataset: Dataset, taxonomy: Taxonomy) -> dict[str, np.ndarray]:
    """Each facet's value per response of `dataset`, in response id order (one
    query, none without facets)."""
    if not taxonomy.facets:
        return {}
    names = {f"f{n}": facet.name for n, facet in enumerate(taxonomy.facets)}
    rows = list(
        Response.objects.filter(instruction__dataset=dataset)
        .order_by("id")
        .annotate(
            **{
                alias: KeyTextTransform(name, "instruction__metadata")
                for alias, name in names.items()
            }
        )
        .values_list(*names)
    )
    return {
        name: np.array([row[n] for row in rows], dtype=object)
        for n, name in enumerate(names.values())
    }


def dataset_responses(dataset: Dataset) -> Responses:
    """Every response of `dataset` with its instruction's slice fields (one query;
    a second for the facets a dataset of its own taxonomy declares)."""
    taxonomy = Taxonomy.stored(dataset.taxonomy)
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
            np.array([], np.int64), empty, np.array([], bool), taxonomy,
            {f.name: empty for f in taxonomy.facets},
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
        taxonomy=taxonomy,
        facets=_facet_columns(dataset, taxonomy),
    )


def slice_mask(resp: Responses, dim: str, value: str) -> tuple[np.ndarray, str]:
    """Which responses belong to the slice, and its label. Raises AgreementError."""
    if not dim:
        return np.ones(len(resp.ids), dtype=bool), "all responses"
    if dim.startswith(FACET_PREFIX):
        return _facet_mask(resp, dim.removeprefix(FACET_PREFIX), value)
    if dim not in SLICE_DIMENSIONS:
        raise AgreementError(
            f"slice: unknown dimension {dim!r}; use one of {', '.join(SLICE_DIMENSIONS)}"
        )
    if dim == "split":
        raise AgreementError("slice: a split slice needs the dataset (split_mask)")
    if dim == "domain":
        labels = resp.taxonomy.domain_labels()
        if value not in labels:
            raise AgreementError(
                f"slice value: unknown domain {value!r}; use one of {', '.join(labels)}"
            )
        return (resp.domain_1 == value) | (resp.domain_2 == value), labels[value]
    if dim == "difficulty":
        if value == "unknown":
            return resp.difficulty == 0, "difficulty unknown"
        levels = resp.taxonomy.difficulty_labels()
        if value not in {str(level) for level in levels}:
            raise AgreementError(
                f"slice value: difficulty must be one of "
                f"{', '.join(str(level) for level in levels)} or 'unknown', not "
                f"{value!r}"
            )
        label = (
            f"difficulty {value}"
            if resp.taxonomy.difficulty is None
            else f"difficulty {value} ({levels[int(value)]})"
        )
        return resp.difficulty == int(value), label
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


def _facet_mask(resp: Responses, name: str, value: str) -> tuple[np.ndarray, str]:
    """The responses whose instruction has `value` on facet `name` ("unknown": none)."""
    if resp.taxonomy.facet(name) is None:
        declared = ", ".join(f.name for f in resp.taxonomy.facets) or "none"
        raise AgreementError(
            f"slice: this dataset has no facet {name!r} (its facets: {declared})"
        )
    facet = resp.taxonomy.facet(name)
    if facet.values is not None and value not in (*facet.values, "unknown"):
        raise AgreementError(
            f"slice value: {value!r} is not a value of facet {name!r}; use one of "
            f"{', '.join(facet.values)} or 'unknown'"
        )
    column = resp.facets[name]
    if value == "unknown":
        return np.array([v is None for v in column], dtype=bool), f"{name} unknown"
    return column == value, f"{name} {value}"


@dataclass
class Skills:
    """The skills present, by key (see :func:`dataset_skills`)."""

    keys: list[str]  # ordered: by ability, then rubric position
    names: dict[str, str]
    ability: dict[str, str]  # FLASK ability, or rubric group name, or "" (none)
    id_to_index: dict[int, int]  # skill id -> index into keys (ordinal skills only)
    # key -> the scale's values (floats, sorted); FLASK's VALUES for 1..5
    values: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def low(self) -> np.ndarray:
        """(n_skills,) the lowest value of each skill's scale, by index."""
        return np.array([int(self.values[k][0]) for k in self.keys], np.int64)

    @property
    def width(self) -> int:
        """The number of values of the widest scale (5 at least: FLASK's arrays)."""
        return max([5, *(len(v) for v in self.values.values())])

    @property
    def flask(self) -> bool:
        """Every skill on 1..5: codes are scores, no conversion needed."""
        return all(v is VALUES for v in self.values.values())


SKILL_FIELDS = (
    "id", "key", "name", "ability", "position",
    "kind", "scale_min", "scale_max", "labels", "allow_na", "group", "rubric__groups",
)  # fmt: skip


def _group_of(row: dict) -> str:
    """The table group of a skill: its FLASK ability, else the name of its rubric
    group, else "" (a criterion in no group: no pooled row but the overall)."""
    if row["ability"]:
        return row["ability"]
    names = {g.get("key"): g.get("name") for g in row.get("rubric__groups") or []}
    return str(names.get(row["group"]) or row["group"] or "")


def _skill_rows(**filters) -> list[dict]:
    return list(Skill.objects.filter(**filters).values(*SKILL_FIELDS))


def _scale_range(rows: list[dict]) -> tuple[int, int]:
    """The lowest and highest value over the ordinal skills of `rows` (1..5 if none)."""
    scales = [scale_of(SimpleNamespace(**r)) for r in rows]
    lows = [sc.low for sc in scales if sc.is_ordinal]
    highs = [sc.high for sc in scales if sc.is_ordinal]
    return (min(lows), max(highs)) if lows else (1, 5)


def dataset_skills(
    dataset: Dataset, skill_ids: set[int], rubric_rows: list[dict] | None = None
) -> Skills:
    """The dataset rubric's ordinal skills plus any other ordinal skill that was
    scored, by key (`rubric_rows`: the rubric's skills, already read)."""
    rows = rubric_rows
    if rows is None:
        rows = _skill_rows(rubric_id=dataset.rubric_id)
    known = {r["id"] for r in rows}
    if extra := skill_ids - known:
        rows = rows + _skill_rows(pk__in=extra)
    order = {a: i for i, a in enumerate(Ability.values)}
    first: dict[str, dict] = {}
    for r in sorted(rows, key=lambda r: (r["id"] not in known, r["id"])):
        first.setdefault(r["key"], r)
    scales = {k: scale_of(SimpleNamespace(**r)) for k, r in first.items()}
    keys = sorted(
        (k for k in first if scales[k].is_ordinal),
        key=lambda k: (order.get(first[k]["ability"], 99), first[k]["position"]),
    )
    index = {k: i for i, k in enumerate(keys)}
    return Skills(
        keys=keys,
        names={k: first[k]["name"] for k in keys},
        ability={k: _group_of(first[k]) for k in keys},
        id_to_index={r["id"]: index[r["key"]] for r in rows if r["key"] in index},
        values={k: scale_values(scales[k].low, scales[k].high) for k in keys},
    )


def _human_rows(campaign_ids: list[int], low: int = 1, high: int = 5) -> np.ndarray:
    """(n, 4 + high - low): response id, skill id, counts of the scores low..high,
    N/A count per item (scores outside low..high are not counted)."""
    width = high - low + 1
    if not campaign_ids:
        return np.zeros((0, width + 3), np.int64)
    sums = ", ".join(
        f"SUM(CASE WHEN hs.score = {int(v)} THEN 1 ELSE 0 END)"
        for v in range(low, high + 1)
    )
    return int_rows(
        f"SELECT a.response_id, hs.skill_id, {sums}, "
        f"SUM(CASE WHEN hs.score IS NULL THEN 1 ELSE 0 END) "
        f"FROM {quoted_table(HumanScore)} hs JOIN {quoted_table(Assignment)} a "
        f"ON a.id = hs.assignment_id "
        f"WHERE a.campaign_id IN ({placeholders(campaign_ids)}) AND a.status = %s "
        f"AND NOT a.gold "  # gold items measure raters, not responses
        f"AND {not_excluded_sql('a')} "
        f"GROUP BY a.response_id, hs.skill_id",
        [*campaign_ids, Assignment.Status.SUBMITTED],
        width + 3,
    )


# The judge query's stand-in for a null (N/A) score: below every stored score.
NA_SCORE = -(2**15)


def judge_rows(run_ids: list[int], rated_in: list[int] | None = None) -> np.ndarray:
    """(n, 5): run id, response id, skill id, sample index, score (NA_SCORE = N/A);
    with `rated_in` (campaign ids), only responses submitted in those campaigns."""
    if not run_ids:
        return np.zeros((0, 5), np.int64)
    where, params = "", list(run_ids)
    if rated_in is not None:
        where = (
            f" AND js.response_id IN (SELECT a.response_id FROM "
            f"{quoted_table(Assignment)} a WHERE a.campaign_id IN "
            f"({placeholders(rated_in) or 'NULL'}) AND a.status = %s)"
        )
        params += [*rated_in, Assignment.Status.SUBMITTED]
    return int_rows(
        f"SELECT js.run_id, js.response_id, js.skill_id, js.sample_index, "
        f"COALESCE(js.score, {NA_SCORE}) "
        f"FROM {quoted_table(JudgeScore)} js "
        f"WHERE js.run_id IN ({placeholders(run_ids)}){where}",
        params,
        5,
    )


def _median_scores(keys: np.ndarray, scores: np.ndarray):
    """Per distinct key: the median of its numeric scores rounded half up (0 if none),
    and the number of N/A scores left out of that median (0 when all are N/A: the
    item then counts as one judge N/A)."""
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    width = max(5, int(scores.max(initial=0)))
    codes = VALUES if width == 5 else np.arange(1, width + 1, dtype=float)
    counts = np.zeros((len(uniq), width), np.int64)
    numeric = scores > 0
    np.add.at(counts, (inv[numeric], scores[numeric] - 1), 1)
    has = counts.sum(axis=1) > 0
    med = np.zeros(len(uniq), np.int64)
    if has.any():
        med[has] = round_half_up(median_from_counts(counts[has], codes)).astype(
            np.int64
        )
    na = np.bincount(inv[~numeric], minlength=len(uniq)).astype(np.int64)
    return uniq, med, np.where(has, na, 0)


def judge_by_item_counted(
    rows: np.ndarray, run_id: int, item_key, sample: int | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(item keys, judge code 0..V, N/A samples left out) of one run: one sample,
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
    """(item keys, judge code 0..V) of one run; one sample or the samples' median."""
    keys, scores, _ = judge_by_item_counted(rows, run_id, item_key, sample)
    return keys, scores


@dataclass
class Inputs:
    """Everything one computation reads, restricted to the slice's responses."""

    resp: Responses
    skills: Skills
    human: np.ndarray  # (n, W + 3): response, skill, counts per code, N/A count
    judge: np.ndarray  # (n, 5): run, response, skill, sample, code (0 = none)
    low: int = 1  # the stored values the human rows were read over (low..high)
    high: int = 5


def split_mask(dataset, resp: Responses, value: str, test_look=None):
    """(mask, label) of the responses in the "dev" or "test" part of the dataset's
    development / test split (one query). The test part needs `test_look`, a
    `TestSplitLook` of this dataset's split (the caller logged the look first);
    raises AgreementError otherwise, or without a split, or for another value."""
    from judging.models import EvalSplit, EvalSplitMember

    if value not in ("dev", "test"):
        raise AgreementError(
            f"slice value: use 'dev' or 'test' for the split, not {str(value)[:40]!r}"
        )
    split = EvalSplit.objects.filter(dataset=dataset).first()
    if split is None:
        raise AgreementError(
            "slice: the dataset has no development / test split; make one on the "
            "judge workbench page"
        )
    if value == "test" and (test_look is None or test_look.split_id != split.pk):
        raise AgreementError(TEST_LOCKED)
    rows = fetch(
        f"SELECT r.id FROM {quoted_table(Response)} r "
        f"JOIN {quoted_table(EvalSplitMember)} m ON m.instruction_id = r.instruction_id "
        f"WHERE m.split_id = %s AND m.part = %s",
        [split.pk, value],
    )
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    label = "development split" if value == "dev" else "test split"
    return np.isin(resp.ids, ids), label


def load_inputs(
    dataset,
    campaign_ids,
    judge_run_ids,
    slice_dim,
    slice_value,
    responses=None,
    test_look=None,
    human_items_only: bool = False,
):
    """(Inputs, slice label) of the campaigns' and runs' scores in the slice.

    `human_items_only`: the runs' scores of the responses the campaigns rated only
    (what a comparison with the humans reads; the judge query shrinks with it).

    One query each for the responses (none when `responses`, the dataset's
    :func:`dataset_responses`, is given), the rubric's skills, human scores and judge
    scores; one more for skills of another rubric that were scored, and in that case
    a second human query when their scales reach past the rubric's. Scores become
    codes of their skill's scale (module doc); categorical skills are left out.
    Raises AgreementError for a bad slice (a "split" slice: :func:`split_mask`).
    """
    resp = dataset_responses(dataset) if responses is None else responses
    if slice_dim == "split":  # the test part only with a logged look (split_mask)
        mask, slice_label = split_mask(dataset, resp, slice_value, test_look)
    else:
        mask, slice_label = slice_mask(resp, slice_dim, slice_value)
    rubric_rows = _skill_rows(rubric_id=dataset.rubric_id)
    low, high = _scale_range(rubric_rows)
    human = _human_rows(campaign_ids, low, high)
    judge = judge_rows(judge_run_ids, campaign_ids if human_items_only else None)
    # A run's own few-shot examples never count for it (and never on the test split).
    judge = judge_rows_without_examples(judge, judge_run_ids, slice_dim, slice_value)
    skill_ids = set(human[:, 1].tolist()) | set(judge[:, 2].tolist())
    skills = dataset_skills(dataset, skill_ids, rubric_rows)
    if skills.keys:
        lows = [int(v[0]) for v in skills.values.values()]
        highs = [int(v[-1]) for v in skills.values.values()]
        if min(lows) < low or max(highs) > high:
            low, high = min(lows), max(highs)
            human = _human_rows(campaign_ids, low, high)
    keep = set(resp.ids[mask].tolist())
    if len(human):
        human = human[np.isin(human[:, 0], list(keep))]
    if len(judge):
        judge = judge[np.isin(judge[:, 1], list(keep))]
    human, judge = as_scale_codes(skills, human, judge, low)
    return Inputs(resp, skills, human, judge, low, high), slice_label


def as_scale_codes(skills: Skills, human: np.ndarray, judge: np.ndarray, low: int):
    """Human rows (counts of the values low..) and judge rows (scores) as codes of
    each skill's scale; rows of skills left out (categorical) are dropped. FLASK
    rows (every skill on 1..5 and low = 1) pass through unchanged."""
    known = np.array(sorted(skills.id_to_index), np.int64)
    if len(human) and not np.isin(human[:, 1], known).all():
        human = human[np.isin(human[:, 1], known)]
    if len(judge) and not np.isin(judge[:, 2], known).all():
        judge = judge[np.isin(judge[:, 2], known)]
    if skills.flask and low == 1 and human.shape[1] == 8:
        judge = judge.copy()
        judge[judge[:, 4] == NA_SCORE, 4] = 0
        return human, judge
    width = skills.width
    lookup = np.zeros(int(known.max(initial=0)) + 1, np.int64)
    for sid, idx in skills.id_to_index.items():
        lookup[sid] = idx
    lows, sizes = skills.low, np.array([len(skills.values[k]) for k in skills.keys])
    out = np.zeros((len(human), width + 3), np.int64)
    if len(human):
        out[:, :2] = human[:, :2]
        out[:, -1] = human[:, -1]
        idx = lookup[human[:, 1]]
        first = lows[idx] - low  # column of the skill's lowest value
        for c in range(width):
            col = first + c
            ok = (c < sizes[idx]) & (col < human.shape[1] - 3)
            rows = np.flatnonzero(ok)
            out[rows, 2 + c] = human[rows, 2 + col[rows]]
    judge = judge.copy()
    if len(judge):
        idx = lookup[judge[:, 2]]
        code = judge[:, 4] - lows[idx] + 1
        valid = (judge[:, 4] != NA_SCORE) & (code >= 1) & (code <= sizes[idx])
        judge[:, 4] = np.where(valid, code, 0)
    return out, judge


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
    counts = np.zeros((len(all_keys), np.shape(h_counts)[1]), np.int64)
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
        values = inp.skills.values.get(key, VALUES)
        out[key] = GroupItems(
            counts[sel][:, : len(values)],
            judge[sel],
            model[sel],
            na[sel],
            judge_na[sel],
            na_samples[sel],
            values=None if values is VALUES else values,
        )
    return out


def human_side(inp: Inputs):
    """(item keys, counts of human score codes (n, W), N/A counts) per item."""
    key_fn, _ = item_keys(inp.skills)
    h = inp.human
    width = h.shape[1] - 3
    if not len(h):
        z = np.zeros(0, np.int64)
        return z, np.zeros((0, width), np.int64), z
    keys = key_fn(h[:, 0], h[:, 1])
    # Two skill ids with one key (two rubric versions) on one response: add them up.
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.ravel()
    counts = np.zeros((len(uniq), width), np.int64)
    na = np.zeros(len(uniq), np.int64)
    np.add.at(counts, inv, h[:, 2:-1])
    np.add.at(na, inv, h[:, -1])
    return uniq, counts, na


def value_offset(inp: Inputs, keys: np.ndarray) -> np.ndarray | None:
    """Per item key, value = code + offset (the skill's lowest value - 1); None when
    every skill is on 1..5 (codes are the scores)."""
    if inp.skills.flask:
        return None
    _, n_sk = item_keys(inp.skills)
    return (inp.skills.low - 1)[np.asarray(keys, np.int64) % n_sk]


def scored_by_both(inp: Inputs, run_id: int):
    """Items the run and the humans both scored numerically, by item key.

    Returns (item keys, the humans' mean score, the run's score), sorted by key;
    scores on each skill's own scale.
    """
    key_fn, _ = item_keys(inp.skills)
    h_keys, h_counts, _ = human_side(inp)
    j_keys, j_scores = judge_by_item(inp.judge, run_id, key_fn)
    both, hi, ji = np.intersect1d(h_keys, j_keys, return_indices=True)
    ok = (h_counts[hi].sum(axis=1) > 0) & (j_scores[ji] > 0)
    counts = h_counts[hi[ok]]
    codes = VALUES
    if counts.shape[1] != 5:
        codes = np.arange(1, counts.shape[1] + 1, dtype=float)
    mean, judge = mean_from_counts(counts, codes), j_scores[ji[ok]]
    offset = value_offset(inp, both[ok])
    if offset is not None:
        mean, judge = mean + offset, judge + offset
    return both[ok], mean, judge


def one_rater(keys: np.ndarray, scores: np.ndarray, width: int = 5):
    """A reference run as one "rater": counts (n, width) with a single 1 (or an
    N/A), from its score codes."""
    counts = np.zeros((len(keys), width), np.int64)
    numeric = scores > 0
    counts[np.flatnonzero(numeric), scores[numeric] - 1] = 1
    return keys, counts, (~numeric).astype(np.int64)
