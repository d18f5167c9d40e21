"""Few-shot examples from human labels: the rules that pick them. Pure; no Django.

A judge run may show the judge k examples, each a response of the dataset's
development split with one human score of one criterion and that rater's rationale.
Two rules:

* ``random``: stratified by criterion and score level. The candidates are grouped in
  cells (criterion, score); each pass over the criteria (in rubric order) takes one
  example per criterion, from the next of its score levels (in a seeded order), so k
  examples spread over the criteria first and then over each criterion's levels.
  Within a cell the pick is seeded and prefers a score with a written rationale.
  The same candidates, k and seed give the same examples.
* ``manual``: the researcher names the responses (and optionally the criteria); each
  named response brings one human score per criterion (the first rater's, by score
  id, preferring one with a rationale).

Where the candidates come from (the development split only, no excluded rater, no
gold item, no N/A) is `judging.services.fewshot`; an example is never judged by its
run (`example_response_ids`), and `analysis` leaves it out of that run's agreement.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import asdict, dataclass

RULES = ("random", "manual")
# The field every problem with the examples themselves names.
FIELD = "few_shot_examples"


@dataclass(frozen=True)
class FewShotRequest:
    """What a researcher asked for: `k` examples by `rule` ("random": seeded by
    `seed`), or ("manual") these `response_ids`, optionally only `criteria` (keys)."""

    k: int | None = None
    rule: str = "random"
    seed: int = 0
    response_ids: tuple[int, ...] = ()
    criteria: tuple[str, ...] = ()

    @property
    def wanted(self) -> bool:
        """Whether any few-shot option was given (an empty request is no few-shot)."""
        return bool(self.k or self.response_ids or self.criteria) or (
            self.rule == "manual"
        )


@dataclass(frozen=True)
class Candidate:
    """One human score that could be an example (`score_id`: the `HumanScore` id)."""

    score_id: int
    response_id: int
    instruction_id: int
    instruction_external_id: str
    model: str
    skill: str  # the criterion's key
    score: int
    rationale: str

    def record(self) -> dict:
        """The example as `JudgeRun.few_shot["examples"]` stores it."""
        row = asdict(self)
        del row["score_id"]
        return row


def _preferred(cell: list[Candidate], rng: random.Random) -> list[Candidate]:
    """The cell shuffled (seeded), candidates with a rationale first."""
    shuffled = sorted(cell, key=lambda c: c.score_id)
    rng.shuffle(shuffled)
    return sorted(shuffled, key=lambda c: not c.rationale.strip())


def draw_stratified(
    candidates: list[Candidate], *, k: int, seed: int, skill_order: list[str]
) -> list[Candidate]:
    """k examples spread over criteria, then score levels (module doc); fewer when
    there are fewer candidates. One response appears at most once per criterion."""
    rng = random.Random(seed)
    cells: dict[str, dict[int, list[Candidate]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for c in candidates:
        cells[c.skill][c.score].append(c)
    rank = {key: i for i, key in enumerate(skill_order)}
    skills = sorted(cells, key=lambda s: (rank.get(s, len(rank)), s))
    queues: dict[str, list[list[Candidate]]] = {}
    for skill in skills:
        levels = sorted(cells[skill])
        rng.shuffle(levels)
        queues[skill] = [_preferred(cells[skill][level], rng) for level in levels]
    picked: list[Candidate] = []
    seen: set[tuple[str, int]] = set()
    level_at = dict.fromkeys(skills, 0)
    while len(picked) < k and any(any(q) for q in queues.values()):
        for skill in skills:
            if len(picked) >= k:
                break
            levels = queues[skill]
            for _ in range(len(levels)):
                cell = levels[level_at[skill] % len(levels)]
                level_at[skill] += 1
                while cell and (skill, cell[0].response_id) in seen:
                    cell.pop(0)
                if cell:
                    choice = cell.pop(0)
                    seen.add((skill, choice.response_id))
                    picked.append(choice)
                    break
    return picked


def pick_manual(
    candidates: list[Candidate], *, response_ids: list[int], criteria: list[str]
) -> list[Candidate]:
    """One candidate per named response and criterion (all its criteria when
    `criteria` is empty), in the order the responses were named, then criterion."""
    by_item: dict[tuple[int, str], list[Candidate]] = defaultdict(list)
    for c in candidates:
        if not criteria or c.skill in criteria:
            by_item[(c.response_id, c.skill)].append(c)
    picked = []
    for rid in response_ids:
        for (response_id, _), cell in sorted(by_item.items()):
            if response_id == rid:
                cell = sorted(cell, key=lambda c: (not c.rationale.strip(), c.score_id))
                picked.append(cell[0])
    return picked


def example_response_ids(few_shot: dict | None) -> set[int]:
    """The responses a run showed as examples (never judged by that run)."""
    return {int(e["response_id"]) for e in (few_shot or {}).get("examples", [])}


def example_instruction_ids(few_shot: dict | None) -> set[int]:
    """The instructions the run's examples came from."""
    return {int(e["instruction_id"]) for e in (few_shot or {}).get("examples", [])}
