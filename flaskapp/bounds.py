"""The bounds of every whole number a person can type: one table for models, forms,
serializers and services.

Without an upper bound, a lock time of 10**12 minutes reached PostgreSQL and failed
there ("integer out of range", a 500). Each `Bound` below is used four ways, so the
rule has one home:

- model fields: ``validators=LOCK_TTL_MINUTES.validators()`` (admin, `full_clean`);
- Django forms: ``forms.IntegerField(**LOCK_TTL_MINUTES.field_kwargs())``;
- DRF serializers: ``serializers.IntegerField(**LOCK_TTL_MINUTES.field_kwargs())``;
- services: ``LOCK_TTL_MINUTES.problem(value, "lock_ttl_minutes")`` -> `Problem` or
  None, for callers that reach the service without a form (commands, demo, tests).

The highs are generous product limits, all below PostgreSQL's integer maximum
(2**31 - 1); a seed is what `random.Random` and numpy generators take (0 .. 2**32 - 1).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.validators import MaxValueValidator, MinValueValidator

from flaskapp.errors import Problem


@dataclass(frozen=True)
class Bound:
    low: int | float
    high: int | float

    def validators(self) -> list:
        return [MinValueValidator(self.low), MaxValueValidator(self.high)]

    def field_kwargs(self) -> dict:
        return {"min_value": self.low, "max_value": self.high}

    def message(self) -> str:
        return f"must be from {self.low} to {self.high}"

    def contains(self, value) -> bool:
        return (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and self.low <= value <= self.high
        )

    def problem(self, value, field: str, *, optional: bool = False) -> Problem | None:
        """A `Problem` naming `field` when `value` is out of bounds (or not a number);
        None when it is fine, or when it is None and `optional`."""
        if value is None and optional:
            return None
        if self.contains(value):
            return None
        return Problem(self.message(), field=field)


# Rating campaigns (annotation.models.Campaign)
OVERLAP = Bound(1, 50)
OVERLAP_PERCENT = Bound(0, 100)
LOCK_TTL_MINUTES = Bound(1, 7 * 24 * 60)  # a week
RATER_QUOTA = Bound(1, 1_000_000)
GOLD_RATE = Bound(0, 1000)  # 0: no gold items; N: one gold item in every N served
GOLD_TOLERANCE = Bound(0, 10)  # how far from the expected score still counts as right
QUALIFICATION_SIZE = Bound(
    0, 200
)  # gold items a rater answers before real work; 0: none
QUALIFICATION_PASS = Bound(0, 1)  # the pass mark: a share of right answers
SPEED_THRESHOLD = Bound(1, 3600)  # seconds: faster items are speed outliers
# Adjudication: a criterion's scores spanning at least this many points (0: never).
ADJUDICATION_RANGE = Bound(0, 10)
PAIR_SAMPLE = Bound(1, 1_000_000)

# Judge configs (judging.models.JudgeConfig)
SAMPLES = Bound(1, 20)
MAX_TOKENS = Bound(1, 200_000)
MAX_CONCURRENCY = Bound(1, 4096)
MAX_PARSE_RETRIES = Bound(0, 10)
TOP_LOGPROBS = Bound(1, 20)  # top_logprobs: OpenAI accepts 0..20
REQUESTS_PER_MINUTE = Bound(1, 1_000_000)
TOKENS_PER_MINUTE = Bound(1, 1_000_000_000)
TEMPERATURE = Bound(0, 2)
TIMEOUT_SECONDS = Bound(1, 3600)
BATCH_DISCOUNT_PERCENT = Bound(0, 100)  # judging.costs: off calls via the Batch API

# Judge runs (judging.models.JudgeRun) and their pairwise options
INSTRUCTION_LIMIT = Bound(1, 1_000_000)
MAX_CALLS = Bound(1, 100_000_000)
SEED = Bound(0, 2**32 - 1)
FEW_SHOT_EXAMPLES = Bound(1, 20)  # k: human-scored examples shown to a judge

# Agreement and meta-evaluation requests
N_BOOT = Bound(0, 10_000)
DISAGREEMENT_LIMIT = Bound(1, 500)

# A rubric's version number (annotation.models.Rubric.version: PostgreSQL integer)
RUBRIC_VERSION = Bound(1, 2**31 - 1)

# Any id in a URL or parameter: PostgreSQL bigint
ID = Bound(1, 2**63 - 1)


def boot_largest(cells: int) -> int:
    """The most bootstrap resamples one web request may draw over `cells` scores:
    ``settings.BOOT_BUDGET`` (n_boot x cells) shared out, within `N_BOOT`."""
    from django.conf import settings

    return int(min(N_BOOT.high, settings.BOOT_BUDGET // max(cells, 1)))


def boot_problem(n_boot: int, cells: int, field: str = "n_boot") -> Problem | None:
    """A `Problem` naming `field` when `n_boot` resamples of `cells` scores exceed
    the budget of one web request (it says the largest allowed); else None."""
    largest = boot_largest(cells)
    if n_boot <= largest:
        return None
    return Problem(
        f"{n_boot} resamples of {cells:,} scores is more work than one request may "
        f"do; the largest allowed for this selection is {largest} (or run "
        "`manage.py agreement --boot N` / the report, which have no such limit)",
        field=field,
    )
