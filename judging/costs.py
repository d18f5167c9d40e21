"""The one cost rule: what a judge call costs, from the usage its endpoint reported.

    cost = (uncached input x input price
            + cached input x cached-input price
            + output x output price) / 1,000,000
           x (1 - batch discount)        only for calls made through the Batch API

- Input tokens are the prompt tokens the endpoint reported; of them, the cached ones
  (``usage.prompt_tokens_details.cached_tokens``: a prompt prefix the provider had
  already seen) are billed at the cached-input price (`JudgeConfig.
  price_cached_input_per_m`; when a config sets none, the input price: no discount).
- Output tokens include the reasoning tokens of a reasoning model
  (``usage.completion_tokens_details.reasoning_tokens`` are part of
  ``completion_tokens``): they are billed at the output price, never on top.
- ``batch=True`` (a call made through the Batch API) takes the config's
  `batch_discount_percent` off the whole sum.

Prices come from a run's frozen settings (`Prices.from_snapshot`), so a run keeps
the prices it was created with. Used by the result store (each call's recorded cost),
by the spend caps and by `judging.services.estimates`.

What a provider's prompt cache can serve (`cacheable_tokens`): OpenAI documents cache
hits "for prompts of 1,024 tokens or more, in increments of 128 tokens" of a prefix
seen before; the estimates assume that rule, and the fake server imitates it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

PER_MILLION = Decimal(1_000_000)
DEFAULT_BATCH_DISCOUNT_PERCENT = 50
PROMPT_CACHE_MIN_TOKENS = 1024
PROMPT_CACHE_STEP_TOKENS = 128


def cacheable_tokens(prefix_tokens: int) -> int:
    """How many tokens of a prefix of `prefix_tokens` that the provider has seen
    before it serves from its cache: none under `PROMPT_CACHE_MIN_TOKENS`, else the
    longest whole number of `PROMPT_CACHE_STEP_TOKENS` steps past it."""
    if prefix_tokens < PROMPT_CACHE_MIN_TOKENS:
        return 0
    steps = (prefix_tokens - PROMPT_CACHE_MIN_TOKENS) // PROMPT_CACHE_STEP_TOKENS
    return PROMPT_CACHE_MIN_TOKENS + steps * PROMPT_CACHE_STEP_TOKENS


@dataclass(frozen=True)
class Prices:
    """Prices per million tokens and the Batch API discount (0..100 percent)."""

    input_per_m: Decimal = Decimal(0)
    output_per_m: Decimal = Decimal(0)
    cached_input_per_m: Decimal | None = None  # None: the input price
    batch_discount_percent: Decimal = Decimal(DEFAULT_BATCH_DISCOUNT_PERCENT)

    @classmethod
    def from_snapshot(cls, snapshot: dict) -> Prices:
        """The prices a run froze (`services.configs.config_snapshot`). A run frozen
        before cached-input prices and batch discounts existed has neither key: its
        cached input costs the input price and its discount is the default."""
        cached = snapshot.get("price_cached_input_per_m")
        discount = snapshot.get("batch_discount_percent")
        return cls(
            input_per_m=Decimal(snapshot.get("price_input_per_m") or 0),
            output_per_m=Decimal(snapshot.get("price_output_per_m") or 0),
            cached_input_per_m=None if cached in (None, "") else Decimal(cached),
            batch_discount_percent=Decimal(
                DEFAULT_BATCH_DISCOUNT_PERCENT if discount is None else discount
            ),
        )

    @classmethod
    def from_config(cls, config) -> Prices:
        """The prices of a `JudgeConfig` as it is now."""
        return cls(
            input_per_m=Decimal(config.price_input_per_m),
            output_per_m=Decimal(config.price_output_per_m),
            cached_input_per_m=(
                None
                if config.price_cached_input_per_m is None
                else Decimal(config.price_cached_input_per_m)
            ),
            batch_discount_percent=Decimal(config.batch_discount_percent),
        )

    @property
    def cached_price(self) -> Decimal:
        """The price of a cached input token (the input price when none is set)."""
        return (
            self.input_per_m
            if self.cached_input_per_m is None
            else self.cached_input_per_m
        )


def call_cost(
    *,
    prices: Prices,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int = 0,
    batch: bool = False,
) -> Decimal:
    """The cost of one call (the module's rule). `input_tokens` counts all prompt
    tokens, cached ones included (as ``usage.prompt_tokens`` does); a cached count
    larger than it is taken as all of it. `output_tokens` includes reasoning tokens.
    `batch`: the call went through the Batch API (the discount applies). Unrounded."""
    cached = max(0, min(cached_input_tokens, input_tokens))
    cost = (
        Decimal(input_tokens - cached) * prices.input_per_m
        + Decimal(cached) * prices.cached_price
        + Decimal(output_tokens) * prices.output_per_m
    ) / PER_MILLION
    if batch:
        cost *= 1 - prices.batch_discount_percent / 100
    return cost
