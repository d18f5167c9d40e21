"""Pairwise verdicts and human votes: labels, validation and the input of one run.

Labels
------
Every label is a string in the ORIGINAL numbering of the pair (``PreferencePair.
response_1`` is ``"1"``): ``"1"``, ``"2"``, ``"tie"``; judge verdicts may also be ``""``
(no usable verdict: parse failure, call error) and ``None`` (this order was not run /
not imported). Human labels must be ``"1"``, ``"2"`` or ``"tie"``. Anything else raises
``ValueError`` naming the field and the index. A swapped-order verdict must already be
mapped back (``annotation.labels.map_verdict``).

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

LABELS = ("1", "2", "tie", "")  # codes 0, 1, 2, 3
ABSENT = 4  # code of "this order was not run"
N_CODES = 5


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
            f"{field_name}[{i}] = {show_value(arr[i])} is not a label (allowed: {ok})"
        )
    return codes


def show_value(v) -> str:
    """repr of a plain Python value (numpy scalars shown as their value)."""
    return repr(v.item() if isinstance(v, np.generic) else v)


def check_len(name: str, values, n: int, what: str) -> np.ndarray:
    """``values`` as a 1-d array of ``n`` entries, one per ``what``; else ValueError."""
    arr = np.asarray(values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"{name} must have one entry per {what} ({n}), got {arr.shape}"
        )
    return arr


def check_numeric(name: str, values, n: int, what: str) -> np.ndarray:
    """:func:`check_len`, as finite floats; else ValueError naming the index."""
    arr = check_len(name, values, n, what).astype(float)
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
        idx = pair_index(pair_id, verdict_pair, "verdict_pair")
        order = check_len("verdict_order", verdict_order, idx.size, "verdict row")
        verdict = np.asarray(verdict, dtype=object)
        check_len("verdict", verdict, idx.size, "verdict row")
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
                    f"{show_value(pair_id[idx[rows[dup]]])} in order {name!r}"
                )
            arr[idx[rows]] = verdict[rows]
        other = np.flatnonzero((order != "ab") & (order != "ba"))
        if other.size:
            i = int(other[0])
            raise ValueError(
                f"verdict_order[{i}] = {show_value(order[i])}: must be 'ab' or 'ba'"
            )
        return cls(pair_id, out["ab"], out["ba"], vote_pair, vote_label, **per_pair)


def pair_index(pair_id: np.ndarray, ref, field_name: str) -> np.ndarray:
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
        raise ValueError(
            f"{field_name}[{i}] = {show_value(ref[i])} is not a known pair_id"
        )
    return order[pos_c].astype(np.int64)


def vote_counts(pair_index: np.ndarray, codes: np.ndarray, n_pairs: int) -> np.ndarray:
    """(n_pairs, 3) human votes per pair for "1", "2", "tie" (vote codes 0, 1, 2)."""
    idx = np.asarray(pair_index, dtype=np.int64)
    codes = np.asarray(codes, dtype=np.int64)
    return np.bincount(idx * 3 + codes, minlength=3 * n_pairs).reshape(n_pairs, 3)


@dataclass
class EncodedPairs:
    """A run's pairs as codes (see :func:`encode_labels`), votes counted per pair."""

    ab: np.ndarray  # (P,) codes
    ba: np.ndarray
    h: np.ndarray  # (P, 3) human votes "1", "2", "tie"
    cat: np.ndarray  # (P,) category index
    categories: list
    length_1: np.ndarray | None
    length_2: np.ndarray | None
    own_1: np.ndarray | None
    own_2: np.ndarray | None


def encode_pairs(data: PairwiseData) -> EncodedPairs:
    """Validate and encode one run's data; ValueError names the field and index."""
    pair_id = np.asarray(data.pair_id)
    if pair_id.ndim != 1:
        raise ValueError("pair_id must be a 1-d sequence")
    p = pair_id.shape[0]
    if np.unique(pair_id).size != p:
        raise ValueError("pair_id must be unique")
    check_len("verdict_ab", np.asarray(data.verdict_ab, dtype=object), p, "pair")
    check_len("verdict_ba", np.asarray(data.verdict_ba, dtype=object), p, "pair")
    ab = encode_labels(data.verdict_ab, "verdict_ab", judge=True)
    ba = encode_labels(data.verdict_ba, "verdict_ba", judge=True)
    vote_label = np.asarray(data.vote_label, dtype=object)
    vidx = pair_index(pair_id, data.vote_pair, "vote_pair")
    check_len("vote_label", vote_label, vidx.size, "vote")
    h = vote_counts(vidx, encode_labels(vote_label, "vote_label", judge=False), p)
    if data.category is None:
        categories, cat = [""], np.zeros(p, dtype=np.int64)
    else:
        cats = check_len("category", data.category, p, "pair").astype(str)
        uniq, cat = np.unique(cats, return_inverse=True)
        categories = [str(c) for c in uniq]
    opt = {}
    for name in ("length_1", "length_2"):
        v = getattr(data, name)
        opt[name] = None if v is None else check_numeric(name, v, p, "pair")
    for name in ("own_1", "own_2"):
        v = getattr(data, name)
        opt[name] = None if v is None else check_len(name, v, p, "pair").astype(bool)
    return EncodedPairs(ab, ba, h, cat.ravel().astype(np.int64), categories, **opt)
