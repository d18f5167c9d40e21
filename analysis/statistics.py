"""The one registry of agreement statistics: what each is called, how it is shown,
when it is undefined, what it means, and the function computing it.

Every place that lists agreement statistics reads :data:`REGISTRY`, in its order:
the computation (``analysis.stats.report`` and ``analysis.stats.agreement`` call
each entry's ``compute``), the result's keys and their order
(``analysis.selectors.agreement.rows``), the dashboard's full table and its CSV
(``analysis.display``), the headline and compact table (``analysis.headline``), the
``agreement`` command's table, the report's LaTeX table
(``analysis.exports.report``) and the glossary (``analysis.glossary``). Adding a
statistic is one function plus one entry here.

A statistic belongs to a ``side``: ``"raters"`` (among the reference raters, in
``row.human`` and ``row.judge(run).human`` of the agreement result) or ``"judge"``
(the judge against the reference, in ``row.judge(run)``). A key is unique within its side (the raters'
``exact`` and the judge's ``exact`` are two statistics).

``compute(t)`` takes the group's :class:`analysis.stats.agreement.Tables` (weight
rows over cells: row 0 the sample, rows 1.. the bootstrap resamples) and returns
one value per row, NaN where undefined. ``inputs`` says what it needs: ``"pairs"``
(the judge's score and the reference's mean and rounded median per item: it is
computed for judge-vs-human pairs and paired comparisons too) or ``"ratings"``
(every rater's scores). ``count`` names the n its result carries: ``"items"``
(items both sides scored), ``"multi_rated"`` (items with 2+ rater scores),
``"rater_pairs"`` (pairs of raters within an item).

Pure Python and numpy: ``analysis.stats`` imports this module, so it imports
nothing of ours.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

SIDES = ("raters", "judge")
FORMATS = ("corr", "share", "signed")  # the `stat` template filter's kinds
BETTER = ("higher", "lower", "zero")
# Where a statistic is shown besides the result, its CSV and the glossary (which
# show every statistic): the dashboard's full table, the `agreement` command's
# table, the report's LaTeX table, the headline (exactly one statistic).
PLACES = ("table", "command", "report", "headline")
COUNTS = ("items", "multi_rated", "rater_pairs")


@dataclass(frozen=True, kw_only=True)
class Statistic:
    """One agreement statistic (see the module docstring for the fields' rules).

    label: the column's heading on a page ("Spearman ρ"); abbreviation: its short
    heading ("ρ"); short: its name in plain-text tables (the command's heading, the
    report's with a capital: "Spearman", "exact"); format: how a value is shown
    (:data:`FORMATS`); better: which values are better (:data:`BETTER`; "zero" for
    a bias); undefined_when: why it can be undefined (a Result's reason after "not
    enough data: "); glossary: one or two plain sentences for the glossary.
    """

    key: str
    side: str
    label: str
    abbreviation: str
    short: str
    format: str
    better: str
    undefined_when: str
    glossary: str
    compute: Callable[..., np.ndarray] = field(compare=False)
    inputs: str = "pairs"
    count: str = "items"
    places: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        checks = (
            ("side", self.side, SIDES),
            ("format", self.format, FORMATS),
            ("better", self.better, BETTER),
            ("inputs", self.inputs, ("pairs", "ratings")),
            ("count", self.count, COUNTS),
        )
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{self.key}: {name} {value!r} not in {allowed}")
        if not set(self.places) <= set(PLACES):
            raise ValueError(
                f"{self.key}: places {sorted(self.places)} not in {PLACES}"
            )


# --- The functions: each takes the group's Tables (analysis.stats.agreement) ---------


def pearson(t) -> np.ndarray:
    return t.correlations["pearson"]


def spearman(t) -> np.ndarray:
    return t.correlations["spearman"]


def kendall(t) -> np.ndarray:
    return t.correlations["kendall"]


def qwk(t) -> np.ndarray:
    return t.qwk


def exact(t) -> np.ndarray:
    return t.share(t.judge == t.hround)


def within1(t) -> np.ndarray:
    return t.share(np.abs(t.judge - t.hround) <= 1)


def leniency(t) -> np.ndarray:
    return t.mean_of(t.judge - t.hmean)


def mae(t) -> np.ndarray:
    return t.mean_of(np.abs(t.judge - t.hmean))


def alpha_ordinal(t) -> np.ndarray:
    return t.alpha("ordinal")


def alpha_interval(t) -> np.ndarray:
    return t.alpha("interval")


def raters_exact(t) -> np.ndarray:
    return t.pair_share("exact")


def raters_within1(t) -> np.ndarray:
    return t.pair_share("within1")


def alpha_ordinal_with_judge(t) -> np.ndarray:
    return t.alpha_with_judge("ordinal")


def alpha_interval_with_judge(t) -> np.ndarray:
    return t.alpha_with_judge("interval")


def alpha_ordinal_gain(t) -> np.ndarray:
    return t.alpha_with_judge("ordinal") - t.alpha("ordinal")


def alpha_interval_gain(t) -> np.ndarray:
    return t.alpha_with_judge("interval") - t.alpha("interval")


# --- The registry ---------------------------------------------------------------------

_CORRELATION_WHY = "fewer than 2 items or a constant side"
_ALPHA_WHY = "needs items with 2+ human scores and 2+ distinct values"
_GAIN_WHY = "alpha undefined with or without the judge"

REGISTRY: list[Statistic] = [
    Statistic(
        key="alpha_ordinal",
        side="raters",
        label="Krippendorff's α (ordinal) among raters",
        abbreviation="α",
        short="ceiling alpha",
        format="corr",
        better="higher",
        undefined_when=_ALPHA_WHY,
        glossary="How much the raters agree with each other beyond chance, counting a "
        "near miss as a small disagreement: 1 is perfect, 0 is chance. The "
        "ceiling a judge is compared with.",
        compute=alpha_ordinal,
        inputs="ratings",
        count="multi_rated",
    ),
    Statistic(
        key="alpha_interval",
        side="raters",
        label="Krippendorff's α (interval) among raters",
        abbreviation="α int.",
        short="alpha interval",
        format="corr",
        better="higher",
        undefined_when=_ALPHA_WHY,
        glossary="The raters' agreement beyond chance with disagreements weighed by the "
        "squared distance between the scores.",
        compute=alpha_interval,
        inputs="ratings",
        count="multi_rated",
    ),
    Statistic(
        key="exact",
        side="raters",
        label="Raters' exact agreement",
        abbreviation="raters exact",
        short="raters exact",
        format="share",
        better="higher",
        undefined_when="no rater pairs",
        glossary="Share of pairs of raters on the same item who gave the same score.",
        compute=raters_exact,
        inputs="ratings",
        count="rater_pairs",
    ),
    Statistic(
        key="within1",
        side="raters",
        label="Raters within one point",
        abbreviation="raters ±1",
        short="raters within1",
        format="share",
        better="higher",
        undefined_when="no rater pairs",
        glossary="Share of pairs of raters on the same item whose scores differ by at most "
        "one point.",
        compute=raters_within1,
        inputs="ratings",
        count="rater_pairs",
    ),
    Statistic(
        key="pearson",
        side="judge",
        label="Pearson r",
        abbreviation="r",
        short="Pearson",
        format="corr",
        better="higher",
        undefined_when=_CORRELATION_WHY,
        glossary="Linear correlation of the judge's score with the raters' mean score.",
        compute=pearson,
    ),
    Statistic(
        key="spearman",
        side="judge",
        label="Spearman ρ",
        abbreviation="ρ",
        short="Spearman",
        format="corr",
        better="higher",
        undefined_when=_CORRELATION_WHY,
        glossary="Rank correlation of the judge's score with the raters' mean score: 1 when "
        "the judge orders the items as the raters do.",
        compute=spearman,
        places=frozenset({"table", "command", "report"}),
    ),
    Statistic(
        key="kendall",
        side="judge",
        label="Kendall τ-b",
        abbreviation="τ",
        short="Kendall",
        format="corr",
        better="higher",
        undefined_when=_CORRELATION_WHY,
        glossary="Share of item pairs the judge orders as the raters' mean does minus the "
        "share it orders the other way, ties accounted for.",
        compute=kendall,
        places=frozenset({"table", "command"}),
    ),
    Statistic(
        key="qwk",
        side="judge",
        label="Quadratic-weighted κ",
        abbreviation="QWK",
        short="QWK",
        format="corr",
        better="higher",
        undefined_when="no expected disagreement (one shared category)",
        glossary="Agreement of the judge's score with the raters' median (rounded half up) "
        "beyond chance, a miss weighed by its squared distance: 1 is perfect, 0 is "
        "chance.",
        compute=qwk,
        places=frozenset({"table", "command", "report", "headline"}),
    ),
    Statistic(
        key="exact",
        side="judge",
        label="Exact agreement",
        abbreviation="exact",
        short="exact",
        format="share",
        better="higher",
        undefined_when="no items",
        glossary="Share of items where the judge's score equals the raters' median, rounded "
        "half up.",
        compute=exact,
        places=frozenset({"table", "command", "report"}),
    ),
    Statistic(
        key="within1",
        side="judge",
        label="Within one point",
        abbreviation="±1",
        short="within1",
        format="share",
        better="higher",
        undefined_when="no items",
        glossary="Share of items where the judge's score is at most one point from the "
        "raters' rounded median.",
        compute=within1,
        places=frozenset({"table"}),
    ),
    Statistic(
        key="leniency",
        side="judge",
        label="Leniency (judge minus humans)",
        abbreviation="leniency",
        short="leniency",
        format="signed",
        better="zero",
        undefined_when="no items",
        glossary="Mean of the judge's score minus the raters' mean: above 0 the judge is "
        "more lenient than the raters, below 0 stricter.",
        compute=leniency,
        places=frozenset({"table", "command"}),
    ),
    Statistic(
        key="mae",
        side="judge",
        label="Mean absolute difference",
        abbreviation="MAE",
        short="MAE",
        format="corr",
        better="lower",
        undefined_when="no items",
        glossary="Mean distance in points between the judge's score and the raters' mean.",
        compute=mae,
    ),
    Statistic(
        key="alpha_ordinal_with_judge",
        side="judge",
        label="α (ordinal) with the judge as one more rater",
        abbreviation="α with judge",
        short="alpha with judge",
        format="corr",
        better="higher",
        undefined_when=_ALPHA_WHY,
        glossary="The raters' ordinal α on the items the judge scored, with the judge "
        "counted as one more rater.",
        compute=alpha_ordinal_with_judge,
        inputs="ratings",
    ),
    Statistic(
        key="alpha_ordinal_gain",
        side="judge",
        label="α gain when the judge joins the raters",
        abbreviation="α gain",
        short="alpha gain",
        format="signed",
        better="higher",
        undefined_when=_GAIN_WHY,
        glossary="The ordinal α with the judge as one more rater minus the raters' α alone, "
        "on the same items: below 0 the judge agrees with the raters less than they "
        "agree with each other (below the ceiling).",
        compute=alpha_ordinal_gain,
        inputs="ratings",
        places=frozenset({"table"}),
    ),
    Statistic(
        key="alpha_interval_with_judge",
        side="judge",
        label="α (interval) with the judge as one more rater",
        abbreviation="α int. with judge",
        short="alpha interval with judge",
        format="corr",
        better="higher",
        undefined_when=_ALPHA_WHY,
        glossary="The raters' interval α on the items the judge scored, with the judge "
        "counted as one more rater.",
        compute=alpha_interval_with_judge,
        inputs="ratings",
    ),
    Statistic(
        key="alpha_interval_gain",
        side="judge",
        label="α (interval) gain when the judge joins the raters",
        abbreviation="α int. gain",
        short="alpha interval gain",
        format="signed",
        better="higher",
        undefined_when=_GAIN_WHY,
        glossary="The interval α with the judge as one more rater minus the raters' "
        "interval α alone, on the same items.",
        compute=alpha_interval_gain,
        inputs="ratings",
    ),
]


def of_side(side: str) -> list[Statistic]:
    """The statistics of `side` ("raters" or "judge"), in registry order."""
    if side not in SIDES:
        raise ValueError(f"side {side!r} not in {SIDES}")
    return [s for s in REGISTRY if s.side == side]


def keys(side: str) -> tuple[str, ...]:
    """The keys of `side`'s statistics: the result's keys, in their order."""
    return tuple(s.key for s in of_side(side))


def shown_in(place: str) -> list[Statistic]:
    """The statistics shown in `place` (:data:`PLACES`), in registry order."""
    if place not in PLACES:
        raise ValueError(f"place {place!r} not in {PLACES}")
    return [s for s in REGISTRY if place in s.places]


def from_pairs() -> list[Statistic]:
    """The judge statistics computed from (judge, human mean, rounded median)
    pairs alone (judge-vs-human pairs, paired comparisons of two runs)."""
    return [s for s in of_side("judge") if s.inputs == "pairs"]


def get(key: str, side: str = "judge") -> Statistic:
    """The statistic `key` of `side`; KeyError when there is none."""
    for s in REGISTRY:
        if s.key == key and s.side == side:
            return s
    raise KeyError(f"no {side} statistic {key!r}")


def headline() -> Statistic:
    """The one statistic of the headline and the compact table."""
    (stat,) = shown_in("headline")
    return stat


def signature() -> list[str]:
    """Side and key of every statistic, for cache keys: a result cached before a
    statistic was added or removed is not served after."""
    return [f"{s.side}:{s.key}" for s in REGISTRY]


def register(stat: Statistic) -> Statistic:
    """Add `stat` at the end of the registry (ValueError if its side already has
    its key). For plug-ins and tests; :func:`unregister` removes it."""
    if any(s.key == stat.key and s.side == stat.side for s in REGISTRY):
        raise ValueError(f"{stat.side} statistic {stat.key!r} is registered already")
    REGISTRY.append(stat)
    return stat


def unregister(key: str, side: str = "judge") -> None:
    """Remove the statistic `key` of `side` (KeyError when there is none)."""
    REGISTRY.remove(get(key, side))


def iter_glossary() -> Iterator[Statistic]:
    """Every statistic once, as the glossary lists them: raters first, then judge."""
    for side in SIDES:
        yield from of_side(side)
