"""Human judgments of a dataset as autorater training examples (FLAMe text-to-text).

One example per human judgment, as a dict that becomes one JSON line::

    {"input": <INSTRUCTIONS / CONTEXT / EVALUATION text>,
     "target": "score: 4\\nrationale: ..."  or  "winner: A\\nrationale: ...",
     "task_kind": "pointwise" | "pairwise",
     "split": "train" | "validation",
     "source": {dataset, instruction_external_id, response ids, campaign, assignment or
                preference id, rater: an anonymised stable id, ...}}

Kinds exported:

- pointwise: one example per (submitted assignment, skill) with a score or N/A
  (`HumanScore`). The input shows what the rater saw: the request, the reference
  answer when the campaign showed it, the response, and that one skill's criteria,
  score descriptions and checklist questions.
- pairwise: one example per `HumanPreference` (imported or from a campaign). Response
  1 is always shown as A and response 2 as B (the pair's ORIGINAL numbering), whatever
  order a rater saw; the target's winner is the stored label in those terms.
- classification and critique: the app stores no human classification labels or
  human critiques (there is no such data model; only judges produce them), so they
  cannot be exported. Asking for them is refused with a message saying so.

Split: a stable hash of (seed, instruction external id) puts every example of one
instruction in the same split, so no instruction is in both.

De-duplication (`dedupe`):

- "none": every judgment is one line. Memory stays flat (rows are read in chunks).
- "exact": a line whose (input, target) was already written is dropped;
  `source.merged` counts the judgments the kept line stands for.
- "input": one line per input. Its target is the majority label's (score or winner;
  the rationale comes with it); a tie between labels goes to the label given first
  (lowest row id), not to a fixed label, so ties add no position or score bias. The
  kept line is that label's first judgment; `source.merged` counts all judgments
  with this input and `source.votes` counts them per label.
  Both de-duplicating modes read the rows twice (first to count, then to write) and
  keep a 16-byte digest per distinct input in memory, not the examples. A judgment
  added between the two reads is left out of that export.

The texts and the split rule are pure functions in `analysis.exports.examples`. Read-only;
no permission check (the researcher-only API and the CLI do it). Lives in judging
because it renders with `judging.prompts` (annotation never imports judging).
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from django.utils.crypto import salted_hmac

from analysis.exports.examples import (
    pairwise_input,
    pairwise_target,
    pointwise_input,
    pointwise_target,
    split_for,
)
from annotation.errors import DomainError, Problem
from annotation.labels import unmap_verdict
from annotation.models import Assignment, Dataset, HumanPreference, HumanScore, Skill
from judging.prompts import SkillSpec

KINDS = ("pointwise", "pairwise")
# Task kinds of the FLAMe layout that have no human data in this app.
UNSUPPORTED_KINDS = {
    "classification": "the app stores no human classification labels (only judges "
    "produce them), so there is nothing to export",
    "critique": "the app stores no human critiques, so there is nothing to export",
}
DEDUPE_MODES = ("none", "exact", "input")
SPLITS = ("train", "validation")
DEFAULT_VALIDATION_FRACTION = 0.1
CHUNK_SIZE = 2000

_RATER_SALT = "analysis.exports.training.rater"


@dataclass(frozen=True)
class TrainingOptions:
    """What to export; build it with `training_options_parse` from user input."""

    kinds: tuple[str, ...] = KINDS
    validation_fraction: float = DEFAULT_VALIDATION_FRACTION
    seed: int = 0
    dedupe: str = "none"


def training_options_parse(
    *,
    kinds: str | list[str] | None = None,
    validation_fraction: str | float | None = None,
    seed: str | int | None = None,
    dedupe: str | None = None,
) -> TrainingOptions:
    """Check user input (query parameters or CLI flags) and return the options.

    `kinds` is a comma-separated string or a list of them ("pointwise,pairwise");
    absent or empty values take the defaults (all kinds, 0.1, seed 0, no dedupe). Raises `DomainError` listing every bad value,
    each `Problem` naming its parameter (`kinds`, `validation_fraction`, `seed`,
    `dedupe`).
    """
    problems: list[Problem] = []
    chosen: tuple[str, ...] = KINDS
    if not isinstance(kinds, str) and kinds is not None:
        kinds = ",".join(str(k) for k in kinds)  # ?kinds=a&kinds=b
    if kinds:
        names = [n.strip() for n in kinds.split(",") if n.strip()]
        for name in names:
            if name in UNSUPPORTED_KINDS:
                problems.append(
                    Problem(f"{name!r}: {UNSUPPORTED_KINDS[name]}", field="kinds")
                )
            elif name not in KINDS:
                problems.append(
                    Problem(
                        f"unknown kind {name!r}; use {', '.join(KINDS)}",
                        field="kinds",
                    )
                )
        if not names:
            problems.append(Problem("name at least one kind", field="kinds"))
        chosen = tuple(k for k in KINDS if k in names)
    fraction = DEFAULT_VALIDATION_FRACTION
    if validation_fraction is not None and validation_fraction != "":
        try:
            fraction = float(validation_fraction)
        except (TypeError, ValueError):
            fraction = math.nan
        if not 0.0 <= fraction <= 1.0:  # also refuses NaN
            problems.append(
                Problem(
                    f"must be a number from 0 to 1, not {validation_fraction!r}",
                    field="validation_fraction",
                )
            )
    seed_value = 0
    if seed is not None and seed != "":
        try:
            seed_value = int(seed)
        except (TypeError, ValueError):
            problems.append(
                Problem(f"must be a whole number, not {seed!r}", field="seed")
            )
    mode = "none" if dedupe is None or dedupe == "" else dedupe
    if mode not in DEDUPE_MODES:
        problems.append(
            Problem(
                f"must be one of {', '.join(DEDUPE_MODES)}, not {dedupe!r}",
                field="dedupe",
            )
        )
    if problems:
        raise DomainError("Cannot export training data with these options", problems)
    return TrainingOptions(
        kinds=chosen, validation_fraction=fraction, seed=seed_value, dedupe=mode
    )


# --- Raters -----------------------------------------------------------------------------


def rater_anon_id(
    *, dataset_id: int, user_id: int | None = None, voter: str = ""
) -> str | None:
    """A stable pseudonym for a rater (a user) or an imported voter id, per dataset.

    The first 12 hex digits of an HMAC-SHA256 of (dataset id, user id or voter id),
    keyed with the project's SECRET_KEY: the same person gets the same id in every
    export of one dataset (and in the preference export), different ids in different
    datasets, and, unlike a bare hash of a small integer, the id cannot be reversed
    by hashing every candidate user id. None when there is nobody to name (an
    imported vote without a voter id).
    """
    if user_id is not None:
        value = f"{dataset_id}:user:{user_id}"
    elif voter:
        value = f"{dataset_id}:voter:{voter}"
    else:
        return None
    return salted_hmac(_RATER_SALT, value, algorithm="sha256").hexdigest()[:12]


# --- Reading the judgments --------------------------------------------------------------


@dataclass
class _Example:
    key: tuple[str, int]  # (kind, row id): names the judgment across the two passes
    label: str  # the score or winner, for majority votes
    instruction_key: str
    input: str
    target: str
    kind: str
    source: dict


def _pointwise_examples(dataset: Dataset) -> Iterator[_Example]:
    skills: dict[int, SkillSpec] = {
        s.pk: SkillSpec.from_model(s)
        for s in Skill.objects.filter(rubric_id=dataset.rubric_id)
    }
    rows = (
        HumanScore.objects.filter(
            assignment__response__instruction__dataset=dataset,
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .order_by("pk")
        .values_list(
            "pk",
            "skill_id",
            "score",
            "rationale",
            "assignment_id",
            "assignment__campaign_id",
            "assignment__campaign__show_reference",
            "assignment__rater_id",
            "assignment__response_id",
            "assignment__response__text",
            "assignment__response__instruction__external_id",
            "assignment__response__instruction__text",
            "assignment__response__instruction__reference_answer",
            "assignment__response__instruction__checklist",
        )
        .iterator(CHUNK_SIZE)
    )
    for (
        pk,
        skill_id,
        score,
        rationale,
        assignment_id,
        campaign_id,
        show_reference,
        rater_id,
        response_id,
        response_text,
        external_id,
        instruction_text,
        reference,
        checklist,
    ) in rows:
        skill = skills.get(skill_id)
        if skill is None:  # a skill of another rubric: read it once
            skill = skills[skill_id] = SkillSpec.from_model(
                Skill.objects.get(pk=skill_id)
            )
        label = "N/A" if score is None else str(score)
        yield _Example(
            key=("pointwise", pk),
            label=label,
            instruction_key=external_id,
            input=pointwise_input(
                instruction=instruction_text,
                reference=reference if show_reference else None,
                response=response_text,
                skill=skill,
                checklist=checklist,
            ),
            target=pointwise_target(score, rationale),
            kind="pointwise",
            source={
                "dataset": dataset.name,
                "instruction_external_id": external_id,
                "response_id": response_id,
                "skill": skill.key,
                "campaign_id": campaign_id,
                "assignment_id": assignment_id,
                "rater": rater_anon_id(dataset_id=dataset.pk, user_id=rater_id),
            },
        )


def _pairwise_examples(dataset: Dataset) -> Iterator[_Example]:
    rows = (
        HumanPreference.objects.filter(pair__dataset=dataset)
        .order_by("pk")
        .values_list(
            "pk",
            "pair_id",
            "label",
            "rationale",
            "origin",
            "voter",
            "rater_id",
            "assignment_id",
            "assignment__campaign_id",
            "assignment__campaign__show_reference",
            "pair__category",
            "pair__response_1_id",
            "pair__response_1__text",
            "pair__response_2_id",
            "pair__response_2__text",
            "pair__instruction__external_id",
            "pair__instruction__text",
            "pair__instruction__reference_answer",
        )
        .iterator(CHUNK_SIZE)
    )
    for (
        pk,
        pair_id,
        label,
        rationale,
        origin,
        voter,
        rater_id,
        assignment_id,
        campaign_id,
        show_reference,
        category,
        response_1_id,
        response_1_text,
        response_2_id,
        response_2_text,
        external_id,
        instruction_text,
        reference,
    ) in rows:
        # Response 1 is shown as A: the original numbering in presented terms.
        winner = unmap_verdict(label, "ab")
        yield _Example(
            key=("pairwise", pk),
            label=winner,
            instruction_key=external_id,
            input=pairwise_input(
                instruction=instruction_text,
                # Imported votes: nobody knows what the voter saw; no reference.
                reference=reference if show_reference else None,
                response_a=response_1_text,
                response_b=response_2_text,
            ),
            target=pairwise_target(winner, rationale),
            kind="pairwise",
            source={
                "dataset": dataset.name,
                "instruction_external_id": external_id,
                "response_ids": [response_1_id, response_2_id],
                "pair_id": pair_id,
                "category": category,
                "origin": origin,
                "campaign_id": campaign_id,
                "assignment_id": assignment_id,
                "preference_id": pk,
                "rater": rater_anon_id(
                    dataset_id=dataset.pk, user_id=rater_id, voter=voter
                ),
            },
        )


def _examples(dataset: Dataset, kinds: tuple[str, ...]) -> Iterator[_Example]:
    if "pointwise" in kinds:
        yield from _pointwise_examples(dataset)
    if "pairwise" in kinds:
        yield from _pairwise_examples(dataset)


# --- De-duplication ---------------------------------------------------------------------


def _digest(*parts: str) -> bytes:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8"))
        h.update(b"\x00")
    return h.digest()[:16]


@dataclass
class _Group:
    """The judgments sharing one de-duplication key (first pass)."""

    count: int = 0
    # label -> [votes, key of its first judgment, position of that judgment]
    labels: dict | None = None
    first: tuple[str, int] | None = None

    def add(self, example: _Example, position: int, by_label: bool) -> None:
        self.count += 1
        if self.first is None:
            self.first = example.key
        if by_label:
            if self.labels is None:
                self.labels = {}
            entry = self.labels.get(example.label)
            if entry is None:
                self.labels[example.label] = [1, example.key, position]
            else:
                entry[0] += 1

    def chosen(self) -> tuple[str, int]:
        if self.labels is None:
            return self.first  # type: ignore[return-value]
        # Most votes; among equals, the label given first.
        _, key, _ = min(self.labels.values(), key=lambda e: (-e[0], e[2]))
        return key


def _dedupe_key(example: _Example, mode: str) -> bytes:
    if mode == "exact":
        return _digest(example.input, example.target)
    return _digest(example.input)


def training_examples(
    *, dataset: Dataset, options: TrainingOptions, tally: Counter | None = None
) -> Iterator[dict]:
    """Yield the training examples of `dataset` (see the module docstring).

    Order: pointwise (by score row id), then pairwise (by preference id); with
    de-duplication, each kept line where its first judgment was. `tally`, if given,
    is incremented per written line by (kind, split) and by ("merged", kind) for
    the judgments folded into another line.

    Read-only; one query per kind (two with de-duplication), each read in chunks of
    `CHUNK_SIZE` rows (a server-side cursor on PostgreSQL), plus one for the
    rubric's skills.
    """
    mode = options.dedupe
    groups: dict[bytes, _Group] = {}
    if mode != "none":
        for position, example in enumerate(_examples(dataset, options.kinds)):
            key = _dedupe_key(example, mode)
            group = groups.get(key)
            if group is None:
                group = groups[key] = _Group()
            group.add(example, position, by_label=mode == "input")
        chosen = {group.chosen(): key for key, group in groups.items()}
    for example in _examples(dataset, options.kinds):
        source = example.source
        if mode != "none":
            group_key = chosen.get(example.key)
            if group_key is None or _dedupe_key(example, mode) != group_key:
                if tally is not None:
                    tally[("merged", example.kind)] += 1
                continue
            group = groups[group_key]
            source = {**source, "merged": group.count}
            if group.labels is not None:
                source["votes"] = {
                    label: entry[0] for label, entry in group.labels.items()
                }
        split = split_for(
            example.instruction_key,
            seed=options.seed,
            validation_fraction=options.validation_fraction,
        )
        if tally is not None:
            tally[(example.kind, split)] += 1
        yield {
            "input": example.input,
            "target": example.target,
            "task_kind": example.kind,
            "split": split,
            "source": source,
        }


def training_summary(dataset: Dataset, options: TrainingOptions, tally: Counter) -> str:
    """One line: examples per kind and split (and merged judgments when de-duplicating)."""
    parts = []
    for kind in options.kinds:
        counts = ", ".join(f"{split} {tally[(kind, split)]}" for split in SPLITS)
        merged = tally[("merged", kind)]
        extra = f", {merged} merged away" if options.dedupe != "none" else ""
        parts.append(f"{kind}: {counts}{extra}")
    total = sum(tally[(k, s)] for k in options.kinds for s in SPLITS)
    return (
        f"{total} training examples of {dataset.name} "
        f"(dedupe {options.dedupe}, validation fraction "
        f"{options.validation_fraction:g}, seed {options.seed}): " + "; ".join(parts)
    )
