"""Compare at a glance: the one home of the rules the comparison views share.

Pure functions, no database and no Django (the charts and the selectors call them,
templates only print what they return):

* :func:`colour` -- a value's cell colour on the cividis scale (perceptually uniform,
  readable with every common colour-vision deficiency) with the text colour of the
  higher WCAG contrast (black or white: at least 4.5:1 on every stop), and
  :func:`legend` the scale's stops for the legend under a table.
* :func:`nice_ticks` -- axis ticks at round numbers (1, 2, 2.5 or 5 times a power of
  ten) that cover a range; the charts' axes use them.
* :func:`difference_summary` -- "better than the baseline on 3 of 12 criteria, worse
  on 1, no difference shown on 8", from the 95% intervals of the paired differences:
  better when the interval lies wholly above 0, worse when wholly below, no
  difference shown when it contains 0; a difference without an interval is counted
  apart ("not computable").
* :func:`judges_grid` -- the judges-side-by-side table model: one row per criterion,
  the human ceiling first, then one cell per judge with its value, interval, n,
  colour and whether it reaches the ceiling.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# cividis (Nuñez, Anderton & Renslow 2018, as matplotlib ships it) at 9 even stops;
# values between stops are interpolated linearly in sRGB, which stays close to
# uniform because neighbouring stops are close.
CIVIDIS = (
    "#00224e",
    "#123570",
    "#3b496c",
    "#575d6d",
    "#707173",
    "#8a8779",
    "#a69d75",
    "#c4b56c",
    "#fee838",
)
BLACK, WHITE = "#000000", "#ffffff"


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    h = hex_colour.lstrip("#")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def luminance(hex_colour: str) -> float:
    """WCAG 2 relative luminance of an sRGB colour."""

    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in _rgb(hex_colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG 2 contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def scale_colour(t: float) -> str:
    """The cividis colour at `t` in [0, 1] (clamped)."""
    t = min(max(float(t), 0.0), 1.0) * (len(CIVIDIS) - 1)
    i = min(int(t), len(CIVIDIS) - 2)
    f = t - i
    a, b = _rgb(CIVIDIS[i]), _rgb(CIVIDIS[i + 1])
    mixed = (round(x + (y - x) * f) for x, y in zip(a, b, strict=True))
    return "#" + "".join(f"{c:02x}" for c in mixed)


def text_colour(background: str) -> str:
    """Black or white, whichever contrasts more with `background`."""
    return (
        BLACK if contrast(background, BLACK) >= contrast(background, WHITE) else WHITE
    )


@dataclass(frozen=True)
class Colour:
    background: str
    text: str

    @property
    def style(self) -> str:
        """The cell's CSS (`style` attribute)."""
        return f"background-color:{self.background};color:{self.text}"


def colour(value: float | None, low: float = 0.0, high: float = 1.0) -> Colour | None:
    """The cell colour of `value` on [low, high] (values outside are clamped to the
    ends); None when the value is undefined (the cell stays uncoloured)."""
    if value is None or not math.isfinite(value) or high <= low:
        return None
    bg = scale_colour((value - low) / (high - low))
    return Colour(bg, text_colour(bg))


def legend(low: float = 0.0, high: float = 1.0, steps: int = 5) -> list[dict]:
    """The legend's swatches: `steps` evenly spaced values from low to high, each
    {"value", "label", "style"}; the first label says values below it share its
    colour."""
    out = []
    for k in range(steps):
        v = low + (high - low) * k / (steps - 1)
        c = colour(v, low, high)
        label = f"{v:.2f}".rstrip("0").rstrip(".") or "0"
        out.append(
            {"value": v, "label": ("≤ " if k == 0 else "") + label, "style": c.style}
        )
    return out


def nice_step(span: float, max_ticks: int = 6) -> float:
    """The round step (1, 2, 2.5 or 5 times a power of ten) that covers `span` in
    at most `max_ticks` - 1 intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / max(max_ticks - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if m * power >= raw - 1e-12 * power:
            return m * power
    return 10 * power


def nice_ticks(low: float, high: float, max_ticks: int = 6) -> list[float]:
    """Ticks at round numbers from the last one at or below `low` to the first at or
    above `high` (at most `max_ticks` + 1 of them): (812.5, 1137.5) gives 800, 900,
    1000, 1100, 1200. A degenerate range gives its value's neighbours."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0, 1.0]
    if high < low:
        low, high = high, low
    if high == low:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    step = nice_step(high - low, max_ticks)
    start = math.floor(low / step + 1e-9) * step
    stop = math.ceil(high / step - 1e-9) * step
    n = round((stop - start) / step)
    digits = max(0, -math.floor(math.log10(step)) + 1)
    return [round(start + k * step, digits) for k in range(n + 1)]


@dataclass
class DifferenceSummary:
    """Counts of the criteria by what their paired difference's interval shows."""

    better: list[str] = field(default_factory=list)
    worse: list[str] = field(default_factory=list)
    no_difference: list[str] = field(default_factory=list)
    not_computable: list[str] = field(default_factory=list)
    noun: str = "criteria"

    @property
    def total(self) -> int:
        return len(self.better) + len(self.worse) + len(self.no_difference)

    @property
    def text(self) -> str:
        if not self.total:
            return "no difference from the baseline could be computed"
        noun = self.noun if self.total != 1 else "criterion"
        text = (
            f"better than the baseline on {len(self.better)} of {self.total} {noun}, "
            f"worse on {len(self.worse)}, no difference shown on "
            f"{len(self.no_difference)}"
        )
        if self.not_computable:
            text += f" ({len(self.not_computable)} not computable)"
        return text


def verdict(low, high, higher_is_better: bool = True) -> str | None:
    """ "better" | "worse" | "none" from a difference's 95% interval (None: no
    interval)."""
    if low is None or high is None:
        return None
    if low > 0:
        return "better" if higher_is_better else "worse"
    if high < 0:
        return "worse" if higher_is_better else "better"
    return "none"


def difference_summary(
    intervals: list[tuple[str, float | None, float | None]],
    *,
    higher_is_better: bool = True,
) -> DifferenceSummary:
    """The summary of (criterion, low, high) intervals of run minus baseline."""
    out = DifferenceSummary()
    lists = {
        "better": out.better,
        "worse": out.worse,
        "none": out.no_difference,
        None: out.not_computable,
    }
    for name, low, high in intervals:
        lists[verdict(low, high, higher_is_better)].append(name)
    return out


def _interval_text(value, ci, n, digits: int = 2) -> str:
    if value is None:
        return f"not enough data (n={n})"
    text = f"{value:.{digits}f}"
    if ci:
        text += f", 95% interval [{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"
    return f"{text}, n={n}"


def stat_parts(stat) -> tuple:
    """(value, ci, n, reason) of a statistic: a result dict {"value", "ci", "n",
    "reason"}, an object with those attributes, or None."""
    if stat is None:
        return None, None, 0, "no data"
    if isinstance(stat, dict):
        get = stat.get
    else:

        def get(name, default=None):
            return getattr(stat, name, default)

    value = get("value")
    value = float(value) if isinstance(value, int | float) else None
    if value is not None and not math.isfinite(value):
        value = None
    ci = get("ci") or None
    if ci is not None and (len(ci) != 2 or None in ci):
        ci = None
    return value, (tuple(ci) if ci else None), int(get("n") or 0), get("reason") or ""


def grid_cell(stat, *, what: str, ceiling=None, domain=(0.0, 1.0)) -> dict:
    """One cell of the grid: value, ci, n, reason, colour style, the text said on
    hover and to a screen reader (`label`), and `reaches` (True / False / None) the
    ceiling's value."""
    value, ci, n, reason = stat_parts(stat)
    c = colour(value, *domain)
    ceiling_value = stat_parts(ceiling)[0] if ceiling is not None else None
    reaches = None
    if value is not None and ceiling_value is not None:
        reaches = value >= ceiling_value
    label = f"{what}: {_interval_text(value, ci, n)}"
    if value is None and reason:
        label += f" ({reason})"
    if reaches is not None:
        label += (
            f"; {'at or above' if reaches else 'below'} the human ceiling "
            f"{ceiling_value:.2f}"
        )
    return {
        "value": value,
        "ci": ci,
        "n": n,
        "reason": reason,
        "style": c.style if c else "",
        "label": label,
        "reaches": reaches,
    }


def judges_grid(
    *,
    rows: list[tuple[str, str]],
    judges: list[tuple[int, str]],
    cell,
    ceiling,
    stat_name: str,
    ceiling_name: str,
    domain: tuple[float, float] = (0.0, 1.0),
) -> dict:
    """The judges-side-by-side table: `rows` (key, label) of criteria, `judges` (id,
    label); `cell(judge_id, row_key)` and `ceiling(row_key)` return a statistic
    (result dict, Stat or None). Each row: {"key", "label", "ceiling": cell,
    "cells": [cell + "judge_id"]}; plus the legend and the names."""
    out_rows = []
    for key, label in rows:
        ceil = ceiling(key)
        cells = []
        for jid, jlabel in judges:
            c = grid_cell(
                cell(jid, key),
                what=f"{jlabel}, {label}, {stat_name}",
                ceiling=ceil,
                domain=domain,
            )
            cells.append({**c, "judge_id": jid})
        out_rows.append(
            {
                "key": key,
                "label": label,
                "ceiling": grid_cell(
                    ceil, what=f"{label}, {ceiling_name}", domain=domain
                ),
                "cells": cells,
            }
        )
    return {
        "rows": out_rows,
        "judges": judges,
        "stat_name": stat_name,
        "ceiling_name": ceiling_name,
        "legend": legend(*domain),
        "domain": domain,
    }
