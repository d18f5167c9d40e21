"""Rubrics other than FLASK's for the judging tests: five attributes on 0-4
(HelpSteer-style, no N/A), one 1-10 score (MT-Bench style) and a yes/no question
(classification); datasets on them whose instructions list no skills (every
criterion of the rubric is judged)."""

from __future__ import annotations

import itertools

from annotation.models import Dataset, Instruction, Response
from annotation.services.rubrics import rubric_import

_names = itertools.count(1)

HELPSTEER = b"""
name: HelpSteer attributes
criteria:
  - key: helpfulness
    name: Helpfulness
    scale: {min: 0, max: 4}
    anchors: {0: "Not helpful at all.", 4: "Perfectly helpful."}
    allow_na: false
    description: How useful the response is.
  - key: correctness
    name: Correctness
    scale: {min: 0, max: 4}
    anchors: {0: "Wrong.", 2: "Partly right.", 4: "Entirely correct."}
    allow_na: false
    description: Whether every fact is right.
  - key: coherence
    name: Coherence
    scale: {min: 0, max: 4}
    anchors: {0: "Incoherent.", 4: "Perfectly clear."}
    allow_na: false
    description: How clear and consistent it is.
  - key: complexity
    name: Complexity
    scale: {min: 0, max: 4}
    anchors: {0: "Basic.", 4: "Expert."}
    allow_na: false
    description: How much expertise writing it took.
  - key: verbosity
    name: Verbosity
    scale: {min: 0, max: 4}
    anchors: {0: "Terse.", 4: "Very long."}
    allow_na: false
    description: How long it is for what was asked.
"""

MT_BENCH = b"""
name: MT-Bench single score
criteria:
  - key: overall
    name: Overall quality
    scale: {min: 1, max: 10}
    anchors: {1: "Useless.", 10: "Excellent."}
    description: The overall quality of the response.
"""

YES_NO = b"""
name: Consistency check
criteria:
  - key: consistent
    name: Consistent with the request
    kind: categorical
    allow_na: false
    labels:
      - {key: "yes", name: "Yes", description: "Every claim is supported."}
      - {key: "no", name: "No", description: "Some claim is unsupported."}
    description: Is the response consistent with what was asked?
"""


def rubric(data: bytes):
    n = next(_names)
    return rubric_import(name=f"test rubric {n}", data=data, file=f"r{n}.yaml")


def dataset_on(data: bytes, *, instructions: int = 3, models=("m-a", "m-b")):
    """A dataset on a new rubric from `data`; instructions "1".."n" with no listed
    skills, one response per model each (texts of different lengths)."""
    rub = rubric(data)
    dataset = Dataset.objects.create(name=f"set-{rub.pk}", rubric=rub)
    for i in range(instructions):
        instruction = Instruction.objects.create(
            dataset=dataset,
            external_id=str(i + 1),
            text=f"Question {i + 1}: explain something in detail.",
            reference_answer="A reference answer.",
            position=i,
        )
        for j, model in enumerate(models):
            Response.objects.create(
                instruction=instruction,
                model_name=model,
                text=f"{model} answers question {i + 1}." + " More." * (i + j),
            )
    return dataset
