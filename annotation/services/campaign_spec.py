"""What a new campaign is: one `CampaignSpec` built from small policies.

`services.campaigns.campaign_create(spec=..., created_by=...)` creates every kind of
campaign from a spec. A policy is a frozen dataclass holding one group of options
with its defaults, the checks of those options (`problems`, each naming the
form/API field it concerns) and the `Campaign` columns it sets (`fields`):

| policy | options |
|---|---|
| `ServingPolicy` | raters per item (overlap, overlap percent), lock time-to-live, quota |
| `DisplayPolicy` | reference answer shown, model names shown, guidelines |
| `CritiquePolicy` | a written critique next to or instead of the scores, its minimum |
| `GoldPolicy` | gold items interleaved, one in every `rate`; training feedback |
| `QualificationPolicy` | gold items a rater answers first, the pass mark and rule |
| `SamplingPolicy` | a drawn sample of responses with their inclusion probabilities |
| `PairPolicy` | the pairs a pairwise campaign compares (makes it a pairwise campaign) |

Critique, gold, qualification and sampling are pointwise options: a pairwise spec
that sets one is refused, naming its field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from django.contrib.auth.models import User

from annotation.models import Campaign, Dataset, PreferencePair, Response, Skill
from annotation.services.gold import gold_rate_problems
from annotation.services.pairs import PAIR_MODES, dataset_models, pair_problems
from annotation.services.qualification import qualification_problems
from flaskapp import roles, workspaces
from flaskapp.bounds import LOCK_TTL_MINUTES, OVERLAP, OVERLAP_PERCENT, RATER_QUOTA
from flaskapp.errors import Problem
from flaskapp.limits import model_text_problems
from flaskapp.untrusted import text_problem

# The longest minimum a campaign may ask of a critique (a rating's critique holds up
# to `items.pointwise.MAX_CRITIQUE` characters).
MAX_CRITIQUE_MIN_LENGTH = 5000
# "existing": the pairs already stored for the dataset (e.g. imported preference data).
CAMPAIGN_PAIR_MODES = (*PAIR_MODES, "existing")
# What a sampling plan's description must say (`Campaign.sampling`).
SAMPLING_KEYS = ("strategy", "why", "seed", "run", "budget", "population", "sampled")


@dataclass(frozen=True)
class ServingPolicy:
    """How many raters see an item, how long a lock lasts, how much one rater does."""

    overlap: int = 1
    overlap_percent: int = 100
    lock_ttl_minutes: int = 30
    rater_quota: int | None = None

    def problems(self, spec: CampaignSpec) -> list[Problem]:
        """Within `flaskapp.bounds` (the same bounds as the model fields, forms and
        serializers). With raters chosen at creation, an overlap above their number
        is refused: a rater never gets the same item twice, so `overlap` raters per
        item could never be reached."""
        checks = [
            OVERLAP.problem(self.overlap, "overlap"),
            OVERLAP_PERCENT.problem(self.overlap_percent, "overlap_percent"),
            LOCK_TTL_MINUTES.problem(self.lock_ttl_minutes, "lock_ttl_minutes"),
            RATER_QUOTA.problem(self.rater_quota, "rater_quota", optional=True),
        ]
        problems = [p for p in checks if p is not None]
        count = len(spec.raters)
        if (
            count
            and not any(p.field == "overlap" for p in problems)
            and self.overlap > count
        ):
            problems.append(
                Problem(
                    f"{self.overlap} raters per item, but only {count} "
                    f"rater{'s' if count != 1 else ''} chosen: choose at least "
                    f"{self.overlap} raters or lower the overlap",
                    field="overlap",
                )
            )
        return problems

    def fields(self) -> dict:
        return {
            "overlap": self.overlap,
            "overlap_percent": self.overlap_percent,
            "lock_ttl_minutes": self.lock_ttl_minutes,
            "rater_quota": self.rater_quota,
        }


@dataclass(frozen=True)
class DisplayPolicy:
    """What a rater is shown besides the item: the reference answer, the models'
    names (hidden by default: blind rating) and the guidelines (Markdown)."""

    show_reference: bool = True
    show_model_names: bool = False
    guidelines: str = ""

    def problems(self, spec: CampaignSpec) -> list[Problem]:
        guidelines = self.guidelines or ""
        if problem := text_problem(guidelines):
            return [Problem(problem, field="guidelines")]
        return model_text_problems(Campaign, {"guidelines": guidelines})

    def fields(self) -> dict:
        return {
            "show_reference": bool(self.show_reference),
            "show_model_names": bool(self.show_model_names),
            "guidelines": self.guidelines or "",
        }


@dataclass(frozen=True)
class CritiquePolicy:
    """A written critique next to the scores (``with_scores``) or instead of them
    (``only``), of at least `min_length` characters; ``off``: none."""

    mode: str = Campaign.Critique.OFF
    min_length: int = 0

    def problems(self, spec: CampaignSpec | None = None) -> list[Problem]:
        """Naming `critique` or `critique_min_length`: the mode is one of
        `Campaign.Critique`, the minimum a whole number 0..MAX_CRITIQUE_MIN_LENGTH
        (and 0 when no critique is asked for)."""
        problems = []
        if self.mode not in Campaign.Critique.values:
            problems.append(
                Problem(
                    f"unknown critique setting {self.mode!r}; use "
                    + ", ".join(Campaign.Critique.values),
                    field="critique",
                )
            )
        length = self.min_length
        if (
            isinstance(length, bool)
            or not isinstance(length, int)
            or not 0 <= length <= MAX_CRITIQUE_MIN_LENGTH
        ):
            problems.append(
                Problem(
                    f"must be a whole number 0-{MAX_CRITIQUE_MIN_LENGTH}",
                    field="critique_min_length",
                )
            )
        elif self.mode == Campaign.Critique.OFF and length:
            problems.append(
                Problem(
                    "is set, but the campaign asks for no critique; choose a critique "
                    "setting or leave it at 0",
                    field="critique_min_length",
                )
            )
        return problems

    def fields(self) -> dict:
        return {"critique": self.mode, "critique_min_length": self.min_length}


@dataclass(frozen=True)
class GoldPolicy:
    """`rate` N > 0 interleaves the dataset's gold items, one in every N items a
    rater is served (`services.gold`); they are then not real items of the campaign.
    `training_phase` shows raters the expected scores after each gold item."""

    rate: int = 0
    training_phase: bool = False

    def problems(self, spec: CampaignSpec) -> list[Problem]:
        return gold_rate_problems(dataset=spec.dataset, gold_rate=self.rate)

    def fields(self) -> dict:
        return {"gold_rate": self.rate, "training_phase": bool(self.training_phase)}


@dataclass(frozen=True)
class QualificationPolicy:
    """`size` N > 0 makes each rater answer N gold items first and serves real ones
    only at a share of right answers >= `pass_mark`, by `rule` (exact / within1);
    see `services.qualification`."""

    size: int = 0
    pass_mark: float = 0.8
    rule: str = Campaign.QualificationRule.EXACT

    def problems(self, spec: CampaignSpec) -> list[Problem]:
        return qualification_problems(
            dataset=spec.dataset,
            size=self.size,
            pass_mark=self.pass_mark,
            rule=self.rule,
            rater_quota=spec.serving.rater_quota,
        )

    def fields(self) -> dict:
        return {
            "qualification_size": self.size,
            "qualification_pass": self.pass_mark,
            "qualification_rule": self.rule,
        }


@dataclass(frozen=True)
class SamplingPolicy:
    """A sampling campaign: its items are exactly the drawn responses of `sample`
    ((response id, inclusion probability), in serving order); `plan` (the plan's
    description, with `SAMPLING_KEYS`) is stored on the campaign. The plan is made
    by code that reads judge scores (`judging.services.sampling`); this app only
    checks and stores it (`services.sampling`)."""

    sample: tuple[tuple[int, float], ...] = ()
    plan: dict = field(default_factory=dict, hash=False)

    def problems(self, spec: CampaignSpec) -> list[Problem]:
        """Naming `sample` or `sampling`: at least one (response id, probability)
        pair, no response twice, every response one of the dataset's (of the spec's
        models when given) and not a gold item, every probability in (0, 1]; the
        description a dict with `SAMPLING_KEYS`. One query."""
        problems = []
        pairs = list(self.sample or [])
        if not pairs:
            problems.append(Problem("no response was drawn", field="sample"))
        ids, bad = [], []
        for pair in pairs:
            try:
                response_id, probability = int(pair[0]), float(pair[1])
            except (TypeError, ValueError, IndexError):
                bad.append(repr(pair))
                continue
            if not (math.isfinite(probability) and 0 < probability <= 1):
                bad.append(f"{response_id}: p={probability}")
            ids.append(response_id)
        if bad:
            problems.append(
                Problem(
                    "probabilities must be in (0, 1]: " + ", ".join(bad[:5]),
                    field="sample",
                )
            )
        if len(set(ids)) != len(ids):
            problems.append(Problem("a response is drawn twice", field="sample"))
        if ids:
            known = Response.objects.filter(
                pk__in=ids, instruction__dataset=spec.dataset, gold__isnull=True
            )
            if spec.models:
                known = known.filter(model_name__in=spec.models)
            missing = sorted(set(ids) - set(known.values_list("pk", flat=True)))
            if missing:
                problems.append(
                    Problem(
                        f"not responses of dataset {spec.dataset.name!r} to rate: "
                        + ", ".join(map(str, missing[:10])),
                        field="sample",
                    )
                )
        plan = self.plan
        if not isinstance(plan, dict) or any(k not in plan for k in SAMPLING_KEYS):
            problems.append(
                Problem("must say " + ", ".join(SAMPLING_KEYS), field="sampling")
            )
        return problems

    def drawn(self) -> list[tuple[int, float]]:
        """The checked sample as (response id, probability) pairs."""
        return [(int(r), float(p)) for r, p in self.sample]

    def fields(self) -> dict:
        return {"sampling": dict(self.plan)}


@dataclass(frozen=True)
class PairPolicy:
    """The pairs a pairwise campaign compares. ``mode`` ``all_pairs`` / ``baseline``
    / ``sample`` make them with `services.pairs.pairs_create_from_dataset` (same
    parameters; `sample` is a number of pairs); ``existing`` takes the pairs the
    dataset already has (imported preference data), optionally only those in
    `categories` (and, with the spec's models, only pairs of those models)."""

    mode: str = "all_pairs"
    baseline_model: str | None = None
    sample: int | None = None
    seed: int = 0
    categories: tuple[str, ...] = ()

    def problems(self, spec: CampaignSpec) -> list[Problem]:
        problems = []
        if self.mode not in CAMPAIGN_PAIR_MODES:
            problems.append(
                Problem(
                    f"must be one of {', '.join(CAMPAIGN_PAIR_MODES)}",
                    field="pair_mode",
                )
            )
        categories = list(dict.fromkeys(self.categories))
        if categories and self.mode != "existing":
            problems.append(
                Problem("categories select existing pairs only", field="categories")
            )
        if self.mode == "existing":
            for param, value in (
                ("baseline_model", self.baseline_model),
                ("sample", self.sample),
            ):
                if value:
                    problems.append(
                        Problem("is not used with existing pairs", field=param)
                    )
            known = set(
                PreferencePair.objects.filter(dataset=spec.dataset)
                .values_list("category", flat=True)
                .distinct()
            )
            unknown = [c for c in categories if c not in known]
            if unknown:
                problems.append(
                    Problem(
                        f"not categories of the dataset's pairs: {', '.join(unknown)}",
                        field="categories",
                    )
                )
            available = dataset_models(spec.dataset)
            unknown_models = [m for m in spec.models if m not in available]
            if unknown_models:
                problems.append(
                    Problem(
                        f"not in dataset {spec.dataset.name!r}: "
                        + ", ".join(unknown_models),
                        field="models",
                    )
                )
        elif self.mode in PAIR_MODES:
            problems += pair_problems(
                dataset=spec.dataset,
                mode=self.mode,
                baseline_model=self.baseline_model,
                models=sorted(set(spec.models)),
                sample=self.sample,
                seed=self.seed,
            )
        return problems

    def fields(self) -> dict:
        # Per-skill questions are the chosen skills (possibly none).
        return {"kind": Campaign.Kind.PAIRWISE, "skill_mode": Campaign.SkillMode.CHOSEN}


# The pointwise-only policies, by the field a refusal names.
_POINTWISE_ONLY = {
    "critique": "critique",
    "gold": "gold_rate",
    "qualification": "qualification_size",
    "sampling": "sample",
}


@dataclass(frozen=True)
class CampaignSpec:
    """A campaign to create: its name, dataset, models, criteria and raters, and its
    policies. Pointwise unless `pairs` says which pairs to compare.

    `models`: the evaluated models included (none: every model). `skill_mode`:
    the criteria raters score (the instruction's own, all of the rubric's, or the
    `skills` chosen, by key); a pairwise campaign asks `skills` as per-skill
    questions (none: overall only). `raters`: the raters chosen now (more can be
    added later).
    """

    name: str
    dataset: Dataset
    models: tuple[str, ...] = ()
    skill_mode: str = Campaign.SkillMode.INSTRUCTION
    skills: tuple[str, ...] = ()
    raters: tuple[User, ...] = ()
    serving: ServingPolicy = ServingPolicy()
    display: DisplayPolicy = DisplayPolicy()
    critique: CritiquePolicy = CritiquePolicy()
    gold: GoldPolicy = GoldPolicy()
    qualification: QualificationPolicy = QualificationPolicy()
    sampling: SamplingPolicy | None = None
    pairs: PairPolicy | None = None

    def __post_init__(self) -> None:
        # Lists are accepted and kept as tuples: a spec is a value.
        for name in ("models", "skills", "raters"):
            object.__setattr__(self, name, tuple(getattr(self, name) or ()))
        object.__setattr__(self, "name", (self.name or "").strip())

    @property
    def kind(self) -> str:
        return Campaign.Kind.PAIRWISE if self.pairs else Campaign.Kind.POINTWISE

    def policies(self) -> list:
        """The policies set, in the order their problems are reported."""
        chosen = [self.serving, self.display, self.critique, self.gold]
        chosen += [self.qualification, self.sampling, self.pairs]
        return [p for p in chosen if p is not None]

    def problems(self) -> list[Problem]:
        """Every problem with the spec, each naming its field (none: it can be
        created). A few queries (models, skills, gold items, pairs)."""
        problems: list[Problem] = []
        if not self.name:
            problems.append(Problem("is empty", field="name"))
        if self.pairs:
            for attr, name in _POINTWISE_ONLY.items():
                value = getattr(self, attr)
                default = None if attr == "sampling" else type(value)()
                if value != default:
                    problems.append(
                        Problem("is not used by pairwise campaigns", field=name)
                    )
        elif self.skill_mode not in Campaign.SkillMode.values:
            problems.append(
                Problem(f"unknown skill mode {self.skill_mode!r}", field="skill_mode")
            )
        for policy in self.policies():
            problems += policy.problems(self)
        if not self.pairs:
            problems += self._model_problems()
        problems += self._skill_problems()
        not_raters = [u.username for u in self.raters if not roles.is_rater(u)]
        if not_raters:
            problems.append(
                Problem(f"not raters: {', '.join(not_raters)}", field="raters")
            )
        else:  # only plain rater accounts join a campaign (the one definition)
            problems += [
                Problem(why, field="raters")
                for u in self.raters
                if (why := roles.plain_rater_problem(u, allow_synthetic=True))
            ]
        if outside := workspaces.non_members(self.raters, self.dataset.workspace_id):
            names = ", ".join(u.username for u in outside)
            problems.append(
                Problem(f"not members of this workspace: {names}", field="raters")
            )
        return problems

    def _model_problems(self) -> list[Problem]:
        available = set(
            Response.objects.filter(instruction__dataset=self.dataset)
            .order_by()  # the default ordering would make DISTINCT one row per response
            .values_list("model_name", flat=True)
            .distinct()
        )
        unknown = [m for m in sorted(set(self.models)) if m not in available]
        if not unknown:
            return []
        return [
            Problem(
                f"not in dataset {self.dataset.name!r}: {', '.join(unknown)}",
                field="models",
            )
        ]

    def _skill_problems(self) -> list[Problem]:
        problems = []
        chosen_mode = self.pairs or self.skill_mode == Campaign.SkillMode.CHOSEN
        if self.skills and not chosen_mode:
            problems.append(
                Problem(
                    "skills can only be chosen with skill mode `chosen`",
                    field="skills",
                )
            )
        if not chosen_mode:
            return problems
        keys = list(dict.fromkeys(self.skills))
        known = set(
            Skill.objects.filter(rubric_id=self.dataset.rubric_id).values_list(
                "key", flat=True
            )
        )
        missing = [k for k in keys if k not in known]
        if not keys and not self.pairs:
            problems.append(Problem("choose at least one skill", field="skills"))
        if missing:
            problems.append(
                Problem(
                    f"not skills of the dataset's rubric: {', '.join(missing)}",
                    field="skills",
                )
            )
        return problems

    def chosen_skills(self) -> list[Skill]:
        """The chosen skills (by the order of `skills`), for a checked spec."""
        keys = list(dict.fromkeys(self.skills))
        by_key = {
            s.key: s for s in Skill.objects.filter(rubric_id=self.dataset.rubric_id)
        }
        return [by_key[k] for k in keys if k in by_key]

    def campaign_fields(self) -> dict:
        """The `Campaign` columns of a checked spec (the creator aside)."""
        values = {
            "name": self.name,
            "dataset": self.dataset,
            # A campaign lives in its dataset's workspace (issue 35).
            "workspace_id": self.dataset.workspace_id,
            "models_included": sorted(set(self.models)),
            "skill_mode": self.skill_mode,
        }
        for policy in self.policies():
            values.update(policy.fields())
        return values


def spec_from_fields(data: Mapping, *, pairwise: bool = False) -> CampaignSpec:
    """The spec of the campaign forms' and API bodies' flat fields (the names that
    `CampaignSpec.problems` reports): a missing, None or empty value takes the
    policy's default. `pairwise`: a pairwise campaign (`pair_mode` and the other
    `PairPolicy` fields)."""

    def get(key: str, default=None):
        value = data.get(key)
        return default if value is None or value == "" else value

    pairs = None
    if pairwise:
        pairs = PairPolicy(
            mode=get("pair_mode", "all_pairs"),
            baseline_model=get("baseline_model"),
            sample=get("sample"),
            seed=get("seed", 0),
            categories=tuple(get("categories", ())),
        )
    return CampaignSpec(
        name=get("name", ""),
        dataset=data["dataset"],
        models=tuple(get("models", ())),
        skill_mode=get("skill_mode", Campaign.SkillMode.INSTRUCTION),
        skills=tuple(get("skills", ())),
        raters=tuple(get("raters", ())),
        serving=ServingPolicy(
            overlap=get("overlap", 1),
            overlap_percent=get("overlap_percent", 100),
            lock_ttl_minutes=get("lock_ttl_minutes", 30),
            rater_quota=get("rater_quota"),
        ),
        display=DisplayPolicy(
            show_reference=get("show_reference", True),
            show_model_names=get("show_model_names", False),
            guidelines=get("guidelines", ""),
        ),
        critique=CritiquePolicy(
            mode=get("critique", Campaign.Critique.OFF),
            min_length=get("critique_min_length", 0),
        ),
        gold=GoldPolicy(
            rate=get("gold_rate", 0), training_phase=get("training_phase", False)
        ),
        qualification=QualificationPolicy(
            size=get("qualification_size", 0),
            pass_mark=get("qualification_pass", 0.8),
            rule=get("qualification_rule", Campaign.QualificationRule.EXACT),
        ),
        pairs=pairs,
    )
