"""Bias probes of a judge: each returns a :class:`Probe` (value, count, CI, baseline).

Pairwise (verdicts in both orders, labels as in :mod:`analysis.stats.pairwise`):
:func:`order_probe`, :func:`length_probe`, :func:`self_preference_probe`,
:func:`cue_probe`. Pointwise (scores): :func:`pointwise_length_probe`,
:func:`score_inflation_probe`, :func:`halo_probe`. Definitions are in their
docstrings; every probe resamples its units (pairs, slots, items or responses) with
replacement over collapsed cells (:mod:`analysis.stats.bootstrap`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analysis.stats.bootstrap import (
    draw_cell_count_chunks,
    resample_cells,
    value_codes,
)
from analysis.stats.correlations import pearson_from_sums, pearson_w, spearman_sorted_w
from analysis.stats.pairwise import (
    EncodedPairs,
    check_len,
    check_numeric,
    encode_labels,
    vote_counts,
)
from analysis.stats.results import Result, ratio, ratio_result, result_from_rows


@dataclass(frozen=True)
class Probe:
    """One bias figure: value (Result with count and CI), the random baseline, details.

    ``baseline`` is what the value would be for a judge without the bias (a random
    or unaffected judge); ``details`` holds the component Results and counts (ints).
    """

    name: str
    value: Result
    baseline: float
    details: dict = field(default_factory=dict)


def _verdicts(verdict_ab, verdict_ba) -> tuple[np.ndarray, np.ndarray]:
    """Both orders' verdicts as codes, one per pair; ValueError names a bad one."""
    ab = encode_labels(verdict_ab, "verdict_ab", judge=True)
    ba = encode_labels(verdict_ba, "verdict_ba", judge=True)
    check_len("verdict_ba", ba, ab.size, "pair")
    return ab, ba


def _votes(vote_pair_index, vote_label, n_pairs: int) -> np.ndarray:
    """(n_pairs, 3) human votes from votes given by pair index and label."""
    vi = np.asarray(vote_pair_index, dtype=np.int64)
    if vi.size and (vi.min() < 0 or vi.max() >= n_pairs):
        raise ValueError("vote_pair_index must index the pair arrays")
    vl = encode_labels(vote_label, "vote_label", judge=False)
    check_len("vote_label", vl, vi.size, "vote")
    return vote_counts(vi, vl, n_pairs)


def order_probe(verdict_ab, verdict_ba, n_boot: int = 1000, seed: int = 0) -> Probe:
    """Order (position) bias from verdicts in both orders (mapped back), per pair.

    Among pairs with a usable verdict in both orders whose verdicts flip between the two
    positions (ab "1" / ba "2": the first-shown response won twice; ab "2" / ba "1": the
    second-shown won twice), value = share of first-position flips; baseline 0.5.
    Details: ``consistency``, ``first_position_share`` and ``second_position_share``
    (of all inconsistent pairs, tie-involved ones included), counts.
    """
    ab = encode_labels(verdict_ab, "verdict_ab", judge=True)
    ba = encode_labels(verdict_ba, "verdict_ba", judge=True)
    if ab.size != ba.size:
        raise ValueError("verdict_ab and verdict_ba must have the same length")
    return order_probe_codes(ab, ba, n_boot, seed)


def order_probe_codes(ab, ba, n_boot, seed) -> Probe:
    """:func:`order_probe` on verdicts already encoded (:func:`encode_labels`)."""
    cells = resample_cells([ab, ba], n_boot, seed)
    a, b = ab[cells.first], ba[cells.first]
    usable = (a < 3) & (b < 3)
    q = np.column_stack(
        [usable, usable & (a == b), (a == 0) & (b == 1), (a == 1) & (b == 0)]
    ).astype(float)
    s = cells.w @ q
    incons = s[:, 0] - s[:, 1]
    details = {
        "consistency": ratio_result(
            s[:, 1], s[:, 0], "no pair with usable verdicts in both orders"
        ),
        "first_position_share": ratio_result(s[:, 2], incons, "no inconsistent pair"),
        "second_position_share": ratio_result(s[:, 3], incons, "no inconsistent pair"),
        "usable_pairs": int(round(s[0, 0])),
        "inconsistent_pairs": int(round(incons[0])),
        "first_position_pairs": int(round(s[0, 2])),
        "second_position_pairs": int(round(s[0, 3])),
    }
    value = ratio_result(
        s[:, 2], s[:, 2] + s[:, 3], "no pair flipping between positions"
    )
    return Probe("order", value, 0.5, details)


def length_probe(
    verdict_ab,
    verdict_ba,
    length_1,
    length_2,
    vote_pair_index=None,
    vote_label=None,
    n_boot: int = 1000,
    seed: int = 0,
) -> Probe:
    """Length bias of pairwise verdicts.

    Among pairs with the same non-tie verdict in both orders (order-consistent) and
    responses of different length, value = P(the longer response wins); baseline 0.5.
    Details: ``deviation`` = |P - 0.5| (CI from the same resamples), ``human`` = share of
    non-tie human votes preferring the longer response over pairs of different length
    (``vote_pair_index``: index into the pair arrays; optional), counts incl.
    ``equal_length_pairs`` (dropped). A pair with only one order run is not used.
    """
    ab, ba = _verdicts(verdict_ab, verdict_ba)
    p = ab.size
    h = np.zeros((p, 3), dtype=np.int64)
    if vote_pair_index is not None:
        h = _votes(vote_pair_index, vote_label, p)
    enc = EncodedPairs(
        ab,
        ba,
        h,
        np.zeros(p, np.int64),
        [""],
        check_numeric("length_1", length_1, p, "pair"),
        check_numeric("length_2", length_2, p, "pair"),
        None,
        None,
    )
    return length_probe_encoded(enc, n_boot, seed)


def length_probe_encoded(enc: EncodedPairs, n_boot, seed) -> Probe:
    """:func:`length_probe` on encoded pairs (both lengths given)."""
    ab, ba, h = enc.ab, enc.ba, enc.h
    sign = np.sign(enc.length_1 - enc.length_2).astype(np.int64) + 1  # 0: 2 longer
    decisive = (ab == ba) & (ab < 2)
    winner = np.where(decisive, ab, 2)  # 0 "1", 1 "2", 2 none
    hv = [np.where(sign != 1, h[:, 0], 0), np.where(sign != 1, h[:, 1], 0)]  # equal: 0
    cells = resample_cells([sign, winner, hv[0], hv[1]], n_boot, seed)
    f = cells.first
    sg, wn = sign[f], winner[f]
    longer = np.where(sg == 2, 0, np.where(sg == 0, 1, -1))  # code of the longer one
    h0, h1 = hv[0][f], hv[1][f]
    q = np.column_stack(
        [
            (wn < 2) & (sg != 1),
            (wn < 2) & (wn == longer),
            (wn < 2) & (sg == 1),
            h0 + h1,
            np.where(longer == 0, h0, np.where(longer == 1, h1, 0)),
        ]
    ).astype(float)
    s = cells.w @ q
    why = "no order-consistent non-tie verdict on responses of different length"
    value = ratio_result(s[:, 1], s[:, 0], why)
    p_ = ratio(s[:, 1], s[:, 0])
    details = {
        "deviation": result_from_rows(np.abs(p_ - 0.5), int(round(s[0, 0])), why),
        "human": ratio_result(
            s[:, 4], s[:, 3], "no non-tie human vote on pairs of different length"
        ),
        "consistent_non_tie_pairs": int(round(s[0, 0] + s[0, 2])),
        "equal_length_pairs": int(round(s[0, 2])),
    }
    return Probe("length", value, 0.5, details)


def self_preference_probe(
    verdict_ab,
    verdict_ba,
    own_1,
    own_2,
    vote_pair_index,
    vote_label,
    n_boot: int = 1000,
    seed: int = 0,
) -> Probe:
    """Self-preference of a pairwise judge (own family = the judge's model family).

    Pairs where exactly one response is from the judge's family, with at least one
    usable judge verdict and one human vote. judge_rate = share of the judge's usable
    verdicts (each order one verdict) picking its own family's response, a tie = 0.5;
    human_rate = the same over the human votes on those pairs. value = judge_rate -
    human_rate, baseline 0 (judge_rate alone: baseline 0.5). Errors are not verdicts.
    """
    ab, ba = _verdicts(verdict_ab, verdict_ba)
    p = ab.size
    h = _votes(vote_pair_index, vote_label, p)
    o1 = check_len("own_1", own_1, p, "pair").astype(bool)
    o2 = check_len("own_2", own_2, p, "pair").astype(bool)
    enc = EncodedPairs(ab, ba, h, np.zeros(p, np.int64), [""], None, None, o1, o2)
    return self_preference_probe_encoded(enc, n_boot, seed)


def self_preference_probe_encoded(enc: EncodedPairs, n_boot, seed) -> Probe:
    """:func:`self_preference_probe` on encoded pairs (both own flags given)."""
    one = enc.own_1 != enc.own_2
    own = np.where(enc.own_1, 0, 1)  # code of the own-family response
    # per pair: judge usable verdicts, judge own points x2, human votes, human points x2
    jn = np.zeros(enc.ab.size)
    jp = np.zeros(enc.ab.size)
    for c in (enc.ab, enc.ba):
        jn += c < 3
        jp += np.where(c == own, 2, np.where(c == 2, 1, 0))
    hn = enc.h.sum(axis=1)
    hp = 2 * np.where(own == 0, enc.h[:, 0], enc.h[:, 1]) + enc.h[:, 2]
    use = one & (jn > 0) & (hn > 0)
    z = np.zeros_like
    cols = [np.where(use, x, z(x)).astype(np.int64) for x in (jn, jp, hn, hp)]
    cells = resample_cells(cols, n_boot, seed)
    s = cells.w @ np.column_stack([c[cells.first] for c in cols]).astype(float)
    why = "no pair with one own-family response, a usable verdict and a human vote"
    jr = ratio(s[:, 1] / 2, s[:, 0])
    hr = ratio(s[:, 3] / 2, s[:, 2])
    n_pairs = int(use.sum())
    details = {
        "judge_rate": result_from_rows(jr, int(round(s[0, 0])), why),
        "human_rate": result_from_rows(hr, int(round(s[0, 2])), why),
        "pairs": n_pairs,
        "own_family_pairs": int(one.sum()),
    }
    return Probe(
        "self_preference", result_from_rows(jr - hr, n_pairs, why), 0.0, details
    )


def score_inflation_probe(
    judge_score, human_score, own, n_boot: int = 1000, seed: int = 0
) -> Probe:
    """Pointwise self-preference: judge score inflation on its own family's responses.

    Items (e.g. (response, skill)) with a judge score and a human score (mean of the
    humans; NaN = missing, such items are dropped and counted). inflation = mean(judge -
    human); value = inflation on own-family items - inflation on the others; baseline 0.
    Items are resampled with replacement.
    """
    j = np.asarray(judge_score, dtype=float).ravel()
    n = j.size
    hm = check_len("human_score", np.asarray(human_score, dtype=float), n, "item")
    o = check_len("own", own, n, "item").astype(bool)
    keep = np.isfinite(j) & np.isfinite(hm)
    d = (j - hm)[keep]
    ok = o[keep].astype(np.int64)
    cells = resample_cells([ok, value_codes(d)[1]], n_boot, seed)
    f = cells.first
    q = np.column_stack([ok[f], ok[f] * d[f], 1 - ok[f], (1 - ok[f]) * d[f]])
    s = cells.w @ q
    why = "needs items from the judge's family and from others"
    io = ratio(s[:, 1], s[:, 0])
    ie = ratio(s[:, 3], s[:, 2])
    n_own, n_other = int(round(s[0, 0])), int(round(s[0, 2]))
    details = {
        "inflation_own": result_from_rows(io, n_own, "no own-family item"),
        "inflation_other": result_from_rows(ie, n_other, "no other item"),
        "dropped_missing": int((~keep).sum()),
    }
    return Probe(
        "score_inflation", result_from_rows(io - ie, n_own + n_other, why), 0.0, details
    )


def cue_probe(
    verdict_base,
    verdict_cued,
    cue_target,
    pair_id=None,
    n_boot: int = 1000,
    seed: int = 0,
    name: str = "bandwagon",
) -> Probe:
    """Bandwagon / attention: how often verdicts follow an injected cue.

    Parallel arrays, one entry per (pair, order) verdict slot: the verdict without the
    cue (base run), with the cue (probe run), both mapped back, and ``cue_target``
    ("1"/"2", the response the cue points at, original numbering). Slots with an
    error/absent verdict in either run are dropped (counted). follow_cued / follow_base
    = share of slots whose verdict equals the target with / without the cue; value =
    follow_cued - follow_base (baseline 0: the cue changes nothing). Details also give
    flip_toward = P(cued = target | base != target) and flip_away = P(cued != target |
    base = target). With ``pair_id`` the bootstrap resamples pairs (both orders of a pair
    together), otherwise slots.
    """
    base = encode_labels(verdict_base, "verdict_base", judge=True)
    n = base.size
    cued = encode_labels(verdict_cued, "verdict_cued", judge=True)
    check_len("verdict_cued", cued, n, "slot")
    tgt = encode_labels(cue_target, "cue_target", judge=True)
    check_len("cue_target", tgt, n, "slot")
    if (tgt > 1).any():
        i = int(np.flatnonzero(tgt > 1)[0])
        raise ValueError(f"cue_target[{i}] must be '1' or '2'")
    use = (base < 3) & (cued < 3)
    bf = use & (base == tgt)
    cf = use & (cued == tgt)
    cols = [use, bf, cf, bf & ~cf, ~bf & use & cf]
    q = np.column_stack(cols).astype(np.int64)
    if pair_id is not None:
        pid = check_len("pair_id", pair_id, n, "slot")
        _, inv = np.unique(pid, return_inverse=True)
        inv = inv.ravel()
        agg = np.zeros((inv.max() + 1 if n else 0, q.shape[1]), np.int64)
        np.add.at(agg, inv, q)
        q = agg
    cells = resample_cells(list(q.T), n_boot, seed)
    s = cells.w @ q[cells.first].astype(float)
    why = "no slot with usable verdicts with and without the cue"
    fc = ratio(s[:, 2], s[:, 0])
    fb = ratio(s[:, 1], s[:, 0])
    n_used = int(round(s[0, 0]))
    details = {
        "follow_cued": result_from_rows(fc, n_used, why),
        "follow_base": result_from_rows(fb, n_used, why),
        "flip_toward": ratio_result(
            s[:, 4], s[:, 0] - s[:, 1], "no base verdict away from the target"
        ),
        "flip_away": ratio_result(s[:, 3], s[:, 1], "no base verdict on the target"),
        "dropped_unusable": int(n - use.sum()),
    }
    return Probe(name, result_from_rows(fc - fb, n_used, why), 0.0, details)


def pointwise_length_probe(
    judge_score, human_score, length, n_boot: int = 1000, seed: int = 0
) -> Probe:
    """Pointwise length bias: Spearman(judge score, length) - Spearman(human, length).

    Items (e.g. responses with their overall judge score and human mean) with a judge
    score, a human score and the response length; items with a missing (NaN) score are
    dropped and counted, so both correlations use the same items. Baseline 0 (the judge
    follows length no more than the humans do). Details: ``judge_spearman``,
    ``human_spearman``. Items are resampled with replacement; the cost is O(n_boot x
    distinct (length, judge, human) cells), about 0.3 s per 10,000 items at 1,000
    resamples.
    """
    j = np.asarray(judge_score, dtype=float).ravel()
    n = j.size
    hm = check_len("human_score", np.asarray(human_score, dtype=float), n, "item")
    ln = check_numeric("length", length, n, "item")
    keep = np.isfinite(j) & np.isfinite(hm)
    j, hm, ln = j[keep], hm[keep], ln[keep]
    lc = value_codes(ln)[1]
    # length first in the key: the cells come out sorted by length
    cells = resample_cells([lc, value_codes(j)[1], value_codes(hm)[1]], 0, seed)
    f = cells.first
    ys = [value_codes(j[f])[1], value_codes(hm[f])[1]]
    parts = [spearman_sorted_w(cells.w[:1], lc[f], ys)]
    for w in draw_cell_count_chunks(cells.w[0], n_boot, seed):
        parts.append(spearman_sorted_w(w, lc[f], ys))
    rj = np.concatenate([p[0] for p in parts])
    rh = np.concatenate([p[1] for p in parts])
    why = "fewer than 2 items or a constant side"
    m = int(keep.sum())
    details = {
        "judge_spearman": result_from_rows(rj, m, why),
        "human_spearman": result_from_rows(rh, m, why),
        "dropped_missing": int((~keep).sum()),
    }
    return Probe("pointwise_length", result_from_rows(rj - rh, m, why), 0.0, details)


def halo_probe(judge_scores, human_scores, n_boot: int = 1000, seed: int = 0) -> Probe:
    """Halo effect: mean correlation between a rater's scores on different skills.

    ``judge_scores`` and ``human_scores``: (responses, skills) arrays (NaN = not
    scored; human entries e.g. the mean of the humans). For each pair of skills, Pearson
    r over the responses scored on both skills by both the judge and the humans; the
    judge's and the humans' halo = mean r over the skill pairs where both are defined
    (in a resample: over the pairs defined in it). value = judge halo - human halo,
    baseline 0. Responses are resampled with replacement. Details: ``judge_mean_r``,
    ``human_mean_r``, ``skill_pairs`` (used), ``skill_pairs_undefined``.
    """
    jm = np.asarray(judge_scores, dtype=float)
    hm = np.asarray(human_scores, dtype=float)
    if jm.ndim != 2 or hm.shape != jm.shape:
        raise ValueError(
            "judge_scores and human_scores must be (responses, skills) of one shape"
        )
    n, k = jm.shape
    ok = np.isfinite(jm) & np.isfinite(hm)
    key = [value_codes(np.where(ok[:, i], jm[:, i], -1))[1] for i in range(k)]
    key += [value_codes(np.where(ok[:, i], hm[:, i], -1))[1] for i in range(k)]
    cells = resample_cells(key if k else [np.zeros(n, np.int64)], 0, seed)
    f = cells.first
    # skill pairs defined in the sample itself (both judge and human r)
    pairs = []
    for s in range(k):
        for t in range(s + 1, k):
            rows = np.flatnonzero(ok[f, s] & ok[f, t])
            if rows.size < 2:
                continue
            w0 = cells.w[:1, rows]
            rj0 = pearson_w(w0, jm[f[rows], s], jm[f[rows], t])[0]
            rh0 = pearson_w(w0, hm[f[rows], s], hm[f[rows], t])[0]
            if np.isfinite(rj0) and np.isfinite(rh0):
                pairs.append((s, t, rows))

    # per skill pair: centred columns whose weighted sums give both correlations
    mats = []
    for s, t, rows in pairs:
        cols = [np.ones(rows.size)]
        for m in (jm, hm):
            x = m[f[rows], s] - m[f[rows], s].mean()
            y = m[f[rows], t] - m[f[rows], t].mean()
            cols += [x, y, x * x, y * y, x * y]
        mats.append((rows, np.column_stack(cols)))

    def mean_r(w):
        """Mean judge r and human r over the pairs defined in each row of w."""
        sj = np.zeros(w.shape[0])
        sh = np.zeros(w.shape[0])
        cnt = np.zeros(w.shape[0])
        wt = np.ascontiguousarray(w.T)  # (K, B): gathering rows is a contiguous copy
        for rows, mat in mats:
            mom = mat.T @ wt[rows]  # (11, B) weighted sums
            n = mom[0]
            rs = [pearson_from_sums(n, *mom[1 + 5 * i : 6 + 5 * i]) for i in (0, 1)]
            both = np.isfinite(rs[0]) & np.isfinite(rs[1])
            sj += np.where(both, rs[0], 0)
            sh += np.where(both, rs[1], 0)
            cnt += both
        return ratio(sj, cnt), ratio(sh, cnt)

    parts = [mean_r(cells.w[:1])]
    if pairs:
        parts += [mean_r(w) for w in draw_cell_count_chunks(cells.w[0], n_boot, seed)]
    mj = np.concatenate([p[0] for p in parts])
    mh = np.concatenate([p[1] for p in parts])
    n_pairs_all = k * (k - 1) // 2
    why = "no pair of skills with a defined correlation for judge and humans"
    details = {
        "judge_mean_r": result_from_rows(mj, n, why),
        "human_mean_r": result_from_rows(mh, n, why),
        "skill_pairs": len(pairs),
        "skill_pairs_undefined": n_pairs_all - len(pairs),
    }
    return Probe("halo", result_from_rows(mj - mh, n, why), 0.0, details)
