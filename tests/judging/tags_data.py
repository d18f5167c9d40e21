"""Builders for the workbench's tag and note tests: an agreement setup whose runs are
tied to prompt versions (`workbench_setup`)."""

from __future__ import annotations

from judging.models import JudgeConfig, PromptTemplate
from tests.analysis.agreement_data import make_agreement_setup

SKILLS = ("comprehension", "factuality")


def tables(n: int = 4):
    """Raters who say 2 or 3; judge A says 5 on odd instructions, judge B says 1."""
    human, judge_a, judge_b = {}, {}, {}
    for i in range(n):
        for m in ("alpha", "beta"):
            for key in SKILLS:
                human[(i, m, key)] = [2, 3, 2]
                judge_a[(i, m, key)] = 5 if i % 2 else 2
                judge_b[(i, m, key)] = 1 if i % 2 else 3
    return human, judge_a, judge_b


def workbench_setup(researcher, name: str = "tags-set"):
    """Two runs of prompt version P (run B's config moved to another prompt since:
    its frozen settings still name P), and a third run of version P2."""
    human, judge_a, judge_b = tables()
    s = make_agreement_setup(
        researcher,
        human=human,
        judges=[judge_a, judge_b, judge_a],
        n_instructions=4,
        name=name,
    )
    prompt = PromptTemplate.objects.create(name=f"{name}-p", version=1, user_text="x")
    other = PromptTemplate.objects.create(name=f"{name}-p", version=2, user_text="y")
    config = JudgeConfig.objects.create(name=f"{name}-judge", prompt=prompt)
    moved = JudgeConfig.objects.create(name=f"{name}-moved", prompt=other)
    run_a, run_b, run_c = s.runs
    run_a.config = config
    run_a.save(update_fields=["config"])
    run_b.config = moved
    run_b.settings_snapshot = {"samples": 1, "prompt_id": prompt.pk}
    run_b.save(update_fields=["config", "settings_snapshot"])
    run_c.settings_snapshot = {"samples": 1, "prompt_id": other.pk}
    run_c.save(update_fields=["settings_snapshot"])
    s.prompt, s.other_prompt = prompt, other
    return s
