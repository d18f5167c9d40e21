"""Training examples in the FLAMe text-to-text layout: the texts and the split rule.

Pure functions, no Django: `pointwise_input` / `pairwise_input` / `critique_input`
render what a human rater judged as one INSTRUCTIONS / CONTEXT / EVALUATION text
(through `judging.prompts.render_flame`), `pointwise_target` / `pairwise_target` /
`critique_target` the answer ("field: value" lines, in the order the EVALUATION block
lists them), and `split_for` decides an instruction's split. A criterion's texts and
targets follow its own scale (`annotation.scales.Scale`): "score: 3" on 0-4,
"label: yes" for a yes/no question (a FLAMe classification task). `analysis.exports.training` reads the rows and calls
these.
"""

from __future__ import annotations

import hashlib

from annotation.scales import FLASK_SCALE, Scale
from judging.instance_rubric import flame_text as instance_rubric_text
from judging.prompts import SkillSpec, render_critique, render_flame, skill_lines


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
_NA_CLAUSE = (
    '; answer "N/A" only when the skill cannot be judged on this request at all.'
)
_PAIRWISE_TASK = (
    "Compare the two responses to the same request and decide which one serves the "
    "user better, or whether they are equally good. Weigh correctness, soundness of "
    "reasoning, helpfulness, completeness and clarity. The order of the responses "
    "and their length are not evidence of quality."
)
_REPLY = 'Reply with the two fields below, each on its own line as "field: value".'


def _quoted(scale: Scale) -> str:
    return ", ".join(f'"{key}"' for key in scale.labels)


def scale_task(scale: Scale) -> str:
    """The task sentence for one criterion on `scale`: FLASK's own text on 1-5 with
    N/A (the examples of FLASK rubrics are unchanged), otherwise the criterion's range
    ("from 0 (worst) to 4 (best)") or its labels, and N/A only where it is allowed."""
    if scale.is_flask and scale.allow_na:
        return _POINTWISE_TASK
    end = _NA_CLAUSE if scale.allow_na else "."
    if scale.is_categorical:
        end = end.replace(
            "the skill cannot be judged", "the question cannot be answered"
        )
        return (
            "Label the response to the user's request on the one question described "
            "below, using its criteria and the description of each label. Answer with "
            f"exactly one label key out of: {_quoted(scale)}" + end
        )
    return (
        "Rate the response to the user's request on the one skill described below, "
        "using its criteria and the description of the score levels. Scores are "
        f"whole numbers from {scale.low} (worst) to {scale.high} (best)" + end
    )


def criterion_lines(
    skill: SkillSpec, scale: Scale, questions: list[str], heading: str
) -> list[str]:
    """The text block of one criterion: `judging.prompts.skill_lines` for a FLASK 1-5
    skill; otherwise name, key, criteria, then one line per anchored point ("Score 0:
    ...", points without an anchor left out) or per label ("Label yes (Yes): ..."),
    then the checklist questions."""
    if scale.is_flask:
        return skill_lines(skill, questions, heading)
    lines = [
        f"Skill: {skill.name}",
        f"Skill key: {skill.key}",
        f"Criteria: {skill.criteria.strip()}",
    ]
    if scale.is_categorical:
        for (_, text), key, name in zip(
            scale.anchors, scale.labels, scale.names, strict=True
        ):
            title = key if name == key else f"{key} ({name})"
            text = text.strip()
            lines.append(f"Label {title}: {text}" if text else f"Label {title}")
    else:
        lines += [f"Score {v}: {t.strip()}" for v, t in scale.anchors if t.strip()]
    if questions:
        lines.append(heading)
        lines += [f"- {q}" for q in questions]
    return lines


def answer_field(scale: Scale) -> str:
    """The EVALUATION field that holds the answer: "score" or, for labels, "label"."""
    return "label" if scale.is_categorical else "score"


def pointwise_input(
    *,
    instruction: str,
    reference: str | None,
    response: str,
    skill: SkillSpec,
    checklist: list | None = None,
    instance_rubric: dict | None = None,
    scale: Scale = FLASK_SCALE,
) -> str:
    """The FLAMe text for rating `response` on one criterion (`reference`: None or ""
    when the rater did not see it). `checklist` is an instruction's
    ``[{"skill": key or null, "question": str}]``; its questions for this skill and
    its general ones are shown, as the rating page shows them; `instance_rubric`, the
    instruction's own score rubric, follows the skill's (as in the judge prompt).
    `scale` is the criterion's (`annotation.scales`): the task, the criterion block
    and the answer field state it; a categorical one is a FLAMe classification task
    answered with a "label" field."""
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
        scale_task(scale)
        + "\n\n"
        + "\n".join(criterion_lines(skill, scale, own, TRAINING_CHECKLIST_HEADING))
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
    na = ', or "N/A"' if scale.allow_na else ""
    if scale.is_categorical:
        answer = f"the label for {skill.name}: one of {_quoted(scale)}{na}"
        why = "why that label fits the response"
    else:
        answer = (
            f"the score for {skill.name}: an integer from {scale.low} to "
            f"{scale.high}{na}"
        )
        why = "why the response earns that score on this skill"
    messages = render_flame(
        "classification" if scale.is_categorical else "pointwise",
        task_instructions=instructions,
        context=context,
        output_fields={answer_field(scale): answer, "rationale": why},
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


def pointwise_target(
    score: int | None, rationale: str, scale: Scale = FLASK_SCALE
) -> str:
    """ "score: 3" / "label: yes" / "score: N/A", then the rationale: the value as the
    rubric writes it (`Scale.label_of`), never a label's stored code."""
    value = scale.label_of(score)
    return f"{answer_field(scale)}: {value}\nrationale: {rationale.strip()}".rstrip()


def pairwise_target(winner: str, rationale: str) -> str:
    return f"winner: {winner}\nrationale: {rationale.strip()}".rstrip()


def critique_input(*, instruction: str, reference: str | None, response: str) -> str:
    """The FLAMe text of the open-ended critique task (`judging.prompts.render_critique`,
    the judge's own critique prompt), with the reference only when it was shown."""
    messages = render_critique(
        instruction,
        response,
        reference=reference,
        include_reference=bool((reference or "").strip()),
        layout="flame",
    )
    return messages[0]["content"]


def critique_target(text: str) -> str:
    return f"critique: {text.strip()}"
