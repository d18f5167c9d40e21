"""The length limit of every free text: one table for models, forms, serializers,
importers and services.

Without a limit, a campaign's 5 MB guidelines made every rating page 5 MB and 3 s
(issue 34). Every `TextField` of our models carries ``max_length=`` one of the
names below (a test walks `apps.get_models()` and fails on a text field without
one). Django forms and DRF ModelSerializers read it from the model; the services
(which commands, importers, the demo and the API reach without a form) check it with
`length_problem` / `model_text_problems`, so every door refuses an oversize text with
its field (and line) named, and changes nothing.

Limits count characters (``len(str)``), as ``max_length`` does. Each is a product
limit chosen for the text's use, far above what real data holds (the FLASK evaluation
set's longest instruction is about 7,000 characters, its longest answer 10,000).
`CharField`s (names, ids, keys) keep their own ``max_length`` on the model.
"""

from __future__ import annotations

from collections.abc import Mapping

from flaskapp.errors import Problem

# What an instruction, a reference answer or an imported model response may hold:
# long documents and long-context tasks, but bounded (a rating page shows them).
INSTRUCTION_TEXT = 200_000
RESPONSE_TEXT = 200_000
# A campaign's guidelines: Markdown shown on every rating page (a long manual).
GUIDELINES = 100_000
# A prompt template's system or user text (examples and rubrics inlined).
PROMPT_TEMPLATE = 100_000
# What a judge endpoint may answer, and what is kept of it (its rationale, critique,
# verdict rationale): well above `bounds.MAX_TOKENS` (200,000 tokens, about 800,000
# characters); a longer answer fails its call with the reason.
JUDGE_OUTPUT = 1_000_000
# A description: a dataset's, a rubric's, an experiment's, an imported run's source.
DESCRIPTION = 10_000
# One text of a rubric: a criterion's description or one anchor (also per-instance
# score rubrics and checklist questions): read next to every score.
RUBRIC_TEXT = 5_000
# Why a gold item's expected scores are right: shown to a rater after a miss.
GOLD_EXPLANATION = 10_000
# What a rater writes: a score's or a preference's rationale, a critique of a response.
RATIONALE = 20_000
# A short note of a person: an adjudication, an exclusion's reason, a test-split look,
# a disagreement tag's note, a criterion note, an assignment's note.
NOTE = 5_000
# A judge call's error, written by our code (longer messages are cut, not refused:
# an error text is a message, not data).
CALL_ERROR = 5_000


def too_long(value: str, limit: int) -> str | None:
    """ "is N characters long; the limit is L" when `value` is longer than `limit`,
    else None."""
    if len(value) <= limit:
        return None
    return f"is {len(value):,} characters long; the limit is {limit:,}"


def clip(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, ending with "…" when cut: for texts our own
    code writes (a run's source note, an error message), never for a person's."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def length_problem(
    value: object,
    limit: int,
    field: str,
    *,
    line: int | None = None,
    file: str | None = None,
) -> Problem | None:
    """A `Problem` naming `field` (and `line`) when the text `value` is longer than
    `limit`; None when it fits or is not a string (its type is checked elsewhere)."""
    if not isinstance(value, str):
        return None
    message = too_long(value, limit)
    if message is None:
        return None
    return Problem(message, line=line, field=field, file=file)


def text_limit(model, field_name: str) -> int:
    """The ``max_length`` of `model`'s text field `field_name`."""
    return model._meta.get_field(field_name).max_length


def model_text_problems(
    model,
    values: Mapping[str, object],
    *,
    names: Mapping[str, str] | None = None,
    line: int | None = None,
    file: str | None = None,
) -> list[Problem]:
    """A `Problem` for each value of `values` (model field name -> value) longer
    than the ``max_length`` of `model`'s field of that name; the problem names the
    field as `names` maps it (the input's own name: a column, a parameter), else by
    the model field's name."""
    names = names or {}
    problems = []
    for field_name, value in values.items():
        limit = text_limit(model, field_name)
        if limit is None:
            continue
        field = names.get(field_name, field_name)
        if problem := length_problem(value, limit, field, line=line, file=file):
            problems.append(problem)
    return problems


# A workspace's notification addresses, one per line (`NotificationSettings.email_to`;
# `flaskapp.notifications` caps how many).
NOTIFY_EMAILS = 2_000

# A stored judge key's Fernet token: a value of at most 4,096 characters
# (`judging.services.keys.VALUE_MAX`) encrypts to under 5,600 (base64 of the
# ciphertext, its IV, timestamp and MAC).
KEY_CIPHERTEXT = (
    8_192  # also a workspace's webhook secret, stored encrypted the same way
)
