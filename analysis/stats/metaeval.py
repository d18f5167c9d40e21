"""Judge meta-evaluation against human preferences, and bias probes: pure numpy, no Django.

Issue 6 (FLAMe-style meta-evaluation). Selectors gather arrays from the database and hand
them to these functions; every output figure is a :class:`judging.stats.Result`
(``value`` None with a ``"not enough data: ..."`` reason when undefined, never NaN; ``n``
= the count the figure is computed over; a seeded bootstrap 95% percentile CI).

Labels
------
Every label is a string in the ORIGINAL numbering of the pair (``PreferencePair.
response_1`` is ``"1"``): ``"1"``, ``"2"``, ``"tie"``; judge verdicts may also be ``""``
(no usable verdict: parse failure, call error) and ``None`` (this order was not run /
not imported). Human labels must be ``"1"``, ``"2"`` or ``"tie"``. Anything else raises
``ValueError`` naming the field and the index. A swapped-order verdict must already be
mapped back (``judging.pairwise.map_verdict``).

Input: :class:`PairwiseData` (one judge run)
---------------------------------------------
Per pair (P entries, parallel arrays): ``pair_id`` (unique ints or strings),
``category`` (subset / source; ``""`` = none), ``verdict_ab`` and ``verdict_ba`` (the
judge's mapped verdict in each order), optional ``length_1``/``length_2`` (response
lengths, e.g. characters) and ``own_1``/``own_2`` (bool: response 1 / 2 comes from the
judge's own model family). Per human vote (V entries): ``vote_pair`` (a ``pair_id``) and
``vote_label``. :meth:`PairwiseData.from_verdict_rows` builds it from PairwiseVerdict-like
rows (pair id, order ``"ab"``/``"ba"``, verdict); use one sample per (pair, order).

Feeding it from the schema of issue 6 (selectors): ``pair_id`` / ``category`` from
``PreferencePair`` (id, category); verdict rows from ``PairwiseVerdict`` of one run
(``pair_id, order, verdict`` - the mapped field, not ``verdict_raw`` - with
``sample_index=0``); votes from ``HumanPreference`` (``pair_id, label``); lengths e.g.
``len(response_1.text)``; ``own_i`` = the family of ``response_i.model_name``
(``EvaluatedModel.family``) equals ``JudgeConfig.model_family`` (both non-blank).

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
are exact multinomials over collapsed cells (see :func:`_resample_cells`).

Bias probes (each returns a :class:`Probe`: value, count, CI, random baseline, details)
-------------------------------------------------------------------------------------
:func:`order_probe`, :func:`length_probe`, :func:`pointwise_length_probe`,
:func:`self_preference_probe`, :func:`score_inflation_probe`, :func:`cue_probe`,
:func:`halo_probe`; definitions in their docstrings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from analysis.stats.agreement import Result, make_result, pearson_w

LABELS = ("1", "2", "tie", "")  # codes 0, 1, 2, 3
ABSENT = 4  # code of "this order was not run"
N_CODES = 5
SMALL_CELL = 12  # cells of at most this many items are drawn item by item


# ---------------------------------------------------------------------------
# Encoding and validation
# ---------------------------------------------------------------------------


def encode_labels(values, field_name: str, *, judge: bool) -> np.ndarray:
    """Label strings -> int8 codes (0 "1", 1 "2", 2 "tie", 3 "", 4 None = absent).

    ``judge=False`` (human votes) accepts only "1", "2", "tie". Raises ``ValueError``
    naming ``field_name``, the first bad index and its value.
    """
    arr = np.asarray(values, dtype=object).ravel()
    codes = np.full(arr.size, -1, dtype=np.int8)
    allowed = LABELS if judge else LABELS[:3]
    for code, label in enumerate(allowed):
        codes[arr == label] = code
    if judge:
        codes[np.equal(arr, None)] = ABSENT
    bad = np.flatnonzero(codes < 0)
    if bad.size:
        i = int(bad[0])
        ok = ", ".join(repr(v) for v in allowed) + (", None" if judge else "")
        raise ValueError(
            f"{field_name}[{i}] = {_show(arr[i])} is not a label (allowed: {ok})"
        )
    return codes


def _show(v) -> str:
    """repr of a plain Python value (numpy scalars shown as their value)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def _check_len(name: str, values, n: int, what: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"{name} must have one entry per {what} ({n}), got {arr.shape}"
        )
    return arr


def _numeric(name: str, values, n: int, what: str) -> np.ndarray:
    arr = _check_len(name, values, n, what).astype(float)
    if not np.isfinite(arr).all():
        i = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name}[{i}] is not a finite number")
    return arr


@dataclass
class PairwiseData:
    """One judge run's verdicts and the human votes on the same pairs (see module doc)."""

    pair_id: Sequence
    verdict_ab: Sequence
    verdict_ba: Sequence
    vote_pair: Sequence = ()
    vote_label: Sequence = ()
    category: Sequence | None = None
    length_1: Sequence | None = None
    length_2: Sequence | None = None
    own_1: Sequence | None = None
    own_2: Sequence | None = None

    @classmethod
    def from_verdict_rows(
        cls,
        pair_id,
        verdict_pair,
        verdict_order,
        verdict,
        vote_pair=(),
        vote_label=(),
        **per_pair,
    ) -> PairwiseData:
        """Pivot verdict rows (pair id, order "ab"/"ba", mapped verdict) to per-pair arrays.

        A pair without a row for an order gets ``None`` (absent) in that order. Two rows
        for the same (pair, order) or a pair id not in ``pair_id`` raise ``ValueError``
        naming the row. ``per_pair`` takes the optional per-pair arrays (category, ...).
        """
        pair_id = np.asarray(pair_id)
        p = pair_id.shape[0]
        idx = _pair_index(pair_id, verdict_pair, "verdict_pair")
        order = _check_len("verdict_order", verdict_order, idx.size, "verdict row")
        verdict = np.asarray(verdict, dtype=object)
        _check_len("verdict", verdict, idx.size, "verdict row")
        out = {
            "ab": np.full(p, None, dtype=object),
            "ba": np.full(p, None, dtype=object),
        }
        for name, arr in out.items():
            rows = np.flatnonzero(order == name)
            _, first_dup = np.unique(idx[rows], return_index=True)
            if first_dup.size != rows.size:
                dup = np.setdiff1d(np.arange(rows.size), first_dup)[0]
                raise ValueError(
                    f"verdict row {int(rows[dup])}: second verdict for pair "
                    f"{_show(pair_id[idx[rows[dup]]])} in order {name!r}"
                )
            arr[idx[rows]] = verdict[rows]
        other = np.flatnonzero((order != "ab") & (order != "ba"))
        if other.size:
            i = int(other[0])
            raise ValueError(
                f"verdict_order[{i}] = {_show(order[i])}: must be 'ab' or 'ba'"
            )
        return cls(pair_id, out["ab"], out["ba"], vote_pair, vote_label, **per_pair)


def _pair_index(pair_id: np.ndarray, ref, field_name: str) -> np.ndarray:
    """Index into ``pair_id`` of each entry of ``ref``; unknown ids raise ValueError."""
    ref = np.asarray(ref)
    if ref.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(pair_id, kind="stable")
    sorted_ids = pair_id[order]
    pos = np.searchsorted(sorted_ids, ref)
    pos_c = np.minimum(pos, max(sorted_ids.size - 1, 0))
    bad = (pos >= sorted_ids.size) | (sorted_ids[pos_c] != ref)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"{field_name}[{i}] = {_show(ref[i])} is not a known pair_id")
    return order[pos_c].astype(np.int64)


@dataclass
class _Encoded:
    ab: np.ndarray  # (P,) codes
    ba: np.ndarray
    h: np.ndarray  # (P, 3) human votes "1", "2", "tie"
    cat: np.ndarray  # (P,) category index
    categories: list
    length_1: np.ndarray | None
    length_2: np.ndarray | None
    own_1: np.ndarray | None
    own_2: np.ndarray | None


def _encode(data: PairwiseData) -> _Encoded:
    pair_id = np.asarray(data.pair_id)
    if pair_id.ndim != 1:
        raise ValueError("pair_id must be a 1-d sequence")
    p = pair_id.shape[0]
    if np.unique(pair_id).size != p:
        raise ValueError("pair_id must be unique")
    _check_len("verdict_ab", np.asarray(data.verdict_ab, dtype=object), p, "pair")
    _check_len("verdict_ba", np.asarray(data.verdict_ba, dtype=object), p, "pair")
    ab = encode_labels(data.verdict_ab, "verdict_ab", judge=True)
    ba = encode_labels(data.verdict_ba, "verdict_ba", judge=True)
    vote_label = np.asarray(data.vote_label, dtype=object)
    vidx = _pair_index(pair_id, data.vote_pair, "vote_pair")
    _check_len("vote_label", vote_label, vidx.size, "vote")
    vcode = encode_labels(vote_label, "vote_label", judge=False).astype(np.int64)
    h = np.bincount(vidx * 3 + vcode, minlength=3 * p).reshape(p, 3)
    if data.category is None:
        categories, cat = [""], np.zeros(p, dtype=np.int64)
    else:
        cats = _check_len("category", data.category, p, "pair").astype(str)
        uniq, cat = np.unique(cats, return_inverse=True)
        categories = [str(c) for c in uniq]
    opt = {}
    for name in ("length_1", "length_2"):
        v = getattr(data, name)
        opt[name] = None if v is None else _numeric(name, v, p, "pair")
    for name in ("own_1", "own_2"):
        v = getattr(data, name)
        opt[name] = None if v is None else _check_len(name, v, p, "pair").astype(bool)
    return _Encoded(ab, ba, h, cat.ravel().astype(np.int64), categories, **opt)


# ---------------------------------------------------------------------------
# Bootstrap over collapsed cells
# ---------------------------------------------------------------------------


def _key_codes(cols: list[np.ndarray]) -> np.ndarray:
    """One int64 code per row of non-negative int columns (mixed radix, no overflow)."""
    n = len(cols[0]) if cols else 0
    code = np.zeros(n, dtype=np.int64)
    total = 1
    for col in cols:
        col = np.asarray(col, dtype=np.int64)
        radix = int(col.max()) + 1 if n else 1
        total *= radix
        if total >= 2**62:  # too many combinations for one int64: exact fallback
            _, inv = np.unique(np.column_stack(cols), axis=0, return_inverse=True)
            return inv.ravel().astype(np.int64)
        code = code * radix + col
    return code


def _draw(counts: np.ndarray, n_boot: int, rng, small: int = SMALL_CELL) -> np.ndarray:
    """(n_boot, K) bootstrap counts: exact multinomial(n, counts / n) draws.

    Cells of at most ``small`` items are drawn item by item (how many of the n draws
    land on them is binomial; each such draw picks one of their items uniformly), the
    others through numpy's multinomial. Same distribution as drawing n item indices.
    """
    counts = np.asarray(counts, dtype=np.int64)
    k = counts.size
    n = int(counts.sum())
    out = np.zeros((n_boot, k))
    if n == 0 or n_boot == 0:
        return out
    is_small = counts <= small
    small_cells = np.flatnonzero(is_small)
    big_cells = np.flatnonzero(~is_small)
    s = int(counts[small_cells].sum())
    m = rng.binomial(n, s / n, size=n_boot) if 0 < s < n else np.full(n_boot, s)
    if s > 0:
        item_cell = np.repeat(small_cells, counts[small_cells])
        picks = item_cell[rng.integers(0, s, size=int(m.sum()))]
        ends = np.cumsum(m)
        for b in range(n_boot):  # one bincount per resample: no (B * K) index array
            out[b] += np.bincount(picks[ends[b] - m[b] : ends[b]], minlength=k)
    if big_cells.size:
        out[:, big_cells] += rng.multinomial(n - m, counts[big_cells] / (n - s))
    return out


def _draw_chunks(counts: np.ndarray, n_boot: int, seed: int, chunk: int = 100):
    """:func:`_draw` in blocks of at most ``chunk`` resamples (bounded memory)."""
    rng = np.random.default_rng(seed)
    for start in range(0, n_boot, chunk):
        yield _draw(counts, min(chunk, n_boot - start), rng)


@dataclass
class _Cells:
    """Items collapsed into cells; w[0] = cell counts, w[1:] = bootstrap counts."""

    first: np.ndarray  # (K,) an item of each cell
    stratum: np.ndarray  # (K,)
    w: np.ndarray  # (B + 1, K)


def _resample_cells(key_cols, n_boot: int, seed: int, strata=None) -> _Cells:
    """Collapse items with equal key into cells and draw bootstrap cell counts.

    Items are resampled with replacement within each stratum (``strata``: (n,) ints).
    Cells come out sorted by their key (first column most significant). ``n_boot=0``
    gives the cells and their counts only (for :func:`_draw_chunks`).
    """
    n = len(key_cols[0])
    strata = np.zeros(n, np.int64) if strata is None else np.asarray(strata, np.int64)
    _, first, cnt = np.unique(
        _key_codes([strata, *key_cols]), return_index=True, return_counts=True
    )
    stratum = strata[first]
    w = np.zeros((n_boot + 1, first.size))
    w[0] = cnt
    rng = np.random.default_rng(seed)
    for s in np.unique(stratum):
        cols = np.flatnonzero(stratum == s)
        w[1:, cols] = _draw(cnt[cols], n_boot, rng)
    return _Cells(first, stratum, w)


def _ratio(num, den, why: str) -> Result:
    """Result of num / den per row (row 0 = point estimate); n = den[0]."""
    num = np.asarray(num, dtype=float)
    den = np.asarray(den, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    return make_result(r[0], r[1:], int(round(den[0])), why)


def _series(x, n: int, why: str) -> Result:
    x = np.asarray(x, dtype=float)
    return make_result(x[0], x[1:], n, why)


# ---------------------------------------------------------------------------
# Kappa
# ---------------------------------------------------------------------------


def kappa_from_table(table: np.ndarray) -> np.ndarray:
    """Cohen's kappa from square confusion tables (..., L, L); NaN where undefined.

    kappa = (p_o - p_e) / (1 - p_e), p_o = trace / n, p_e = sum_k row_k col_k / n^2.
    Undefined with no comparisons or p_e = 1 (both sides the same single class).
    """
    t = np.asarray(table, dtype=float)
    n = t.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        po = np.trace(t, axis1=-2, axis2=-1) / n
        pe = (t.sum(axis=-1) * t.sum(axis=-2)).sum(axis=-1) / n**2
        k = (po - pe) / (1 - pe)
    return np.where((n > 0) & (pe < 1 - 1e-12), k, np.nan)


def cohen_kappa(judge, human) -> float | None:
    """Cohen's kappa of two label sequences (strings, as sklearn), None if undefined."""
    a = encode_labels(judge, "judge", judge=True)
    b = encode_labels(human, "human", judge=True)
    if a.size != b.size:
        raise ValueError("judge and human must have the same length")
    t = np.bincount(a.astype(np.int64) * N_CODES + b, minlength=N_CODES**2)
    v = float(kappa_from_table(t.reshape(N_CODES, N_CODES)))
    return v if np.isfinite(v) else None


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
        out[f"accuracy_{o}"] = _ratio(correct, n, f"no comparisons in order {o}")
        out[f"accuracy_{o}_no_ties"] = _ratio(
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
    out["accuracy_mean"] = _ratio(
        sum_ok, 2 * n_both, "no pair with both orders and a vote"
    )
    out["accuracy_both"] = _ratio(both, n_both, "no pair with both orders and a vote")
    tn = tb[:, nt_rows][:, :, nt_rows][:, :, :, :2]  # judge codes 0, 1, 3; humans 1, 2
    n_both_nt = tn.sum(axis=(1, 2, 3))
    both_nt = tn[:, 0, 0, 0] + tn[:, 1, 1, 1]
    sum_nt = sum(
        tn[:, lab, :, lab].sum(axis=1) + tn[:, :, lab, lab].sum(axis=1)
        for lab in range(2)
    )
    why = "no tie-free comparison with both orders"
    out["accuracy_mean_no_ties"] = _ratio(sum_nt, 2 * n_both_nt, why)
    out["accuracy_both_no_ties"] = _ratio(both_nt, n_both_nt, why)
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
        k = kappa_from_table(table)
        n = table.sum(axis=(1, 2))
        out[name] = make_result(k[0], k[1:], int(round(n[0])), why_k)
        t_nt = table[:, nt_rows][:, :, nt_rows]
        k = kappa_from_table(t_nt)
        n = t_nt.sum(axis=(1, 2))
        out[f"{name}_no_ties"] = make_result(k[0], k[1:], int(round(n[0])), why_k)
    # consistency (pairs, not votes)
    usable = pt[:, :3, :3]
    n_usable = usable.sum(axis=(1, 2))
    consistent = usable[:, 0, 0] + usable[:, 1, 1] + usable[:, 2, 2]
    incons = n_usable - consistent
    first, second = usable[:, 0, 1], usable[:, 1, 0]
    out["consistency"] = _ratio(
        consistent, n_usable, "no pair with usable verdicts in both orders"
    )
    why_i = "no inconsistent pair"
    out["first_position_share"] = _ratio(first, incons, why_i)
    out["second_position_share"] = _ratio(second, incons, why_i)
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
    out["human_loo"] = _ratio(
        s[:, _LOO_OK], s[:, _LOO_N], "no vote with a strict majority of other votes"
    )
    out["human_loo_no_ties"] = _ratio(
        s[:, _LOO_OKNT],
        s[:, _LOO_NNT],
        "no tie-free vote with a strict majority of other votes",
    )
    c["loo_votes"] = int(round(s[0, _LOO_N]))
    c["loo_single_voter"] = int(round(s[0, _LOO_SINGLE]))
    c["loo_tied_majority"] = int(round(s[0, _LOO_TIED]))
    # reward-model score
    out["rm_accuracy"] = _ratio(
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
    enc = _encode(data)
    cells = _resample_cells(
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
            "score": _ratio(
                tot[:, _RM_SCORE2] / 2, tot[:, _RM_N], "no comparison in its subsets"
            ),
            "subsets": {s: int(round(per_cat[s][0, _RM_N])) for s in present},
            "missing_subsets": [s for s in subsets if s not in per_cat],
        }
    probes = {"order": _order_probe_enc(enc.ab, enc.ba, n_boot, seed + 1)}
    if enc.length_1 is not None and enc.length_2 is not None:
        probes["length"] = _length_probe_enc(enc, n_boot, seed + 2)
    if enc.own_1 is not None and enc.own_2 is not None:
        probes["self_preference"] = _self_pref_enc(enc, n_boot, seed + 3)
    out["probes"] = probes
    return out


# ---------------------------------------------------------------------------
# Bias probes
# ---------------------------------------------------------------------------


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
    return _order_probe_enc(ab, ba, n_boot, seed)


def _order_probe_enc(ab, ba, n_boot, seed) -> Probe:
    cells = _resample_cells([ab, ba], n_boot, seed)
    a, b = ab[cells.first], ba[cells.first]
    usable = (a < 3) & (b < 3)
    q = np.column_stack(
        [usable, usable & (a == b), (a == 0) & (b == 1), (a == 1) & (b == 0)]
    ).astype(float)
    s = cells.w @ q
    incons = s[:, 0] - s[:, 1]
    details = {
        "consistency": _ratio(
            s[:, 1], s[:, 0], "no pair with usable verdicts in both orders"
        ),
        "first_position_share": _ratio(s[:, 2], incons, "no inconsistent pair"),
        "second_position_share": _ratio(s[:, 3], incons, "no inconsistent pair"),
        "usable_pairs": int(round(s[0, 0])),
        "inconsistent_pairs": int(round(incons[0])),
        "first_position_pairs": int(round(s[0, 2])),
        "second_position_pairs": int(round(s[0, 3])),
    }
    value = _ratio(s[:, 2], s[:, 2] + s[:, 3], "no pair flipping between positions")
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
    ab = encode_labels(verdict_ab, "verdict_ab", judge=True)
    p = ab.size
    ba = encode_labels(verdict_ba, "verdict_ba", judge=True)
    _check_len("verdict_ba", ba, p, "pair")
    h = np.zeros((p, 3), dtype=np.int64)
    if vote_pair_index is not None:
        vi = np.asarray(vote_pair_index, dtype=np.int64)
        if vi.size and (vi.min() < 0 or vi.max() >= p):
            raise ValueError("vote_pair_index must index the pair arrays")
        vl = encode_labels(vote_label, "vote_label", judge=False).astype(np.int64)
        _check_len("vote_label", vl, vi.size, "vote")
        h = np.bincount(vi * 3 + vl, minlength=3 * p).reshape(p, 3)
    enc = _Encoded(
        ab,
        ba,
        h,
        np.zeros(p, np.int64),
        [""],
        _numeric("length_1", length_1, p, "pair"),
        _numeric("length_2", length_2, p, "pair"),
        None,
        None,
    )
    return _length_probe_enc(enc, n_boot, seed)


def _length_probe_enc(enc: _Encoded, n_boot, seed) -> Probe:
    ab, ba, h = enc.ab, enc.ba, enc.h
    sign = np.sign(enc.length_1 - enc.length_2).astype(np.int64) + 1  # 0: 2 longer
    decisive = (ab == ba) & (ab < 2)
    winner = np.where(decisive, ab, 2)  # 0 "1", 1 "2", 2 none
    hv = [np.where(sign != 1, h[:, 0], 0), np.where(sign != 1, h[:, 1], 0)]  # equal: 0
    cells = _resample_cells([sign, winner, hv[0], hv[1]], n_boot, seed)
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
    value = _ratio(s[:, 1], s[:, 0], why)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_ = np.where(s[:, 0] > 0, s[:, 1] / np.maximum(s[:, 0], 1), np.nan)
    details = {
        "deviation": _series(np.abs(p_ - 0.5), int(round(s[0, 0])), why),
        "human": _ratio(
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
    ab = encode_labels(verdict_ab, "verdict_ab", judge=True)
    p = ab.size
    ba = encode_labels(verdict_ba, "verdict_ba", judge=True)
    _check_len("verdict_ba", ba, p, "pair")
    vi = np.asarray(vote_pair_index, dtype=np.int64)
    if vi.size and (vi.min() < 0 or vi.max() >= p):
        raise ValueError("vote_pair_index must index the pair arrays")
    vl = encode_labels(vote_label, "vote_label", judge=False).astype(np.int64)
    _check_len("vote_label", vl, vi.size, "vote")
    h = np.bincount(vi * 3 + vl, minlength=3 * p).reshape(p, 3)
    o1 = _check_len("own_1", own_1, p, "pair").astype(bool)
    o2 = _check_len("own_2", own_2, p, "pair").astype(bool)
    enc = _Encoded(ab, ba, h, np.zeros(p, np.int64), [""], None, None, o1, o2)
    return _self_pref_enc(enc, n_boot, seed)


def _self_pref_enc(enc: _Encoded, n_boot, seed) -> Probe:
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
    cells = _resample_cells(cols, n_boot, seed)
    s = cells.w @ np.column_stack([c[cells.first] for c in cols]).astype(float)
    why = "no pair with one own-family response, a usable verdict and a human vote"
    with np.errstate(invalid="ignore", divide="ignore"):
        jr = np.where(s[:, 0] > 0, s[:, 1] / 2 / np.maximum(s[:, 0], 1), np.nan)
        hr = np.where(s[:, 2] > 0, s[:, 3] / 2 / np.maximum(s[:, 2], 1), np.nan)
    n_pairs = int(use.sum())
    details = {
        "judge_rate": _series(jr, int(round(s[0, 0])), why),
        "human_rate": _series(hr, int(round(s[0, 2])), why),
        "pairs": n_pairs,
        "own_family_pairs": int(one.sum()),
    }
    return Probe("self_preference", _series(jr - hr, n_pairs, why), 0.0, details)


def _codes_of(x) -> np.ndarray:
    _, inv = np.unique(np.asarray(x, dtype=float), return_inverse=True)
    return inv.ravel().astype(np.int64)


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
    hm = _check_len("human_score", np.asarray(human_score, dtype=float), n, "item")
    o = _check_len("own", own, n, "item").astype(bool)
    keep = np.isfinite(j) & np.isfinite(hm)
    d = (j - hm)[keep]
    ok = o[keep].astype(np.int64)
    cells = _resample_cells([ok, _codes_of(d)], n_boot, seed)
    f = cells.first
    q = np.column_stack([ok[f], ok[f] * d[f], 1 - ok[f], (1 - ok[f]) * d[f]])
    s = cells.w @ q
    why = "needs items from the judge's family and from others"
    with np.errstate(invalid="ignore", divide="ignore"):
        io = np.where(s[:, 0] > 0, s[:, 1] / np.maximum(s[:, 0], 1), np.nan)
        ie = np.where(s[:, 2] > 0, s[:, 3] / np.maximum(s[:, 2], 1), np.nan)
    n_own, n_other = int(round(s[0, 0])), int(round(s[0, 2]))
    details = {
        "inflation_own": _series(io, n_own, "no own-family item"),
        "inflation_other": _series(ie, n_other, "no other item"),
        "dropped_missing": int((~keep).sum()),
    }
    return Probe(
        "score_inflation", _series(io - ie, n_own + n_other, why), 0.0, details
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
    _check_len("verdict_cued", cued, n, "slot")
    tgt = encode_labels(cue_target, "cue_target", judge=True)
    _check_len("cue_target", tgt, n, "slot")
    if (tgt > 1).any():
        i = int(np.flatnonzero(tgt > 1)[0])
        raise ValueError(f"cue_target[{i}] must be '1' or '2'")
    use = (base < 3) & (cued < 3)
    bf = use & (base == tgt)
    cf = use & (cued == tgt)
    cols = [use, bf, cf, bf & ~cf, ~bf & use & cf]
    q = np.column_stack(cols).astype(np.int64)
    if pair_id is not None:
        pid = _check_len("pair_id", pair_id, n, "slot")
        _, inv = np.unique(pid, return_inverse=True)
        inv = inv.ravel()
        agg = np.zeros((inv.max() + 1 if n else 0, q.shape[1]), np.int64)
        np.add.at(agg, inv, q)
        q = agg
    cells = _resample_cells(list(q.T), n_boot, seed)
    s = cells.w @ q[cells.first].astype(float)
    why = "no slot with usable verdicts with and without the cue"
    with np.errstate(invalid="ignore", divide="ignore"):
        fc = np.where(s[:, 0] > 0, s[:, 2] / np.maximum(s[:, 0], 1), np.nan)
        fb = np.where(s[:, 0] > 0, s[:, 1] / np.maximum(s[:, 0], 1), np.nan)
    n_used = int(round(s[0, 0]))
    details = {
        "follow_cued": _series(fc, n_used, why),
        "follow_base": _series(fb, n_used, why),
        "flip_toward": _ratio(
            s[:, 4], s[:, 0] - s[:, 1], "no base verdict away from the target"
        ),
        "flip_away": _ratio(s[:, 3], s[:, 1], "no base verdict on the target"),
        "dropped_unusable": int(n - use.sum()),
    }
    return Probe(name, _series(fc - fb, n_used, why), 0.0, details)


# ---------------------------------------------------------------------------
# Pointwise probes: weighted Spearman / Pearson on resampled cells
# ---------------------------------------------------------------------------


def midranks_w(w: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Midranks (1-based, ties averaged) of cells with values x (K,) under weights w (B, K).

    Equal to the ranks of the data where cell k appears w[b, k] times.
    """
    w = np.atleast_2d(np.asarray(w, dtype=float))
    order = np.argsort(x, kind="stable")
    xs = np.asarray(x)[order]
    starts = (
        np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]]) if xs.size else np.zeros(0, int)
    )
    group = (
        np.cumsum(np.r_[True, xs[1:] != xs[:-1]]) - 1 if xs.size else np.zeros(0, int)
    )
    gw = (
        np.add.reduceat(w[:, order], starts, axis=1)
        if xs.size
        else np.zeros((w.shape[0], 0))
    )
    mid = np.cumsum(gw, axis=1) - gw + (gw + 1) / 2
    out = np.empty_like(w)
    out[:, order] = mid[:, group]
    return out


def spearman_w(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman rho per row of cell weights w (B, K); NaN with <2 items or a constant side."""
    w = np.atleast_2d(np.asarray(w, dtype=float))
    return pearson_w(w, midranks_w(w, x), midranks_w(w, y))


def _rank_moments(t: np.ndarray):
    """Midranks (V, B) of values with weights t (V, B), totals and sums of squares."""
    mid = np.cumsum(t, axis=0) - t + (t + 1) / 2
    n = t.sum(axis=0)
    sxx = (t * mid * mid).sum(axis=0) - n * ((n + 1) / 2) ** 2
    return mid, n, sxx


def spearman_sorted_w(w: np.ndarray, x_codes: np.ndarray, y_codes_list) -> list:
    """Spearman rho of x with each y, per row of cell weights w (B, K); NaN if undefined.

    Fast path of :func:`spearman_w` for cells sorted by ``x_codes`` (non-decreasing
    ints), cost O(B x K) without a per-row sort. Uses that midranks average (N + 1) / 2
    and sum_k w_k r_x(k) r_y(k) = sum_v r_y(v) * sum_{k: y_k = v} w_k r_x(k). Works on
    the transposed (K, B) weights so every group sum adds contiguous rows.
    """
    wt = np.ascontiguousarray(np.atleast_2d(np.asarray(w, dtype=float)).T)
    x_codes = np.asarray(x_codes)
    if x_codes.size == 0:
        return [np.full(wt.shape[1], np.nan) for _ in y_codes_list]
    if (np.diff(x_codes) < 0).any():
        raise ValueError("cells must be sorted by x")
    starts = np.flatnonzero(np.r_[True, x_codes[1:] != x_codes[:-1]])
    sizes = np.diff(np.r_[starts, x_codes.size])
    mid_x, n, sxx = _rank_moments(np.add.reduceat(wt, starts, axis=0))
    wr = wt * np.repeat(mid_x, sizes, axis=0)
    mean = (n + 1) / 2
    out = []
    for yc in y_codes_list:
        yc = np.asarray(yc)
        perm = np.argsort(yc, kind="stable")
        ys = yc[perm]
        ystarts = np.flatnonzero(np.r_[True, ys[1:] != ys[:-1]])
        mid_y, _, syy = _rank_moments(np.add.reduceat(wt[perm], ystarts, axis=0))
        sxy = (np.add.reduceat(wr[perm], ystarts, axis=0) * mid_y).sum(axis=0)
        sxy -= n * mean * mean
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = np.clip(sxy / np.sqrt(sxx * syy), -1.0, 1.0)
        # a constant side has sum of squares 0 up to rounding (values ~ N^3)
        tol = 1e-9 * np.maximum(n, 1) ** 3
        bad = (n < 2) | ~(sxx > tol) | ~(syy > tol)
        out.append(np.where(bad, np.nan, rho))
    return out


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
    hm = _check_len("human_score", np.asarray(human_score, dtype=float), n, "item")
    ln = _numeric("length", length, n, "item")
    keep = np.isfinite(j) & np.isfinite(hm)
    j, hm, ln = j[keep], hm[keep], ln[keep]
    lc = _codes_of(ln)
    # length first in the key: the cells come out sorted by length
    cells = _resample_cells([lc, _codes_of(j), _codes_of(hm)], 0, seed)
    f = cells.first
    ys = [_codes_of(j[f]), _codes_of(hm[f])]
    parts = [spearman_sorted_w(cells.w[:1], lc[f], ys)]
    for w in _draw_chunks(cells.w[0], n_boot, seed):
        parts.append(spearman_sorted_w(w, lc[f], ys))
    rj = np.concatenate([p[0] for p in parts])
    rh = np.concatenate([p[1] for p in parts])
    why = "fewer than 2 items or a constant side"
    m = int(keep.sum())
    details = {
        "judge_spearman": _series(rj, m, why),
        "human_spearman": _series(rh, m, why),
        "dropped_missing": int((~keep).sum()),
    }
    return Probe("pointwise_length", _series(rj - rh, m, why), 0.0, details)


def _r_from_sums(n, sx, sy, sxx, syy, sxy) -> np.ndarray:
    """Pearson r from weighted sums (arrays); NaN with n < 2 or a constant side.

    Callers centre x and y first (on the sample means), which keeps the differences
    below well-conditioned; a side counts as constant when n * sxx - sx^2 is within
    1e-9 * n^2 of zero.
    """
    vx = n * sxx - sx * sx
    vy = n * syy - sy * sy
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip((n * sxy - sx * sy) / np.sqrt(vx * vy), -1.0, 1.0)
    tol = 1e-9 * n * n
    return np.where((n >= 2) & (vx > tol) & (vy > tol), r, np.nan)


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
    key = [_codes_of(np.where(ok[:, i], jm[:, i], -1)) for i in range(k)]
    key += [_codes_of(np.where(ok[:, i], hm[:, i], -1)) for i in range(k)]
    cells = _resample_cells(key if k else [np.zeros(n, np.int64)], 0, seed)
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
            rs = [_r_from_sums(n, *mom[1 + 5 * i : 6 + 5 * i]) for i in (0, 1)]
            both = np.isfinite(rs[0]) & np.isfinite(rs[1])
            sj += np.where(both, rs[0], 0)
            sh += np.where(both, rs[1], 0)
            cnt += both
        with np.errstate(invalid="ignore", divide="ignore"):
            den = np.where(cnt > 0, cnt, np.nan)
            return sj / den, sh / den

    parts = [mean_r(cells.w[:1])]
    if pairs:
        parts += [mean_r(w) for w in _draw_chunks(cells.w[0], n_boot, seed)]
    mj = np.concatenate([p[0] for p in parts])
    mh = np.concatenate([p[1] for p in parts])
    n_pairs_all = k * (k - 1) // 2
    why = "no pair of skills with a defined correlation for judge and humans"
    details = {
        "judge_mean_r": _series(mj, n, why),
        "human_mean_r": _series(mh, n, why),
        "skill_pairs": len(pairs),
        "skill_pairs_undefined": n_pairs_all - len(pairs),
    }
    return Probe("halo", _series(mj - mh, n, why), 0.0, details)
