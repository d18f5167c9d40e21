"""Training examples in the FLAMe text-to-text layout: the texts and the split rule.

Pure functions, no Django: `pointwise_input` / `pairwise_input` render what a human
rater judged as one INSTRUCTIONS / CONTEXT / EVALUATION text (through
`judging.prompts.render_flame`), `pointwise_target` / `pairwise_target` the answer
("field: value" lines, in the order the EVALUATION block lists them), and `split_for`
decides an instruction's split. `analysis.exports.training` reads the rows and calls
these.
"""

from __future__ import annotations

import hashlib

from judging.instance_rubric import flame_text as instance_rubric_text
from judging.prompts import SkillSpec, render_flame, skill_lines


def split_for(instruction_key: str, *, seed: int, validation_fraction: float) -> str:
    """The split of an instruction ("train" or "validation"), from a hash of (seed, key).

    The same (seed, key) always gives the same split, on any machine and database;
    about `validation_fraction` of the instructions go to validation (0: none, 1:
    all).
    """
    digest = hashlib.sha256(f"{seed}\x1f{instruction_key}".encode()).digest()
    unit = int.from_bytes(digest[:8], "big") / 2**64
    return "validation" if unit < validation_fraction else "train"


TRAINING_CHECKLIST_HEADING = "Checklist for this skill (questions the rater was shown):"
_POINTWISE_TASK = (
    "Rate the response to the user's request on the one skill described below, "
    "using its criteria and the description of each score level. Scores are whole "
    'numbers from 1 (worst) to 5 (best); answer "N/A" only when the skill cannot be '
    "judged on this request at all."
)
_PAIRWISE_TASK = (
    "Compare the two responses to the same request and decide which one serves the "
    "user better, or whether they are equally good. Weigh correctness, soundness of "
    "reasoning, helpfulness, completeness and clarity. The order of the responses "
    "and their length are not evidence of quality."
)
_REPLY = 'Reply with the two fields below, each on its own line as "field: value".'


def pointwise_input(
    *,
    instruction: str,
    reference: str | None,
    response: str,
    skill: SkillSpec,
    checklist: list | None = None,
    instance_rubric: dict | None = None,
) -> str:
    """The FLAMe text for rating `response` on one skill (`reference`: None or ""
    when the rater did not see it). `checklist` is an instruction's
    ``[{"skill": key or null, "question": str}]``; its questions for this skill and
    its general ones are shown, as the rating page shows them; `instance_rubric`, the
    instruction's own score rubric, follows the skill's (as in the judge prompt)."""
    own: list[str] = []
    general: list[str] = []
    for item in checklist or []:
        if not isinstance(item, dict):
            continue
        question = str(item.get("question") or "").strip()
        if not question:
            continue
        key = item.get("skill")
        if not key:
            general.append(question)
        elif key == skill.key:
            own.append(question)
    instructions = (
        _POINTWISE_TASK
        + "\n\n"
        + "\n".join(skill_lines(skill, own, TRAINING_CHECKLIST_HEADING))
        + instance_rubric_text(instance_rubric)
        + "\n\n"
    )
    if general:
        instructions += (
            "General checklist:\n" + "\n".join(f"- {q}" for q in general) + "\n\n"
        )
    instructions += _REPLY
    context = {"request": instruction}
    if (reference or "").strip():
        context["reference answer"] = reference or ""
    context["response"] = response
    messages = render_flame(
        "pointwise",
        task_instructions=instructions,
        context=context,
        output_fields={
            "score": f'the score for {skill.name}: an integer from 1 to 5, or "N/A"',
            "rationale": "why the response earns that score on this skill",
        },
    )
    return messages[0]["content"]


def pairwise_input(
    *, instruction: str, reference: str | None, response_a: str, response_b: str
) -> str:
    """The FLAMe text for comparing two responses shown as A and B (ties allowed)."""
    context = {"request": instruction}
    if (reference or "").strip():
        context["reference answer"] = reference or ""
    context["response A"] = response_a
    context["response B"] = response_b
    messages = render_flame(
        "pairwise",
        task_instructions=f"{_PAIRWISE_TASK}\n{_REPLY}",
        context=context,
        output_fields={
            "winner": '"A", "B", or "tie" when neither is better',
            "rationale": "a brief comparison of the two responses",
        },
    )
    return messages[0]["content"]


def pointwise_target(score: int | None, rationale: str) -> str:
    label = "N/A" if score is None else str(score)
    return f"score: {label}\nrationale: {rationale.strip()}".rstrip()


def pairwise_target(winner: str, rationale: str) -> str:
    return f"winner: {winner}\nrationale: {rationale.strip()}".rstrip()
