"""Pairwise judging: the one rule that maps a presented verdict to the original numbering.

A pair has a fixed ORIGINAL numbering (`PreferencePair.response_1` is "1",
`response_2` is "2"). A judge or rater sees the two responses as "A" and "B" in one of
two orders:

- order ``"ab"``: response_1 is shown as A, response_2 as B;
- order ``"ba"``: response_2 is shown as A, response_1 as B.

Every label and verdict is stored and compared in the original numbering; only
`PairwiseVerdict.verdict_raw` keeps the presented "A"/"B". Pure module: no Django.
"""

from __future__ import annotations

ORDERS = ("ab", "ba")
RAW_VERDICTS = ("A", "B", "tie")
VERDICTS = ("1", "2", "tie")

_MAPPING = {
    "ab": {"A": "1", "B": "2", "tie": "tie"},
    "ba": {"A": "2", "B": "1", "tie": "tie"},
}


def map_verdict(raw: str, order: str) -> str:
    """Map a verdict in presented terms to the original numbering.

    `raw` is exactly "A", "B" or "tie" (what `PairwiseVerdict.verdict_raw` holds);
    `order` is "ab" or "ba". Returns "1", "2" or "tie"; any other `raw` (including ""
    for "no usable verdict", lower-case "a" or "Tie") returns "" - callers normalise
    their input first. Raises `ValueError` for an unknown `order`, which is a
    programming error rather than bad judge output.

    >>> map_verdict("A", "ab"), map_verdict("A", "ba"), map_verdict("tie", "ba")
    ('1', '2', 'tie')
    """
    try:
        table = _MAPPING[order]
    except KeyError:
        raise ValueError(f"order must be 'ab' or 'ba', not {order!r}") from None
    return table.get(raw, "")


def unmap_verdict(verdict: str, order: str) -> str:
    """The inverse of `map_verdict`: an original-numbering verdict in presented terms.

    "1"/"2"/"tie" -> "A"/"B"/"tie" for the given order; anything else -> "".
    Raises `ValueError` for an unknown `order`.
    """
    try:
        table = _MAPPING[order]
    except KeyError:
        raise ValueError(f"order must be 'ab' or 'ba', not {order!r}") from None
    for raw, mapped in table.items():
        if mapped == verdict:
            return raw
    return ""
