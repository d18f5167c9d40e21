"""One instruction's responses with every human and judge value, side by side, on
each criterion's own scale, and the raters' and judges' critiques of each response."""

from __future__ import annotations

from dataclasses import dataclass, field

from analysis.selectors.agreement.sources import run_label
from analysis.selectors.browse.rules import (
    SCALE_FIELDS,
    disagrees,
    human_majority,
    judge_item_score,
    rater_letter,
    row_scale,
)
from annotation.models import Assignment, HumanScore, Instruction, Response
from annotation.scales import Scale, scale_of
from annotation.selectors.exclusions import excluded_scores
from flaskapp import roles
from judging.models import JudgeCritique, JudgeRun, JudgeScore

_SKILL_SCALE = tuple(f"skill__{f}" for f in SCALE_FIELDS)


@dataclass
class HumanEntry:
    rater: str  # "Rater A" (admins also see the username)
    score: int | None  # the stored value: a point, or a label's code
    rationale: str
    campaign: str
    synthetic: bool
    value: str = ""  # as shown: "3", "Yes", "N/A"
    # The rater is excluded from the campaign's analyses (an open exclusion): shown,
    # marked, and left out of the raters' mean and majority here too.
    excluded: bool = False


@dataclass
class JudgeEntry:
    run_id: int
    run: str  # "#12 name"
    score: int | None
    rationale: str
    samples: int
    disagrees: bool  # see `rules.disagrees`
    value: str = ""


@dataclass
class CritiqueEntry:
    """A written critique of a response: a rater's (`rater`, `campaign`) or a judge
    run's (`run_id`, `run`, `sample`)."""

    text: str
    rater: str = ""
    campaign: str = ""
    synthetic: bool = False
    run_id: int | None = None
    run: str = ""
    sample: int = 0


@dataclass
class SkillScores:
    key: str
    name: str
    scale: Scale
    humans: list[HumanEntry] = field(default_factory=list)
    human_mean: float | None = None  # ordinal criteria
    human_majority: str = ""  # categorical: the majority label's name, "" if none
    human_counts: list[tuple[str, int]] = field(default_factory=list)  # label, votes
    judges: list[JudgeEntry] = field(default_factory=list)

    @property
    def disagrees(self) -> bool:
        return any(j.disagrees for j in self.judges)


@dataclass
class ResponseScores:
    response: Response
    skills: list[SkillScores]
    human_critiques: list[CritiqueEntry] = field(default_factory=list)
    judge_critiques: list[CritiqueEntry] = field(default_factory=list)

    @property
    def disagreements(self) -> int:
        return sum(s.disagrees for s in self.skills)

    @property
    def has_critiques(self) -> bool:
        return bool(self.human_critiques or self.judge_critiques)


def _rater_label(letters: dict, rater_id: int, username: str, show: bool) -> str:
    label = f"Rater {letters[rater_id]}"
    return f"{label} ({username})" if show else label


def instruction_scores(
    *, user, instruction: Instruction, responses: list[Response]
) -> list[ResponseScores]:
    """Every response of `instruction` (given, in display order) with its scores and
    critiques.

    Skills per response: the instruction's relevant skills in rank order (from the
    prefetched `skill_links`), then any other skill scored on it, in rubric order;
    each with its `Scale` (values shown as `Scale.name_of` writes them: "3", "Yes",
    "N/A"). Humans: submitted assignments of every campaign; a rater's pseudonym is a
    letter by account id over the whole page (stable within the page, the same in
    scores and critiques), with the username added for admins only; synthetic
    accounts' scores and critiques are flagged, as are excluded raters' scores
    (left out of the raters' mean and majority). Judges: every run with scores on
    these responses, values and disagreement as `browse.rules` defines them.
    Critiques: the raters' (non-empty `Assignment.critique` of submitted
    assignments) and every judge run's (`JudgeCritique`), per response.
    Researchers and admins only (`PermissionDenied`). Five queries (human scores,
    judge scores, raters' critiques, judges' critiques, runs).
    """
    roles.require_researcher(user)
    show_names = roles.is_admin(user)
    ids = [r.pk for r in responses]
    human_rows = list(
        HumanScore.objects.filter(
            assignment__response_id__in=ids,
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .annotate(
            synthetic=roles.synthetic_rater("assignment__rater_id"),
            excluded=excluded_scores(),
        )
        .order_by("assignment__rater_id", "assignment__campaign_id", "pk")
        .values(
            "assignment__response_id",
            "assignment__rater_id",
            "assignment__rater__username",
            "assignment__campaign__name",
            "skill__key",
            "skill__name",
            "skill__position",
            *_SKILL_SCALE,
            "score",
            "rationale",
            "synthetic",
            "excluded",
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
            *_SKILL_SCALE,
            "score",
            "rationale",
        )
    )
    human_critiques = list(
        Assignment.objects.filter(
            response_id__in=ids, status=Assignment.Status.SUBMITTED
        )
        .exclude(critique="")
        .annotate(synthetic=roles.synthetic_rater("rater_id"))
        .order_by("rater_id", "campaign_id", "pk")
        .values(
            "response_id",
            "rater_id",
            "rater__username",
            "campaign__name",
            "critique",
            "synthetic",
        )
    )
    judge_critiques = list(
        JudgeCritique.objects.filter(response_id__in=ids)
        .order_by("run_id", "response_id", "sample_index")
        .values("run_id", "response_id", "sample_index", "text")
    )
    run_ids = sorted(
        {j["run_id"] for j in judge_rows} | {c["run_id"] for c in judge_critiques}
    )
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
            sorted(
                {h["assignment__rater_id"] for h in human_rows}
                | {c["rater_id"] for c in human_critiques}
            )
        )
    }
    relevant = [
        (link.skill.key, link.skill.name, scale_of(link.skill))
        for link in instruction.skill_links.all()
    ]
    out = []
    for response in responses:
        skills = {key: SkillScores(key, name, scale) for key, name, scale in relevant}
        extra: dict[str, int] = {}
        for h in human_rows:
            if h["assignment__response_id"] != response.pk:
                continue
            key = h["skill__key"]
            if key not in skills:
                skills[key] = SkillScores(key, h["skill__name"], row_scale(h))
                extra[key] = h["skill__position"]
            scale = skills[key].scale
            skills[key].humans.append(
                HumanEntry(
                    rater=_rater_label(
                        letters,
                        h["assignment__rater_id"],
                        h["assignment__rater__username"],
                        show_names,
                    ),
                    score=h["score"],
                    rationale=h["rationale"],
                    campaign=h["assignment__campaign__name"],
                    synthetic=h["synthetic"],
                    value=_shown(scale, h["score"]),
                    excluded=h["excluded"],
                )
            )
        samples: dict[tuple[int, str], list[dict]] = {}
        for j in judge_rows:
            if j["response_id"] != response.pk:
                continue
            key = j["skill__key"]
            if key not in skills:
                skills[key] = SkillScores(key, j["skill__name"], row_scale(j))
                extra[key] = j["skill__position"]
            samples.setdefault((j["run_id"], key), []).append(j)
        majorities = {}
        for s in skills.values():
            values = [h.score for h in s.humans if not h.excluded]
            numeric = [v for v in values if v is not None]
            if s.scale.is_categorical:
                majorities[s.key] = majority = human_majority(values)
                s.human_majority = "" if majority is None else _shown(s.scale, majority)
                s.human_counts = [
                    (s.scale.name_of(code), numeric.count(code))
                    for code in s.scale.values
                    if code in numeric
                ]
            else:
                s.human_mean = sum(numeric) / len(numeric) if numeric else None
        for (run_id, key), rows in samples.items():
            skill = skills[key]
            score = judge_item_score([r["score"] for r in rows], skill.scale)
            skill.judges.append(
                JudgeEntry(
                    run_id=run_id,
                    run=run_label(runs[run_id]),
                    score=score,
                    rationale=rows[0]["rationale"],
                    samples=len(rows),
                    disagrees=disagrees(
                        skill.scale, score, skill.human_mean, majorities.get(key)
                    ),
                    value=_shown(skill.scale, score),
                )
            )
        ordered = [skills[k] for k, _, _ in relevant] + [
            skills[k] for k in sorted(extra, key=lambda k: (extra[k], k))
        ]
        out.append(
            ResponseScores(
                response=response,
                skills=ordered,
                human_critiques=[
                    CritiqueEntry(
                        text=c["critique"],
                        rater=_rater_label(
                            letters, c["rater_id"], c["rater__username"], show_names
                        ),
                        campaign=c["campaign__name"],
                        synthetic=c["synthetic"],
                    )
                    for c in human_critiques
                    if c["response_id"] == response.pk and c["critique"].strip()
                ],
                judge_critiques=[
                    CritiqueEntry(
                        text=c["text"],
                        run_id=c["run_id"],
                        run=run_label(runs[c["run_id"]]),
                        sample=c["sample_index"],
                    )
                    for c in judge_critiques
                    if c["response_id"] == response.pk
                ],
            )
        )
    return out


def _shown(scale: Scale, value: int | None) -> str:
    """A stored value as the page shows it; a code no label has, as the number."""
    if value is not None and scale.is_categorical and not scale.accepts(value):
        return str(value)
    return scale.name_of(value)
