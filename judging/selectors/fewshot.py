"""Reads of a run's few-shot examples: for its prompts and for its pages."""

from __future__ import annotations

from annotation.models import Response
from judging import prompts
from judging.fewshot import example_response_ids
from judging.models import JudgeRun


def few_shot_prompt_examples(
    *, run: JudgeRun, specs: dict[str, prompts.SkillSpec]
) -> tuple[prompts.FewShotExample, ...]:
    """The run's examples as the prompt shows them (`specs`: skill key -> its spec,
    for the criterion's name and scale), in the stored order; () without examples.
    The score and rationale are those frozen on `run.few_shot`; the texts are the
    responses' and instructions' (one query)."""
    examples = (run.few_shot or {}).get("examples") or []
    if not examples:
        return ()
    texts = {
        pk: (instruction, text)
        for pk, text, instruction in Response.objects.filter(
            pk__in=example_response_ids(run.few_shot)
        ).values_list("pk", "text", "instruction__text")
    }
    out = []
    for e in examples:
        if e["response_id"] not in texts:
            continue
        spec = specs.get(e["skill"])
        instruction, text = texts[e["response_id"]]
        out.append(
            prompts.FewShotExample(
                instruction=instruction,
                response=text,
                skill_key=e["skill"],
                skill_name=spec.name if spec else e["skill"],
                score=e["score"],
                rationale=e.get("rationale") or "",
                scale=spec.scale if spec else None,
            )
        )
    return tuple(out)


def few_shot_shown(*, run: JudgeRun) -> dict | None:
    """The rule and examples a run page and the run API show; None without few-shot.
    {"rule", "k", "seed", "split_id", "criteria", "left_out", "examples": [...]}, each
    example as stored."""
    few_shot = run.few_shot or {}
    if not few_shot.get("examples"):
        return None
    note = (run.estimate or {}).get("few_shot") or {}
    return {
        "rule": few_shot.get("rule", ""),
        "k": few_shot.get("k", len(few_shot["examples"])),
        "seed": few_shot.get("seed"),
        "split_id": few_shot.get("split_id"),
        "criteria": few_shot.get("criteria") or [],
        "left_out": note.get("left_out", 0),
        "examples": list(few_shot["examples"]),
    }
