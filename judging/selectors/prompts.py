"""The prompt editor's reads: a template rendered for one response (before anything
is paid for), and the difference between two template versions."""

from __future__ import annotations

import difflib

from annotation.models import InstructionSkill, Response, Skill, SkillKind
from flaskapp import roles, workspaces
from judging import prompts
from judging.models import PromptTemplate


def prompt_preview_for_user(*, user, template: PromptTemplate, response_id) -> dict:
    """The messages `template` sends for one response (pointwise, FLASK layout; the
    instruction's own criteria, else the ordinal criteria of the dataset's rubric;
    the reference shown), and their size in characters. Returns {"messages",
    "chars", "response"} or {"error"} for an unknown response."""
    roles.require_researcher(user)
    response = (
        Response.objects.select_related("instruction__dataset")
        .filter(pk=response_id)
        .first()
    )
    if response is None or (
        workspaces.workspace_role(user, response.instruction.dataset.workspace_id)
        is None
    ):
        # Another workspace's response does not exist for this user.
        return {"error": f"no response {response_id}"}
    instruction = response.instruction
    skills = [
        link.skill
        for link in InstructionSkill.objects.filter(instruction=instruction)
        .select_related("skill")
        .order_by("rank")
    ] or list(
        Skill.objects.filter(
            rubric_id=instruction.dataset.rubric_id, kind=SkillKind.ORDINAL
        ).order_by("position")
    )
    checklist = tuple(
        (item.get("skill"), item.get("question", ""))
        for item in (instruction.checklist or [])
    )
    inp = prompts.PointwiseInput(
        instruction=instruction.text,
        response=response.text,
        reference=instruction.reference_answer or None,
        skills=tuple(prompts.SkillSpec.from_model(s) for s in skills),
        checklist=checklist,
        instance_rubric=instruction.instance_rubric or {},
    )
    messages = prompts.render_pointwise(
        inp,
        system_text=template.system_text,
        user_text=template.user_text,
        include_reference=True,
        output_mode="json_schema",
    )
    chars = sum(len(m.get("content") or "") for m in messages)
    return {
        "messages": messages,
        "chars": chars,
        "response": response,
    }


def prompt_diff(a: PromptTemplate, b: PromptTemplate) -> list[dict]:
    """Line by line, the system and user texts of version `a` against `b`: a list of
    {"part", "lines": [(op, text)]} with op "=", "-" (only in a) or "+" (only in b)."""
    out = []
    for part in ("system_text", "user_text"):
        lines = []
        old, new = getattr(a, part).splitlines(), getattr(b, part).splitlines()
        for line in difflib.ndiff(old, new):
            op, text = line[:1], line[2:]
            if op == "?":
                continue
            lines.append(({" ": "=", "-": "-", "+": "+"}[op], text))
        out.append({"part": part, "lines": lines})
    return out
