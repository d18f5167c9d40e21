"""Preference pairs made from a dataset's responses: every model pair per instruction,
a baseline model against each other model, or a seeded sample (for pairwise campaigns
and pairwise judge runs). Reuses stored pairs; a pair is ordered."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from django.db import transaction

from annotation.models import Dataset, PreferencePair, Response
from flaskapp.bounds import PAIR_SAMPLE, SEED
from flaskapp.errors import DomainError, Problem

PAIR_MODES = ("all_pairs", "baseline", "sample")


@dataclass
class PairsResult:
    """The pairs a selection covers (in a stable order) and how many were new."""

    pairs: list[PreferencePair] = field(default_factory=list)
    created: int = 0
    reused: int = 0
    # Baseline mode: instructions without a response of the baseline model.
    instructions_without_baseline: int = 0


def dataset_models(dataset: Dataset) -> set[str]:
    return set(
        Response.objects.filter(instruction__dataset=dataset)
        .values_list("model_name", flat=True)
        .distinct()
    )


def _candidates(
    *, dataset: Dataset, mode: str, baseline_model: str | None, models: list[str]
) -> tuple[list[tuple[int, int, int]], int]:
    """(instruction id, response_1 id, response_2 id) in a stable order, and the
    number of instructions skipped for want of a baseline response."""
    rows = Response.objects.filter(instruction__dataset=dataset)
    if models:
        wanted = set(models) | ({baseline_model} if baseline_model else set())
        rows = rows.filter(model_name__in=wanted)
    by_instruction: dict[int, list[tuple[str, int]]] = {}
    for instruction_id, model_name, response_id in rows.order_by(
        "instruction__position", "instruction_id", "model_name"
    ).values_list("instruction_id", "model_name", "pk"):
        by_instruction.setdefault(instruction_id, []).append((model_name, response_id))
    out: list[tuple[int, int, int]] = []
    without_baseline = 0
    for instruction_id, responses in by_instruction.items():
        if mode == "baseline":
            base = [rid for name, rid in responses if name == baseline_model]
            if not base:
                without_baseline += 1
                continue
            out.extend(
                (instruction_id, base[0], rid)
                for name, rid in responses
                if name != baseline_model
            )
        else:
            out.extend(
                (instruction_id, a[1], b[1])
                for a, b in itertools.combinations(responses, 2)
            )
    return out, without_baseline


def pair_problems(
    *,
    dataset: Dataset,
    mode: str,
    baseline_model: str | None,
    models: list[str],
    sample,
    seed,
) -> list[Problem]:
    """The parameter checks of `pairs_create_from_dataset` (each problem named)."""
    problems: list[Problem] = []
    if mode not in PAIR_MODES:
        problems.append(
            Problem(f"must be one of {', '.join(PAIR_MODES)}", field="mode")
        )
    available = dataset_models(dataset)
    unknown = [m for m in models if m not in available]
    if unknown:
        problems.append(
            Problem(
                f"not in dataset {dataset.name!r}: {', '.join(unknown)}", field="models"
            )
        )
    if mode == "baseline":
        if not baseline_model:
            problems.append(
                Problem("is required in baseline mode", field="baseline_model")
            )
        elif baseline_model not in available:
            problems.append(
                Problem(
                    f"{baseline_model!r} is not a model of dataset {dataset.name!r}",
                    field="baseline_model",
                )
            )
    elif baseline_model:
        problems.append(
            Problem("is only used in baseline mode", field="baseline_model")
        )
    if mode == "sample":
        if problem := PAIR_SAMPLE.problem(sample, "sample"):
            problems.append(problem)
    elif sample is not None:
        problems.append(Problem("is only used in sample mode", field="sample"))
    if problem := SEED.problem(seed, "seed"):
        problems.append(problem)
    return problems


def pairs_create_from_dataset(
    *,
    dataset: Dataset,
    mode: str = "all_pairs",
    baseline_model: str | None = None,
    models: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
) -> PairsResult:
    """Create the `PreferencePair` rows of a selection of the dataset's responses.

    Modes: ``all_pairs`` (every two models' responses to each instruction;
    response_1 is the model whose name sorts first), ``baseline`` (`baseline_model`
    as response_1 against each other model; instructions without a baseline response
    are counted, not paired) and ``sample`` (`sample` pairs drawn from all pairs with
    ``random.Random(seed)``: the same seed and data give the same pairs). `models`
    restricts the models paired (empty: all).

    Idempotent: a pair that already exists for the dataset, in either numbering (an
    imported pair may be stored as (B, A)), is reused as it is; concurrent calls
    create each pair once (unique constraint, conflicts ignored). No role check: the
    caller (a campaign service, a command) has done it. Raises `DomainError` naming
    the parameter for bad input; nothing is written then.
    """
    models = sorted(set(models or []))
    problems = pair_problems(
        dataset=dataset,
        mode=mode,
        baseline_model=baseline_model,
        models=models,
        sample=sample,
        seed=seed,
    )
    if problems:
        raise DomainError("no pairs were created", problems)

    candidates, without_baseline = _candidates(
        dataset=dataset, mode=mode, baseline_model=baseline_model, models=models
    )
    if mode == "sample":
        sample = int(sample or 0)  # checked above: a whole number, at least 1
        if sample > len(candidates):
            raise DomainError(
                "no pairs were created",
                [
                    Problem(
                        f"asks for {sample} pairs but the selection has only "
                        f"{len(candidates)}",
                        field="sample",
                    )
                ],
            )
        chosen = set(random.Random(seed).sample(range(len(candidates)), sample))
        candidates = [c for i, c in enumerate(candidates) if i in chosen]
    source = {"all_pairs": "all pairs", "sample": f"sample (seed {seed})"}.get(
        mode, f"baseline {baseline_model}"
    )

    def existing() -> dict[frozenset, PreferencePair]:
        return {
            frozenset((p.response_1_id, p.response_2_id)): p
            for p in PreferencePair.objects.filter(dataset=dataset)
        }

    with transaction.atomic():
        found = existing()
        missing = [
            PreferencePair(
                dataset=dataset,
                instruction_id=instruction_id,
                response_1_id=r1,
                response_2_id=r2,
                source=source[:200],
            )
            for instruction_id, r1, r2 in candidates
            if frozenset((r1, r2)) not in found
        ]
        if missing:
            PreferencePair.objects.bulk_create(
                missing, batch_size=2000, ignore_conflicts=True
            )
            found = existing()
    pairs = [found[frozenset((r1, r2))] for _i, r1, r2 in candidates]
    return PairsResult(
        pairs=pairs,
        created=len(missing),
        reused=len(pairs) - len(missing),
        instructions_without_baseline=without_baseline,
    )
