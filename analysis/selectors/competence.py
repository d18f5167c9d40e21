"""Rater models of a pointwise campaign, with the judges among the raters (issue 15).

Per criterion, a Dawid-Skene, MACE or GLAD model (`analysis.stats.competence`) is
fitted to everyone who scored the campaign's responses on it, and every annotator
gets a competence in [0, 1] (`COMPETENCE_RULES`: what it means under each model),
so that a judge can be placed among the human raters: "judge X ranks 2nd of 12".

Inputs (read only; a fixed number of queries whatever the data size):

* criteria: the ordinal criteria of the dataset's rubric plus any other ordinal one
  that was scored, matched by key, each on its own scale: the agreement dashboard's
  rule (`analysis.selectors.agreement.inputs.dataset_skills`), then the rubric's
  categorical criteria (labels as their codes; Dawid-Skene is the classic model
  for them);
* humans: the scores of the campaign's submitted real assignments, read as the
  reliability report reads them (`analysis.selectors.reliability.submitted_ratings`: gold items
  apart, they measure raters, not responses); N/A left out; a score outside its
  criterion's scale left out; raters with an open exclusion
  (`annotation.selectors.open_exclusions`) left out;
* judges: the agreement dashboard's default runs (`agreement_defaults`: per judge, its
  latest finished run with scores, no bias probe), or the runs asked for. Each run is
  ONE more annotator, named after the run (`run_label`), with one score per item as
  the dashboard takes it (`inputs.judge_by_item`: the median of its numeric samples,
  rounded half up), on the responses the humans scored on that criterion only.

Results: the model's tasks are the responses; per criterion every annotator's
competence, kind (human / judge), number of labels and rank (1 = most competent;
ties share a rank: 1 + the annotators strictly more competent), and for each judge
its place among the humans: 1 + the humans strictly more competent, of the humans
+ 1, and the share of the humans it beats (less competent; a tie counts half). A
criterion with fewer than two annotators is listed with a note and no fit.

`latent_human_scores` fits the humans alone (no judge) and returns each item's latent
score: a reference for the judges that weighs raters by their competence.

Both results are cached under the agreement cache's fingerprint of the campaign's
scores and exclusions and of the runs' scores (`inputs_fingerprint`), with the chosen
runs and their names in the key, so a cached read is never stale.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from django.core.cache import cache

from analysis.selectors.agreement.cache import (
    CACHE_SECONDS,
    cache_key,
    inputs_fingerprint,
)
from analysis.selectors.agreement.inputs import (
    SKILL_FIELDS,
    as_scale_codes,
    dataset_skills,
    item_keys,
    judge_by_item,
    judge_rows,
)
from analysis.selectors.agreement.sources import agreement_defaults, run_label
from analysis.selectors.reliability import submitted_ratings
from analysis.stats.competence import (
    COMPETENCE_RULES,
    METHODS,
    check_method,
    fit_rater_model,
)
from annotation.models import Campaign, Skill
from annotation.scales import CATEGORICAL
from annotation.selectors import open_exclusions
from flaskapp import roles
from judging.models import JudgeRun

RATER_MODELS_VERSION = "rater-models-v3"
DEFAULT_METHOD = "dawid_skene"
HUMAN, JUDGE = "human", "judge"
SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


class RaterModelError(ValueError):
    """A bad parameter; the message starts with its name ("model: ...")."""


@dataclass
class Annotator:
    kind: str  # HUMAN or JUDGE
    id: int  # the rater's user id, or the run's id
    name: str
    n_labels: int
    competence: float
    rank: int  # 1 = most competent of the criterion's annotators
    synthetic: bool = False  # a generated account's labels, not a person's


@dataclass
class JudgePlace:
    """Where a judge run stands among the human raters of one criterion."""

    run_id: int
    name: str
    competence: float
    rank: int  # among the humans: 1 + the humans strictly more competent
    of: int  # the humans + this judge
    humans: int
    beats: float  # share of the humans less competent (a tie counts half)
    sentence: str


@dataclass
class CriterionModel:
    key: str
    name: str
    n_tasks: int = 0  # responses with a label
    n_labels: int = 0
    iterations: int = 0
    note: str = ""  # why there is no fit, or what is degenerate about it
    categorical: bool = False  # labels (latent: a label code), not points
    annotators: list[Annotator] = field(default_factory=list)  # by rank
    judges: list[JudgePlace] = field(default_factory=list)


@dataclass
class RaterModels:
    campaign_id: int
    method: str
    runs: list[tuple[int, str]]  # (id, label) of the judge runs among the annotators
    excluded: list[str]  # usernames of the raters left out
    criteria: list[CriterionModel]
    seconds: float = 0.0  # computing time (not cached hits)

    @property
    def method_name(self) -> str:
        return METHODS[self.method]

    @property
    def competence_rule(self) -> str:
        return COMPETENCE_RULES[self.method]

    @property
    def sentences(self) -> list[str]:
        return [j.sentence for c in self.criteria for j in c.judges]


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else SUFFIXES.get(n % 10, "th")
    return f"{n}{suffix}"


def parse_method(raw) -> str:
    """The `model` parameter (empty: DEFAULT_METHOD); RaterModelError naming it."""
    raw = (raw or "").strip() or DEFAULT_METHOD
    try:
        return check_method(raw)
    except ValueError as exc:
        raise RaterModelError(f"model{str(exc).removeprefix('method')}") from exc


# --- inputs -------------------------------------------------------------------------


def _runs(campaign: Campaign, run_ids: list[int] | None) -> list[tuple[int, str]]:
    """(id, label) of the chosen runs, or of the defaults; RaterModelError naming
    `run` for a run of another dataset. One or two queries, plus the defaults'."""
    if run_ids is None:
        run_ids = agreement_defaults(dataset=campaign.dataset).run_ids
    wanted = list(dict.fromkeys(int(r) for r in run_ids))
    runs = {
        r.pk: r
        for r in JudgeRun.objects.filter(
            pk__in=wanted, dataset_id=campaign.dataset_id
        ).select_related("config")
    }
    if missing := [r for r in wanted if r not in runs]:
        raise RaterModelError(
            f"run: {', '.join(map(str, missing))} not found in dataset "
            f"{campaign.dataset.name!r}"
        )
    return [(r, run_label(runs[r])) for r in sorted(wanted)]


@dataclass
class _Labels:
    """Every label of the fit, as parallel arrays (one row per annotator and item)."""

    skill: np.ndarray  # index into skills.keys
    response: np.ndarray
    worker: np.ndarray  # rater id, or -run id
    value: np.ndarray  # the score on the criterion's scale


def _gather(campaign: Campaign, run_ids: list[int], with_judges: bool):
    """(skills, rubric skill id per key index, labels, excluded usernames)."""
    dataset = campaign.dataset
    assignments, scores = submitted_ratings(campaign)
    excluded = open_exclusions(campaign_ids=[campaign.pk])
    judge = judge_rows(run_ids) if with_judges else np.zeros((0, 5), np.int64)
    rubric_rows = list(
        Skill.objects.filter(rubric_id=dataset.rubric_id).values(*SKILL_FIELDS)
    )
    scored = set(np.unique(scores[:, 1]).astype(np.int64).tolist())
    skills = dataset_skills(dataset, scored | set(judge[:, 2].tolist()), rubric_rows)
    rubric_ids = {r["id"] for r in rubric_rows}
    skill_of_key: dict[int, int] = {}
    for sid in sorted(skills.id_to_index, key=lambda s: (s not in rubric_ids, s)):
        skill_of_key.setdefault(skills.id_to_index[sid], sid)

    lookup = np.full(max(skills.id_to_index, default=0) + 1, -1, np.int64)
    for sid, idx in skills.id_to_index.items():
        lookup[sid] = idx
    sizes = np.array([len(skills.values[k]) for k in skills.keys], np.int64)
    low = skills.low

    # Humans: a value of a known criterion, on its scale, from a rater not excluded.
    a_ids = assignments[:, 0].astype(np.int64)
    order = np.argsort(a_ids)
    out = [x.rater_id for x in excluded]
    keep = ~np.isnan(scores[:, 2]) & (scores[:, 1] < len(lookup))
    rows = scores[keep]
    sid = rows[:, 1].astype(np.int64)
    idx = lookup[sid]
    rows, idx = rows[idx >= 0], idx[idx >= 0]
    pos = order[np.searchsorted(a_ids, rows[:, 0].astype(np.int64), sorter=order)]
    rater = assignments[pos, 1].astype(np.int64)
    value = rows[:, 2].astype(np.int64)
    ok = ~np.isin(rater, out)
    if len(idx):
        code = value - low[idx] + 1
        ok &= (code >= 1) & (code <= sizes[idx])
    human = _Labels(idx[ok], assignments[pos[ok], 2].astype(np.int64), rater[ok],
                    value[ok])  # fmt: skip

    parts = [human]
    if with_judges and len(judge) and skills.keys:
        _, codes = as_scale_codes(skills, np.zeros((0, 8), np.int64), judge, 1)
        key_fn, n_sk = item_keys(skills)
        for run_id in run_ids:
            keys, code = judge_by_item(codes, run_id, key_fn)
            keys, code = keys[code > 0], code[code > 0]
            j_idx = keys % n_sk
            parts.append(_Labels(j_idx, keys // n_sk, np.full(len(keys), -run_id),
                                 code + low[j_idx] - 1))  # fmt: skip
    labels = _Labels(*(np.concatenate([getattr(p, f) for p in parts]) for f in
                       ("skill", "response", "worker", "value")))  # fmt: skip
    names = sorted(x.rater.username for x in excluded)
    cats = _categorical(dataset, assignments, scores, judge, run_ids, out)
    return skills, skill_of_key, labels, names, cats


def _categorical(dataset, assignments, scores, judge, run_ids, excluded_ids):
    """Per categorical criterion of the rubric, in its order: (skill, responses,
    workers, label codes) of the raters not excluded and of each run (a run's label
    of an item: the most frequent of its samples, the lowest code on a tie), judges
    only on responses a human labelled. N/A and codes outside the labels left out."""
    out = []
    cats = Skill.objects.filter(rubric_id=dataset.rubric_id, kind=CATEGORICAL)
    a_ids = assignments[:, 0].astype(np.int64)
    order = np.argsort(a_ids)
    for skill in cats.order_by("position", "id"):
        size = len(skill.labels or [])
        rows = scores[(scores[:, 1] == skill.pk) & ~np.isnan(scores[:, 2])]
        pos = order[np.searchsorted(a_ids, rows[:, 0].astype(np.int64), sorter=order)]
        rater = assignments[pos, 1].astype(np.int64)
        code = rows[:, 2].astype(np.int64)
        ok = ~np.isin(rater, excluded_ids) & (code >= 0) & (code < size)
        response = assignments[pos[ok], 2].astype(np.int64)
        parts = [(response, rater[ok], code[ok])]
        mine = judge[(judge[:, 2] == skill.pk) & (judge[:, 4] >= 0)
                     & (judge[:, 4] < size)] if len(judge) else judge  # fmt: skip
        for run_id in run_ids:
            r = mine[mine[:, 0] == run_id]
            r = r[np.isin(r[:, 1], response)]
            if not len(r):
                continue
            counts: dict[int, np.ndarray] = {}
            for resp, value in zip(r[:, 1].tolist(), r[:, 4].tolist(), strict=True):
                counts.setdefault(resp, np.zeros(size, np.int64))[value] += 1
            items = sorted(counts)
            parts.append((np.array(items, np.int64), np.full(len(items), -run_id),
                          np.array([int(np.argmax(counts[i])) for i in items])))  # fmt: skip
        out.append((skill, *(np.concatenate([p[k] for p in parts]) for k in range(3))))
    return out


# --- fits ---------------------------------------------------------------------------


def _criterion_labels(labels: _Labels, i: int):
    """(responses, workers, values) of criterion `i`, judges only on the responses a
    human scored."""
    sel = labels.skill == i
    response, worker, value = (
        labels.response[sel],
        labels.worker[sel],
        labels.value[sel],
    )
    judged = worker < 0
    if judged.any():
        keep = ~judged | np.isin(response, response[~judged])
        response, worker, value = response[keep], worker[keep], value[keep]
    return response, worker, value


def _place(a: Annotator, humans: list[Annotator], criterion: str) -> JudgePlace:
    above = sum(1 for h in humans if h.competence > a.competence)
    below = sum(1 for h in humans if h.competence < a.competence)
    tied = len(humans) - above - below
    beats = (below + 0.5 * tied) / len(humans) if humans else 0.0
    rank, of = above + 1, len(humans) + 1
    sentence = (
        f"{a.name} ranks {ordinal(rank)} of {of} on {criterion}"
        + (f" (more competent than {beats:.0%} of the {len(humans)} human "
           f"rater{'s' if len(humans) != 1 else ''})" if humans else "")
    )  # fmt: skip
    return JudgePlace(a.id, a.name, a.competence, rank, of, len(humans), beats,
                      sentence)  # fmt: skip


def _fit_criterion(crit: CriterionModel, method, response, worker, value, names):
    """Fills `crit` with the fit of its labels (or a note when there is none)."""
    crit.n_tasks, crit.n_labels = len(np.unique(response)), len(response)
    if len(np.unique(worker)) < 2:
        crit.note = "fewer than two annotators scored it: nothing to compare"
        return None
    fit = fit_rater_model(response, worker, value, method=method)
    crit.iterations, crit.note = fit.iterations, fit.note
    people = []
    for w, c, n in zip(fit.workers, fit.competence, fit.n_labels, strict=True):
        kind = JUDGE if w < 0 else HUMAN
        people.append(Annotator(kind, int(abs(w)), names[kind].get(int(abs(w)),
                                str(abs(w))), int(n), float(c), 0))  # fmt: skip
    for a in people:
        a.rank = 1 + sum(1 for b in people if b.competence > a.competence)
    people.sort(key=lambda a: (a.rank, a.kind != JUDGE, a.name))
    crit.annotators = people
    humans = [a for a in people if a.kind == HUMAN]
    crit.judges = [_place(a, humans, crit.name) for a in people if a.kind == JUDGE]
    return fit


def _mark_synthetic(crit: CriterionModel, synthetic: set[int]) -> None:
    for a in crit.annotators:
        a.synthetic = a.kind == HUMAN and a.id in synthetic


def _compute(campaign: Campaign, method: str, runs, with_judges: bool):
    from django.contrib.auth.models import User

    run_ids = [r for r, _ in runs]
    skills, skill_of_key, labels, excluded, cats = _gather(
        campaign, run_ids, with_judges
    )
    workers = np.concatenate([labels.worker, *(c[2] for c in cats)])
    rater_ids = np.unique(workers[workers > 0]).tolist()
    names = {
        HUMAN: dict(
            User.objects.filter(pk__in=rater_ids).values_list("pk", "username")
        ),
        JUDGE: dict(runs),
    }
    synthetic = set(
        User.objects.filter(pk__in=rater_ids, groups__name=roles.SYNTHETIC).values_list(
            "pk", flat=True
        )
    )
    criteria, latent = [], {}
    for i, key in enumerate(skills.keys):
        response, worker, value = _criterion_labels(labels, i)
        if not len(response):
            continue
        crit = CriterionModel(key=key, name=skills.names[key])
        fit = _fit_criterion(crit, method, response, worker, value, names)
        _mark_synthetic(crit, synthetic)
        criteria.append(crit)
        if fit is not None:
            sid = skill_of_key[i]
            latent.update(
                ((int(t), sid), int(v)) for t, v in zip(fit.tasks, fit.latent,
                                                        strict=True)
            )  # fmt: skip
    for skill, response, worker, value in cats:
        if not len(response):
            continue
        crit = CriterionModel(key=skill.key, name=skill.name, categorical=True)
        fit = _fit_criterion(crit, method, response, worker, value, names)
        _mark_synthetic(crit, synthetic)
        criteria.append(crit)
        if fit is not None:
            latent.update(
                ((int(t), skill.pk), int(v))
                for t, v in zip(fit.tasks, fit.latent, strict=True)
            )
    report = RaterModels(campaign.pk, method, runs if with_judges else [], excluded,
                         criteria)  # fmt: skip
    return report, latent


def _cached(
    campaign: Campaign, method: str, run_ids, with_judges: bool, compute: bool = True
):
    """(report, latent labels), from the cache when the inputs have not changed;
    with `compute` False, None instead of computing them."""
    method = check_method(method)
    runs = _runs(campaign, run_ids) if with_judges else []
    key = cache_key(
        {"v": RATER_MODELS_VERSION, "campaign": campaign.pk, "method": method,
         "runs": runs, "judges": with_judges},
        inputs_fingerprint(campaign.dataset, [campaign.pk], [r for r, _ in runs]),
    )  # fmt: skip
    found = cache.get(key)
    if found is not None or not compute:
        return found
    started = time.perf_counter()
    report, latent = _compute(campaign, method, runs, with_judges)
    report.seconds = time.perf_counter() - started
    cache.set(key, (report, latent), CACHE_SECONDS)
    return report, latent


def campaign_rater_models(
    *,
    campaign: Campaign,
    method: str = DEFAULT_METHOD,
    run_ids: list[int] | None = None,
) -> RaterModels:
    """The rater models of a pointwise campaign's criteria, the human raters and the
    judge runs (`run_ids`, default: the agreement defaults) fitted together (module
    doc). Cached. Raises RaterModelError naming `run` for a run of another dataset,
    ValueError naming `method` for an unknown model. Read only."""
    return _cached(campaign, method, run_ids, with_judges=True)[0]


def cached_rater_models(
    *, campaign: Campaign, method: str = DEFAULT_METHOD
) -> RaterModels | None:
    """:func:`campaign_rater_models` with the default runs if it is cached, else None
    (nothing is fitted: the fingerprint and defaults queries only)."""
    found = _cached(campaign, method, None, with_judges=True, compute=False)
    return found[0] if found is not None else None


def latent_human_scores(
    *, campaign: Campaign, method: str = DEFAULT_METHOD
) -> dict[tuple[int, int], int]:
    """{(response id, skill id): latent score} of the humans alone (no judge), for
    every item of a criterion that at least two raters scored; the skill id is that
    of the criterion's key in the dataset's rubric (else the lowest id with the key).
    Cached. Read only."""
    return _cached(campaign, method, None, with_judges=False)[1]


def rater_models_dict(report: RaterModels) -> dict:
    """The report as JSON-ready data (the API and the command print this)."""
    return {
        "campaign_id": report.campaign_id,
        "model": report.method,
        "model_name": report.method_name,
        "competence": report.competence_rule,
        "runs": [{"id": r, "label": label} for r, label in report.runs],
        "excluded_raters": report.excluded,
        "criteria": [
            {
                "key": c.key,
                "name": c.name,
                "n_tasks": c.n_tasks,
                "n_labels": c.n_labels,
                "iterations": c.iterations,
                "note": c.note,
                "categorical": c.categorical,
                "annotators": [vars(a) for a in c.annotators],
                "judges": [vars(j) for j in c.judges],
            }
            for c in report.criteria
        ],
    }


__all__ = [
    "DEFAULT_METHOD",
    "METHODS",
    "RaterModelError",
    "RaterModels",
    "cached_rater_models",
    "campaign_rater_models",
    "latent_human_scores",
    "ordinal",
    "parse_method",
    "rater_models_dict",
]
