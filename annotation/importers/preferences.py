"""Pairwise preference data (JSONL or CSV): a prompt, two responses and who preferred which.

Pure parsing and validation: bytes in, `PreferenceRow`s and `Problem`s out; nothing here
touches the database (the service `annotation.services.preferences` checks the rows
against what is stored and writes them).

Fields (an unmapped field is read from the column of the same name; ``--map
FIELD=COLUMN`` reads it from another column):

- ``prompt`` (required, non-empty text), ``response_1``, ``response_2`` (required
  text). ``response_1`` / ``response_2`` fix the ORIGINAL numbering. Benchmarks are
  published with quirks and their figures count every row, so an empty response, two
  identical responses and a voter voting twice on a pair are accepted and listed as
  warnings (`PreferenceParse.warnings`, with their lines; `strict` refuses them). Two
  identical responses without model names are stored as two responses, the second
  under the model name ``anon-<8 hex>-twin``.
- ``label``: the human preference. Scheme ``one-based`` (default): ``1``, ``2`` or
  ``tie``; scheme ``zero-based``: ``0`` (response 1), ``1`` (response 2), ``2`` (tie).
  ``tie`` is accepted as a word in both schemes; numbers may be JSON numbers or strings
  ("1", "1.0"). Required, except in a judge-only file (``--judge`` given), where an
  empty or absent label means "no human vote on this row".
- optional ``category``, ``source`` (stored on the pair), ``model_1``, ``model_2``
  (default: ``anon-`` + the first 8 hex digits of the response text's sha256), ``id``
  (the instruction's external id when the prompt is new, else ignored for it; kept as
  the pair's external id), ``voter`` (the source's voter id), ``rationale``.
- with a judge: ``verdict`` (required column; the verdict with response 1 shown as A)
  and optional ``verdict_swapped`` (response 2 shown as A). Accepted values, any case:
  ``A``, ``B``, ``tie``, ``1``, ``2`` (with ``zero-based``: ``0``, ``1``, ``2`` = tie),
  where a number names the presented position (1 = A); ``none`` (or another N/A word,
  `annotation.importers.base.NA_WORDS`) means the judge gave no usable verdict. An
  empty ``verdict`` is "no usable verdict" too; an empty or absent
  ``verdict_swapped`` means the pair was not judged in the swapped order. With
  ``swapped_mapped_back``, ``verdict_swapped`` is already in the ORIGINAL numbering
  and must be ``1``, ``2``, ``tie`` or ``none`` (letters name presented positions
  and are refused there). Without a judge, verdict columns are not read; the rows
  that have them are counted (`ignored_verdicts`) so the caller can say so.

A pair is ordered: (prompt, model_1, model_2) and (prompt, model_2, model_1) are two
different pairs, because labels refer to the file's numbering.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

from annotation.importers.base import (
    MAX_IDENTIFIER_LENGTH,
    MAX_PROBLEMS,
    FileData,
    file_sha256,
    is_na,
    parse_field_map,
    read_rows,
    type_name,
)
from annotation.importers.fields import RowReader
from flaskapp import limits
from flaskapp.errors import Problem

FIELDS = (
    "prompt",
    "response_1",
    "response_2",
    "label",
    "category",
    "source",
    "model_1",
    "model_2",
    "id",
    "voter",
    "rationale",
    "verdict",
    "verdict_swapped",
)
REQUIRED = ("prompt", "response_1", "response_2")
FORMATS = ("jsonl", "csv")
LABEL_SCHEMES = ("one-based", "zero-based")
TIE_WORDS = {"tie"}
# Label numbers per scheme -> the original numbering.
_NUMBERS = {
    "one-based": {1: "1", 2: "2"},
    "zero-based": {0: "1", 1: "2", 2: "tie"},
}


# A number naming a presented position: the first shown is A.
_POSITION_LETTER = {"1": "A", "2": "B", "tie": "tie"}


@dataclass(frozen=True)
class Verdict:
    """A judge's verdict on a pair in one order ("ab" or "ba"), as the file gave it.

    `original` False: `value` is in presented terms ("A", "B", "tie", "" = no usable
    verdict); True: already in the original numbering ("1", "2", "tie", ""). The
    service maps it with `annotation.labels` (this module does not import judging).
    """

    order: str
    value: str
    original: bool = False


@dataclass
class PreferenceRow:
    """One validated row: a pair of responses to a prompt, a vote and/or judge verdicts."""

    line: int
    prompt: str
    response_1: str
    response_2: str
    model_1: str
    model_2: str
    label: str | None
    category: str = ""
    source: str = ""
    row_id: str = ""
    voter: str = ""
    rationale: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    source_key: str = ""


@dataclass
class PreferenceParse:
    """Everything the parser found: rows, problems, the row count and the file digest."""

    rows: list[PreferenceRow] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    total: int = 0
    file_sha256: str = ""
    # Accepted but worth a look, each with its line and field (see the module docs).
    warnings: list[Problem] = field(default_factory=list)
    # Rows with a verdict value in a file imported without a judge: not imported, and
    # counted so that the caller can say so.
    ignored_verdicts: int = 0


def parse_mapping(pairs: list[str] | dict[str, str] | None) -> dict[str, str]:
    """`["prompt=question", ...]` or {"prompt": "question"} -> {"prompt": "question"}.

    Raises ValueError naming the bad pair (unknown field, no `=`, empty column, or two
    fields read from the same column).
    """
    return parse_field_map(pairs, FIELDS, distinct_columns=True)


def anonymous_model_name(text: str) -> str:
    """The stable model name of a response given without one: ``anon-<8 hex>``."""
    return "anon-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def derived_instruction_id(prompt: str) -> str:
    """The stable external id of a prompt given without an `id`."""
    return "pref-" + hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:16]


def source_key(row: PreferenceRow) -> str:
    """The identity of an imported vote, so that importing the same rows again is a no-op.

    A hash of the row's line number and of everything the row says (prompt, both
    responses and model names, label, voter, id, category, source, rationale). The
    line number keeps two identical anonymous votes on different lines apart (both are
    real votes); the content makes the key independent of the file name, the format
    and the column mapping, and lets rows be appended to a file that is then imported
    again (only the new rows are added). A row edited in place counts as a new vote.
    Unique per pair in the database.
    """
    payload = json.dumps(
        [
            row.line,
            row.prompt,
            row.response_1,
            row.response_2,
            row.model_1,
            row.model_2,
            row.label,
            row.voter,
            row.row_id,
            row.category,
            row.source,
            row.rationale,
        ],
        ensure_ascii=False,
    )
    return "v1:" + hashlib.sha256(payload.encode("utf-8")).hexdigest()[:40]


def _number(value) -> int | None:
    """An integral number from a JSON number or a numeric string, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        if float(value).is_integer():
            return int(value)
    return None


def parse_label(value, scheme: str) -> tuple[str | None, str]:
    """(label in the original numbering, problem text) for one `label` value."""
    if isinstance(value, str) and value.strip().lower() in TIE_WORDS:
        return "tie", ""
    number = _number(value)
    accepted = (
        "1, 2 or tie" if scheme == "one-based" else "0 (response 1), 1, 2 (tie) or tie"
    )
    if number is not None and number in _NUMBERS[scheme]:
        return _NUMBERS[scheme][number], ""
    hint = ""
    if scheme == "one-based" and number == 0:
        hint = "; if the file counts from 0, use --label-scheme zero-based"
    return None, f"label {value!r} is not one of {accepted}{hint}"


def parse_presented_verdict(value, scheme: str) -> tuple[str | None, str]:
    """(A/B/tie/"" as presented, problem text) for a verdict naming a presented position.

    "" means the judge gave no usable verdict ("none" or another N/A word).
    """
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("a", "b"):
            return text.upper(), ""
        if text in TIE_WORDS:
            return "tie", ""
        if is_na(text):
            return "", ""
    number = _number(value)
    if number is not None and number in _NUMBERS[scheme]:
        return _POSITION_LETTER[_NUMBERS[scheme][number]], ""
    numbers = "1, 2" if scheme == "one-based" else "0, 1, 2 (tie)"
    return None, f"verdict {value!r} is not one of A, B, tie, {numbers} or none"


def parse_original_verdict(value, scheme: str) -> tuple[str | None, str]:
    """(1/2/tie/"" in the original numbering, problem text) for a mapped-back verdict."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("a", "b"):
            return None, (
                f"verdict {value!r} names a presented position, but "
                "--swapped-mapped-back says this column uses the original numbering; "
                "write 1, 2 or tie (or drop --swapped-mapped-back)"
            )
        if is_na(text):
            return "", ""
    label, problem = parse_label(value, scheme)
    if label is None:
        return None, problem.replace("label", "verdict", 1) + " or none"
    return label, ""


def parse_preferences(  # noqa: C901 - the preference file's header checks, each with its own message
    data: FileData,
    *,
    file: str,
    fmt: str,
    mapping: dict[str, str] | None = None,
    label_scheme: str = "one-based",
    with_judge: bool = False,
    swapped_mapped_back: bool = False,
) -> PreferenceParse:
    """Parse and validate a preference file. Every problem is collected, none raised.

    Checks per row: required fields present and non-empty, text fields are strings
    without NUL characters, identifiers within 200 characters, a valid label (required
    unless `with_judge`), valid verdicts (with `with_judge`; the `verdict` column is
    then required), two different responses and two different model names. Across
    rows: one text per (prompt, model name), one category/source per pair, the same
    judge verdicts wherever a pair is repeated, and one prompt per given `id`.
    A file whose rows are all valid but carry nothing to store is a problem too.
    """
    result = PreferenceParse(file_sha256=file_sha256(data))
    problems = result.problems
    if fmt not in FORMATS:
        problems.append(Problem(f"must be one of {', '.join(FORMATS)}", field="format"))
        return result
    if label_scheme not in LABEL_SCHEMES:
        problems.append(
            Problem(f"must be one of {', '.join(LABEL_SCHEMES)}", field="label_scheme")
        )
        return result
    column = {name: (mapping or {}).get(name, name) for name in FIELDS}
    required_columns = list(REQUIRED) + (["verdict"] if with_judge else ["label"])
    rows = read_rows(
        data,
        file=file,
        fmt=fmt,
        problems=problems,
        header_columns={
            n: column[n]
            for n in FIELDS
            if n in required_columns or n in (mapping or {})
        },
    )

    texts: dict[tuple[str, str], tuple[int, str]] = {}  # (prompt, model) -> first
    pairs: dict[tuple, PreferenceRow] = {}
    ids: dict[str, tuple[int, str]] = {}
    votes: dict[tuple, int] = {}  # (prompt, model_1, model_2, voter) -> first line
    for line, row in rows:
        result.total += 1
        if len(problems) >= MAX_PROBLEMS:
            break
        parsed = _parse_row(
            row,
            line,
            file,
            column,
            problems,
            result.warnings,
            label_scheme=label_scheme,
            with_judge=with_judge,
            swapped_mapped_back=swapped_mapped_back,
        )
        if parsed is None:
            continue
        if not with_judge and any(
            row.get(column[n]) not in (None, "") for n in ("verdict", "verdict_swapped")
        ):
            result.ignored_verdicts += 1
        ok = True
        for model, text, name in (
            (parsed.model_1, parsed.response_1, "model_1"),
            (parsed.model_2, parsed.response_2, "model_2"),
        ):
            first = texts.setdefault((parsed.prompt, model), (line, text))
            if first[1] != text:
                ok = False
                problems.append(
                    Problem(
                        f"model {model!r} has a different response to the same prompt "
                        f"on line {first[0]}; a model has one response per prompt",
                        line=line,
                        field=column[name],
                        file=file,
                    )
                )
        if parsed.row_id:
            first_id = ids.setdefault(parsed.row_id, (line, parsed.prompt))
            if first_id[1] != parsed.prompt:
                ok = False
                problems.append(
                    Problem(
                        f"id {parsed.row_id!r} was used on line {first_id[0]} for a "
                        "different prompt",
                        line=line,
                        field=column["id"],
                        file=file,
                    )
                )
        key = (parsed.prompt, parsed.model_1, parsed.model_2)
        if parsed.voter:
            first_vote = votes.setdefault((*key, parsed.voter), line)
            if first_vote != line:
                result.warnings.append(
                    Problem(
                        f"voter {parsed.voter!r} already voted on this pair on line "
                        f"{first_vote}; both votes are kept",
                        line=line,
                        field=column["voter"],
                        file=file,
                    )
                )
        first_row = pairs.setdefault(key, parsed)
        if first_row is not parsed:
            for name in ("category", "source"):
                if getattr(first_row, name) != getattr(parsed, name):
                    ok = False
                    problems.append(
                        Problem(
                            f"the same pair has {name} "
                            f"{getattr(first_row, name)!r} on line {first_row.line}",
                            line=line,
                            field=column[name],
                            file=file,
                        )
                    )
            if with_judge and first_row.verdicts != parsed.verdicts:
                ok = False
                problems.append(
                    Problem(
                        "the same pair has different judge verdicts on line "
                        f"{first_row.line}; a judge run holds one verdict per pair "
                        "and order",
                        line=line,
                        field=column["verdict"],
                        file=file,
                    )
                )
        if ok:
            parsed.source_key = source_key(parsed)
            result.rows.append(parsed)
    # A CSV's bad lines are found while reading, before any row is parsed: report
    # everything in file order.
    problems.sort(key=lambda p: p.line or 0)
    if not problems and not result.rows:
        problems.append(Problem("the file has no rows", file=file))
    if not with_judge:
        return result
    if not problems and not any(r.verdicts for r in result.rows):
        problems.append(
            Problem("no row has a judge verdict", field=column["verdict"], file=file)
        )
    return result


def _parse_row(  # noqa: C901 - one preference row's columns, each refused with its own field
    row: dict,
    line: int,
    file: str,
    column: dict[str, str],
    problems: list[Problem],
    warnings: list[Problem],
    *,
    label_scheme: str,
    with_judge: bool,
    swapped_mapped_back: bool,
) -> PreferenceRow | None:
    """One row, or None when it has a problem (recorded in `problems`)."""
    reader = RowReader(row, line, file, problems, warnings)
    prompt = reader.text(
        column["prompt"], required=True, max_length=limits.INSTRUCTION_TEXT
    )
    response_1 = reader.text(
        column["response_1"],
        required=True,
        allow_empty=True,
        max_length=limits.RESPONSE_TEXT,
    )
    response_2 = reader.text(
        column["response_2"],
        required=True,
        allow_empty=True,
        max_length=limits.RESPONSE_TEXT,
    )
    model_1 = reader.identifier(column["model_1"], required=False)
    model_2 = reader.identifier(column["model_2"], required=False)
    row_id = reader.identifier(column["id"], required=False) or ""
    voter = reader.identifier(column["voter"], required=False) or ""
    category = reader.text(
        column["category"], required=False, max_length=MAX_IDENTIFIER_LENGTH
    ).strip()
    source = reader.text(
        column["source"], required=False, max_length=MAX_IDENTIFIER_LENGTH
    ).strip()
    rationale = reader.text(
        column["rationale"], required=False, max_length=limits.RATIONALE
    )

    label = None
    raw_label = row.get(column["label"])
    if raw_label is None or (isinstance(raw_label, str) and not raw_label.strip()):
        if not with_judge:
            reader.fail(column["label"], "is missing or empty; write 1, 2 or tie")
    elif isinstance(raw_label, dict | list):
        reader.fail(column["label"], f"must be 1, 2 or tie, got {type_name(raw_label)}")
    else:
        label, message = parse_label(raw_label, label_scheme)
        if label is None:
            reader.fail(column["label"], message)

    verdicts: list[Verdict] = []
    if with_judge:
        if column["verdict"] not in row:
            reader.fail(column["verdict"], "is missing; write A, B, tie or none")
        else:
            value = row[column["verdict"]]
            raw, message = (
                ("", "")
                if value is None or (isinstance(value, str) and not value.strip())
                else parse_presented_verdict(value, label_scheme)
            )
            if raw is None:
                reader.fail(column["verdict"], message)
            else:
                verdicts.append(Verdict("ab", raw))
        value = row.get(column["verdict_swapped"])
        if value is not None and not (isinstance(value, str) and not value.strip()):
            if swapped_mapped_back:
                mapped, message = parse_original_verdict(value, label_scheme)
                if mapped is None:
                    reader.fail(column["verdict_swapped"], message)
                else:
                    verdicts.append(Verdict("ba", mapped, original=True))
            else:
                raw, message = parse_presented_verdict(value, label_scheme)
                if raw is None:
                    reader.fail(column["verdict_swapped"], message)
                else:
                    verdicts.append(Verdict("ba", raw))

    if not reader.ok:
        return None
    for name, text in (("response_1", response_1), ("response_2", response_2)):
        if not text.strip():
            reader.warn(column[name], "is empty: kept as an empty response")
    twin = response_1 == response_2
    if twin:
        reader.warn(
            column["response_2"],
            "is the same text as response_1: kept (the pair compares a response with "
            "its own copy)",
        )
    model_1 = model_1 or anonymous_model_name(response_1)
    model_2 = model_2 or anonymous_model_name(response_2) + ("-twin" if twin else "")
    if model_1 == model_2:
        reader.fail(
            column["model_2"],
            f"names the same model as model_1 ({model_1!r})"
            + (
                " for the same text; give the two sides different model names"
                if twin
                else " with a different response; a model has one response per prompt"
            ),
        )
        return None
    return PreferenceRow(
        line=line,
        prompt=prompt,
        response_1=response_1,
        response_2=response_2,
        model_1=model_1,
        model_2=model_2,
        label=label,
        category=category,
        source=source,
        row_id=row_id,
        voter=voter,
        rationale=rationale,
        verdicts=verdicts,
    )
