"""The agreement result as typed objects, all the way down: what
:func:`agreement_compute` returns and every reader (the dashboard, its CSV and
charts, the headline, the `agreement` command, the report) reads by attribute.

The JSON form (the API's body, ``agreement --format json``, the cache) is written
here only, by :meth:`AgreementResult.to_dict`, key for key and in the order the API
has always had; :meth:`AgreementResult.of` reads it back (``of(to_dict(r)) == r`` and
``to_dict(of(d)) == d``; tests/analysis/test_agreement_result.py). The statistics a
cell carries are those of :mod:`analysis.statistics`, by side: a :class:`Ceiling`
holds the raters' statistics, a :class:`JudgeCell` the judge's.

The parts only the charts read are typed too: a run's model means
(:class:`ModelMeans`), its scatter (:class:`ScatterPoint`), the model profiles of a
row (:class:`Profiles`) and the raters' own model means (:class:`ReferenceMean`).
A :class:`Row` is filled in step by step by the computation; every other class is
frozen. ``of`` is lenient: a part missing from the JSON (a hand-made result) reads
as empty.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from analysis import statistics


@dataclass(frozen=True)
class Stat:
    """One figure: its value (None when undefined), n, 95% interval, the reason it
    is undefined, and the bootstrap resamples where it was undefined."""

    value: float | None
    n: int
    ci: tuple[float, float] | None = None
    reason: str = ""
    n_undefined: int = 0

    @property
    def defined(self) -> bool:
        return self.value is not None

    @classmethod
    def from_result(cls, r) -> Stat:
        """An :class:`analysis.stats.results.Result` as a figure (its interval only
        when both ends are defined)."""
        ci = None
        if r.ci_low is not None and r.ci_high is not None:
            ci = (r.ci_low, r.ci_high)
        return cls(r.value, r.n, ci, r.reason, r.n_undefined)

    @classmethod
    def undefined(cls, reason: str) -> Stat:
        """A figure of no items, undefined for `reason`."""
        return cls(None, 0, None, reason, 0)

    def explained(self, reason: str) -> Stat:
        """The figure with `reason` as its reason when it is undefined."""
        return self if self.value is not None else replace(self, reason=reason)

    @classmethod
    def of(cls, d: dict) -> Stat:
        ci = d.get("ci")
        return cls(
            d.get("value"),
            d.get("n") or 0,
            (ci[0], ci[1]) if ci else None,
            d.get("reason", ""),
            d.get("n_undefined", 0),
        )

    def to_dict(self) -> dict:
        return {
            "value": self.value,
            "n": self.n,
            "ci": None if self.ci is None else list(self.ci),
            "reason": self.reason,
            "n_undefined": self.n_undefined,
        }


def _stat_or_none(d) -> Stat | None:
    return Stat.of(d) if isinstance(d, dict) else None


def _stats(d: dict, side: str, fixed: tuple[str, ...]) -> dict[str, Stat]:
    """The statistics of a cell's JSON: the registry's keys of `side` first, in its
    order, then any other figure-shaped entry that is not one of the `fixed` keys."""
    known = [k for k in statistics.keys(side) if k in d]
    other = [
        k
        for k, v in d.items()
        if k not in fixed and k not in known and isinstance(v, dict) and "value" in v
    ]
    return {k: Stat.of(v) for k, v in d.items() if k in known or k in other}


def _explained(stats: dict[str, Stat], reason: str) -> dict[str, Stat]:
    return {k: s.explained(reason) for k, s in stats.items()}


@dataclass(frozen=True)
class ReferenceMean:
    """The raters' mean score of one model on a row, over every item they scored
    (``row.human.models``: humans as the reference)."""

    model: str
    n: int
    mean: Stat

    @classmethod
    def of(cls, d: dict) -> ReferenceMean:
        return cls(d.get("model", ""), d.get("n") or 0, Stat.of(d.get("mean") or {}))

    def to_dict(self) -> dict:
        return {"model": self.model, "n": self.n, "mean": self.mean.to_dict()}


_CEILING_KEYS = ("item_set", "n_items", "n_items_multi_rated", "scores", "na", "models")


@dataclass(frozen=True)
class Ceiling:
    """The raters' figures on a row (``row.human``: their ceiling, on ``item_set``)
    or on the items one run shares with them (``judge.human``, no item set).
    ``models``: the raters' model means (humans as the reference; None otherwise)."""

    n_items: int
    n_items_multi_rated: int
    scores: int
    na: int
    stats: dict[str, Stat] = field(default_factory=dict)
    item_set: str | None = None
    models: tuple[ReferenceMean, ...] | None = None

    def stat(self, key: str) -> Stat | None:
        return self.stats.get(key)

    def explained(self, reason: str) -> Ceiling:
        """Every undefined figure with `reason` as its reason."""
        return replace(self, stats=_explained(self.stats, reason))

    @classmethod
    def of(cls, d: dict) -> Ceiling:
        models = d.get("models")
        return cls(
            d.get("n_items", 0),
            d.get("n_items_multi_rated", 0),
            d.get("scores", 0),
            d.get("na", 0),
            _stats(d, "raters", _CEILING_KEYS),
            d.get("item_set"),
            None if models is None else tuple(ReferenceMean.of(m) for m in models),
        )

    def to_dict(self) -> dict:
        out: dict[str, Any] = (
            {} if self.item_set is None else {"item_set": self.item_set}
        )
        out.update(
            n_items=self.n_items,
            n_items_multi_rated=self.n_items_multi_rated,
            scores=self.scores,
            na=self.na,
        )
        out.update({k: s.to_dict() for k, s in self.stats.items()})
        if self.models is not None:
            out["models"] = [m.to_dict() for m in self.models]
        return out


@dataclass(frozen=True)
class Flag:
    """Below the raters' ceiling: as one more rater, the judge lowers their alpha
    (``significant``: the change's 95% interval lies below 0)."""

    below_ceiling: bool = False
    significant: bool = False
    reason: str = ""

    @property
    def mark(self) -> str:
        """▼▼ significantly below, ▼ below, else ""."""
        return "▼▼" if self.significant else "▼" if self.below_ceiling else ""

    def to_dict(self) -> dict:
        return {
            "below_ceiling": self.below_ceiling,
            "significant": self.significant,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class ModelMean:
    """One model's mean on the items a run shares with the reference: the
    reference's (``human_mean``: the mean of each item's raters' mean) and the
    judge's, over its ``n`` items."""

    model: str
    n: int
    human_mean: Stat
    judge_mean: Stat

    @classmethod
    def of(cls, d: dict) -> ModelMean:
        return cls(
            d.get("model", ""),
            d.get("n") or 0,
            Stat.of(d.get("human_mean") or {}),
            Stat.of(d.get("judge_mean") or {}),
        )

    def explained(self, reason: str) -> ModelMean:
        return replace(
            self,
            human_mean=self.human_mean.explained(reason),
            judge_mean=self.judge_mean.explained(reason),
        )

    def to_dict(self) -> dict:
        return {
            "model": self.model,
            "n": self.n,
            "human_mean": self.human_mean.to_dict(),
            "judge_mean": self.judge_mean.to_dict(),
        }


@dataclass(frozen=True)
class ModelMeans:
    """A run's model means on a row (``judge.models``) and how well it orders the
    models like the reference (``spearman``, ``kendall``: None when not computed)."""

    models: tuple[ModelMean, ...] = ()
    spearman: Stat | None = None
    kendall: Stat | None = None

    def by_model(self) -> dict[str, ModelMean]:
        return {m.model: m for m in self.models}

    @classmethod
    def of(cls, d: dict) -> ModelMeans:
        return cls(
            tuple(
                ModelMean.of(m) for m in d.get("models") or [] if isinstance(m, dict)
            ),
            _stat_or_none(d.get("spearman")),
            _stat_or_none(d.get("kendall")),
        )

    def explained(self, reason: str) -> ModelMeans:
        return ModelMeans(
            tuple(m.explained(reason) for m in self.models),
            None if self.spearman is None else self.spearman.explained(reason),
            None if self.kendall is None else self.kendall.explained(reason),
        )

    def to_dict(self) -> dict:
        out: dict[str, Any] = {"models": [m.to_dict() for m in self.models]}
        for key in ("spearman", "kendall"):
            stat = getattr(self, key)
            if stat is not None:
                out[key] = stat.to_dict()
        return out


@dataclass(frozen=True)
class ScatterPoint:
    """A point of a run's scatter: a distinct (reference mean, judge score) and the
    number of items on it. JSON: ``[mean, score, n]``."""

    mean: float
    score: int
    n: int

    @classmethod
    def of(cls, p) -> ScatterPoint:
        return cls(p[0], p[1], p[2])

    def to_list(self) -> list:
        return [self.mean, self.score, self.n]


_JUDGE_KEYS = ("counts", "confusion", "flag", "human", "models", "scatter")


@dataclass(frozen=True)
class JudgeCell:
    """One run's figures on one row: item counts (``analysis.stats.report.
    COUNT_KEYS``), its statistics, the confusion table (rows the judge's value,
    columns the reference's rounded median), the flag, the raters' figures on its
    items, its model means and its scatter."""

    counts: dict[str, int]
    stats: dict[str, Stat]
    confusion: tuple[tuple[int, ...], ...]
    flag: Flag
    human: Ceiling
    models: ModelMeans
    scatter: tuple[ScatterPoint, ...]

    def stat(self, key: str) -> Stat | None:
        return self.stats.get(key)

    @property
    def scored_by_both(self) -> int:
        return int(self.counts.get("scored_by_both") or 0)

    @property
    def items(self) -> int:
        return int(self.counts.get("items") or 0)

    def explained(self, reason: str) -> JudgeCell:
        """Every undefined figure (and the flag) with `reason` as its reason."""
        return replace(
            self,
            stats=_explained(self.stats, reason),
            flag=replace(self.flag, reason=reason),
            human=self.human.explained(reason),
            models=self.models.explained(reason),
        )

    @classmethod
    def of(cls, d: dict) -> JudgeCell:
        return cls(
            dict(d.get("counts") or {}),
            _stats(d, "judge", _JUDGE_KEYS),
            tuple(tuple(line) for line in d.get("confusion") or []),
            Flag(**(d.get("flag") or {})),
            Ceiling.of(d.get("human") or {}),
            ModelMeans.of(d.get("models") or {}),
            tuple(ScatterPoint.of(p) for p in d.get("scatter") or []),
        )

    def to_dict(self) -> dict:
        return {
            "counts": self.counts,
            **{k: s.to_dict() for k, s in self.stats.items()},
            "confusion": [list(line) for line in self.confusion],
            "flag": self.flag.to_dict(),
            "human": self.human.to_dict(),
            "models": self.models.to_dict(),
            "scatter": [p.to_list() for p in self.scatter],
        }


@dataclass(frozen=True)
class RowScale:
    """A row's scale: the criterion's (``values``, ``low``, ``high``), or for an
    ability or overall that of its criteria; ``mixed`` when they differ (then
    ``scales`` lists their labels and there are no values)."""

    mixed: bool
    label: str
    values: tuple[int, ...] = ()
    low: int | None = None
    high: int | None = None
    scales: tuple[str, ...] = ()

    @classmethod
    def of(cls, d: dict) -> RowScale:
        if d.get("mixed"):
            return cls(True, d.get("label", ""), scales=tuple(d.get("scales") or ()))
        return cls(
            False,
            d.get("label", ""),
            tuple(d.get("values") or ()),
            d.get("low"),
            d.get("high"),
        )

    def to_dict(self) -> dict:
        if self.mixed:
            return {"mixed": True, "label": self.label, "scales": list(self.scales)}
        return {
            "mixed": False,
            "values": list(self.values),
            "low": self.low,
            "high": self.high,
            "label": self.label,
        }


@dataclass(frozen=True)
class ProfileEntry:
    """One model's mean on a row under the reference and under each run (by run id
    as a string), on one item set; ``n``: the shared items' count (the "shared"
    view only, where every source has the same n)."""

    model: str
    reference: Stat
    judges: dict[str, Stat]
    n: int | None = None

    @classmethod
    def of(cls, d: dict) -> ProfileEntry:
        return cls(
            d.get("model", ""),
            Stat.of(d.get("reference") or {}),
            {rid: Stat.of(s) for rid, s in (d.get("judges") or {}).items()},
            d.get("n"),
        )

    def to_dict(self) -> dict:
        out: dict[str, Any] = {
            "model": self.model,
            "reference": self.reference.to_dict(),
            "judges": {rid: s.to_dict() for rid, s in self.judges.items()},
        }
        if self.n is not None:
            out["n"] = self.n
        return out


@dataclass(frozen=True)
class Profiles:
    """The model profiles of a row (:mod:`analysis.selectors.agreement.profiles`),
    one entry per model in each item set: ``all`` (each source on every item it
    scored) and ``shared`` (the items every source scored)."""

    all: tuple[ProfileEntry, ...] = ()
    shared: tuple[ProfileEntry, ...] = ()

    def view(self, name: str) -> tuple[ProfileEntry, ...]:
        """The entries of item set `name` ("shared" or "all")."""
        return self.shared if name == "shared" else self.all

    @classmethod
    def of(cls, d: dict) -> Profiles:
        return cls(
            tuple(ProfileEntry.of(e) for e in d.get("all") or []),
            tuple(ProfileEntry.of(e) for e in d.get("shared") or []),
        )

    def to_dict(self) -> dict:
        return {
            "all": [e.to_dict() for e in self.all],
            "shared": [e.to_dict() for e in self.shared],
        }


@dataclass
class Row:
    """A row of the table: a skill, an ability (its skills pooled) or overall; its
    scale, the raters' ceiling, each run's cell (by run id as a string), the model
    profiles (on ``profiles_scale``: the row's scale label, or "normalised") and the
    note of a row without figures. Filled in step by step by the computation."""

    key: str
    level: str
    skill: str | None
    label: str
    ability: str | None
    scale: RowScale | None
    human: Ceiling
    judges: dict[str, JudgeCell] = field(default_factory=dict)
    profiles_scale: str | None = None
    profiles: Profiles | None = None
    note: str = ""

    def judge(self, run_id) -> JudgeCell | None:
        return self.judges.get(str(run_id))

    @classmethod
    def of(cls, d: dict) -> Row:
        return cls(
            d.get("key", ""),
            d.get("level", ""),
            d.get("skill"),
            d.get("label", ""),
            d.get("ability"),
            RowScale.of(d["scale"]) if d.get("scale") else None,
            Ceiling.of(d.get("human") or {}),
            {rid: JudgeCell.of(j) for rid, j in (d.get("judges") or {}).items()},
            d.get("profiles_scale"),
            Profiles.of(d["profiles"]) if d.get("profiles") is not None else None,
            d.get("note", ""),
        )

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "level": self.level,
            "skill": self.skill,
            "label": self.label,
            "ability": self.ability,
            "scale": self.scale.to_dict() if self.scale else {},
            "human": self.human.to_dict(),
            "judges": {rid: j.to_dict() for rid, j in self.judges.items()},
            "profiles_scale": self.profiles_scale,
            "profiles": None if self.profiles is None else self.profiles.to_dict(),
            "note": self.note,
        }


@dataclass(frozen=True)
class DatasetRef:
    id: int | None
    name: str

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name}


@dataclass(frozen=True)
class SliceRef:
    """The slice the figures are on (``dim`` "" for the whole dataset)."""

    dim: str
    value: str
    label: str

    def to_dict(self) -> dict:
        return {"dim": self.dim, "value": self.value, "label": self.label}


@dataclass(frozen=True)
class Reference:
    """What the runs are compared with: ``kind`` "humans", "run" (judge vs judge)
    or "retest"; ``humans``: the human reference (``HUMAN_REFERENCES``)."""

    kind: str
    label: str
    humans: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "label": self.label, "humans": self.humans}


@dataclass(frozen=True)
class CampaignRef:
    id: int
    name: str

    def to_dict(self) -> dict:
        return {"id": self.id, "name": self.name}


@dataclass(frozen=True)
class RunRef:
    id: int
    label: str

    def to_dict(self) -> dict:
        return {"id": self.id, "label": self.label}


@dataclass(frozen=True)
class Defaults:
    """Which sources were the defaults (``campaigns``, ``runs``) and their rule."""

    campaigns: bool
    runs: bool
    rule: str

    def to_dict(self) -> dict:
        return {"campaigns": self.campaigns, "runs": self.runs, "rule": self.rule}


def _part(cls, d, **empty):
    """A top-level part from its JSON (`empty`'s values for a missing key)."""
    d = d or {}
    return cls(**{f: d.get(f, empty.get(f)) for f in cls.__dataclass_fields__})


_FIXED = (
    "dataset",
    "n_boot",
    "seed",
    "slice",
    "reference",
    "campaigns",
    "runs",
    "exclusions",
    "defaults",
    "models",
    "rows",
)


@dataclass(frozen=True)
class AgreementResult:
    """Everything :func:`agreement_compute` returns: the parameters and sources
    (dataset, bootstrap, slice, reference, campaigns, runs, the raters left out as
    ``annotation.selectors.exclusions.exclusions_note`` gives them, the defaults
    used, the evaluated models) and the rows. ``extra``: parts added after the
    computation (the API's and the command's ``categorical``), written last."""

    dataset: DatasetRef
    n_boot: int
    seed: int
    slice: SliceRef
    reference: Reference
    campaigns: tuple[CampaignRef, ...]
    runs: tuple[RunRef, ...]
    exclusions: list[dict]
    defaults: Defaults
    models: tuple[str, ...]
    rows: list[Row]
    extra: dict = field(default_factory=dict)

    @classmethod
    def of(cls, d: dict) -> AgreementResult:
        """The typed form of a result's JSON (:meth:`to_dict`)."""
        return cls(
            dataset=_part(DatasetRef, d.get("dataset"), name=""),
            n_boot=d.get("n_boot", 0),
            seed=d.get("seed", 0),
            slice=_part(SliceRef, d.get("slice"), dim="", value="", label=""),
            reference=_part(
                Reference, d.get("reference"), kind="", label="", humans=""
            ),
            campaigns=tuple(_part(CampaignRef, c) for c in d.get("campaigns") or []),
            runs=tuple(_part(RunRef, r, label="") for r in d.get("runs") or []),
            exclusions=d.get("exclusions") or [],
            defaults=_part(
                Defaults, d.get("defaults"), campaigns=False, runs=False, rule=""
            ),
            models=tuple(d.get("models") or ()),
            rows=[Row.of(r) for r in d.get("rows") or []],
            extra={k: v for k, v in d.items() if k not in _FIXED},
        )

    def to_dict(self) -> dict:
        """The JSON form: the API's body and ``agreement --format json``."""
        return {
            "dataset": self.dataset.to_dict(),
            "n_boot": self.n_boot,
            "seed": self.seed,
            "slice": self.slice.to_dict(),
            "reference": self.reference.to_dict(),
            "campaigns": [c.to_dict() for c in self.campaigns],
            "runs": [r.to_dict() for r in self.runs],
            "exclusions": self.exclusions,
            "defaults": self.defaults.to_dict(),
            "models": list(self.models),
            "rows": [r.to_dict() for r in self.rows],
            **self.extra,
        }

    def with_extra(self, **parts) -> AgreementResult:
        """The result with `parts` added (written after the rows in the JSON)."""
        return replace(self, extra={**self.extra, **parts})

    @property
    def run_labels(self) -> list[tuple[str, str]]:
        """(run id as a string, label) of the compared runs, in order."""
        return [(str(r.id), r.label or f"run {r.id}") for r in self.runs]

    @property
    def reference_label(self) -> str:
        return self.reference.label or "Humans"

    def row(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.key == key), None)
