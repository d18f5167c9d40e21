"""Baseline "judges" that need no LLM: ROUGE-L against the reference, and length.

These are floors for comparison, not judges. A useful LLM judge should agree with
human raters clearly better than these do; when it does not, the judge adds nothing
that word overlap or verbosity would not already give. Pure functions, no Django.
"""

from __future__ import annotations

import re

import numpy as np

# Word tokens; \w keeps letters of every script, so non-English text is not dropped
# (the `rouge_score` package keeps only [a-z0-9] and would score such text 0).
_TOKEN_RE = re.compile(r"\w+")
MAX_TOKENS = 20_000


def tokenize(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())[:MAX_TOKENS]


def lcs_length(a: list[str], b: list[str]) -> int:
    """Length of the longest common subsequence of two token lists.

    Bit-parallel (Allison-Dix / Hyyrö): one big-integer step per token of the longer
    list, so two 2,000-token texts take about a millisecond instead of 4 million
    Python-level DP cells.
    """
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for token in a:
        u = v & masks.get(token, 0)
        v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def rouge_l_f1(reference: str, response: str) -> float:
    """ROUGE-L F1 (LCS of lowercase word tokens; 0.0 when either side is empty)."""
    ref, hyp = tokenize(reference), tokenize(response)
    if not ref or not hyp:
        return 0.0
    lcs = lcs_length(ref, hyp)
    if lcs == 0:
        return 0.0
    precision, recall = lcs / len(hyp), lcs / len(ref)
    return 2 * precision * recall / (precision + recall)


def score_from_unit(x: float, cuts: tuple[float, ...] = (0.1, 0.2, 0.35, 0.5)) -> int:
    """Map x in [0, 1] to 1-5: one point per cut that x reaches (NaN counts as 0)."""
    if len(cuts) != 4 or any(lo >= hi for lo, hi in zip(cuts, cuts[1:], strict=False)):
        raise ValueError("cuts must be four increasing thresholds")
    if x != x:  # NaN
        return 1
    return 1 + sum(1 for cut in cuts if x >= cut)


def length_scores(lengths: list[int]) -> list[int]:
    """1-5 by the quintile of each length within the list (the dataset).

    A length's position is its mid-rank: (number shorter + half the number equal) / n.
    Equal lengths therefore always get equal scores, whatever their order, and a list
    of identical lengths scores 3 throughout.
    """
    if not lengths:
        return []
    values = np.asarray(lengths, dtype=float)
    ordered = np.sort(values)
    shorter = np.searchsorted(ordered, values, side="left")
    not_longer = np.searchsorted(ordered, values, side="right")
    position = (shorter + (not_longer - shorter) / 2) / len(values)
    return [int(s) for s in 1 + np.minimum(4, np.floor(position * 5)).astype(int)]


def response_length(text: str) -> int:
    """The length the length baseline uses: the number of word tokens."""
    return len(_TOKEN_RE.findall(text))


def on_scale(score: int | None, scale) -> int | None:
    """A baseline's 1-5 `score` placed on an ordinal `annotation.scales.Scale` (1 ->
    its low point, 5 -> its high point, linearly, rounded); None stays None (N/A)."""
    if score is None or scale is None or scale.is_flask:
        return score
    return scale.low + round((score - 1) * (scale.high - scale.low) / 4)
