"""The human side of a comparison under each human reference (`compute.
HUMAN_REFERENCES`): the raters' scores with one value in their place per item, where
a reviewer settled a dispute (adjudicated), a rater model gave a latent score, or
the raters' rounded mean or median stands for them. Each returns `human_side`'s
(keys, counts of codes, N/A counts); the ceiling never reads these."""

from __future__ import annotations

import numpy as np

from analysis.selectors.agreement.inputs import (
    Inputs,
    as_scale_codes,
    fetch,
    human_side,
    item_keys,
    placeholders,
    quoted_table,
)
from analysis.stats.scale import mean_from_counts, median_from_counts, round_half_up
from annotation.models import Adjudication


def _adjudicated_rows(campaign_ids: list[int], low: int, high: int) -> np.ndarray:
    """`_human_rows`' shape for the campaigns' adjudications (`Adjudication`): one
    row per (response, skill) settled, the count 1 at the settled value (or N/A)."""
    width = high - low + 1
    if not campaign_ids:
        return np.zeros((0, width + 3), np.int64)
    cells = ", ".join(
        f"MAX(CASE WHEN x.score = {int(v)} THEN 1 ELSE 0 END)"
        for v in range(low, high + 1)
    )
    rows = fetch(
        f"SELECT x.response_id, x.skill_id, {cells}, "
        f"MAX(CASE WHEN x.score IS NULL THEN 1 ELSE 0 END) "
        f"FROM {quoted_table(Adjudication)} x "
        f"WHERE x.campaign_id IN ({placeholders(campaign_ids)}) "
        f"GROUP BY x.response_id, x.skill_id",
        list(campaign_ids),
    )
    return np.array(rows, dtype=np.int64).reshape(-1, width + 3)


def adjudicated_side(inp: Inputs, campaign_ids: list[int]):
    """`human_side` with the reviewers' settled values in place of the raters'
    scores where a dispute was adjudicated (the "human, adjudicated" reference):
    such an item counts as one score, the settled one. One query."""
    return settled_side(inp, _adjudicated_rows(campaign_ids, inp.low, inp.high))


def value_rows(values: dict[tuple[int, int], int], low: int, high: int) -> np.ndarray:
    """`_human_rows`' shape for one value per (response id, skill id) (a rater
    model's latent scores): the count 1 at the value."""
    width = high - low + 1
    out = np.zeros((len(values), width + 3), np.int64)
    for row, ((response_id, skill_id), value) in enumerate(sorted(values.items())):
        out[row, :2] = response_id, skill_id
        if low <= value <= high:
            out[row, 2 + value - low] = 1
    return out


def one_value_side(side, how: str):
    """A human side (`human_side`'s (keys, counts, N/A)) with each item's raters'
    scores replaced by one score: their mean (``mean``) or median (``median``),
    rounded half up to a point of the scale; an item with no numeric score keeps its
    N/A. The codes 1..W stand for the scale's points in order, so rounding a code
    rounds the score."""
    keys, counts, na = side
    if not len(keys):
        return side
    codes = np.arange(1, counts.shape[1] + 1, dtype=float)
    scored = counts.sum(axis=1) > 0
    center = np.zeros(len(keys))
    if scored.any():
        pick = mean_from_counts if how == "mean" else median_from_counts
        center[scored] = pick(counts[scored], codes)
    code = round_half_up(center).astype(np.int64)
    out = np.zeros_like(counts)
    rows = np.flatnonzero(scored)
    out[rows, code[rows] - 1] = 1
    return keys, out, np.where(scored, 0, na)


def settled_side(inp: Inputs, rows: np.ndarray):
    """`human_side` with one value in place of the raters' scores on the items of
    `rows` (`_human_rows`' shape, stored values low..high): each such item counts as
    one score, that value. Only items the raters' side has (the slice's, scored by
    raters not excluded) are replaced; none is added."""
    keys, counts, na = human_side(inp)
    if not len(rows) or not len(keys):
        return keys, counts, na
    rows = as_scale_codes(inp.skills, rows, np.zeros((0, 5), np.int64), inp.low)[0]
    key_fn, _ = item_keys(inp.skills)
    settled, first = np.unique(key_fn(rows[:, 0], rows[:, 1]), return_index=True)
    rows = rows[first]
    at = np.searchsorted(keys, settled)
    found = (at < len(keys)) & (keys[np.minimum(at, len(keys) - 1)] == settled)
    counts, na = counts.copy(), na.copy()
    counts[at[found]] = rows[found, 2:-1]
    na[at[found]] = rows[found, -1]
    return keys, counts, na
