"""Builders for sampling-campaign tests: a dataset, a judge run whose samples
disagree on some responses, and a researcher's campaign drawn from it."""

from __future__ import annotations

from annotation.models import Skill
from judging.models import JudgeRun, JudgeScore
from tests.analysis.agreement_data import make_dataset

MODELS = ("alpha", "beta")


def sampling_setup(n_instructions: int = 30, *, samples: int = 2):
    """(dataset, responses, run, skill key): every response scored on one criterion,
    with two samples that disagree by 2 points on every fifth instruction."""
    dataset, responses = make_dataset("sampling-set", n_instructions, MODELS)
    skill = (
        Skill.objects.filter(rubric=dataset.rubric, kind="ordinal")
        .order_by("position")
        .first()
        or Skill.objects.filter(rubric=dataset.rubric).first()
    )
    run = JudgeRun.objects.create(
        dataset=dataset,
        name="judge",
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
    )
    rows = []
    for (i, _), response in responses.items():
        base = 1 + (i % 3)
        scores = [base, base + 2] if i % 5 == 0 else [base, base]
        for s, score in enumerate(scores[:samples]):
            rows.append(
                JudgeScore(run=run, response=response, skill=skill,
                           sample_index=s, score=score)
            )  # fmt: skip
    JudgeScore.objects.bulk_create(rows)
    return dataset, responses, run, skill.key
