"""The few-shot block of a pointwise prompt: worked examples scored by people.

Plain data in, text out; no Django imports. The wording is this project's own. No
line of the block starts like the machine-readable lines of the item to judge
(``Skill key:``, ``Scale:``, ``Labels:``, the answer markers), so a judge, and the
fake judge server, never mistake an example for the item.

A template places the block with ``{examples}``; a template without it gets the
block just before the line that shows the request under review
(:func:`with_examples_slot`). Without examples the placeholder renders empty, so
the prompt is byte for byte what it was without few-shot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from annotation.scales import Scale

EXAMPLES_PLACEHOLDER = "{examples}"
EXAMPLES_HEADING = "### Examples scored by human reviewers"


@dataclass(frozen=True)
class FewShotExample:
    """One example: a response, and one criterion's human score and rationale."""

    instruction: str
    response: str
    skill_key: str
    skill_name: str
    score: int
    rationale: str
    scale: Scale | None = None

    @property
    def shown_score(self) -> str:
        return self.scale.label_of(self.score) if self.scale else str(self.score)


def examples_block(examples: tuple[FewShotExample, ...], skill_keys) -> str:
    """The block for a call that judges `skill_keys`: only the examples of those
    criteria, grouped by response (one response is shown once with each of its
    criteria); "" when none applies."""
    keys = set(skill_keys)
    groups: dict[tuple[str, str], list[FewShotExample]] = {}
    for ex in examples:
        if ex.skill_key in keys:
            groups.setdefault((ex.instruction, ex.response), []).append(ex)
    if not groups:
        return ""
    parts = [
        EXAMPLES_HEADING,
        "These answers were reviewed by people with the same rubric. They show how "
        "the rubric's levels are meant; they are not the answer you review, so do "
        "not score them.",
    ]
    for n, ((instruction, response), items) in enumerate(groups.items(), start=1):
        lines = [
            f"#### Example {n}",
            f"Example request:\n{instruction}",
            f"Example answer:\n{response}",
        ]
        for ex in items:
            reason = ex.rationale.strip() or "(the reviewer gave no reason)"
            lines.append(
                f"Human score for {ex.skill_name}: {ex.shown_score}\n"
                f"Reviewer's reason: {reason}"
            )
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n\n"


def with_examples_slot(user_text: str) -> str:
    """The template with an ``{examples}`` slot: as it is when it has one, else one
    placed at the start of the line that holds ``{instruction}`` (before the item to
    judge), else at the very start."""
    if EXAMPLES_PLACEHOLDER in user_text:
        return user_text
    at = user_text.find("{instruction}")
    if at < 0:
        return EXAMPLES_PLACEHOLDER + user_text
    line_start = user_text.rfind("\n", 0, at) + 1
    if line_start:
        # "### Request\n{instruction}": that heading belongs to the item, so the block
        # goes before it (after whatever precedes it on its line).
        previous = user_text[user_text.rfind("\n", 0, line_start - 1) + 1 : line_start]
        if m := re.search(r"#+ [^\n]*\n$", previous):
            line_start -= len(previous) - m.start()
    return user_text[:line_start] + EXAMPLES_PLACEHOLDER + user_text[line_start:]
