"""Reading pairwise verdicts, classification labels, critiques, metadata and
checklist suggestions out of a judge's reply. Pure, no Django."""

from __future__ import annotations

import re

from annotation.importers.base import is_na
from judging.parsing.base import (
    RATIONALE_KEYS,
    ParseError,
    check_size,
    field_text,
    normalize_label,
    objects_from_end,
    whole_json,
)
from judging.parsing.pointwise import score_value

# --- Pairwise -----------------------------------------------------------------------------

_VERDICT_KEYS = (
    "winner",
    "verdict",
    "preference",
    "preferred",
    "better",
    "choice",
    "answer",
)
_VERDICT_LINE_RE = re.compile(
    r"^[\s>*#\-]*(?:final\s+)?(?:verdict|winner|preference|better answer)\s*[*]*\s*[:=]"
    r"\s*[*`\"'\[]*\s*(?P<value>[^\s*`\"'\].]+(?:\s+[ab])?)",
    re.IGNORECASE | re.MULTILINE,
)
_BRACKET_RE = re.compile(r"\[\[\s*(A|B|C|tie)\s*\]\]", re.IGNORECASE)


def _verdict_value(value: object, allow_tie: bool) -> str:
    word = normalize_label(str(value)).strip(".'\"[]")
    word = re.sub(r"^(answer|response|assistant|output)", "", word)
    if word in ("a", "b"):
        return word.upper()
    if word in ("tie", "draw", "equal", "c"):
        if not allow_tie:
            raise ParseError("the judge answered 'tie' but a tie is not allowed")
        return "tie"
    raise ParseError(f"{value!r} is not a verdict (A, B or tie)")


def parse_pairwise(text: str, *, allow_tie: bool) -> tuple[str, str]:
    """("A" | "B" | "tie", rationale)."""
    text = check_size(text)
    whole = whole_json(text)
    candidates = (
        [whole] if isinstance(whole, dict) else [o for _, o in objects_from_end(text)]
    )
    for obj in candidates:
        entry = {normalize_label(k): v for k, v in obj.items()}
        field = next((k for k in _VERDICT_KEYS if k in entry), None)
        if field is None:
            continue
        rationale = next((str(entry[k]) for k in RATIONALE_KEYS if k in entry), "")
        if not rationale and whole is None:
            rationale = text[: text.rfind("{")].strip()
        return _verdict_value(entry[field], allow_tie), rationale
    lines = list(_VERDICT_LINE_RE.finditer(text))
    if lines:
        last = lines[-1]
        return _verdict_value(last.group("value"), allow_tie), text[
            : last.start()
        ].strip()
    brackets = list(_BRACKET_RE.finditer(text))
    if brackets:
        last = brackets[-1]
        return _verdict_value(last.group(1), allow_tie), text[: last.start()].strip()
    raise ParseError("found no verdict (expected 'Verdict: A' or a JSON 'winner')")


# --- Classification and critique --------------------------------------------------------

_LABEL_KEYS = ("label", "classification", "class", "answer", "verdict")
_LABEL_LINE_RE = re.compile(
    r"^[\s>*#\-]*(?:final\s+)?(?:label|classification|class)\s*[*`]*\s*[:=]\s*"
    r"(?P<value>.+?)\s*$",
    re.IGNORECASE | re.MULTILINE,
)


def _label_value(value: object, labels: list[str]) -> str:
    word = str(value).strip().strip("*`\"'[]().").strip()
    by_norm = {normalize_label(label): label for label in labels}
    found = by_norm.get(normalize_label(word))
    if found is None:
        raise ParseError(
            f"{str(value)[:80]!r} is not one of the labels {', '.join(labels)}"
        )
    return found


def parse_classification(text: str, *, labels: list[str]) -> tuple[str, str]:
    """(one of `labels`, rationale).

    Read from a JSON object's "label" (or "classification", "answer", "verdict"), else
    the last "label: <value>" line, else a reply that is nothing but a label. Labels
    match exactly once case, spaces, hyphens and underscores are ignored; a value that
    is not a label raises `ParseError` naming it.
    """
    if len(labels) < 2:
        raise ValueError("need at least two labels")
    text = check_size(text)
    whole = whole_json(text)
    candidates = (
        [whole] if isinstance(whole, dict) else [o for _, o in objects_from_end(text)]
    )
    for obj in candidates:
        entry = {normalize_label(k): v for k, v in obj.items()}
        field = next((k for k in _LABEL_KEYS if k in entry), None)
        if field is None:
            continue
        rationale = next((str(entry[k]) for k in RATIONALE_KEYS if k in entry), "")
        return _label_value(entry[field], labels), rationale
    lines = list(_LABEL_LINE_RE.finditer(text))
    if lines:
        last = lines[-1]
        rationale = field_text(text, "rationale")
        if rationale is None:
            rationale = text[: last.start()].strip()
        return _label_value(last.group("value"), labels), rationale
    try:
        return _label_value(text, labels), ""
    except ParseError:
        raise ParseError(
            "found no label (expected 'label: <one of "
            + ", ".join(labels)
            + ">' or a JSON 'label')"
        ) from None


def parse_critique(text: str) -> str:
    """The critique text: a JSON object's "critique", else what follows a
    "critique:" field, else the whole reply. Empty critiques raise `ParseError`."""
    text = check_size(text)
    whole = whole_json(text)
    if isinstance(whole, dict):
        entry = {normalize_label(k): v for k, v in whole.items()}
        value = entry.get("critique", entry.get("feedback"))
        if not isinstance(value, str):
            raise ParseError("the JSON reply has no 'critique' text")
        critique = value.strip()
    else:
        field = field_text(text, "critique")
        critique = (field if field is not None else text).strip()
    if not critique:
        raise ParseError("the critique is empty")
    return critique


# --- Metadata and checklist --------------------------------------------------------------


def _json_reply(text: str, wanted: tuple[str, ...]) -> dict:
    text = check_size(text)
    whole = whole_json(text)
    if isinstance(whole, dict):
        return whole
    for _, obj in objects_from_end(text):
        if any(normalize_label(k) in wanted for k in obj):
            return obj
    raise ParseError("found no JSON object in the reply")


def _match_keys(
    values: object, allowed: list[str] | dict[str, str], what: str
) -> list[str]:
    """The entries of `allowed` `values` names (a list of names, returned as named;
    or {key: label}, matched by key or label, the key returned), in order, once
    each; `ParseError` naming the first value that is none of them."""
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list):
        raise ParseError(f"{what}: expected a list, got {values!r}")
    if isinstance(allowed, dict):
        by_norm = {normalize_label(k): k for k in allowed}
        by_norm.update({normalize_label(label): k for k, label in allowed.items()})
        names = list(allowed.values())
    else:
        by_norm = {normalize_label(a): a for a in allowed}
        names = list(allowed)
    out: list[str] = []
    for value in values:
        key = by_norm.get(normalize_label(str(value)))
        if key is None:
            raise ParseError(f"{what}: {value!r} is not one of {', '.join(names)}")
        if key not in out:
            out.append(key)
    return out


def _difficulty(value: object, levels: dict[int, str] | None = None) -> int | None:
    """A reply's difficulty: FLASK's 1-5 (`levels` None) or one of the dataset's
    declared `levels` ({level: label}), given by number or label; N/A is None."""
    if levels is None:
        try:
            return score_value("difficulty", value)
        except ParseError:
            raise ParseError(
                f"difficulty: {value!r} is not a level from 1 to 5"
            ) from None
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        word = value.strip().strip("*").strip()
        if is_na(word):
            return None
        if re.fullmatch(r"[+-]?[0-9]{1,3}", word):
            value = int(word)
        else:
            by_label = {normalize_label(label): n for n, label in levels.items()}
            value = by_label.get(normalize_label(word), value)
    if isinstance(value, int) and not isinstance(value, bool) and value in levels:
        return value
    allowed = "; ".join(f"{n} = {label}" for n, label in levels.items())
    raise ParseError(
        f"difficulty: {value!r} is not a level of this dataset ({allowed})"
    )


def parse_metadata(
    text: str,
    *,
    domains: list[str] | dict[str, str],
    skill_keys: list[str],
    levels: dict[int, str] | None = None,
) -> dict:
    """{"domains": 1-2 of `domains`, "difficulty": a level or None, "skills": 1-3
    keys}. `domains`: names (returned as named) or {key: label} (a reply may name
    either; the key is returned). `levels`: the dataset's declared difficulty levels
    {level: label} (None: FLASK's 1-5). `ParseError` naming the value for a domain,
    level or skill that is not offered."""
    obj = _json_reply(text, ("domains", "difficulty", "skills"))
    entry = {normalize_label(k): v for k, v in obj.items()}
    for field in ("domains", "difficulty", "skills"):
        if field not in entry:
            raise ParseError(f"the reply has no {field!r}")
    found_domains = _match_keys(entry["domains"], domains, "domains")
    if not 1 <= len(found_domains) <= 2:
        raise ParseError(f"domains: expected 1 or 2, got {len(found_domains)}")
    skills = _match_keys(entry["skills"], skill_keys, "skills")
    if not 1 <= len(skills) <= 3:
        raise ParseError(f"skills: expected 1 to 3, got {len(skills)}")
    return {
        "domains": found_domains,
        "difficulty": _difficulty(entry["difficulty"], levels),
        "skills": skills,
    }


def parse_checklist(text: str, *, skill_keys: list[str]) -> list[dict]:
    """[{"skill": key or None, "question": str}, ...] in the order given."""
    wanted = tuple(
        normalize_label(k) for k in [*skill_keys, "checklist", "items", "general"]
    )
    text = check_size(text)
    whole = whole_json(text)
    if isinstance(whole, list):
        obj: object = {"checklist": whole}
    elif isinstance(whole, dict):
        obj = whole
    else:
        obj = _json_reply(text, wanted + ("generalquestions",))
    assert isinstance(obj, dict)
    by_norm = {normalize_label(k): k for k in skill_keys}
    general = {"general", "generalquestions"}
    items: list[dict] = []

    def add(skill: object, question: object) -> None:
        if not isinstance(question, str):
            raise ParseError(f"checklist question {question!r} is not text")
        if not question.strip():
            return
        if skill is None or is_na(skill) or normalize_label(str(skill)) in general:
            items.append({"skill": None, "question": question.strip()})
            return
        key = by_norm.get(normalize_label(str(skill)))
        if key is None:
            raise ParseError(f"checklist: {skill!r} is not a requested skill")
        items.append({"skill": key, "question": question.strip()})

    listed = next(
        (v for k, v in obj.items() if normalize_label(k) in ("checklist", "items")),
        None,
    )
    if isinstance(listed, list):
        for item in listed:
            if not isinstance(item, dict) or "question" not in item:
                raise ParseError(f"checklist item {item!r} has no 'question'")
            add(item.get("skill"), item["question"])
    else:
        for label, questions in obj.items():
            if (
                normalize_label(label) not in by_norm
                and normalize_label(label) not in general
                and not is_na(label)
            ):
                continue
            for question in questions if isinstance(questions, list) else [questions]:
                add(label, question)
    if not items:
        raise ParseError("the checklist has no questions")
    return items
