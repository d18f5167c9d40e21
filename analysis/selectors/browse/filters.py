"""The response filter of the browse pages: a dataset's responses narrowed by model,
by "a judge run and the humans disagree on a criterion", and by ranges of the
humans' mean and the judge's score, each range on the criterion's own scale
(`browse.rules`: values, disagreement)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db.models import Count, F, Sum

from analysis.selectors.agreement.sources import run_label
from analysis.selectors.browse.rules import (
    disagrees,
    human_majority,
    judge_item_score,
)
from annotation.models import Assignment, Dataset, HumanScore, Response
from annotation.scales import FLASK_SCALE, Scale, scale_of
from annotation.selectors import instruction_id_list
from flaskapp.params import BadParameter, parse_int
from judging.models import JudgeRun, JudgeScore


@dataclass(frozen=True)
class ResponseFilter:
    """A parsed, valid response filter (see `response_filter_parse`). `scales` maps
    the dataset rubric's skill keys to their `Scale`; `low`/`high` are the bounds the
    score ranges were checked against (the chosen skill's scale, or the span of the
    rubric's ordinal scales)."""

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
    scales: dict = field(default_factory=dict, compare=False, hash=False)
    low: int = 1
    high: int = 5

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
    def on_ranges(self) -> bool:
        return any(
            v is not None
            for v in (self.human_min, self.human_max, self.judge_min, self.judge_max)
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


def filter_bounds(scales: dict[str, Scale], skill: str = "") -> tuple[int, int, int]:
    """(low, high, largest difference) the score filters accept: the chosen skill's
    scale (a categorical one: no range, a difference of 0 or 1, "the labels
    differ"), else the span of the ordinal scales among `scales` (FLASK's 1-5 when
    there is none)."""
    chosen = [scales[skill]] if skill in scales else list(scales.values())
    ordinal = [s for s in chosen if s.is_ordinal]
    if not ordinal:
        return 1, 5, 1
    low = min(s.low for s in ordinal)
    high = max(s.high for s in ordinal)
    return low, high, max(s.high - s.low for s in ordinal)


def response_filter_parse(*, dataset: Dataset, params: Mapping) -> ResponseFilter:
    """The response filter of a query string, checked against `dataset`.

    Parameters (all optional): `model` (an evaluated model of the dataset), `run` (a
    judge run of the dataset with scores), `skill` (a skill key scored or listed in
    the dataset), `disagree` (D: |judge - humans' mean| >= D points on the skill, any
    skill when none is chosen; on a labelled skill, D > 0 asks for a judge label
    other than the raters' majority; needs `run`), `human_min` / `human_max` (the
    humans' mean), `judge_min` / `judge_max` (the run's score; need `run`). Ranges
    are checked against the chosen skill's scale (`filter_bounds`: 0-4, 1-10, ...),
    or the span of the rubric's scales when no skill is chosen; a range on a labelled
    skill is refused (it has no scale). Raises `BadParameter` (a 400) naming the
    first bad parameter. Up to three queries (the rubric's skills, models, run), and
    one more for a skill of another rubric version.
    """
    scales = {s.key: (s.name, scale_of(s)) for s in dataset.rubric.skills.all()}
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
        if skill in scales:
            skill_name = scales[skill][0]
        else:
            other = (
                HumanScore.objects.filter(
                    assignment__response__instruction__dataset=dataset,
                    skill__key=skill,
                )
                .select_related("skill")
                .first()
            )
            if other is None:
                raise BadParameter("skill", f"no skill {skill[:80]!r} in this dataset")
            skill_name = other.skill.name
            scales[skill] = (skill_name, scale_of(other.skill))
    by_key = {key: scale for key, (_, scale) in scales.items()}
    low, high, spread = filter_bounds(by_key, skill)
    disagree = _score_param(params, "disagree", 0, spread)
    ranges = {
        name: _score_param(params, name, low, high)
        for name in ("human_min", "human_max", "judge_min", "judge_max")
    }
    for name, value in ranges.items():
        if value is None:
            continue
        if skill and by_key[skill].is_categorical:
            raise BadParameter(
                name,
                f"{skill_name} is answered with labels ({by_key[skill].label}), "
                "not scored on a scale; filter it by disagreement",
            )
        if not any(s.is_ordinal for s in by_key.values()):
            raise BadParameter(
                name, "no skill of this rubric is scored on a scale (only labels)"
            )
    for name, value in (
        ("disagree", disagree),
        ("judge_min", ranges["judge_min"]),
        ("judge_max", ranges["judge_max"]),
    ):
        if value is not None and run is None:
            raise BadParameter(name, "choose a judge run (`run`) to compare with")
    for low_value, high_value, name in (
        (ranges["human_min"], ranges["human_max"], "human_max"),
        (ranges["judge_min"], ranges["judge_max"], "judge_max"),
    ):
        if low_value is not None and high_value is not None and high_value < low_value:
            raise BadParameter(name, f"must not be below the minimum ({low_value})")
    return ResponseFilter(
        model=model,
        run_id=run.pk if run else None,
        run=run_label(run) if run else "",
        skill=skill,
        skill_name=skill_name,
        disagree=disagree,
        scales=by_key,
        low=low,
        high=high,
        **ranges,
    )


@dataclass
class MatchedSkill:
    key: str
    name: str
    human_mean: float | None  # ordinal: the humans' mean; categorical: None
    judge: int | None  # the stored value (a point or a label code)
    human_text: str = ""  # as shown: "3.50" or the majority label's name
    judge_text: str = ""  # as shown: "4", "Yes", "N/A"


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


def _passes(flt: ResponseFilter, scale: Scale, mean, majority, judge) -> bool:
    """Whether one (response, skill) meets every score criterion of `flt`."""
    if scale.is_categorical:
        if flt.on_ranges:
            return False  # a label is on no scale
        if flt.disagree is None:
            return True
        if majority is None or judge is None:
            return False
        return flt.disagree == 0 or disagrees(scale, judge, None, majority)
    if not _between(mean, flt.human_min, flt.human_max):
        return False
    if not _between(judge, flt.judge_min, flt.judge_max):
        return False
    return flt.disagree is None or (
        mean is not None and judge is not None and abs(judge - mean) >= flt.disagree
    )


def response_matches(*, dataset: Dataset, flt: ResponseFilter) -> list[ResponseMatch]:  # noqa: C901 - one clause per filter of the browse page's form, read top to bottom
    """The responses of `dataset` that pass `flt`, in dataset order (instruction
    position, instruction id, model).

    With score criteria, a response passes when at least one of its skills (the
    chosen one, or any) meets all of them at once (`_passes`: on a labelled skill the
    raters' majority label and the judge's label instead of a mean and a score);
    that skill's values come with the match. Three queries (responses, human sums,
    the run's scores), two without a run, one more when the rubric has labelled
    skills (their votes per label). A skill missing from `flt.scales` (another
    rubric version) is taken as FLASK's 1-5.
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
    labelled = [k for k, s in flt.scales.items() if s.is_categorical]
    names: dict[str, str] = {}
    means: dict[tuple[int, str], float | None] = {}
    votes: dict[tuple[int, str], list[int | None]] = {}
    for rid, key, name, total, n in (
        humans.exclude(skill__key__in=labelled)
        .values("assignment__response_id", "skill__key")
        .annotate(total=Sum("score"), n=Count("score"), name=F("skill__name"))
        .values_list("assignment__response_id", "skill__key", "name", "total", "n")
    ):
        names.setdefault(key, name)
        means[(rid, key)] = (total / n) if n else None
    if labelled and (not flt.skill or flt.skill in labelled):
        for rid, key, name, score, n in (
            humans.filter(skill__key__in=labelled)
            .values("assignment__response_id", "skill__key", "score")
            .annotate(n=Count("pk"), name=F("skill__name"))
            .values_list("assignment__response_id", "skill__key", "name", "score", "n")
        ):
            names.setdefault(key, name)
            votes.setdefault((rid, key), []).extend([score] * n)
    samples: dict[tuple[int, str], list[int | None]] = {}
    if flt.run_id is not None:
        for rid, key, name, score in judges.order_by(
            "response_id", "skill_id", "sample_index"
        ).values_list("response_id", "skill__key", "skill__name", "score"):
            names.setdefault(key, name)
            samples.setdefault((rid, key), []).append(score)
    judged = {k: judge_item_score(v, _scale(flt, k[1])) for k, v in samples.items()}
    by_response: dict[int, list[str]] = {}
    for rid, key in set(means) | set(votes) | set(judged):
        by_response.setdefault(rid, []).append(key)
    # Only scored responses can pass: read the order of those alone.
    rows = list(ordered.filter(pk__in=list(by_response))) if by_response else []
    out = []
    for rid, iid, model in rows:
        hits = []
        for key in sorted(by_response.get(rid, [])):
            scale = _scale(flt, key)
            mean, judge = means.get((rid, key)), judged.get((rid, key))
            majority = human_majority(votes.get((rid, key), []))
            if not _passes(flt, scale, mean, majority, judge):
                continue
            if scale.is_categorical:
                human_text = "" if majority is None else scale.name_of(majority)
            else:
                human_text = "" if mean is None else f"{mean:.2f}"
            hits.append(
                MatchedSkill(
                    key,
                    names.get(key, key),
                    mean,
                    judge,
                    human_text=human_text,
                    judge_text=scale.name_of(judge),
                )
            )
        if hits:
            out.append(ResponseMatch(rid, iid, model, hits))
    return out


def _scale(flt: ResponseFilter, key: str) -> Scale:
    found = flt.scales.get(key)
    return found if found is not None else FLASK_SCALE


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
