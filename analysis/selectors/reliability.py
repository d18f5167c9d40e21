"""Rater reliability: how each rater of a pointwise campaign scores, next to the others.

Inputs: the campaign's submitted real assignments (gold items apart: they come in as
gold accuracy) and their scores; N/A scores are left out of every agreement figure.

Per rater, overall and per criterion:

* items rated, median active seconds (the browser's measure; served-to-submitted
  time where none was reported);
* gold accuracy with its Wilson interval (`annotation.selectors.campaign_gold_accuracy`);
* agreement with the leave-one-out consensus on shared items: for each of the rater's
  scores of a (response, criterion) that other raters scored too, the consensus is
  the mean of the others' scores. `exact`: the score equals the consensus rounded
  half up; `within1`: |score - consensus| <= 1; Spearman's rho between scores and
  consensus (scipy); QWK between the score and the rounded consensus on the
  criterion's scale (`analysis.stats.kappa.quadratic_kappa`, scikit-learn's
  `cohen_kappa_score(..., weights="quadratic", labels=scale)`); `severity`: mean(score - consensus), negative for a
  harsh rater. Categorical criteria count `exact` only (the consensus is the others'
  most frequent label, ties broken by label order);
* straight-lining: the share of the rater's items with 3 or more criteria scored
  where every score is the same;
* speed: items with less active time than the campaign's threshold
  (`Campaign.speed_threshold_seconds`, or by default a quarter of the campaign's
  median);
* drift: exact agreement and severity in each quarter of the rater's own items in
  the order they were submitted (first vs last quarter).

`rater_flags` holds every rule that flags a rater, with its reason; nothing else does.
Results are cached under a fingerprint of the campaign's scores, gold items and
exclusions (`analysis.selectors.agreement.cache`), so a cached page is never stale.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field

import numpy as np
from django.core.cache import cache
from django.db import connection

from analysis.selectors.agreement.cache import (
    CACHE_SECONDS,
    cache_key,
    inputs_fingerprint,
)
from analysis.selectors.agreement.inputs import fetch, quoted_table
from analysis.stats.correlations import spearman
from analysis.stats.kappa import quadratic_kappa
from analysis.stats.proportions import two_proportion_z_test
from analysis.stats.raters import leave_one_out, leave_one_out_mode, round_half_up
from annotation import selectors as annotation_selectors
from annotation.models import (
    Assignment,
    Campaign,
    GoldItem,
    HumanScore,
    RaterExclusion,
    Skill,
)
from annotation.scales import scale_of
from flaskapp import roles

RELIABILITY_VERSION = "reliability-v2"
STRAIGHT_MIN_CRITERIA = 3
QUARTERS = 4
DEFAULT_SPEED_SHARE = 0.25  # the default threshold: this share of the median time


# The rules, with the least evidence each needs (counts) so that a rater with a
# handful of items is not flagged by chance.
MIN_SHARED = 20  # scores with a consensus, for agreement and severity flags
MIN_ITEMS = 10  # items, for straight-lining and speed flags
MIN_QUARTER = 5  # scores with a consensus in each of the first and last quarters
LOW_QWK = 0.2
HIGH_SEVERITY = 0.75
STRAIGHT_SHARE = 0.5
FAST_SHARE = 0.25
DRIFT_DROP = 0.2
DRIFT_ALPHA = 0.05  # and the drop significant (two-proportion z-test)
GOLD_CEILING = 0.6  # the upper end of the gold interval below this


@dataclass
class Agreement:
    n: int = 0  # the rater's scores with a consensus
    exact: float | None = None
    within1: float | None = None
    spearman: float | None = None
    qwk: float | None = None
    severity: float | None = None


@dataclass
class Quarter:
    items: int
    n: int
    exact: float | None
    severity: float | None


@dataclass
class RaterReliability:
    rater_id: int
    username: str
    items: int = 0
    scores: int = 0
    median_active_seconds: float | None = None
    gold_items: int = 0
    gold_accuracy: float | None = None
    gold_low: float | None = None
    gold_high: float | None = None
    overall: Agreement = field(default_factory=Agreement)
    criteria: dict[str, Agreement] = field(default_factory=dict)
    straight_items: int = 0  # items with >= 3 criteria scored
    straight: int = 0  # of them, every score the same
    fast: int = 0
    quarters: list[Quarter] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    excluded: bool = False
    paused: bool = False
    synthetic: bool = False  # a generated account's ratings, not a person's

    @property
    def straight_share(self) -> float | None:
        return self.straight / self.straight_items if self.straight_items else None

    @property
    def fast_share(self) -> float | None:
        return self.fast / self.items if self.items else None

    @property
    def drift_exact(self) -> float | None:
        q = self.quarters
        if len(q) < 2 or q[0].exact is None or q[-1].exact is None:
            return None
        return q[-1].exact - q[0].exact

    @property
    def drift_severity(self) -> float | None:
        q = self.quarters
        if len(q) < 2 or q[0].severity is None or q[-1].severity is None:
            return None
        return q[-1].severity - q[0].severity


@dataclass
class Reliability:
    campaign_id: int
    criteria: list[tuple[str, str]]  # (key, name) in rubric order
    raters: list[RaterReliability]
    speed_threshold: float | None  # seconds
    speed_threshold_default: bool
    scores: int
    seconds: float = 0.0  # computing time (not cached hits)


def rater_flags(r: RaterReliability) -> list[str]:
    """Every reason to look at this rater (empty: none). The one home of the rules."""
    out = []
    o = r.overall
    if r.gold_high is not None and r.gold_high < GOLD_CEILING:
        out.append(
            f"gold accuracy {r.gold_accuracy:.2f} (95% CI {r.gold_low:.2f}-"
            f"{r.gold_high:.2f}) is below {GOLD_CEILING}"
        )
    if o.n >= MIN_SHARED and o.qwk is not None and o.qwk < LOW_QWK:
        out.append(
            f"QWK {o.qwk:.2f} with the other raters' consensus is below {LOW_QWK}"
        )
    if (
        o.n >= MIN_SHARED
        and o.severity is not None
        and abs(o.severity) >= HIGH_SEVERITY
    ):
        side = "harsher" if o.severity < 0 else "more lenient"
        out.append(f"{side} than the others by {abs(o.severity):.2f} points on average")
    if r.straight_items >= MIN_ITEMS and (r.straight_share or 0) >= STRAIGHT_SHARE:
        out.append(
            f"the same score on every criterion in {r.straight} of "
            f"{r.straight_items} items"
        )
    if r.items >= MIN_ITEMS and (r.fast_share or 0) >= FAST_SHARE:
        out.append(f"{r.fast} of {r.items} items faster than the speed threshold")
    if (
        len(r.quarters) == QUARTERS
        and r.quarters[0].n >= MIN_QUARTER
        and r.quarters[-1].n >= MIN_QUARTER
        and r.drift_exact is not None
        and r.drift_exact <= -DRIFT_DROP
        and (p := _drift_p(r.quarters[0], r.quarters[-1])) < DRIFT_ALPHA
    ):
        out.append(
            f"exact agreement fell from {r.quarters[0].exact:.2f} (first quarter) to "
            f"{r.quarters[-1].exact:.2f} (last quarter; two-proportion z-test "
            f"p = {p:.3f})"
        )
    return out


def _drift_p(first: Quarter, last: Quarter) -> float:
    """The two-sided p-value that the first and last quarters' exact-agreement rates
    are equal (the two-proportion z-test with pooled variance), so that a few items
    cannot flag drift by chance; 1.0 when the test is undefined (both rates 0 or 1)."""
    right = (round(first.exact * first.n), round(last.exact * last.n))
    if sum(right) in (0, first.n + last.n):
        return 1.0
    return two_proportion_z_test(right[0], first.n, right[1], last.n)[1]


# --- the report ---------------------------------------------------------------------


def _fingerprint(campaign: Campaign) -> list:
    gold = GoldItem.objects.filter(dataset_id=campaign.dataset_id)
    exclusions = RaterExclusion.objects.filter(campaign=campaign)
    return [
        *inputs_fingerprint(campaign.dataset, [campaign.pk], []),
        str(gold.count()),
        str(max(gold.values_list("updated_at", flat=True), default="")),
        str(exclusions.count()),
        str(max(exclusions.values_list("updated_at", flat=True), default="")),
        campaign.speed_threshold_seconds,
        list(campaign.paused_raters or []),
    ]


def campaign_reliability(*, campaign: Campaign) -> Reliability:
    """The campaign's reliability report (module doc), from the cache when its inputs
    have not changed."""
    key = cache_key(
        {"v": RELIABILITY_VERSION, "campaign": campaign.pk}, _fingerprint(campaign)
    )
    found = cache.get(key)
    if found is not None:
        return found
    started = time.perf_counter()
    report = _compute(campaign)
    report.seconds = time.perf_counter() - started
    cache.set(key, report, CACHE_SECONDS)
    return report


def query_floats(sql: str, params: list, columns: int) -> np.ndarray:
    """The rows of a query of numbers as a float array (NULL: NaN), in the query's
    order. On PostgreSQL through ``COPY ... TO STDOUT (FORMAT binary)`` of the
    columns cast to float8, NULL made NaN, so every row is the same number of bytes
    and numpy reads the block in one pass (600,000 rows of four columns: 0.14 s,
    where pandas' CSV parser took 0.27 s); elsewhere with `fetch`."""
    if connection.vendor != "postgresql":
        rows = fetch(sql, params)
        return np.array(
            [[np.nan if v is None else v for v in row] for row in rows], float
        ).reshape(-1, columns)
    from psycopg import ClientCursor

    names = [f"c{i}" for i in range(columns)]
    # A subquery with ORDER BY is not pulled up: its Sort stays below this
    # projection, so the rows keep the query's order.
    floats = ", ".join(f"COALESCE({n}::float8, 'NaN'::float8)" for n in names)
    with connection.cursor() as cursor:
        raw = cursor.cursor
        query = ClientCursor(raw.connection).mogrify(sql, params)
        buffer = io.BytesIO()
        wrapped = f"SELECT {floats} FROM ({query}) AS q ({', '.join(names)})"
        with raw.copy(f"COPY ({wrapped}) TO STDOUT (FORMAT binary)") as copy:
            for block in copy:
                buffer.write(block)
    return copy_binary_floats(buffer.getvalue(), columns)


# PostgreSQL's binary COPY: an 11-byte signature, 32-bit flags and the length of a
# header extension; per row a 16-bit field count, then per field a 32-bit length
# and its bytes (8 for a float8), all big-endian; -1 as the field count ends it.
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"


def copy_binary_floats(data: bytes, columns: int) -> np.ndarray:
    """The (rows, columns) float array of a binary COPY whose every field is a
    non-NULL float8; ValueError when `data` is not that."""
    if data[:11] != _COPY_SIGNATURE:
        raise ValueError("data: not a PostgreSQL binary COPY")
    start = 19 + int.from_bytes(data[15:19], "big")
    body = data[start:-2]
    row = np.dtype(
        [("count", ">i2")]
        + [
            item
            for i in range(columns)
            for item in ((f"l{i}", ">i4"), (f"v{i}", ">f8"))
        ]
    )
    if data[-2:] != b"\xff\xff" or len(body) % row.itemsize:
        raise ValueError("data: rows are not all float8 fields")
    records = np.frombuffer(body, dtype=row)
    if (records["count"] != columns).any() or any(
        (records[f"l{i}"] != 8).any() for i in range(columns)
    ):
        raise ValueError("data: rows are not all float8 fields")
    out = np.empty((len(records), columns))
    for i in range(columns):
        out[:, i] = records[f"v{i}"]
    return out


def submitted_ratings(campaign: Campaign):
    """(assignments, scores): the campaign's submitted real assignments in submit
    order as (id, rater id, response id, seconds) and their scores as (assignment
    id, skill id, score or NaN). Seconds: the active time, else served-to-submitted."""
    a, h = quoted_table(Assignment), quoted_table(HumanScore)
    if connection.vendor == "postgresql":
        elapsed = "EXTRACT(EPOCH FROM (a.submitted_at - a.served_at))"
    else:
        elapsed = "(julianday(a.submitted_at) - julianday(a.served_at)) * 86400.0"
    where = "a.campaign_id = %s AND a.status = %s AND NOT a.gold"
    params = [campaign.pk, Assignment.Status.SUBMITTED]
    assignments = query_floats(
        f"SELECT a.id, a.rater_id, a.response_id, COALESCE(a.active_seconds, "
        f"{elapsed}) FROM {a} a WHERE {where} ORDER BY a.submitted_at, a.id",
        params,
        4,
    )
    scores = query_floats(
        f"SELECT hs.assignment_id, hs.skill_id, hs.score FROM {h} hs "
        f"JOIN {a} a ON a.id = hs.assignment_id WHERE {where}",
        params,
        3,
    )
    return assignments, scores


def _compute(campaign: Campaign) -> Reliability:
    from django.contrib.auth.models import User

    assignments, score_rows = submitted_ratings(campaign)
    skills = list(
        Skill.objects.filter(rubric_id=campaign.dataset.rubric_id).order_by("position")
    )
    scored_ids = set(np.unique(score_rows[:, 1]).astype(int).tolist())
    extra = scored_ids - {s.pk for s in skills}
    if extra:  # criteria of another rubric version the campaign's scores used
        skills += list(Skill.objects.filter(pk__in=extra).order_by("position"))
    skills = [s for s in skills if s.pk in scored_ids]
    scales = {s.pk: scale_of(s) for s in skills}

    a_ids = assignments[:, 0].astype(np.int64)
    rater_ids = np.unique(assignments[:, 1]).astype(np.int64).tolist()
    usernames = dict(
        User.objects.filter(pk__in=rater_ids).values_list("pk", "username")
    )
    # Generated ratings are said to be so wherever they are shown (roles.SYNTHETIC).
    synthetic = set(
        User.objects.filter(pk__in=rater_ids, groups__name=roles.SYNTHETIC).values_list(
            "pk", flat=True
        )
    )
    a_rater = np.searchsorted(rater_ids, assignments[:, 1].astype(np.int64))
    a_response = assignments[:, 2].astype(np.int64)
    seconds = assignments[:, 3]  # NaN: not timed

    # Score rows with a value (N/A left out) of a known criterion, as arrays.
    skill_ids = np.array(sorted(scales), np.int64)
    position = {s.pk: i for i, s in enumerate(skills)}
    skill_of_id = np.array([position[int(k)] for k in skill_ids], np.int64)
    kept_mask = ~np.isnan(score_rows[:, 2]) & np.isin(score_rows[:, 1], skill_ids)
    kept = score_rows[kept_mask]
    a_order = np.argsort(a_ids)
    s_assign = a_order[np.searchsorted(a_ids, kept[:, 0].astype(np.int64),
                                       sorter=a_order)]  # fmt: skip
    s_skill = skill_of_id[np.searchsorted(skill_ids, kept[:, 1].astype(np.int64))]
    s_value = kept[:, 2]
    s_rater = a_rater[s_assign]
    S, R = max(len(skills), 1), max(len(rater_ids), 1)
    groups = a_response[s_assign] * S + s_skill

    consensus = np.zeros(len(kept))
    has = np.zeros(len(kept), bool)
    for j, skill in enumerate(skills):
        rows = np.flatnonzero(s_skill == j)
        if not len(rows):
            continue
        scale = scales[skill.pk]
        g = np.unique(groups[rows], return_inverse=True)[1]
        if scale.is_ordinal:
            c, h = leave_one_out(g, s_value[rows])
        else:
            c, h = leave_one_out_mode(g, s_value[rows], len(scale.values))
        consensus[rows], has[rows] = c, h

    rounded = round_half_up(consensus)
    diff = s_value - consensus
    is_exact = s_value == rounded  # a label code's consensus is already whole
    ordinal = np.array([scales[s.pk].is_ordinal for s in skills], bool)
    s_ordinal = ordinal[s_skill] if len(kept) else np.zeros(0, bool)

    def agreement(rows: np.ndarray, labels=None) -> Agreement:
        rows = rows[has[rows]]
        if not len(rows):
            return Agreement()
        out = Agreement(n=len(rows), exact=float(is_exact[rows].mean()))
        o = rows[s_ordinal[rows]]
        if len(o):
            out.within1 = float((np.abs(diff[o]) <= 1).mean())
            out.severity = float(diff[o].mean())
            out.spearman = spearman(s_value[o], consensus[o])
            if labels is not None:
                out.qwk = quadratic_kappa(s_value[o], rounded[o], labels)
        return out

    # Pooled QWK over criteria of different scales: each criterion's rows mapped onto
    # the union of their values (every scale here is a range of integers).
    all_values = np.unique(np.concatenate([
        np.asarray(scales[s.pk].values, float) for s in skills if scales[s.pk].is_ordinal
    ])) if ordinal.any() else None  # fmt: skip

    order = np.argsort(s_rater, kind="stable")
    bounds = np.searchsorted(s_rater[order], np.arange(R + 1))
    per_rater_rows = [order[bounds[i] : bounds[i + 1]] for i in range(R)]

    golds = {
        g.rater_id: g for g in annotation_selectors.campaign_gold_accuracy(
            campaign=campaign)
    }  # fmt: skip
    excluded = set(
        RaterExclusion.objects.filter(
            campaign=campaign, kind=RaterExclusion.Kind.EXCLUDE, ended_at__isnull=True
        ).values_list("rater_id", flat=True)
    )
    paused = set(campaign.paused_raters or [])

    # Straight-lining: per assignment, scored criteria and distinct values.
    per_assign_n = np.bincount(s_assign, minlength=len(assignments))
    per_assign_min = np.full(len(assignments), np.inf)
    per_assign_max = np.full(len(assignments), -np.inf)
    if len(kept):
        np.minimum.at(per_assign_min, s_assign, s_value)
        np.maximum.at(per_assign_max, s_assign, s_value)
    candidates = per_assign_n >= STRAIGHT_MIN_CRITERIA
    straight = candidates & (per_assign_min == per_assign_max)

    timed = seconds[~np.isnan(seconds)]
    threshold = campaign.speed_threshold_seconds
    default_threshold = threshold is None
    if default_threshold:
        # No default threshold from a median of 0 s (items submitted without a
        # measured time): "less active time than 0 s" flags nothing and says nothing.
        median = float(np.median(timed)) if len(timed) else 0.0
        threshold = DEFAULT_SPEED_SHARE * median if median > 0 else None
    fast = (
        np.nan_to_num(seconds, nan=np.inf) < threshold
        if threshold is not None
        else np.zeros(len(seconds), bool)
    )

    # Each assignment's place among its rater's (assignments come in submit order).
    by_rater = np.argsort(a_rater, kind="stable")
    a_count = np.bincount(a_rater, minlength=R)
    first = np.concatenate([[0], np.cumsum(a_count)[:-1]])
    a_order_in_rater = np.empty(len(assignments), np.int64)
    a_order_in_rater[by_rater] = np.arange(len(assignments)) - first[a_rater[by_rater]]
    quarter_of_assign = (a_order_in_rater * QUARTERS) // np.maximum(a_count[a_rater], 1)
    mine_of = [by_rater[first[i] : first[i] + a_count[i]] for i in range(R)]

    raters = []
    for i, rid in enumerate(rater_ids):
        mine_a = mine_of[i]
        rows = per_rater_rows[i]
        gold = golds.get(rid)
        times = seconds[mine_a][~np.isnan(seconds[mine_a])]
        r = RaterReliability(
            rater_id=rid,
            username=usernames.get(rid, str(rid)),
            synthetic=rid in synthetic,
            items=len(mine_a),
            scores=len(rows),
            median_active_seconds=float(np.median(times)) if len(times) else None,
            gold_items=gold.items if gold else 0,
            gold_accuracy=gold.accuracy if gold else None,
            gold_low=gold.low if gold else None,
            gold_high=gold.high if gold else None,
            overall=agreement(rows, all_values),
            straight_items=int(candidates[mine_a].sum()),
            straight=int(straight[mine_a].sum()),
            fast=int(fast[mine_a].sum()),
            excluded=rid in excluded,
            paused=rid in paused,
        )
        for j, skill in enumerate(skills):
            scale = scales[skill.pk]
            labels = np.asarray(scale.values, float) if scale.is_ordinal else None
            r.criteria[skill.key] = agreement(rows[s_skill[rows] == j], labels)
        if len(mine_a) >= QUARTERS:
            row_quarter = quarter_of_assign[s_assign[rows]]
            for q in range(QUARTERS):
                qrows = rows[(row_quarter == q) & has[rows]]
                o = qrows[s_ordinal[qrows]]
                r.quarters.append(
                    Quarter(
                        items=int((quarter_of_assign[mine_a] == q).sum()),
                        n=len(qrows),
                        exact=float(is_exact[qrows].mean()) if len(qrows) else None,
                        severity=float(diff[o].mean()) if len(o) else None,
                    )
                )
        r.flags = rater_flags(r)
        raters.append(r)
    raters.sort(key=lambda r: r.username)
    return Reliability(
        campaign_id=campaign.pk,
        criteria=[(s.key, s.name) for s in skills],
        raters=raters,
        speed_threshold=threshold,
        speed_threshold_default=default_threshold,
        scores=len(kept),
    )


__all__ = [
    "Agreement",
    "Quarter",
    "RaterReliability",
    "Reliability",
    "campaign_reliability",
    "rater_flags",
    "reliability_dict",
]


def _agreement_dict(a: Agreement) -> dict:
    return {
        "n": a.n,
        "exact": a.exact,
        "within1": a.within1,
        "spearman": a.spearman,
        "qwk": a.qwk,
        "severity": a.severity,
    }


def reliability_dict(report: Reliability) -> dict:
    """The report as JSON-ready data (the API and the command print this)."""
    return {
        "campaign_id": report.campaign_id,
        "criteria": [{"key": k, "name": n} for k, n in report.criteria],
        "scores": report.scores,
        "speed_threshold_seconds": report.speed_threshold,
        "speed_threshold_default": report.speed_threshold_default,
        "raters": [
            {
                "rater_id": r.rater_id,
                "username": r.username,
                "items": r.items,
                "scores": r.scores,
                "median_active_seconds": r.median_active_seconds,
                "gold": {
                    "items": r.gold_items,
                    "accuracy": r.gold_accuracy,
                    "low": r.gold_low,
                    "high": r.gold_high,
                },
                "overall": _agreement_dict(r.overall),
                "criteria": {k: _agreement_dict(a) for k, a in r.criteria.items()},
                "straight_lining": {
                    "items": r.straight_items,
                    "same_everywhere": r.straight,
                    "share": r.straight_share,
                },
                "speed": {"fast": r.fast, "share": r.fast_share},
                "drift": {
                    "quarters": [
                        {
                            "items": q.items,
                            "n": q.n,
                            "exact": q.exact,
                            "severity": q.severity,
                        }
                        for q in r.quarters
                    ],
                    "exact_change": r.drift_exact,
                    "severity_change": r.drift_severity,
                },  # fmt: skip
                "flags": r.flags,
                "excluded": r.excluded,
                "paused": r.paused,
                "synthetic": r.synthetic,
            }
            for r in report.raters
        ],
    }
