"""The browse pages' shared rules: one (response, criterion)'s humans' and judge's
values on the criterion's own scale, and when they disagree.

- Humans, ordinal criterion: the mean of the submitted numeric scores (N/A is not a
  score). Categorical: the majority label (most votes; a tie is no majority).
- A judge run: the samples' median rounded half up (`analysis.stats.scale`, as the
  agreement dashboard rounds) on an ordinal criterion; the most frequent label on a
  categorical one, a tie going to the label of the earliest sample.
- Disagreement: ordinal, |judge - humans' mean| at least half the scale's range
  (`DISAGREEMENT` = 2 points on FLASK's 1-5, 2 on 0-4, 4.5 on 1-10); categorical,
  the judge's label is not the raters' majority label.
"""

from __future__ import annotations

import statistics
from collections import Counter
from types import SimpleNamespace

from analysis.stats.scale import round_half_up
from annotation.scales import FLASK_SCALE, Scale, scale_of

# On FLASK's 1-5 scale, a judge score this far (or farther) from the humans' mean is
# highlighted; other scales use the same share of their range (`threshold`).
DISAGREEMENT = 2
SCORE_MIN, SCORE_MAX = FLASK_SCALE.low, FLASK_SCALE.high
# Query-string parameters of the response filter (kept on links between pages).
FILTER_PARAMS = (
    "model",
    "run",
    "skill",
    "disagree",
    "human_min",
    "human_max",
    "judge_min",
    "judge_max",
)
# The skill fields `row_scale` reads, for `.values()` queries.
SCALE_FIELDS = (
    "kind",
    "scale_min",
    "scale_max",
    "labels",
    "allow_na",
)


def row_scale(row: dict, prefix: str = "skill__") -> Scale:
    """The `Scale` of the skill whose `SCALE_FIELDS` a `.values()` row holds."""
    return scale_of(SimpleNamespace(**{f: row[prefix + f] for f in SCALE_FIELDS}))


def threshold(scale: Scale) -> float:
    """The distance from the humans' mean at which a judge score disagrees."""
    span = SCORE_MAX - SCORE_MIN
    return DISAGREEMENT * (scale.high - scale.low) / span


def judge_item_score(
    scores: list[int | None], scale: Scale = FLASK_SCALE
) -> int | None:
    """A run's value of one (response, criterion) from its samples' stored values:
    ordinal, the median of the numeric ones rounded half up; categorical, the most
    frequent label code (a tie: the earliest sample's); None (N/A) if none has one."""
    numeric = [s for s in scores if s is not None]
    if not numeric:
        return None
    if scale.is_categorical:
        counts = Counter(numeric)
        top = max(counts.values())
        return next(s for s in numeric if counts[s] == top)
    return int(round_half_up(statistics.median(numeric)))


def human_majority(scores: list[int | None]) -> int | None:
    """The label code most raters gave (N/A not counted); None on a tie or no vote."""
    counts = Counter(s for s in scores if s is not None).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def disagrees(
    scale: Scale, judge: int | None, mean: float | None, majority: int | None
) -> bool:
    """Whether a judge's value disagrees with the humans' (see the module doc)."""
    if judge is None:
        return False
    if scale.is_categorical:
        return majority is not None and judge != majority
    return mean is not None and abs(judge - mean) >= threshold(scale)


def rater_letter(index: int) -> str:
    """0 -> "A", 25 -> "Z", 26 -> "AA": spreadsheet-style letters for pseudonyms."""
    letters = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        letters = chr(ord("A") + rest) + letters
    return letters
