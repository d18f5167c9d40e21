"""Plain-text output shared by the analysis commands (`--format table`)."""

from __future__ import annotations

from analysis.selectors.agreement.result import Stat


def text_table(rows: list[list[str]]) -> list[str]:
    """The rows as aligned columns (two spaces apart), the first row a heading
    underlined with dashes; no line ends in spaces."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    lines = []
    for i, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return [line.rstrip() for line in lines]


def stat_text(r: dict | Stat | None, digits: int = 2) -> str:
    """A statistic (a :class:`Stat`, or the JSON of another command's figure) as
    "0.61 [0.55, 0.67]" or "n/a (n=1)"."""
    if isinstance(r, dict):
        r = Stat.of(r) if r else None
    if r is None or r.value is None:
        return f"n/a (n={r.n if r else 0})"
    text = f"{r.value:.{digits}f}"
    if r.ci:
        text += f" [{r.ci[0]:.{digits}f}, {r.ci[1]:.{digits}f}]"
    return text
