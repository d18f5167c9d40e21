"""Judge meta-evaluation against human preferences: pure numpy, no Django.

Issue 6 (FLAMe-style meta-evaluation). Selectors gather arrays from the database and
hand them to :func:`metaeval_report` (input and labels: :mod:`analysis.stats.pairwise`);
every output figure is a :class:`analysis.stats.results.Result` (``value`` None with a
``"not enough data: ..."`` reason when undefined, never NaN; ``n`` = the count the
figure is computed over; a seeded bootstrap 95% percentile CI).

Definitions (all in :func:`metaeval_report`, overall and per category)
-----------------------------------------------------------------------
A *comparison* is one (judge verdict, human vote) pair: a pair with 3 human votes gives 3
comparisons per order. Pairs without human votes count for consistency only.

* ``accuracy_ab`` / ``accuracy_ba``: share of comparisons of that order where the
  verdict equals the vote. Convention (a), ties as a third class: a tie matches only a
  tie; an error verdict ``""`` is a comparison and is wrong (counted in
  ``counts["error_comparisons_ab"]``). Pairs without a verdict in that order are left out
  (``counts["missing_ab"]``).
* ``accuracy_mean``: (correct in ab + correct in ba) / (2 x comparisons), over the
  comparisons of pairs with a verdict in both orders (equals the mean of the two
  accuracies when every pair has both orders; its ``n`` counts 2 per comparison).
  ``accuracy_both``: share of those comparisons correct in both orders.
* ``*_no_ties`` (convention (b)): the same after dropping every comparison where the
  judge verdict (in that order; for mean/both: in either order) or the human vote is a
  tie; error verdicts are kept and wrong. Counts: ``Result.n`` and ``counts``.
* ``kappa_ab``, ``kappa_ba``, ``kappa`` (both orders pooled, each (order, vote) one
  comparison): Cohen's kappa on the label values, ``""`` being a label of its own (as
  ``sklearn.metrics.cohen_kappa_score`` on the raw strings); ``*_no_ties`` after
  dropping tie comparisons. Undefined when the expected agreement is 1 (both sides one
  and the same class) or there is no comparison.
* ``consistency``: among pairs with a usable verdict (``"1"``, ``"2"``, ``"tie"``) in
  both orders, the share with the same verdict in both. Pairs with an error in either
  order are excluded (``counts["error_pairs"]``). Among the inconsistent pairs:
  ``first_position_share`` = verdicts ab ``"1"`` / ba ``"2"`` (the judge picked the
  response shown first both times), ``second_position_share`` = ab ``"2"`` / ba ``"1"``;
  the rest involve one tie (``counts["tie_inconsistent_pairs"]``).
* Human ceiling: ``human_loo`` = share of human votes equal to the majority label of the
  OTHER votes on the same pair (ties as a class). A vote is skipped when it is the only
  vote on its pair (``counts["loo_single_voter"]``) or the other votes have no strict
  majority, e.g. one "1" and one "2" (``counts["loo_tied_majority"]``).
  ``human_loo_no_ties`` also drops a vote when it or the majority is a tie.
* ``rm_accuracy`` (reward-model style): per comparison with a non-tie human vote, score
  1 if the verdict matches, 0.5 for a tie or error verdict, 0 otherwise, averaged over
  the orders present; comparisons with a human tie are dropped
  (``counts["rm_human_ties"]``). ``sections`` (``{section: [subset, ...]}``, subsets are
  categories) gives a section score = example-weighted mean of its subsets' rm
  accuracies (= pooled rm accuracy over the section's comparisons).

``counts`` (ints) of a group: pairs, pairs_with_votes, votes, human_votes_{1,2,tie},
comparisons_{ab,ba,both}[_no_ties], error_comparisons_{ab,ba},
judge_tie_comparisons_{ab,ba}, missing_{ab,ba}, error_pairs[_ab|_ba],
usable_pairs_both_orders, consistent_pairs, inconsistent_pairs,
first_position_pairs, second_position_pairs, tie_inconsistent_pairs, loo_votes,
loo_single_voter, loo_tied_majority, rm_comparisons, rm_human_ties.

Bootstrap: pairs are resampled with replacement within each category (stratified);
overall and section resamples are the unions of their categories' resamples. The draws
are exact multinomials over collapsed cells (see
:func:`analysis.stats.bootstrap.resample_cells`). Bias probes:
:mod:`analysis.stats.probes`.
"""

from __future__ import annotations

import numpy as np

from analysis.stats.bootstrap import resample_cells
from analysis.stats.kappa import kappa_from_table
from analysis.stats.pairwise import (
    ABSENT,
    N_CODES,
    PairwiseData,
    encode_labels,
    encode_pairs,
)
from analysis.stats.probes import (
    length_probe_encoded,
    order_probe_codes,
    self_preference_probe_encoded,
)
from analysis.stats.results import finite_or_none, ratio_result, result_from_rows


def cohen_kappa(judge, human) -> float | None:
    """Cohen's kappa of two label sequences (strings, as sklearn), None if undefined."""
    a = encode_labels(judge, "judge", judge=True)
    b = encode_labels(human, "human", judge=True)
    if a.size != b.size:
        raise ValueError("judge and human must have the same length")
    t = np.bincount(a.astype(np.int64) * N_CODES + b, minlength=N_CODES**2)
    return finite_or_none(kappa_from_table(t.reshape(N_CODES, N_CODES)))


# ---------------------------------------------------------------------------
# The per-pair quantity matrix of the report
# ---------------------------------------------------------------------------

# columns: T = votes by (ab code, ba code, human label): 5*5*3; Pt = pairs by (ab, ba): 25;
# then LOO and RM columns.
_T = slice(0, 75)
_PT = slice(75, 100)
(_LOO_N, _LOO_OK, _LOO_NNT, _LOO_OKNT, _LOO_SINGLE, _LOO_TIED) = range(100, 106)
(_RM_N, _RM_SCORE2, _RM_TIES) = range(106, 109)
_NQ = 109


def _report_q(ab, ba, h) -> np.ndarray:
    """(K, _NQ) additive quantities of K pairs (cell representatives)."""
    k = ab.size
    q = np.zeros((k, _NQ))
    r = np.arange(k)
    base = (ab.astype(np.int64) * N_CODES + ba) * 3
    for lab in range(3):
        q[r, base + lab] = h[:, lab]
    q[r, 75 + ab.astype(np.int64) * N_CODES + ba] = 1.0
    # leave-one-out human majority
    m = h.sum(axis=1)
    for lab in range(3):
        others = h.copy()
        others[:, lab] -= 1
        top = others.max(axis=1)
        n_top = (others == top[:, None]).sum(axis=1)
        maj = others.argmax(axis=1)
        has = h[:, lab] > 0
        single = has & (m == 1)
        tied = has & (m > 1) & (n_top > 1)
        ok = has & (m > 1) & (n_top == 1)
        q[:, _LOO_SINGLE] += np.where(single, h[:, lab], 0)
        q[:, _LOO_TIED] += np.where(tied, h[:, lab], 0)
        q[:, _LOO_N] += np.where(ok, h[:, lab], 0)
        q[:, _LOO_OK] += np.where(ok & (maj == lab), h[:, lab], 0)
        nt = ok & (lab != 2) & (maj != 2)
        q[:, _LOO_NNT] += np.where(nt, h[:, lab], 0)
        q[:, _LOO_OKNT] += np.where(nt & (maj == lab), h[:, lab], 0)
    # reward-model score (x2 to stay integral-ish): per order 2 / 1 / 0
    present = (ab != ABSENT).astype(float) + (ba != ABSENT).astype(float)
    for lab in range(2):
        s2 = np.zeros(k)
        for c in (ab, ba):
            s2 += np.where(c == lab, 2.0, np.where((c == 2) | (c == 3), 1.0, 0.0))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean2 = np.where(present > 0, s2 / np.maximum(present, 1), 0.0)
        q[:, _RM_N] += np.where(present > 0, h[:, lab], 0)
        q[:, _RM_SCORE2] += h[:, lab] * mean2
    q[:, _RM_TIES] = np.where(present > 0, h[:, 2], 0)
    return q


def _group_stats(s: np.ndarray) -> dict:
    """All report figures from summed quantities s (B + 1, _NQ)."""
    t = s[:, _T].reshape(-1, N_CODES, N_CODES, 3)
    pt = s[:, _PT].reshape(-1, N_CODES, N_CODES)
    out: dict = {}
    c: dict = {}
    conf = {
        "ab": t[:, :4].sum(axis=2),  # (B, 4 judge codes, 3 human labels)
        "ba": t[:, :, :4].sum(axis=1),
    }
    nt_rows = [0, 1, 3]
    for o, cf in conf.items():
        n = cf.sum(axis=(1, 2))
        correct = cf[:, 0, 0] + cf[:, 1, 1] + cf[:, 2, 2]
        n_nt = cf[:, nt_rows][:, :, :2].sum(axis=(1, 2))
        correct_nt = cf[:, 0, 0] + cf[:, 1, 1]
        out[f"accuracy_{o}"] = ratio_result(correct, n, f"no comparisons in order {o}")
        out[f"accuracy_{o}_no_ties"] = ratio_result(
            correct_nt, n_nt, f"no tie-free comparisons in order {o}"
        )
        c[f"comparisons_{o}"] = int(round(n[0]))
        c[f"comparisons_{o}_no_ties"] = int(round(n_nt[0]))
        c[f"error_comparisons_{o}"] = int(round(cf[0, 3].sum()))
        c[f"judge_tie_comparisons_{o}"] = int(round(cf[0, 2].sum()))
    # both orders present
    tb = t[:, :4, :4]
    n_both = tb.sum(axis=(1, 2, 3))
    both = tb[:, 0, 0, 0] + tb[:, 1, 1, 1] + tb[:, 2, 2, 2]
    sum_ok = sum(
        tb[:, lab, :, lab].sum(axis=1) + tb[:, :, lab, lab].sum(axis=1)
        for lab in range(3)
    )
    out["accuracy_mean"] = ratio_result(
        sum_ok, 2 * n_both, "no pair with both orders and a vote"
    )
    out["accuracy_both"] = ratio_result(
        both, n_both, "no pair with both orders and a vote"
    )
    tn = tb[:, nt_rows][:, :, nt_rows][:, :, :, :2]  # judge codes 0, 1, 3; humans 1, 2
    n_both_nt = tn.sum(axis=(1, 2, 3))
    both_nt = tn[:, 0, 0, 0] + tn[:, 1, 1, 1]
    sum_nt = sum(
        tn[:, lab, :, lab].sum(axis=1) + tn[:, :, lab, lab].sum(axis=1)
        for lab in range(2)
    )
    why = "no tie-free comparison with both orders"
    out["accuracy_mean_no_ties"] = ratio_result(sum_nt, 2 * n_both_nt, why)
    out["accuracy_both_no_ties"] = ratio_result(both_nt, n_both_nt, why)
    c["comparisons_both"] = int(round(n_both[0]))
    c["comparisons_both_no_ties"] = int(round(n_both_nt[0]))
    # kappa: square tables over codes 0..3 (humans never "")
    why_k = "no comparisons, or both sides one and the same label"
    sq = {}
    for o, cf in conf.items():
        sq[o] = np.concatenate([cf, np.zeros((cf.shape[0], 4, 1))], axis=2)
    sq["pooled"] = sq["ab"] + sq["ba"]
    for o, table in sq.items():
        name = "kappa" if o == "pooled" else f"kappa_{o}"
        t_nt = table[:, nt_rows][:, :, nt_rows]
        for key, tab in ((name, table), (f"{name}_no_ties", t_nt)):
            n = int(round(tab[0].sum()))
            out[key] = result_from_rows(kappa_from_table(tab), n, why_k)
    # consistency (pairs, not votes)
    usable = pt[:, :3, :3]
    n_usable = usable.sum(axis=(1, 2))
    consistent = usable[:, 0, 0] + usable[:, 1, 1] + usable[:, 2, 2]
    incons = n_usable - consistent
    first, second = usable[:, 0, 1], usable[:, 1, 0]
    out["consistency"] = ratio_result(
        consistent, n_usable, "no pair with usable verdicts in both orders"
    )
    why_i = "no inconsistent pair"
    out["first_position_share"] = ratio_result(first, incons, why_i)
    out["second_position_share"] = ratio_result(second, incons, why_i)
    c["pairs"] = int(round(pt[0].sum()))
    c["pairs_with_votes"] = None  # filled by the caller (not additive over votes)
    c["votes"] = int(round(t[0].sum()))
    c["human_votes_1"], c["human_votes_2"], c["human_votes_tie"] = (
        int(round(x)) for x in t[0].sum(axis=(0, 1))
    )
    c["missing_ab"] = int(round(pt[0, ABSENT, :].sum()))
    c["missing_ba"] = int(round(pt[0, :, ABSENT].sum()))
    c["error_pairs_ab"] = int(round(pt[0, 3, :].sum()))
    c["error_pairs_ba"] = int(round(pt[0, :, 3].sum()))
    c["error_pairs"] = int(round(pt[0, :4, :4].sum() - pt[0, :3, :3].sum()))
    c["usable_pairs_both_orders"] = int(round(n_usable[0]))
    c["consistent_pairs"] = int(round(consistent[0]))
    c["inconsistent_pairs"] = int(round(incons[0]))
    c["first_position_pairs"] = int(round(first[0]))
    c["second_position_pairs"] = int(round(second[0]))
    c["tie_inconsistent_pairs"] = int(round(incons[0] - first[0] - second[0]))
    # human ceiling
    out["human_loo"] = ratio_result(
        s[:, _LOO_OK], s[:, _LOO_N], "no vote with a strict majority of other votes"
    )
    out["human_loo_no_ties"] = ratio_result(
        s[:, _LOO_OKNT],
        s[:, _LOO_NNT],
        "no tie-free vote with a strict majority of other votes",
    )
    c["loo_votes"] = int(round(s[0, _LOO_N]))
    c["loo_single_voter"] = int(round(s[0, _LOO_SINGLE]))
    c["loo_tied_majority"] = int(round(s[0, _LOO_TIED]))
    # reward-model score
    out["rm_accuracy"] = ratio_result(
        s[:, _RM_SCORE2] / 2, s[:, _RM_N], "no comparison with a non-tie human vote"
    )
    c["rm_comparisons"] = int(round(s[0, _RM_N]))
    c["rm_human_ties"] = int(round(s[0, _RM_TIES]))
    out["counts"] = c
    return out


def metaeval_report(
    data: PairwiseData,
    sections: dict[str, list[str]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict:
    """Every meta-evaluation figure of one judge run (definitions: module docstring).

    Returns ``{"overall": group, "categories": {category: group}, "sections":
    {section: {"score": Result, "subsets": {subset: n comparisons}, "missing_subsets":
    [...]}}, "probes": {name: Probe}}``. A group maps figure names to :class:`Result`
    plus ``"counts"`` (ints). Probes: ``order`` always; ``length`` when both lengths are
    given; ``self_preference`` when both own flags are given. The probes draw their
    own resamples of pairs (not stratified by category).
    """
    if n_boot < 0:
        raise ValueError("n_boot must be >= 0")
    for section, subsets in (sections or {}).items():
        if isinstance(subsets, str) or not all(isinstance(x, str) for x in subsets):
            raise ValueError(f"sections[{section!r}] must be a list of subset names")
    enc = encode_pairs(data)
    cells = resample_cells(
        [enc.ab, enc.ba, enc.h[:, 0], enc.h[:, 1], enc.h[:, 2]], n_boot, seed, enc.cat
    )
    f = cells.first
    q = _report_q(enc.ab[f], enc.ba[f], enc.h[f])
    has_votes = enc.h.sum(axis=1) > 0
    per_cat = {}
    for i, name in enumerate(enc.categories):
        cols = np.flatnonzero(cells.stratum == i)
        per_cat[name] = cells.w[:, cols] @ q[cols]
    overall = _group_stats(sum(per_cat.values()) if per_cat else cells.w @ q)
    overall["counts"]["pairs_with_votes"] = int(has_votes.sum())
    groups = {}
    for i, name in enumerate(enc.categories):
        groups[name] = _group_stats(per_cat[name])
        groups[name]["counts"]["pairs_with_votes"] = int(has_votes[enc.cat == i].sum())
    out = {"overall": overall, "categories": groups, "sections": {}}
    for section, subsets in (sections or {}).items():
        present = [s for s in subsets if s in per_cat]
        tot = sum((per_cat[s] for s in present), np.zeros((n_boot + 1, _NQ)))
        out["sections"][section] = {
            "score": ratio_result(
                tot[:, _RM_SCORE2] / 2, tot[:, _RM_N], "no comparison in its subsets"
            ),
            "subsets": {s: int(round(per_cat[s][0, _RM_N])) for s in present},
            "missing_subsets": [s for s in subsets if s not in per_cat],
        }
    probes = {"order": order_probe_codes(enc.ab, enc.ba, n_boot, seed + 1)}
    if enc.length_1 is not None and enc.length_2 is not None:
        probes["length"] = length_probe_encoded(enc, n_boot, seed + 2)
    if enc.own_1 is not None and enc.own_2 is not None:
        probes["self_preference"] = self_preference_probe_encoded(enc, n_boot, seed + 3)
    out["probes"] = probes
    return out
