"""The agreement result as typed objects: what the dashboard, its CSV, the headline,
the `agreement` command and the report read, instead of repeating the nested
dict's keys.

:func:`agreement_compute` returns (and caches) the JSON form the API and ``--format
json`` print; :meth:`AgreementResult.of` reads it into these dataclasses and
:meth:`AgreementResult.to_dict` writes it back, key for key and in the same order
(``to_dict(of(d)) == d``; tests/analysis/test_agreement_result.py).
``analysis.selectors.agreement.rows`` builds the figures, cells and ceilings with
these classes and writes them with ``to_dict``: the JSON's keys are written here
only. The statistics a
cell carries are those of :mod:`analysis.statistics`, by side: a :class:`Ceiling`
holds the raters' statistics, a :class:`JudgeCell` the judge's.

Parts only the charts read (the model means, the scatter, the model profiles) stay
in their JSON form here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

    @classmethod
    def of(cls, d: dict) -> Stat:
        ci = d.get("ci")
        return cls(
            d.get("value"),
            d.get("n") or 0,
            None if ci is None else (ci[0], ci[1]),
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


_CEILING_KEYS = ("item_set", "n_items", "n_items_multi_rated", "scores", "na", "models")


@dataclass
class Ceiling:
    """The raters' figures on a row (``row["human"]``: their ceiling, on
    ``item_set``) or on the items one run shares with them (``judge["human"]``, no
    item set). ``models``: the raters' model means (humans as the reference)."""

    n_items: int
    n_items_multi_rated: int
    scores: int
    na: int
    stats: dict[str, Stat] = field(default_factory=dict)
    item_set: str | None = None
    models: list | None = None

    def stat(self, key: str) -> Stat | None:
        return self.stats.get(key)

    @classmethod
    def of(cls, d: dict) -> Ceiling:
        return cls(
            d.get("n_items", 0),
            d.get("n_items_multi_rated", 0),
            d.get("scores", 0),
            d.get("na", 0),
            _stats(d, "raters", _CEILING_KEYS),
            d.get("item_set"),
            d.get("models"),
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
            out["models"] = self.models
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


_JUDGE_KEYS = ("counts", "confusion", "flag", "human", "models", "scatter")


@dataclass
class JudgeCell:
    """One run's figures on one row: item counts, its statistics, the confusion
    table, the flag, the raters' figures on its items; ``models`` and ``scatter``
    (JSON) for the charts."""

    counts: dict[str, int]
    stats: dict[str, Stat]
    confusion: list
    flag: Flag
    human: Ceiling
    models: dict
    scatter: list

    def stat(self, key: str) -> Stat | None:
        return self.stats.get(key)

    @property
    def scored_by_both(self) -> int:
        return int(self.counts.get("scored_by_both") or 0)

    @classmethod
    def of(cls, d: dict) -> JudgeCell:
        return cls(
            dict(d.get("counts") or {}),
            _stats(d, "judge", _JUDGE_KEYS),
            d.get("confusion") or [],
            Flag(**(d.get("flag") or {})),
            Ceiling.of(d.get("human") or {}),
            d.get("models") or {},
            d.get("scatter") or [],
        )

    def to_dict(self) -> dict:
        return {
            "counts": self.counts,
            **{k: s.to_dict() for k, s in self.stats.items()},
            "confusion": self.confusion,
            "flag": self.flag.to_dict(),
            "human": self.human.to_dict(),
            "models": self.models,
            "scatter": self.scatter,
        }


@dataclass
class Row:
    """A row of the table: a skill, an ability (its skills pooled) or overall; its
    scale, the raters' ceiling, each run's cell (by run id as a string), the model
    profiles (JSON) and the note of a row without figures."""

    key: str
    level: str
    skill: str | None
    label: str
    ability: str | None
    scale: dict
    human: Ceiling
    judges: dict[str, JudgeCell]
    profiles_scale: Any = None
    profiles: Any = None
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
            d.get("scale") or {},
            Ceiling.of(d.get("human") or {}),
            {rid: JudgeCell.of(j) for rid, j in (d.get("judges") or {}).items()},
            d.get("profiles_scale"),
            d.get("profiles"),
            d.get("note", ""),
        )

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "level": self.level,
            "skill": self.skill,
            "label": self.label,
            "ability": self.ability,
            "scale": self.scale,
            "human": self.human.to_dict(),
            "judges": {rid: j.to_dict() for rid, j in self.judges.items()},
            "profiles_scale": self.profiles_scale,
            "profiles": self.profiles,
            "note": self.note,
        }


@dataclass
class AgreementResult:
    """Everything :func:`agreement_compute` returns, typed; the parameters and
    sources (dataset, slice, reference, campaigns, runs, exclusions, defaults,
    models) as in the JSON."""

    dataset: dict
    n_boot: int
    seed: int
    slice: dict
    reference: dict
    campaigns: list
    runs: list
    exclusions: Any
    defaults: dict
    models: list
    rows: list[Row]
    extra: dict = field(default_factory=dict)  # keys added after the compute

    @classmethod
    def of(cls, result: dict | AgreementResult) -> AgreementResult:
        """The typed form of a result (a typed one as it is)."""
        if isinstance(result, AgreementResult):
            return result
        fixed = [f for f in cls.__dataclass_fields__ if f not in ("rows", "extra")]
        return cls(
            **{f: result.get(f) for f in fixed},
            rows=[Row.of(r) for r in result.get("rows") or []],
            extra={k: v for k, v in result.items() if k not in (*fixed, "rows")},
        )

    def to_dict(self) -> dict:
        fixed = [f for f in self.__dataclass_fields__ if f not in ("rows", "extra")]
        return {
            **{f: getattr(self, f) for f in fixed},
            "rows": [r.to_dict() for r in self.rows],
            **self.extra,
        }

    @property
    def run_labels(self) -> list[tuple[str, str]]:
        """(run id as a string, label) of the compared runs, in order."""
        return [
            (str(r["id"]), r.get("label") or f"run {r['id']}") for r in self.runs or []
        ]

    @property
    def reference_label(self) -> str:
        return (self.reference or {}).get("label") or "Humans"

    def row(self, key: str) -> Row | None:
        return next((r for r in self.rows if r.key == key), None)
