"""The researcher's view of the data: responses with every human and judge score.

Two reads:

- `instruction_scores`: one instruction's responses, each with its skills and, per
  skill, every submitted human score (raters pseudonymous: "Rater A", "Rater B", ...,
  lettered by account within the page) and every pointwise judge run's score, side
  by side, a disagreement flagged where a run and the humans' mean differ by at least
  `DISAGREEMENT` points. A fixed number of queries whatever the number of responses,
  skills, raters and runs.
- `response_filter_parse` + `response_matches`: a dataset's responses narrowed by
  model, by "a judge run and the humans disagree by >= D on a skill", and by human
  mean or judge score ranges; the responses page lists them and the instruction page
  steps through them (previous / next).

Conventions shared by both (one home): the humans' score of a (response, skill) is
the mean of the submitted numeric scores of every campaign of the dataset (N/A is not
a score); a judge run's score is the median of its samples' numeric scores, rounded
half up (`analysis.stats.scale`, as the agreement dashboard rounds); skills are
matched by key, so two rubric versions compare skill by skill.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db.models import Count, F, Sum

from analysis.selectors.agreement.sources import run_label
from analysis.stats.scale import round_half_up
from annotation import roles
from annotation.models import Assignment, Dataset, HumanScore, Instruction, Response
from annotation.selectors import instruction_id_list
from flaskapp.params import BadParameter, parse_int
from judging.models import JudgeRun, JudgeScore

# A judge score this far (or farther) from the humans' mean is highlighted.
DISAGREEMENT = 2
SCORE_MIN, SCORE_MAX = 1, 5
# Query-string parameters of the response filter (kept on links between pages).
FILTER_PARAMS = (
    "model",
    "run",
    "skill",
    "disagree",
    "human_min",
    "human_max",
    "judge_min",
    "judge_max",
)


def judge_item_score(scores: list[int | None]) -> int | None:
    """A run's score of one (response, skill) from its samples' scores: the median of
    the numeric ones rounded half up, None (N/A) if none is numeric."""
    numeric = [s for s in scores if s is not None]
    if not numeric:
        return None
    return int(round_half_up(statistics.median(numeric)))


def rater_letter(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA": spreadsheet-style letters for pseudonyms."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters


# --- One instruction's scores --------------------------------------------------------


@dataclass
class HumanEntry:
    rater: str  # "Rater A" (admins also see the username)
    score: int | None
    rationale: str
    campaign: str
    synthetic: bool


@dataclass
class JudgeEntry:
    run_id: int
    run: str  # "#12 name"
    score: int | None
    rationale: str
    samples: int
    disagrees: bool  # |score - humans' mean| >= DISAGREEMENT


@dataclass
class SkillScores:
    key: str
    name: str
    humans: list[HumanEntry] = field(default_factory=list)
    human_mean: float | None = None
    judges: list[JudgeEntry] = field(default_factory=list)

    @property
    def disagrees(self) -> bool:
        return any(j.disagrees for j in self.judges)


@dataclass
class ResponseScores:
    response: Response
    skills: list[SkillScores]

    @property
    def disagreements(self) -> int:
        return sum(s.disagrees for s in self.skills)


def instruction_scores(
    *, user, instruction: Instruction, responses: list[Response]
) -> list[ResponseScores]:
    """Every response of `instruction` (given, in display order) with its scores.

    Skills per response: the instruction's relevant skills in rank order (from the
    prefetched `skill_links`), then any other skill scored on it, in rubric order.
    Humans: submitted assignments of every campaign; a rater's pseudonym is a letter
    by account id over the whole page (stable within the page), with the username
    added for admins only; synthetic accounts' scores are flagged. Judges: every run
    with scores on these responses. Researchers and admins only (`PermissionDenied`).
    Three queries (human scores, judge scores, runs).
    """
    roles.require_researcher(user)
    show_names = roles.is_admin(user)
    ids = [r.pk for r in responses]
    human_rows = list(
        HumanScore.objects.filter(
            assignment__response_id__in=ids,
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .annotate(synthetic=roles.synthetic_rater("assignment__rater_id"))
        .order_by("assignment__rater_id", "assignment__campaign_id", "pk")
        .values(
            "assignment__response_id",
            "assignment__rater_id",
            "assignment__rater__username",
            "assignment__campaign__name",
            "skill__key",
            "skill__name",
            "skill__position",
            "score",
            "rationale",
            "synthetic",
        )
    )
    judge_rows = list(
        JudgeScore.objects.filter(response_id__in=ids)
        .order_by("run_id", "response_id", "skill_id", "sample_index")
        .values(
            "run_id",
            "response_id",
            "skill__key",
            "skill__name",
            "skill__position",
            "score",
            "rationale",
        )
    )
    run_ids = sorted({j["run_id"] for j in judge_rows})
    runs = (
        {
            r.pk: r
            for r in JudgeRun.objects.filter(pk__in=run_ids).select_related("config")
        }
        if run_ids
        else {}
    )
    letters = {
        rater_id: rater_letter(i)
        for i, rater_id in enumerate(
            sorted({h["assignment__rater_id"] for h in human_rows})
        )
    }
    relevant = [
        (link.skill.key, link.skill.name) for link in instruction.skill_links.all()
    ]
    out = []
    for response in responses:
        skills = {key: SkillScores(key, name) for key, name in relevant}
        extra: dict[str, int] = {}
        for h in human_rows:
            if h["assignment__response_id"] != response.pk:
                continue
            key = h["skill__key"]
            if key not in skills:
                skills[key] = SkillScores(key, h["skill__name"])
                extra[key] = h["skill__position"]
            label = f"Rater {letters[h['assignment__rater_id']]}"
            if show_names:
                label += f" ({h['assignment__rater__username']})"
            skills[key].humans.append(
                HumanEntry(
                    rater=label,
                    score=h["score"],
                    rationale=h["rationale"],
                    campaign=h["assignment__campaign__name"],
                    synthetic=h["synthetic"],
                )
            )
        samples: dict[tuple[int, str], list[dict]] = {}
        for j in judge_rows:
            if j["response_id"] != response.pk:
                continue
            key = j["skill__key"]
            if key not in skills:
                skills[key] = SkillScores(key, j["skill__name"])
                extra[key] = j["skill__position"]
            samples.setdefault((j["run_id"], key), []).append(j)
        for s in skills.values():
            numeric = [h.score for h in s.humans if h.score is not None]
            s.human_mean = sum(numeric) / len(numeric) if numeric else None
        for (run_id, key), rows in samples.items():
            score = judge_item_score([r["score"] for r in rows])
            mean = skills[key].human_mean
            skills[key].judges.append(
                JudgeEntry(
                    run_id=run_id,
                    run=run_label(runs[run_id]),
                    score=score,
                    rationale=rows[0]["rationale"],
                    samples=len(rows),
                    disagrees=score is not None
                    and mean is not None
                    and abs(score - mean) >= DISAGREEMENT,
                )
            )
        ordered = [skills[k] for k, _ in relevant] + [
            skills[k] for k in sorted(extra, key=lambda k: (extra[k], k))
        ]
        out.append(ResponseScores(response=response, skills=ordered))
    return out


# --- The response filter --------------------------------------------------------------


@dataclass(frozen=True)
class ResponseFilter:
    """A parsed, valid response filter (see `response_filter_parse`)."""

    model: str = ""
    run_id: int | None = None
    run: str = ""  # the run's label
    skill: str = ""
    skill_name: str = ""
    disagree: Decimal | None = None
    human_min: Decimal | None = None
    human_max: Decimal | None = None
    judge_min: Decimal | None = None
    judge_max: Decimal | None = None

    @property
    def on_scores(self) -> bool:
        """Whether the filter looks at scores (not just at the model)."""
        return any(
            v is not None
            for v in (
                self.disagree,
                self.human_min,
                self.human_max,
                self.judge_min,
                self.judge_max,
            )
        )

    @property
    def active(self) -> bool:
        return bool(self.model) or self.on_scores

    def params(self) -> dict[str, str]:
        """The filter as query-string parameters (only those set)."""
        values = {
            "model": self.model,
            "run": "" if self.run_id is None else str(self.run_id),
            "skill": self.skill,
            "disagree": self.disagree,
            "human_min": self.human_min,
            "human_max": self.human_max,
            "judge_min": self.judge_min,
            "judge_max": self.judge_max,
        }
        return {k: str(v) for k, v in values.items() if v not in (None, "")}


def _score_param(params: Mapping, name: str, low: int, high: int) -> Decimal | None:
    raw = (params.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = Decimal(raw)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise BadParameter(name, f"{raw[:40]!r} is not a number")
    if not low <= value <= high:
        raise BadParameter(name, f"must be a number from {low} to {high}, not {raw}")
    return value


def response_filter_parse(*, dataset: Dataset, params: Mapping) -> ResponseFilter:
    """The response filter of a query string, checked against `dataset`.

    Parameters (all optional): `model` (an evaluated model of the dataset), `run` (a
    judge run of the dataset with scores), `skill` (a skill key scored or listed in
    the dataset), `disagree` (D, 0-4: |judge - humans' mean| >= D on the skill, any
    skill when none is chosen; needs `run`), `human_min` / `human_max` (the humans'
    mean, 1-5), `judge_min` / `judge_max` (the run's score, 1-5; need `run`).
    Raises `BadParameter` (a 400) naming the first bad parameter. Up to three
    queries (models, run, skill), only for the parameters given.
    """
    model = (params.get("model") or "").strip()
    if (
        model
        and not Response.objects.filter(
            instruction__dataset=dataset, model_name=model
        ).exists()
    ):
        raise BadParameter("model", f"no model {model[:80]!r} in this dataset")
    run = None
    raw_run = (params.get("run") or "").strip()
    if raw_run:
        run_id = parse_int(raw_run, "run", min_value=1, max_value=2**63 - 1)
        run = (
            JudgeRun.objects.filter(pk=run_id, dataset=dataset)
            .select_related("config")
            .first()
        )
        if run is None:
            raise BadParameter("run", f"no judge run {run_id} in this dataset")
    skill = (params.get("skill") or "").strip()
    skill_name = ""
    if skill:
        skill_name = (
            dataset.rubric.skills.filter(key=skill)
            .values_list("name", flat=True)
            .first()
        )
        if skill_name is None:
            skill_name = (
                HumanScore.objects.filter(
                    assignment__response__instruction__dataset=dataset,
                    skill__key=skill,
                )
                .values_list("skill__name", flat=True)
                .first()
            )
        if skill_name is None:
            raise BadParameter("skill", f"no skill {skill[:80]!r} in this dataset")
    disagree = _score_param(params, "disagree", 0, SCORE_MAX - SCORE_MIN)
    human_min = _score_param(params, "human_min", SCORE_MIN, SCORE_MAX)
    human_max = _score_param(params, "human_max", SCORE_MIN, SCORE_MAX)
    judge_min = _score_param(params, "judge_min", SCORE_MIN, SCORE_MAX)
    judge_max = _score_param(params, "judge_max", SCORE_MIN, SCORE_MAX)
    for name, value in (
        ("disagree", disagree),
        ("judge_min", judge_min),
        ("judge_max", judge_max),
    ):
        if value is not None and run is None:
            raise BadParameter(name, "choose a judge run (`run`) to compare with")
    for low, high, name in (
        (human_min, human_max, "human_max"),
        (judge_min, judge_max, "judge_max"),
    ):
        if low is not None and high is not None and high < low:
            raise BadParameter(name, f"must not be below the minimum ({low})")
    return ResponseFilter(
        model=model,
        run_id=run.pk if run else None,
        run=run_label(run) if run else "",
        skill=skill,
        skill_name=skill_name,
        disagree=disagree,
        human_min=human_min,
        human_max=human_max,
        judge_min=judge_min,
        judge_max=judge_max,
    )


@dataclass
class MatchedSkill:
    key: str
    name: str
    human_mean: float | None
    judge: int | None


@dataclass
class ResponseMatch:
    response_id: int
    instruction_id: int
    model: str
    skills: list[MatchedSkill]  # the skills that met the score criteria


def _between(value, low, high) -> bool:
    if low is None and high is None:
        return True
    if value is None:
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def response_matches(*, dataset: Dataset, flt: ResponseFilter) -> list[ResponseMatch]:
    """The responses of `dataset` that pass `flt`, in dataset order (instruction
    position, instruction id, model).

    With score criteria, a response passes when at least one of its skills (the
    chosen one, or any) meets all of them at once; that skill's humans' mean and
    judge score come with the match. Three queries (responses, human sums, the run's
    scores), two without a run.
    """
    responses = Response.objects.filter(instruction__dataset=dataset)
    if flt.model:
        responses = responses.filter(model_name=flt.model)
    ordered = responses.order_by(
        "instruction__position", "instruction_id", "model_name"
    ).values_list("id", "instruction_id", "model_name")
    if not flt.on_scores:
        return [ResponseMatch(rid, iid, model, []) for rid, iid, model in ordered]
    humans = HumanScore.objects.filter(
        assignment__response__instruction__dataset=dataset,
        assignment__status=Assignment.Status.SUBMITTED,
    )
    judges = JudgeScore.objects.filter(run_id=flt.run_id or 0)
    if flt.model:
        humans = humans.filter(assignment__response__model_name=flt.model)
        judges = judges.filter(response__model_name=flt.model)
    if flt.skill:
        humans = humans.filter(skill__key=flt.skill)
        judges = judges.filter(skill__key=flt.skill)
    names: dict[str, str] = {}
    means: dict[tuple[int, str], float | None] = {}
    for rid, key, name, total, n in (
        humans.values("assignment__response_id", "skill__key")
        .annotate(total=Sum("score"), n=Count("score"), name=F("skill__name"))
        .values_list("assignment__response_id", "skill__key", "name", "total", "n")
    ):
        names.setdefault(key, name)
        means[(rid, key)] = (total / n) if n else None
    samples: dict[tuple[int, str], list[int | None]] = {}
    if flt.run_id is not None:
        for rid, key, name, score in judges.order_by(
            "response_id", "skill_id", "sample_index"
        ).values_list("response_id", "skill__key", "skill__name", "score"):
            names.setdefault(key, name)
            samples.setdefault((rid, key), []).append(score)
    judged = {k: judge_item_score(v) for k, v in samples.items()}
    by_response: dict[int, list[str]] = {}
    for rid, key in set(means) | set(judged):
        by_response.setdefault(rid, []).append(key)
    # Only scored responses can pass: read the order of those alone.
    rows = list(ordered.filter(pk__in=list(by_response))) if by_response else []
    out = []
    for rid, iid, model in rows:
        hits = []
        for key in sorted(by_response.get(rid, [])):
            mean, judge = means.get((rid, key)), judged.get((rid, key))
            if not _between(mean, flt.human_min, flt.human_max):
                continue
            if not _between(judge, flt.judge_min, flt.judge_max):
                continue
            if flt.disagree is not None and (
                mean is None or judge is None or abs(judge - mean) < flt.disagree
            ):
                continue
            hits.append(MatchedSkill(key, names.get(key, key), mean, judge))
        if hits:
            out.append(ResponseMatch(rid, iid, model, hits))
    return out


def scored_run_choices(*, dataset: Dataset) -> list[tuple[int, str]]:
    """(id, label) of the dataset's judge runs with scores, newest first (one query)."""
    scored = JudgeScore.objects.filter(run__dataset=dataset).values("run_id")
    return [
        (r.pk, run_label(r))
        for r in JudgeRun.objects.filter(dataset=dataset, pk__in=scored)
        .select_related("config")
        .order_by("-created_at")
    ]


def instruction_neighbours(
    *, dataset: Dataset, instruction_id: int, instruction_filters: dict, flt
) -> tuple[int | None, int | None, int, int]:
    """(previous id, next id, position 1.., count) of an instruction among those of
    `dataset` that pass the browser's `instruction_filters` and, when active, the
    response filter `flt` (an instruction passes when one of its responses does), in
    dataset order. Position 0 when the instruction itself does not pass. One query,
    plus `response_matches`' when `flt` is active.
    """
    ids = instruction_id_list(dataset=dataset, **instruction_filters)
    if flt is not None and flt.active:
        passing = {m.instruction_id for m in response_matches(dataset=dataset, flt=flt)}
        ids = [i for i in ids if i in passing]
    try:
        at = ids.index(instruction_id)
    except ValueError:
        return None, None, 0, len(ids)
    previous = ids[at - 1] if at > 0 else None
    following = ids[at + 1] if at + 1 < len(ids) else None
    return previous, following, at + 1, len(ids)
