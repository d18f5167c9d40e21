"""SVG building blocks shared by the charts: escaping, the document, text, markers,
legends and the "not enough data" chart. Colours, dashes and markers per series."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from html import escape

FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif"
TEXT = "#1c2330"
MUTED = "#5b6575"
GRID = "#d5dae1"
REFERENCE_COLOUR = "#222222"
# Okabe-Ito, without black (the reference) and yellow (too light on white).
JUDGE_COLOURS = ("#E69F00", "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9")
JUDGE_DASHES = ("8 4", "3 3", "10 3 2 3", "1.5 3", "14 4", "5 2 1 2")
JUDGE_MARKERS = ("square", "triangle", "diamond", "triangle-down", "cross", "square")
NOT_ENOUGH = "not enough data"
SCALE = (1, 5)


def esc(text) -> str:
    return escape(str(text), quote=True)


def fmt_num(x: float, digits: int = 2) -> str:
    """A coordinate or value, short: 3.50 -> 3.5, 4.00 -> 4."""
    text = f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def chart_id(*parts) -> str:
    """A stable id prefix, so several charts inlined in one page never share ids."""
    digest = hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest()
    return "c" + digest[:10]


def svg_document(
    width: float, height: float, title: str, desc: str, body: list[str]
) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {fmt_num(width)} '
        f'{fmt_num(height)}" role="img" aria-label="{esc(title)}" class="chart" '
        f'font-family="{FONT}" font-size="12" fill="{TEXT}">'
        f"<title>{esc(title)}</title><desc>{esc(desc)}</desc>"
        f'<rect class="chart-bg" x="0" y="0" width="{fmt_num(width)}" '
        f'height="{fmt_num(height)}" fill="#ffffff"/>' + "".join(body) + "</svg>"
    )


def svg_text(x, y, text, *, anchor="middle", size=12, weight="", fill="", extra=""):
    attrs = f' font-weight="{weight}"' if weight else ""
    attrs += f' fill="{fill}"' if fill else ""
    return (
        f'<text x="{fmt_num(x)}" y="{fmt_num(y)}" text-anchor="{anchor}" '
        f'font-size="{size}"{attrs}{extra}>{esc(text)}</text>'
    )


# The visible title: bold, wrapped over at most HEADING_MAX_LINES lines. Widths are
# estimated generously per character (wide bold fonts such as DejaVu Sans Bold reach
# ~0.74 em), so the title stays inside the viewBox in any common font.
HEADING_SIZE = 15
HEADING_CHAR = 0.76 * HEADING_SIZE
HEADING_LINE = 19
HEADING_Y = 26
HEADING_X = 16
HEADING_MAX_LINES = 3
# Regular text (axis labels) per character, in em.
TEXT_CHAR_EM = 0.64


def wrap_words(text: str, limit: int, max_lines: int) -> list[str]:
    """Words of `text` in lines of at most `limit` characters, at most `max_lines`
    lines; a word longer than a line, or text past the last line, ends in "…"."""
    limit = max(limit, 2)
    lines = [""]
    for word in str(text).split():
        if len(word) > limit:
            word = shorten(word, limit)
        if lines[-1] and len(lines[-1]) + 1 + len(word) > limit:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        lines = lines[: max_lines - 1] + [last[: limit - 1].rstrip() + "…"]
    return lines


NOTE_LINE = 15


def svg_note(
    x: float, y: float, text: str, right: float, size: int = 11
) -> tuple[str, float]:
    """A muted note below a chart, wrapped so that it ends before `right` (widths
    estimated at TEXT_CHAR_EM per character, as the axis labels): the <text> and
    how much lower than one line it reaches."""
    limit = int((right - x) / (TEXT_CHAR_EM * size))
    lines = wrap_words(text, limit, 4)
    spans = "".join(
        f'<tspan x="{fmt_num(x)}" y="{fmt_num(y + NOTE_LINE * k)}">{esc(line)}</tspan>'
        for k, line in enumerate(lines)
    )
    markup = (
        f'<text x="{fmt_num(x)}" y="{fmt_num(y)}" text-anchor="start" '
        f'font-size="{size}" fill="{MUTED}" class="chart-note">{spans}</text>'
    )
    return markup, NOTE_LINE * (len(lines) - 1)


def heading_lines(title: str, width: float) -> list[str]:
    limit = int((width - 2 * HEADING_X) / HEADING_CHAR)
    return wrap_words(title, limit, HEADING_MAX_LINES)


def heading_extra(title: str, width: float) -> float:
    """How much lower than a one-line title a chart's content must start."""
    return HEADING_LINE * (len(heading_lines(title, width)) - 1)


def svg_heading(title: str, width: float) -> str:
    """The visible title, wrapped to the chart's width (charts move their content
    down by `heading_extra`); a title cut short has the full text as its tooltip."""
    lines = heading_lines(title, width)
    tip = (
        f"<title>{esc(title)}</title>"
        if " ".join(lines) != " ".join(str(title).split())
        else ""
    )
    spans = "".join(
        f'<tspan x="{HEADING_X}" y="{HEADING_Y + HEADING_LINE * k}">{esc(line)}</tspan>'
        for k, line in enumerate(lines)
    )
    return (
        f'<text x="{HEADING_X}" y="{HEADING_Y}" text-anchor="start" '
        f'font-size="{HEADING_SIZE}" font-weight="600" class="chart-title">'
        f"{tip}{spans}</text>"
    )


def empty_chart(title: str, reason: str = "") -> str:
    """A small chart that says why there is nothing to draw."""
    message = reason or NOT_ENOUGH
    if not message.startswith(NOT_ENOUGH):
        message = f"{NOT_ENOUGH}: {message}"
    dy = heading_extra(title, 480)
    body = [
        svg_heading(title, 480),
        f'<rect x="16" y="{fmt_num(46 + dy)}" width="448" height="56" rx="6" '
        f'fill="#f1f3f6" stroke="{GRID}"/>',
        svg_text(240, 79 + dy, message, fill=MUTED, extra=' class="chart-empty"'),
    ]
    return svg_document(480, 118 + dy, title, message, body)


@dataclass(frozen=True)
class Series:
    """One line (radar) or bar set (ranks). ``index`` 0 is the reference (humans)."""

    label: str
    values: list  # float | None per axis / model
    index: int = 0
    notes: list = field(default_factory=list)  # extra tooltip text per value

    @property
    def colour(self) -> str:
        if self.index == 0:
            return REFERENCE_COLOUR
        return JUDGE_COLOURS[(self.index - 1) % len(JUDGE_COLOURS)]

    @property
    def dash(self) -> str:
        return "" if self.index == 0 else JUDGE_DASHES[(self.index - 1) % 6]

    @property
    def marker(self) -> str:
        return "circle" if self.index == 0 else JUDGE_MARKERS[(self.index - 1) % 6]


def svg_marker(shape: str, x: float, y: float, colour: str, tip: str, s: float = 4.5):
    title = f"<title>{esc(tip)}</title>" if tip else ""
    common = f'fill="{colour}" stroke="#ffffff" stroke-width="1" class="mark"'
    if shape == "circle":
        return f'<circle cx="{fmt_num(x)}" cy="{fmt_num(y)}" r="{fmt_num(s)}" {common}>{title}</circle>'
    if shape == "square":
        return (
            f'<rect x="{fmt_num(x - s)}" y="{fmt_num(y - s)}" width="{fmt_num(2 * s)}" '
            f'height="{fmt_num(2 * s)}" {common}>{title}</rect>'
        )
    points = {
        "triangle": [(0, -1.2), (1.1, 0.9), (-1.1, 0.9)],
        "triangle-down": [(0, 1.2), (1.1, -0.9), (-1.1, -0.9)],
        "diamond": [(0, -1.3), (1.3, 0), (0, 1.3), (-1.3, 0)],
        "cross": [
            (-0.4, -1.2), (0.4, -1.2), (0.4, -0.4), (1.2, -0.4), (1.2, 0.4),
            (0.4, 0.4), (0.4, 1.2), (-0.4, 1.2), (-0.4, 0.4), (-1.2, 0.4),
            (-1.2, -0.4), (-0.4, -0.4),
        ],
    }[shape]  # fmt: skip
    pts = " ".join(f"{fmt_num(x + dx * s)},{fmt_num(y + dy * s)}" for dx, dy in points)
    return f'<polygon points="{pts}" {common}>{title}</polygon>'


# Average width of a 12 px character of the charts' sans-serif, generous, in px.
LEGEND_CHAR_PX = 7.0


def svg_legend(
    x: float,
    y: float,
    series: list[Series],
    *,
    bars: bool = False,
    uid="",
    width: float | None = None,
    size: int = 12,
):
    """One row per series: a line sample with its dash and marker (or a bar swatch).

    `width`: the room from `x` to the chart's right edge; a label that would not fit
    is shortened with an ellipsis and keeps its whole text in a <title>. `size`: the
    labels' font size (rows are spaced to match)."""
    char = LEGEND_CHAR_PX * size / 12
    limit = None if width is None else max(8, int((width - 38) / char))
    line = max(18, size + 6)
    out = [f'<g class="legend" transform="translate({fmt_num(x)},{fmt_num(y)})">']
    for i, s in enumerate(series):
        yy = i * line
        if bars:
            out.append(bar_rect(0, yy - 6, 26, 12, s, uid))
        else:
            dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
            out.append(
                f'<line x1="0" y1="{yy}" x2="30" y2="{yy}" stroke="{s.colour}" '
                f'stroke-width="2.5"{dash}/>'
            )
            out.append(svg_marker(s.marker, 15, yy, s.colour, ""))
        label = str(s.label)
        if limit is not None and len(label) > limit:
            out.append(
                f'<text x="38" y="{fmt_num(yy + 4)}" text-anchor="start" '
                f'font-size="{size}"><title>{esc(label)}</title>'
                f"{esc(shorten(label, limit))}</text>"
            )
        else:
            out.append(svg_text(38, yy + 4, label, anchor="start", size=size))
    out.append("</g>")
    return "".join(out)


# ---------------------------------------------------------------------------------
# Radar


def bar_rect(x, y, w, h, s: Series, uid: str, tip: str = "") -> str:
    title = f"<title>{esc(tip)}</title>" if tip else ""
    fill = s.colour if s.index == 0 else f"url(#{uid}-hatch-{s.index})"
    return (
        f'<rect class="bar" x="{fmt_num(x)}" y="{fmt_num(y)}" width="{fmt_num(w)}" '
        f'height="{fmt_num(h)}" fill="{fill}" stroke="{s.colour}" stroke-width="1.2">'
        f"{title}</rect>"
    )


def hatch_defs(uid: str, series: list[Series]) -> str:
    """`<defs>` with one hatch pattern per judge series (`bar_rect` fills with it):
    bars differ by hatching as well as by colour."""
    defs = ["<defs>"]
    for s in series:
        if s.index:
            spacing = 4 + (s.index % 3)
            defs.append(
                f'<pattern id="{uid}-hatch-{s.index}" patternUnits="userSpaceOnUse" '
                f'width="{spacing}" height="{spacing}" '
                f'patternTransform="rotate({45 if s.index % 2 else -45})">'
                f'<rect width="{spacing}" height="{spacing}" fill="#ffffff"/>'
                f'<rect width="{spacing / 2}" height="{spacing}" fill="{s.colour}"/>'
                f"</pattern>"
            )
    defs.append("</defs>")
    return "".join(defs)


def fmt_value(x: float, kind: str = "share") -> str:
    """A figure as the pages show it: share 0.62 -> 62%, signed +0.12, corr 0.12,
    rating (Elo scale) 1127."""
    if kind == "share":
        return f"{100 * x:.0f}%"
    if kind == "rating":
        return f"{x:.0f}"
    if kind == "signed":
        return f"{x:+.2f}"
    return f"{x:.2f}"


def shorten(name: str, limit: int = 22) -> str:
    name = str(name)
    return name if len(name) <= limit else name[: limit - 1] + "…"
