"""The one cost rule: calls, tokens and cost a judge run would need, before any call.

Input tokens are estimated from the text lengths of what the calls will carry (at
`CHARS_PER_TOKEN`), plus the prompt around it; output tokens from the kind's typical
answer, capped by the config's `max_tokens`; the cost is both at the config's prices
per million tokens. What the calls carry is the kind's to say (`judging.kinds`:
`TaskKind.sizes`, over the items its `select` hook chooses); the rule is
`estimate_from_sizes`. `judge_run_create` stores its result on the run, and the run
form shows `judge_run_estimate` for its current values, over the same items, so form
and run page agree. Baseline judges cost nothing.

The price of tokens is `judging.costs`' rule (the one recorded calls are charged by).
What the estimate cannot know it assumes, and says so under ``assumes``: the share of
input tokens a provider's prompt cache will serve, whether the calls go through the
Batch API (its discount), and that the output carries no reasoning tokens beyond the
typical answer. Cached input: when the kind says every call shares a prompt prefix
(`Sizes.shared_chars`: the cache-friendly layout), the estimate assumes the provider
serves what of it its cache can (`costs.cacheable_tokens`) for every call after the
first of each `Sizes.prefix_groups`, at the cached-input price; otherwise none (an
upper bound there).
"""

from __future__ import annotations

from decimal import Decimal

from annotation.models import Dataset
from judging import costs, kinds
from judging.fewshot import FewShotRequest
from judging.kinds import RunOptions, Sizes
from judging.models import JudgeConfig, JudgeRun
from judging.services.fewshot import (
    few_shot_estimate_note,
    few_shot_examples_draw,
    few_shot_prompt_chars,
)

CHARS_PER_TOKEN = 4


def estimate_from_sizes(
    *, config: JudgeConfig, sizes: Sizes, batch: bool = False
) -> dict:
    """The rule: `sizes.input_chars` over all items at `CHARS_PER_TOKEN`, once per
    sample; `sizes.output_tokens` per call, capped by the config's `max_tokens`; of
    the input, the cacheable part of the shared prefix (`sizes.shared_chars`,
    `costs.cacheable_tokens`) cached on every call but the first; all at the
    config's prices (`judging.costs.call_cost`), the batch discount only when
    `batch`. A baseline judge (or nothing to judge) costs nothing. ``assumes``
    states these assumptions (`estimate_assumptions`)."""
    calls, items = sizes.calls, sizes.items
    shared_tokens = sizes.shared_chars // CHARS_PER_TOKEN
    if config.is_baseline or not items:
        input_tokens = output_tokens = cached_tokens = 0
    else:
        input_tokens = sizes.input_chars // CHARS_PER_TOKEN * (calls // items)
        output_tokens = min(config.max_tokens, sizes.output_tokens) * calls
        cached_tokens = min(
            input_tokens,
            costs.cacheable_tokens(shared_tokens) * max(0, calls - sizes.prefix_groups),
        )
    prices = costs.Prices.from_config(config)
    cost = costs.call_cost(
        prices=prices,
        input_tokens=input_tokens,
        cached_input_tokens=cached_tokens,
        output_tokens=output_tokens,
        batch=batch,
    )
    return {
        "calls": calls,
        "items": items,
        "input_tokens": input_tokens,
        "cached_input_tokens": cached_tokens,
        "output_tokens": output_tokens,
        "cost": str(cost.quantize(Decimal("0.0001"))),
        "assumes": estimate_assumptions(
            prices=prices,
            batch=batch,
            shared_tokens=shared_tokens if input_tokens else 0,
            cached_share=cached_tokens / input_tokens if input_tokens else 0.0,
            prefix_groups=sizes.prefix_groups,
        ),
    }


def _cached_sentence(
    prices: costs.Prices, shared_tokens: int, cached_share: float, groups: int
) -> str:
    price = (
        f"cached input costs {prices.cached_price} per million"
        if prices.cached_input_per_m is not None
        else "this config prices cached input as input"
    )
    if cached_share:
        return (
            f"Assumes the prompt prefix every call shares (about {shared_tokens:,} "
            "tokens: the judge's instructions and the whole rubric) is served from "
            "the provider's prompt cache on every call after the first"
            + (
                f" of each of the {groups:,} sets of criteria (the reply's schema, "
                "part of the prefix, lists them)"
                if groups > 1
                else ""
            )
            + f": {round(100 * cached_share)}% of input tokens cached ({price}); "
            "providers cache prefixes of 1,024 tokens and more but promise no hit, "
            "so the cost can be higher; "
        )
    if shared_tokens:
        return (
            "Assumes no cached input tokens: the prompt prefix every call shares "
            f"(about {shared_tokens:,} tokens) is under the 1,024 tokens providers "
            f"cache (an upper bound; {price}); "
        )
    return f"Assumes no cached input tokens (an upper bound; {price}); "


def estimate_assumptions(
    *,
    prices: costs.Prices,
    batch: bool,
    shared_tokens: int = 0,
    cached_share: float = 0.0,
    prefix_groups: int = 1,
) -> dict:
    """What an estimate assumes about cost it cannot know before the calls: the
    share of input tokens cached (`cached_share`: none unless the calls share a
    prompt prefix of `shared_tokens` a provider caches, after the first call of
    each of `prefix_groups`; without, it is an upper bound), the Batch API or not, no reasoning tokens beyond the typical answer;
    ``text`` says it in a sentence for the pages."""
    discount = prices.batch_discount_percent if batch else Decimal(0)
    text = (
        _cached_sentence(prices, shared_tokens, cached_share, prefix_groups)
        + (
            f"calls through the Batch API ({discount}% off), "
            if batch
            else "calls made one by one (no batch discount), "
        )
        + "and no reasoning tokens beyond the typical answer."
    )
    return {
        "cached_input_share": round(cached_share, 3),
        "shared_prefix_tokens": shared_tokens,
        "batch": batch,
        "batch_discount_percent": str(discount),
        "reasoning_tokens": 0,
        "text": text,
    }


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
    batch: bool = False,
) -> dict:
    """The estimate of a run of `kind` over the items `judge_run_create` would
    choose with these options (the kind's `select` and `sizes` hooks). With
    `few_shot` (a kind that takes it, an LLM judge) the examples are drawn as the
    run will draw them: their text is in every prompt and the responses shown as
    examples are not judged (``few_shot`` says how many); a request the draw
    refuses raises its `DomainError`. `batch`: at the Batch API's price, as
    `judge_run_create` estimates such a run. Raises `judging.kinds.UnknownTaskKind` for an
    unknown `kind`. Reads only."""
    task = kinds.get(kind)
    options = RunOptions(
        models=models,
        instruction_limit=instruction_limit,
        categories=categories,
        sample=sample,
        seed=seed,
        few_shot=few_shot,
    )
    drawn = (
        few_shot_examples_draw(dataset=dataset, request=few_shot)
        if options.given("few_shot")
        and "few_shot" in task.takes
        and not config.is_baseline
        else {}
    )
    selection = task.select(
        dataset=dataset, options=options, examples=drawn, config=config
    )
    extra_chars = few_shot_prompt_chars(few_shot=drawn) if drawn else 0
    estimate = estimate_from_sizes(
        config=config,
        sizes=task.sizes(config=config, selection=selection, extra_chars=extra_chars),
        batch=batch,
    )
    if drawn:
        estimate["few_shot"] = few_shot_estimate_note(
            few_shot=drawn, left_out=selection.left_out
        )
    return estimate
