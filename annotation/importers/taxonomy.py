"""A dataset's own slicing taxonomy: its domain names, its difficulty levels with
labels, and the other categorical columns (facets) its dashboards slice by.

FLASK's taxonomy (ten domains, five difficulty levels) is the built-in: a dataset
that declares nothing is read and sliced with it, as before. A dataset may instead
declare, at its first import (`import_dataset --taxonomy FILE --facet COLUMN`, the
import API's `taxonomy` and `facets` fields), a JSON object such as::

    {"domains": ["billing", {"key": "tech", "label": "Technical issue"}],
     "difficulty": {"1": "routine", "2": "tricky", "3": "escalation"},
     "facets": ["channel", {"name": "language", "values": ["en", "de"]}]}

- `domains`: a list of names (or {key, label}); null or absent: FLASK's ten. A row's
  domains (at most two, as FLASK's) must be among them, matched by key or label
  ignoring case, spaces, hyphens and underscores; the key is stored.
- `difficulty`: the dataset's levels with their labels, as {"1": label, ...} (any
  whole numbers 1-99, at most 20 levels, not necessarily consecutive) or a list of
  labels (levels 1, 2, ... in order); null or absent: FLASK's five (1-5). A row
  gives the level or its label.
- `facets`: columns of the file kept with the instruction (its metadata) whose values
  are categories; with `values`, a row's value must be one of them. A facet's value
  is stored as text; a row without it is "unknown" on that facet. `--facet COLUMN`
  adds one whose values are whatever the file holds (inferred).

The declaration is made with the dataset's first import: a later import into the
dataset uses it, and one that declares another is refused naming `taxonomy`. Owners
and researchers change it afterwards only through
`annotation.services.taxonomy.dataset_taxonomy_update` (rename labels, add or drop
levels, domains and facets no instruction uses), which checks the stored
instructions against the new declaration (`Taxonomy.orphans`).

Pure: JSON in, `Taxonomy` and `Problem`s out; no database.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from annotation.importers.base import (
    DOMAIN_ALIASES,
    DOMAIN_BY_NAME,
    is_unknown,
    normalise_name,
    type_name,
)
from flaskapp.errors import DomainError, Problem
from flaskapp.untrusted import printable, text_problem

# Instruction.domain_1 / domain_2 hold a key; their column is 32 characters.
MAX_DOMAIN_KEY = 32
MAX_LABEL = 100
MAX_DOMAINS_DECLARED = 100
FLASK_LEVELS = range(1, 6)  # FLASK's five levels
# A declared level is a whole number 1-99 (Instruction.difficulty's check constraint:
# at least 1; 0 means "unknown" in the agreement arrays); a dataset has at most 20.
MAX_LEVEL = 99
MAX_LEVELS = 20
MAX_FACETS = 20
MAX_FACET_VALUES = 100  # a facet is a category, not an id: the dashboard lists them
MAX_FACET_VALUE = 200
# A facet's name is a column name and part of the dashboard's `slice=facet.NAME:VALUE`.
FACET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .\-]{0,63}")
FACET_PREFIX = "facet."
# Names the generic importer reads as fields, never as metadata: not facets.
RESERVED_FACETS = frozenset(
    {"id", "instruction", "reference", "response", "model", "task", "domains"}
    | {"difficulty", "skills", "checklist", "score_rubric", "rater", "rationale"}
)
# FLASK's domains' labels, as `annotation.models.Domain` names them.
FLASK_DOMAIN_LABELS = {key: name.title() for name, key in DOMAIN_BY_NAME.items()}


@dataclass(frozen=True)
class Facet:
    name: str
    values: tuple[str, ...] | None = None  # None: any value (inferred from the data)

    @property
    def dimension(self) -> str:
        """Its slice dimension on the dashboards (`facet.channel`)."""
        return FACET_PREFIX + self.name


@dataclass(frozen=True)
class Taxonomy:
    """A dataset's declared taxonomy; `None` parts are FLASK's built-in."""

    domains: tuple[tuple[str, str], ...] | None = None  # (key, label)
    difficulty: tuple[tuple[int, str], ...] | None = None  # (level, label)
    facets: tuple[Facet, ...] = field(default_factory=tuple)

    # --- reading and writing the declaration ---------------------------------------

    @classmethod
    def stored(cls, value: dict | None) -> Taxonomy:
        """The taxonomy `Dataset.taxonomy` holds (null: FLASK's)."""
        if not value:
            return cls()
        return taxonomy_parse(value)

    @property
    def is_flask(self) -> bool:
        return self.domains is None and self.difficulty is None and not self.facets

    def to_json(self) -> dict | None:
        """What `Dataset.taxonomy` stores (None: FLASK's, nothing declared)."""
        if self.is_flask:
            return None
        return {
            "domains": None
            if self.domains is None
            else [{"key": k, "label": label} for k, label in self.domains],
            "difficulty": None
            if self.difficulty is None
            else {str(level): label for level, label in self.difficulty},
            "facets": [
                {"name": f.name, "values": None if f.values is None else list(f.values)}
                for f in self.facets
            ],
        }

    # --- labels ----------------------------------------------------------------------

    def domain_labels(self) -> dict[str, str]:
        """Domain key -> label, in the declared order."""
        if self.domains is None:
            return dict(FLASK_DOMAIN_LABELS)
        return dict(self.domains)

    def difficulty_labels(self) -> dict[int, str]:
        """Level -> label (FLASK's: "level N", as the dashboards always said)."""
        if self.difficulty is None:
            return {level: f"level {level}" for level in FLASK_LEVELS}
        return dict(self.difficulty)

    def facet(self, name: str) -> Facet | None:
        return next((f for f in self.facets if f.name == name), None)

    # --- filters: a query's values ----------------------------------------------------

    def filter_problems(self, params: dict[str, str]) -> list[Problem]:
        """A problem naming each parameter of `params` (``domain``, ``difficulty``,
        ``facet.NAME``; blank: no filter) whose value this taxonomy does not
        declare, listing the values allowed. Other keys are not looked at."""
        problems = []
        domain = (params.get("domain") or "").strip()
        if domain and domain not in self.domain_labels():
            allowed = ", ".join(self.domain_labels())
            problems.append(
                Problem(
                    f"{printable(domain[:60])!r} is not a domain of this dataset; "
                    f"allowed: {allowed}",
                    field="domain",
                )
            )
        level = (params.get("difficulty") or "").strip()
        levels = [str(n) for n in self.difficulty_labels()]
        if level and level != "unknown" and level not in levels:
            problems.append(
                Problem(
                    f"{printable(level[:60])!r} is not a difficulty level of this "
                    f"dataset; allowed: {', '.join(levels)}, unknown",
                    field="difficulty",
                )
            )
        for name, value in params.items():
            if not name.startswith(FACET_PREFIX) or not (value or "").strip():
                continue
            facet = self.facet(name.removeprefix(FACET_PREFIX))
            if facet is None:
                declared = ", ".join(f.dimension for f in self.facets) or "none"
                problems.append(
                    Problem(
                        f"this dataset has no such facet (its facets: {declared})",
                        field=printable(name[:80]),
                    )
                )
            elif facet.values is not None and value.strip() not in (
                *facet.values,
                "unknown",
            ):
                problems.append(
                    Problem(
                        f"{printable(value.strip()[:60])!r} is not a value of facet "
                        f"{facet.name!r}; allowed: {', '.join(facet.values)}, unknown",
                        field=facet.dimension,
                    )
                )
        return problems

    # --- an edit: what the stored instructions still need ---------------------------

    def orphans(self, usage: TaxonomyUsage) -> list[Problem]:
        """A problem for each value the dataset's instructions hold (`usage`) that
        this taxonomy would no longer declare: a dropped domain or level in use, a
        facet's value outside its declared values, an inferred facet with more than
        `MAX_FACET_VALUES` values. Empty: the edit orphans nothing."""
        problems = []
        domains = self.domain_labels()
        for key, n in sorted(usage.domains.items()):
            if key not in domains:
                problems.append(
                    Problem(
                        f"domain {key!r} is used by {n} instruction(s); keep it "
                        "(rename its label instead) or change those instructions first",
                        field="taxonomy.domains",
                    )
                )
        levels = self.difficulty_labels()
        for level, n in sorted(usage.levels.items()):
            if level not in levels:
                problems.append(
                    Problem(
                        f"difficulty level {level} is used by {n} instruction(s); "
                        "keep it (rename its label instead)",
                        field="taxonomy.difficulty",
                    )
                )
        for facet in self.facets:
            seen = usage.facet_values.get(facet.name, {})
            if facet.values is None:
                if len(seen) > MAX_FACET_VALUES:
                    problems.append(
                        Problem(
                            f"facet {facet.name!r}: the instructions hold {len(seen)} "
                            f"different values; a facet has at most {MAX_FACET_VALUES}",
                            field="taxonomy.facets",
                        )
                    )
                continue
            outside = sorted(v for v in seen if v not in facet.values)
            if outside:
                problems.append(
                    Problem(
                        f"facet {facet.name!r}: {len(outside)} value(s) the "
                        f"instructions hold are not declared, e.g. "
                        f"{printable(outside[0][:60])!r}",
                        field="taxonomy.facets",
                    )
                )
        return problems

    # --- reading a row's values --------------------------------------------------------

    def domain_key(self, raw: str) -> tuple[str | None, str]:
        """(key, "") for a row's domain name, or (None, problem text)."""
        name = normalise_name(raw)
        if self.domains is None:
            key = DOMAIN_BY_NAME.get(name) or DOMAIN_ALIASES.get(name)
            if key is None:
                allowed = ", ".join(sorted(n.title() for n in DOMAIN_BY_NAME))
                return None, f"unknown domain {raw!r}; expected one of: {allowed}"
            return key, ""
        for key, label in self.domains:
            if name in (normalise_name(key), normalise_name(label)):
                return key, ""
        allowed = ", ".join(label for _, label in self.domains)
        return None, (
            f"unknown domain {printable(raw[:60])!r}; this dataset's domains are: "
            f"{allowed}"
        )

    def difficulty_level(self, value: Any) -> tuple[int | None, str]:
        """(level or None for unknown, "") or (None, problem text) for a row's value
        that is a declared level's number or label. FLASK's is `RowReader`'s own."""
        labels = self.difficulty_labels()
        allowed = "; ".join(f"{level} = {label}" for level, label in labels.items())
        if isinstance(value, bool):
            return None, f"must be a level or its label ({allowed}), got boolean"
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, str):
            if is_unknown(value):
                return None, ""
            text = value.strip()
            if re.fullmatch(r"[+-]?[0-9]{1,3}", text):
                value = int(text)
            else:
                name = normalise_name(text)
                for level, label in labels.items():
                    if normalise_name(label) == name:
                        return level, ""
                return None, (
                    f"unknown difficulty {printable(text[:60])!r}; this dataset's "
                    f"levels are: {allowed}"
                )
        if isinstance(value, int):
            if value == -1:
                return None, ""
            if value in labels:
                return value, ""
            return (
                None,
                f"difficulty {value} is not a level of this dataset ({allowed})",
            )
        return None, f"must be a level or its label ({allowed}), got {type_name(value)}"

    def facet_value(self, facet: Facet, value: Any) -> tuple[str | None, str]:
        """(the stored text or None for unknown, "") or (None, problem text)."""
        if value is None:
            return None, ""
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, int | float):
            text = str(int(value)) if float(value).is_integer() else str(value)
        elif isinstance(value, str):
            text = value.strip()
        else:
            return None, (
                f"facet {facet.name!r} must be one value (text or a number), got "
                f"{type_name(value)}"
            )
        if not text:
            return None, ""
        if len(text) > MAX_FACET_VALUE:
            return None, (
                f"facet {facet.name!r} is {len(text)} characters long; a category "
                f"has at most {MAX_FACET_VALUE}"
            )
        if facet.values is None:
            return text, ""
        name = normalise_name(text)
        for allowed in facet.values:
            if normalise_name(allowed) == name:
                return allowed, ""
        return None, (
            f"unknown {facet.name} {printable(text[:60])!r}; expected one of: "
            + ", ".join(facet.values)
        )


FLASK = Taxonomy()


@dataclass(frozen=True)
class TaxonomyUsage:
    """What a dataset's instructions hold: domain key -> instructions, level ->
    instructions, facet name -> {stored text -> instructions} (read by
    `annotation.selectors.taxonomy.taxonomy_usage`)."""

    domains: dict[str, int] = field(default_factory=dict)
    levels: dict[int, int] = field(default_factory=dict)
    facet_values: dict[str, dict[str, int]] = field(default_factory=dict)


def _fail(message: str) -> DomainError:
    return DomainError(
        f"the taxonomy is not valid: {message}",
        [Problem(message, field="taxonomy")],
    )


def _label(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{where} must be a non-empty text, got {type_name(value)}")
    value = value.strip()
    if problem := text_problem(value):
        raise _fail(f"{where} {problem}")
    if len(value) > MAX_LABEL:
        raise _fail(
            f"{where} is {len(value)} characters long; the limit is {MAX_LABEL}"
        )
    return value


def _domains(value: Any) -> tuple[tuple[str, str], ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value:
        raise _fail(
            f"`domains` must be a non-empty list of names (or null for FLASK's), got "
            f"{type_name(value)}"
        )
    if len(value) > MAX_DOMAINS_DECLARED:
        raise _fail(f"`domains` has {len(value)} names; the limit is 100")
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for n, entry in enumerate(value, 1):
        where = f"`domains` item {n}"
        if isinstance(entry, dict):
            key = _label(entry.get("key"), f"{where}'s `key`")
            label = _label(entry.get("label", key), f"{where}'s `label`")
        else:
            key = label = _label(entry, where)
        if len(key) > MAX_DOMAIN_KEY:
            raise _fail(
                f"{where}: the key {key!r} is {len(key)} characters long; a domain's "
                f"key has at most {MAX_DOMAIN_KEY} (give a shorter `key` and the "
                "long name as `label`)"
            )
        for name in {normalise_name(key), normalise_name(label)}:
            if name in seen and seen[name] != n:
                raise _fail(f"{where}: {name!r} is also item {seen[name]}")
            seen[name] = n
        out.append((key, label))
    return tuple(out)


def _difficulty(value: Any) -> tuple[tuple[int, str], ...] | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = {str(n): label for n, label in enumerate(value, 1)}
    if not isinstance(value, dict) or not value:
        raise _fail(
            "`difficulty` must be an object of levels and labels "
            f'({{"1": "easy", ...}}), a list of labels, or null; got {type_name(value)}'
        )
    if len(value) > MAX_LEVELS:
        raise _fail(
            f"`difficulty` has {len(value)} levels; a dataset has at most {MAX_LEVELS}"
        )
    out: dict[int, str] = {}
    for key, label in value.items():
        text = str(key).strip()
        if not re.fullmatch(r"[0-9]{1,2}", text) or not 1 <= int(text) <= MAX_LEVEL:
            raise _fail(
                f"`difficulty` level {printable(text[:20])!r} is not a whole number "
                f"from 1 to {MAX_LEVEL}"
            )
        if int(text) in out:
            raise _fail(f"`difficulty` level {int(text)} is given twice")
        out[int(text)] = _label(label, f"`difficulty` level {text}'s label")
    names = [normalise_name(label) for label in out.values()]
    if len(set(names)) < len(names):
        raise _fail("`difficulty` gives two levels the same label")
    return tuple(sorted(out.items()))


def _facets(value: Any) -> tuple[Facet, ...]:
    if value is None:
        return ()
    if isinstance(value, dict):  # {"channel": ["email", ...] or null}
        value = [{"name": k, "values": v} for k, v in value.items()]
    if not isinstance(value, list):
        raise _fail(f"`facets` must be a list of column names, got {type_name(value)}")
    if len(value) > MAX_FACETS:
        raise _fail(f"`facets` has {len(value)} columns; the limit is {MAX_FACETS}")
    out: list[Facet] = []
    for n, entry in enumerate(value, 1):
        where = f"`facets` item {n}"
        values = None
        if isinstance(entry, dict):
            name, values = entry.get("name"), entry.get("values")
        else:
            name = entry
        if not isinstance(name, str) or not FACET_NAME.fullmatch(name.strip()):
            raise _fail(
                f"{where}: {printable(str(name)[:40])!r} is not a column name a "
                "facet may have (letters, digits, _ . - and spaces, at most 64, no `:`)"
            )
        name = name.strip()
        if name in RESERVED_FACETS:
            raise _fail(
                f"{where}: {name!r} is a field of the import (use `domains` and "
                "`difficulty` for those); a facet is another column"
            )
        if any(f.name == name for f in out):
            raise _fail(f"{where}: facet {name!r} is declared twice")
        if values is not None:
            if not isinstance(values, list) or not values:
                raise _fail(
                    f"{where}: `values` must be a non-empty list (or null for any), "
                    f"got {type_name(values)}"
                )
            if len(values) > MAX_FACET_VALUES:
                raise _fail(
                    f"{where}: {len(values)} values; a facet has at most "
                    f"{MAX_FACET_VALUES}"
                )
            values = tuple(
                _label(str(v) if isinstance(v, int | float) else v, f"{where}'s value")
                for v in values
            )
            if len({normalise_name(v) for v in values}) < len(values):
                raise _fail(f"{where}: a value is listed twice")
        out.append(Facet(name, values))
    return tuple(out)


def taxonomy_parse(value: Any, *, facets: list[str] | None = None) -> Taxonomy:
    """The `Taxonomy` a declaration (parsed JSON) states, with the inferred facets
    `facets` (`--facet COLUMN`) added. Raises `DomainError` whose problem names
    `taxonomy` and the part at fault; nothing else is checked here (the rows are,
    against the result, by the importer)."""
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise _fail(f"must be a JSON object, got {type_name(value)}")
    unknown = sorted(set(value) - {"domains", "difficulty", "facets"})
    if unknown:
        raise _fail(
            f"unknown key {printable(str(unknown[0])[:40])!r}; the keys are domains, "
            "difficulty and facets"
        )
    taxonomy = Taxonomy(
        domains=_domains(value.get("domains")),
        difficulty=_difficulty(value.get("difficulty")),
        facets=_facets(value.get("facets")),
    )
    if facets:
        taxonomy = Taxonomy(
            taxonomy.domains,
            taxonomy.difficulty,
            (*taxonomy.facets, *_facets([f for f in dict.fromkeys(facets)
                                         if taxonomy.facet(f) is None])),
        )  # fmt: skip
        if len(taxonomy.facets) > MAX_FACETS:
            raise _fail(f"{len(taxonomy.facets)} facets; the limit is {MAX_FACETS}")
    return taxonomy
