"""The one cost rule: calls, tokens and cost a judge run would need, before any call.

Input tokens are estimated from the text lengths of what the calls will carry (at
`CHARS_PER_TOKEN`), plus the prompt around it; output tokens from the kind's typical
answer, capped by the config's `max_tokens`; the cost is both at the config's prices
per million tokens. Every create service stores `judge_run_estimate`'s result on the
run, and the run form shows the same function's result for its current values, over
the same items (`judging.selectors.runs` chooses them), so form and run page agree.
Baseline judges cost nothing.
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import QuerySet, Sum
from django.db.models.functions import Length

from annotation.models import Dataset, Instruction, PreferencePair, Response
from judging.fewshot import FewShotRequest, example_response_ids
from judging.models import JudgeConfig, JudgeRun
from judging.selectors.runs import run_instructions, run_pairs, run_responses
from judging.services.fewshot import (
    few_shot_estimate_note,
    few_shot_examples_draw,
    few_shot_prompt_chars,
)

CHARS_PER_TOKEN = 4
# Pointwise: the rubric of each scored skill (criteria and anchors) and a feedback
# paragraph with the score per skill; FLASK scores three skills per instruction.
SKILLS_PER_RESPONSE = 3
RUBRIC_CHARS_PER_SKILL = 900
OUTPUT_TOKENS_PER_SKILL = 90
DEFAULT_TEMPLATE_CHARS = 1500  # a config without a template (the built-in prompt)
# Pairwise: the prompt around the two answers; a short comparison and the verdict.
PAIRWISE_PROMPT_CHARS = 1200
PAIRWISE_OUTPUT_TOKENS = 150
# Critique: the task text around the request, reference and answer; a critique of a
# few paragraphs.
CRITIQUE_PROMPT_CHARS = 900
CRITIQUE_OUTPUT_TOKENS = 350
# Metadata / checklist: definitions of domains, levels and skills; a short answer.
ANNOTATION_PROMPT_CHARS = 6000
ANNOTATION_OUTPUT_TOKENS = 300


def _estimate(
    config: JudgeConfig, *, calls: int, items: int, input_chars: int, output: int
) -> dict:
    """`input_chars` over all items, once per sample; `output` tokens per call."""
    if config.is_baseline or not items:
        input_tokens = output_tokens = 0
    else:
        input_tokens = input_chars // CHARS_PER_TOKEN * (calls // items)
        output_tokens = min(config.max_tokens, output) * calls
    cost = (
        Decimal(input_tokens) * config.price_input_per_m
        + Decimal(output_tokens) * config.price_output_per_m
    ) / Decimal(1_000_000)
    return {
        "calls": calls,
        "items": items,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": str(cost.quantize(Decimal("0.0001"))),
    }


def _response_chars(config: JudgeConfig, responses: QuerySet[Response]) -> int:
    """The characters of the responses, their requests and (when the config sends
    them) the reference answers."""
    sums = responses.aggregate(
        # Aliases must not shadow the model's own fields (`instruction`).
        response_chars=Sum(Length("text")),
        instruction_chars=Sum(Length("instruction__text")),
        reference_chars=Sum(Length("instruction__reference_answer")),
    )
    chars = (sums["response_chars"] or 0) + (sums["instruction_chars"] or 0)
    if config.include_reference:
        chars += sums["reference_chars"] or 0
    return chars


def pointwise_estimate(
    *, config: JudgeConfig, responses: QuerySet[Response], few_shot_chars: int = 0
) -> dict:
    """One call per response and sample; `few_shot_chars`: what the run's few-shot
    examples add to every prompt (`judging.services.fewshot.few_shot_prompt_chars`)."""
    n = responses.count()
    chars = _response_chars(config, responses)
    template = (
        len(config.prompt.user_text) + len(config.prompt.system_text)
        if config.prompt
        else DEFAULT_TEMPLATE_CHARS
    )
    chars += n * (
        template + SKILLS_PER_RESPONSE * RUBRIC_CHARS_PER_SKILL + few_shot_chars
    )
    return _estimate(
        config,
        calls=n * config.samples,
        items=n,
        input_chars=chars,
        output=SKILLS_PER_RESPONSE * OUTPUT_TOKENS_PER_SKILL,
    )


def critique_estimate(*, config: JudgeConfig, responses: QuerySet[Response]) -> dict:
    """One call per response and sample: the critique task (no rubric) and a critique
    of `CRITIQUE_OUTPUT_TOKENS`."""
    n = responses.count()
    chars = _response_chars(config, responses) + n * CRITIQUE_PROMPT_CHARS
    return _estimate(
        config,
        calls=n * config.samples,
        items=n,
        input_chars=chars,
        output=CRITIQUE_OUTPUT_TOKENS,
    )


def pairwise_estimate(*, config: JudgeConfig, pairs: QuerySet[PreferencePair]) -> dict:
    """Two calls (both orders) per pair and sample."""
    n = pairs.count()
    sums = pairs.aggregate(
        one_chars=Sum(Length("response_1__text")),
        two_chars=Sum(Length("response_2__text")),
        instruction_chars=Sum(Length("instruction__text")),
    )
    chars = sum(v or 0 for v in sums.values()) + n * PAIRWISE_PROMPT_CHARS
    return _estimate(
        config,
        calls=2 * n * config.samples,
        items=n,
        input_chars=chars,
        output=PAIRWISE_OUTPUT_TOKENS,
    )


def annotation_estimate(
    *, config: JudgeConfig, instructions: QuerySet[Instruction]
) -> dict:
    """One call per instruction (metadata and checklist runs take one sample)."""
    n = instructions.count()
    chars = instructions.aggregate(c=Sum(Length("text")))["c"] or 0
    return _estimate(
        config,
        calls=n,
        items=n,
        input_chars=chars + n * ANNOTATION_PROMPT_CHARS,
        output=ANNOTATION_OUTPUT_TOKENS,
    )


def judge_run_estimate(
    *,
    config: JudgeConfig,
    dataset: Dataset,
    kind: str = JudgeRun.Kind.POINTWISE,
    models: list[str] | None = None,
    instruction_limit: int | None = None,
    categories: list[str] | None = None,
    sample: int | None = None,
    seed: int = 0,
    few_shot: FewShotRequest | None = None,
) -> dict:
    """The estimate of a run of `kind` over the items `judge_run_create` would
    choose with these options. With `few_shot` (pointwise, an LLM judge) the
    examples are drawn as the run will draw them: their text is in every prompt and
    the responses shown as examples are not judged (``few_shot`` says how many);
    a request the draw refuses raises its `DomainError`. Reads only."""
    if kind == JudgeRun.Kind.PAIRWISE:
        ids = [
            pk
            for pk, _ in run_pairs(
                dataset=dataset, categories=categories, sample=sample, seed=seed
            )
        ]
        return pairwise_estimate(
            config=config, pairs=PreferencePair.objects.filter(pk__in=ids)
        )
    if kind in (JudgeRun.Kind.METADATA, JudgeRun.Kind.CHECKLIST):
        return annotation_estimate(
            config=config,
            instructions=run_instructions(
                dataset=dataset, instruction_limit=instruction_limit, kind=kind
            ),
        )
    responses = run_responses(
        dataset=dataset, models=models, instruction_limit=instruction_limit
    )
    if kind == JudgeRun.Kind.CRITIQUE:
        return critique_estimate(config=config, responses=responses)
    if few_shot is None or not few_shot.wanted or config.is_baseline:
        return pointwise_estimate(config=config, responses=responses)
    drawn = few_shot_examples_draw(dataset=dataset, request=few_shot)
    examples = example_response_ids(drawn)
    left_out = responses.filter(pk__in=examples).count()
    estimate = pointwise_estimate(
        config=config,
        responses=responses.exclude(pk__in=examples),
        few_shot_chars=few_shot_prompt_chars(few_shot=drawn),
    )
    estimate["few_shot"] = few_shot_estimate_note(few_shot=drawn, left_out=left_out)
    return estimate
