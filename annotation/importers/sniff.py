"""Guess what an uploaded file is: its import kind, its format, its columns and the field
mapping it needs (pure: bytes in, a `UploadGuess` out; nothing touches the database).

The upload page (`annotation.views.uploads`) shows the guess before anything is checked,
and the person may change every part of it: a guess is a proposal, never a decision.
When two kinds fit the file equally well, or none does, the guess says so
(`UploadGuess.kind` is None) and the page asks.

What is read: the file's name, and its first rows through the importers' one reader
(`base.read_rows`: JSON Lines, CSV, JSON arrays, Parquet, any of them gzip-compressed),
or, for a rubric file (one JSON object or a YAML mapping), its top-level keys. No
parser of an import kind is duplicated here: the guess only picks which one will read
the file, and the import kinds' own checks say what is wrong with it.

The kinds and their signatures (column names, case and spacing ignored):

- ``rubric``: a YAML or JSON mapping with ``criteria`` (our rubric file), or FLASK's
  ``skillset_description.json`` (an array of ``Skill`` / ``Criteria`` / ``Scoring``).
- ``judge_results``: FLASK review files (``review`` and ``score`` beside the eval
  set's id ``question_id`` / ``idx``), or one score per row (``skill`` and ``score``).
- ``preferences``: ``prompt``, ``response_1``, ``response_2`` (or their usual other
  names, proposed as a mapping).
- ``gold``: expected scores of responses already imported: ``response_id``, or
  ``tolerance`` / ``explanation`` / ``kind`` beside ``instruction`` and ``model``.
- ``dataset``: a FLASK evaluation set (current schema ``idx``, ``instruction``,
  ``skill``; legacy ``question_id``, ``text``, ``metrics``), FLASK model outputs
  (``question_id`` / ``idx`` with ``text`` / ``output``), or generic rows with an
  ``instruction`` (or a column usually holding one, proposed as a mapping).

A file with ``instruction`` and ``model`` and neither a response text nor a gold
column could be gold items or a dataset: it is ambiguous, and the page asks.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import PurePath

import yaml

from annotation.importers import formats
from annotation.importers.base import read_rows
from flaskapp.errors import Problem

DATASET = "dataset"
RUBRIC = "rubric"
GOLD = "gold"
PREFERENCES = "preferences"
JUDGE_RESULTS = "judge_results"
KINDS = (DATASET, RUBRIC, GOLD, PREFERENCES, JUDGE_RESULTS)

# How many rows are read for the columns: enough for JSON Lines files whose first rows
# lack an optional key, few enough to stay instant on any file.
SNIFF_ROWS = 20
SNIFF_COLUMNS = 60

# Column names that usually hold a field, by kind: proposed as "field=column" when
# the field's own column is absent. The first present alias wins.
ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    DATASET: {
        "instruction": ("prompt", "question", "input", "query", "user_prompt"),
        "response": ("output", "completion", "answer", "generation", "response_text"),
        "reference": ("reference_answer", "ref", "gold_answer", "target", "ideal"),
        "model": ("model_name", "generator", "system"),
        "id": ("question_id", "idx", "uid", "example_id"),
        "task": ("source_task", "category"),
    },
    PREFERENCES: {
        "prompt": ("instruction", "question", "input", "query"),
        "response_1": ("response_a", "answer_1", "answer_a", "completion_1"),
        "response_2": ("response_b", "answer_2", "answer_b", "completion_2"),
        "model_1": ("model_a",),
        "model_2": ("model_b",),
        "label": ("winner", "preference", "choice"),
    },
    JUDGE_RESULTS: {
        "id": ("question_id", "idx", "instruction_id"),
        "skill": ("criterion", "metric", "aspect"),
        "score": ("rating", "value", "grade"),
        "rationale": ("explanation", "reason", "feedback"),
    },
    GOLD: {},
}

# The formats the kinds read, and which of them each kind takes. Parquet, JSON arrays
# and gzip are recognised by their content (`base.read_rows`), so "jsonl" reads them.
FORMAT_LABELS = {
    "flask": "FLASK evaluation set (JSONL)",
    "flask_outputs": "FLASK model outputs (JSONL)",
    "flask_review": "FLASK review files (JSONL)",
    "jsonl": "Rows: JSON Lines, JSON array or Parquet",
    "csv": "Rows: CSV",
    "rubric": "Rubric file (YAML or JSON)",
}
KIND_FORMATS: dict[str, tuple[str, ...]] = {
    DATASET: ("flask", "flask_outputs", "jsonl", "csv"),
    RUBRIC: ("rubric",),
    GOLD: ("jsonl", "csv"),
    PREFERENCES: ("jsonl", "csv"),
    JUDGE_RESULTS: ("flask_review", "jsonl", "csv"),
}
# Kinds whose import takes a field mapping (the others read fixed names).
MAPPED_KINDS = (DATASET, PREFERENCES, JUDGE_RESULTS)
# A file name's words that favour a kind when two fit equally.
NAME_HINTS = {
    RUBRIC: ("rubric", "skillset"),
    GOLD: ("gold",),
    PREFERENCES: ("pref", "pairwise", "pairs", "arena"),
    JUDGE_RESULTS: ("review", "judge", "verdict"),
    DATASET: ("eval", "dataset", "output"),
}
CSV_SUFFIXES = (".csv", ".tsv")
YAML_SUFFIXES = (".yaml", ".yml")


@dataclass
class UploadGuess:
    """What the file seems to be. `kind` None: the page must ask (`candidates` are the
    kinds that fit, best first; empty when none does). `container` says how the file
    is written (``jsonl``, ``csv``, ``json array``, ``parquet``, ``json``, ``yaml``;
    with ``gzip`` in front when compressed). `mapping` is field -> column for the
    fields whose own column is absent (only for `MAPPED_KINDS`). `reason` is one
    sentence a person can check; `problems` what stopped the file from being read."""

    kind: str | None
    fmt: str | None
    container: str
    columns: list[str] = field(default_factory=list)
    mapping: dict[str, str] = field(default_factory=dict)
    candidates: list[str] = field(default_factory=list)
    reason: str = ""
    problems: list[Problem] = field(default_factory=list)

    @property
    def ambiguous(self) -> bool:
        return self.kind is None

    def mapping_lines(self) -> list[str]:
        """The mapping as the importers' ``field=column`` lines."""
        return [f"{name}={column}" for name, column in self.mapping.items()]


def _norm(name: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def _container(name: str, data: bytes) -> tuple[str, bool]:
    """(how the file is written, compressed?) from its first bytes and its name."""
    head = data[:64]
    compressed = formats.is_gzip(head)
    if compressed:
        import gzip
        import io
        import zlib

        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                head = stream.read(4096)
        except (OSError, EOFError, zlib.error):
            return "gzip", True
    lower = PurePath(name.lower().removesuffix(".gz")).name
    if formats.is_parquet(head):
        return "parquet", compressed
    if formats.is_json_array(head):
        return "json array", compressed
    if lower.endswith(YAML_SUFFIXES):
        return "yaml", compressed
    if lower.endswith(CSV_SUFFIXES):
        return "csv", compressed
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"{":
        return "jsonl", compressed
    first = text.split(b"\n", 1)[0]
    if re.match(rb"^[A-Za-z_][\w ]*:(\s|$)", first):
        return "yaml", compressed
    return "csv", compressed


def _mapping_rubric(name: str, data: bytes, container: str) -> list[str] | None:
    """The top-level keys of a file that is one JSON object or YAML mapping (not JSON
    Lines), else None."""
    if len(data) > 2_000_000:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    if container == "jsonl":
        try:
            value = json.loads(text)
        except ValueError:
            return None  # JSON Lines: several objects
    elif container == "yaml":
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            return None
    else:
        return None
    return list(value) if isinstance(value, dict) else None


def _first_rows(name: str, data: bytes, container: str) -> tuple[list[str], list]:
    """The columns of the first `SNIFF_ROWS` rows (in order of appearance) and the
    problems reading them, through the importers' one reader."""
    problems: list[Problem] = []
    fmt = "csv" if container.endswith("csv") else "jsonl"
    columns: list[str] = []
    rows = read_rows(data, file=name, fmt=fmt, problems=problems)
    for _, row in itertools.islice(rows, SNIFF_ROWS):
        columns.extend(str(k) for k in row if str(k) not in columns)
    return columns[:SNIFF_COLUMNS], problems


def _propose(kind: str, present: dict[str, str]) -> dict[str, str]:
    """field -> column for each field of `kind` whose own column is absent and one of
    its usual other names is present."""
    mapping: dict[str, str] = {}
    used = set()
    for name, aliases in ALIASES.get(kind, {}).items():
        if name in present:
            continue
        for alias in aliases:
            if alias in present and alias not in used:
                mapping[name] = present[alias]
                used.add(alias)
                break
    return mapping


def _has(present: dict[str, str], kind: str, name: str) -> bool:
    return name in present or any(a in present for a in ALIASES[kind].get(name, ()))


def _matches(present: dict[str, str]) -> list[tuple[str, str, int, str]]:
    """(kind, format, strength, why) of every kind the columns fit. Strength 2: the
    kind's own signature; 1: a weaker sign (a usual other name, a shared field)."""
    has = present.__contains__
    found: list[tuple[str, str, int, str]] = []
    if {"skill", "criteria", "scoring"} <= set(present):
        found.append(
            (RUBRIC, "rubric", 2, "Skill, Criteria and Scoring: FLASK's skillset")
        )
    if has("review") and has("score") and (has("question_id") or has("idx")):
        found.append(
            (JUDGE_RESULTS, "flask_review", 2, "a review and a score per FLASK id")
        )
    elif _has(present, JUDGE_RESULTS, "skill") and _has(
        present, JUDGE_RESULTS, "score"
    ):
        strength = 2 if has("skill") and has("score") else 1
        found.append((JUDGE_RESULTS, "", strength, "a skill and a score per row"))
    if all(
        _has(present, PREFERENCES, f) for f in ("prompt", "response_1", "response_2")
    ):
        own = has("response_1") and has("response_2")
        found.append((PREFERENCES, "", 2 if own else 1, "a prompt and two responses"))
    if has("response_id") or (
        has("instruction")
        and has("model")
        and any(has(f) for f in ("tolerance", "explanation", "kind"))
    ):
        found.append((GOLD, "", 2, "responses named with their expected scores"))
    elif has("instruction") and has("model") and not _has(present, DATASET, "response"):
        found.append((GOLD, "", 1, "an instruction and a model but no response text"))
    if not has("review") and (
        (has("idx") and has("instruction") and has("skill"))
        or (has("question_id") and has("text") and has("metrics"))
    ):
        found.append((DATASET, "flask", 2, "a FLASK evaluation set's fields"))
    elif (
        (has("question_id") or has("idx"))
        and any(has(f) for f in ("text", "output", "response"))
        and not has("instruction")
        and not has("review")
    ):
        found.append(
            (DATASET, "flask_outputs", 2, "FLASK model outputs (an id and a text)")
        )
    elif _has(present, DATASET, "instruction") and not any(
        k == PREFERENCES for k, *_ in found
    ):
        strength = 2 if has("instruction") and not found else 1
        found.append((DATASET, "", strength, "an instruction per row"))
    return found


def _by_name(name: str, kinds: list[str]) -> list[str]:
    lower = name.lower()
    return [k for k in kinds if any(word in lower for word in NAME_HINTS[k])]


def sniff_upload(*, name: str, data: bytes) -> UploadGuess:
    """Guess the import kind, format, columns and field mapping of the file `name` with
    content `data` (pure; reads at most the first `SNIFF_ROWS` rows).

    The strongest signature wins; when two kinds are equally strong the file name's
    words (`NAME_HINTS`) decide, and when they do not, or no kind fits, `kind` is None
    and `candidates` lists the kinds to ask about. A file that cannot be read at all
    gives `problems` (the import itself reports them again, line by line)."""
    container, compressed = _container(name, data)
    shown = f"gzip {container}" if compressed else container
    if container == "gzip":
        return UploadGuess(
            kind=None,
            fmt=None,
            container=shown,
            reason="the file is gzip-compressed but cannot be decompressed",
            problems=[Problem("is not a valid gzip file", file=name)],
        )
    keys = _mapping_rubric(name, data, container) if not compressed else None
    if keys is not None and "criteria" in keys:
        return UploadGuess(
            kind=RUBRIC,
            fmt="rubric",
            container="yaml" if container == "yaml" else "json",
            columns=keys,
            candidates=[RUBRIC],
            reason="one mapping with criteria: a rubric file",
        )
    if container == "yaml":
        return UploadGuess(
            kind=None,
            fmt=None,
            container="yaml",
            columns=keys or [],
            candidates=[RUBRIC],
            reason="a YAML file without criteria: not a rubric file, nor rows",
        )
    columns, problems = _first_rows(name, data, container)
    present = {_norm(c): c for c in columns}
    matches = _matches(present)
    best = max((s for *_, s, _ in matches), default=0)
    top = [m for m in matches if m[2] == best]
    kinds = [m[0] for m in sorted(matches, key=lambda m: -m[2])]
    if len(top) > 1:
        hinted = _by_name(name, [m[0] for m in top])
        top = [m for m in top if m[0] in hinted] if len(hinted) == 1 else top
    if not columns:
        return UploadGuess(
            kind=None,
            fmt=None,
            container=shown,
            reason="no rows could be read from the file",
            problems=problems,
        )
    if len(top) != 1:
        why = (
            " or ".join(f"{k.replace('_', ' ')} ({w})" for k, _, _, w in top)
            if top
            else "no column names a field of any import kind"
        )
        return UploadGuess(
            kind=None,
            fmt=None,
            container=shown,
            columns=columns,
            candidates=kinds,
            reason=f"it could be {why}" if top else why,
            problems=problems,
        )
    kind, fmt, _, why = top[0]
    if not fmt:
        fmt = "csv" if container.endswith("csv") else "jsonl"
    mapping = (
        _propose(kind, present)
        if kind in MAPPED_KINDS and fmt in ("jsonl", "csv")
        else {}
    )
    return UploadGuess(
        kind=kind,
        fmt=fmt,
        container=shown,
        columns=columns,
        mapping=mapping,
        candidates=kinds,
        reason=why,
        problems=problems,
    )
