"""An instruction's own score rubric in a judge prompt (Prometheus / BiGGen-Bench).

Plain data in, text out; no Django imports (`annotation.scales` has none) (like `judging.prompts`, which calls
`block` after the skill rubric). An instruction without its own rubric adds nothing,
so the text of every existing prompt template stays byte-identical for it.
"""

from __future__ import annotations

from annotation.scales import instance_rubric_points

HEADING = "### This instruction's own rubric (use it together with the skill rubric)"


def block(rubric: dict | None) -> str:
    """`{"criteria": str, "scores": {"1": str, ...}}` (any integer points, listed in
    numeric order) as a prompt block ending in a blank line; "" for an empty or
    missing rubric."""
    if not rubric or not rubric.get("criteria"):
        return ""
    lines = [HEADING, f"Criteria: {rubric['criteria']}"]
    lines += [f"Score {k}: {text}" for k, text in instance_rubric_points(rubric)]
    return "\n".join(lines) + "\n\n"


def flame_text(rubric: dict | None) -> str:
    """The same rubric for the FLAMe layout's INSTRUCTIONS block ("" when absent)."""
    text = block(rubric).strip()
    return f"\n\n{text}" if text else ""
