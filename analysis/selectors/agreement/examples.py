"""Few-shot examples never count in the agreement of the run that showed them.

A run whose prompt showed human-scored examples (`JudgeRun.few_shot`, drawn from the
development split: `judging.services.fewshot`) would be scored against labels it
was given. So its scores on an example response are dropped from its judge rows,
and no test-split figure is computed for a run with an example from a test
instruction (the held-out labels would have leaked into its prompt).
"""

from __future__ import annotations

import numpy as np

from analysis.selectors.agreement.sources import AgreementError
from judging.fewshot import example_instruction_ids, example_response_ids
from judging.models import EvalSplitMember, JudgeRun


def judge_rows_without_examples(
    judge: np.ndarray, run_ids, slice_dim: str, slice_value: str
) -> np.ndarray:
    """`judge` rows (run, response, skill, sample, score) without each run's own
    example responses. On the test split (slice "split" = "test") raises
    AgreementError naming a run whose examples came from a test instruction. One
    query (two on the test split when a run has examples)."""
    few_shots = {
        pk: few_shot
        for pk, few_shot in JudgeRun.objects.filter(pk__in=list(run_ids))
        .exclude(few_shot={})
        .values_list("pk", "few_shot")
        if example_response_ids(few_shot)
    }
    if not few_shots:
        return judge
    if slice_dim == "split" and slice_value == "test":
        test = set(
            EvalSplitMember.objects.filter(
                part=EvalSplitMember.Part.TEST,
                instruction_id__in=set().union(
                    *(example_instruction_ids(f) for f in few_shots.values())
                ),
            ).values_list("instruction_id", flat=True)
        )
        leaked = sorted(
            pk for pk, f in few_shots.items() if example_instruction_ids(f) & test
        )
        if leaked:
            raise AgreementError(
                f"run {leaked[0]}: its few-shot examples include an instruction of the "
                "test split, so its test-split agreement would score it on labels it "
                "was shown; evaluate it on the development split, or make the run "
                "again with examples from the development split"
            )
    if not len(judge):
        return judge
    drop = np.zeros(len(judge), dtype=bool)
    for pk, few_shot in few_shots.items():
        ids = np.array(sorted(example_response_ids(few_shot)), dtype=np.int64)
        drop |= (judge[:, 0] == pk) & np.isin(judge[:, 1], ids)
    return judge[~drop] if drop.any() else judge
