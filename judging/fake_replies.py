"""The fake judge's replies: what `judging.fake_server` answers each task with.

Pure functions of the request body and the server's settings (`FakeServerConfig`),
no HTTP. See `judging.fake_server` for what each kind of prompt is answered with.
"""

from __future__ import annotations

import hashlib
import json
import re

from judging import prompts


def _unit(*parts: str) -> float:
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _length_unit(text: str) -> float:
    return min(1.0, len(text) / 2000.0)


def fake_score(
    response: str,
    skill_key: str,
    length_bias: float = 0.3,
    values: list | tuple = (1, 2, 3, 4, 5),
):
    """The deterministic value the fake judge gives out of `values` (in scale order;
    FLASK's 1-5 by default): a longer answer gets a later (higher) one a bit more
    often. Labels (strings) have no order: they are drawn from the hash alone."""
    if not all(isinstance(v, int) for v in values):
        length_bias = 0.0
    mixed = (1 - length_bias) * _unit(response, skill_key) + length_bias * _length_unit(
        response
    )
    n = len(values)
    return values[min(n - 1, int(mixed * n))]


_SCALE_RE = re.compile(
    r"^" + re.escape(prompts.SCALE_LINE) + r"(-?\d+) \(worst\) to (-?\d+) \(best\)",
    re.MULTILINE,
)
_LABELS_RE = re.compile(r"^" + re.escape(prompts.LABELS_LINE) + r"(.+)$", re.MULTILINE)


def _schema_values(schema: dict, key: str) -> list:
    """The values (N/A aside) the schema's enum allows for `key`'s score."""
    score = (
        schema.get("properties", {}).get(key, {}).get("properties", {}).get("score", {})
    )
    options = score.get("anyOf") or [score]
    values = [v for o in options for v in o.get("enum", []) if v != prompts.NA]
    return values or [1, 2, 3, 4, 5]


def _prompt_values(text: str, keys: list[str]) -> dict[str, list]:
    """Per skill key, the values its prompt block states ("Scale:" or "Labels:"
    line up to the next skill), FLASK's 1-5 when it states none."""
    starts = [
        (m.start(), m.group(1))
        for m in re.finditer(r"^Skill key: ([A-Za-z0-9_\-]+)", text, re.MULTILINE)
    ]
    out: dict[str, list] = {}
    for i, (start, key) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        block = text[start:end]
        scale, labels = _SCALE_RE.search(block), _LABELS_RE.search(block)
        if scale:
            out.setdefault(key, list(range(int(scale[1]), int(scale[2]) + 1)))
        elif labels:
            out.setdefault(key, labels[1].split(prompts.LABELS_SEPARATOR))
    return {k: out.get(k, [1, 2, 3, 4, 5]) for k in keys}


def _out_of_scale(values: list):
    """A value the skill does not allow."""
    if values and all(isinstance(v, int) for v in values):
        return max(values) + 1
    return "undecided"


def _between(text: str, start: str, end: str) -> str | None:
    i = text.find(start)
    if i < 0:
        return None
    i += len(start)
    j = text.find(end, i)
    return text[i:j] if j >= 0 else None


def _answer_in(text: str, *, default: str) -> str:
    """The answer under review in a prompt (FLASK's markers, else FLAMe's
    "response:" field), even when it is empty; `default` when neither is there."""
    for start, end in (
        (prompts.ANSWER_START + "\n", "\n" + prompts.ANSWER_END),
        ("\nresponse: ", "\n\nEVALUATION:"),
    ):
        if (found := _between(text, start, end)) is not None:
            return found
    return default


def prompt_text(body: dict) -> str:
    """The contents of every message of a chat request `body`, joined by newlines:
    what the fake judge reads its task from (and counts its tokens by)."""
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [])


def _schema(body: dict) -> tuple[str | None, dict]:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        return spec.get("name"), spec.get("schema") or {}
    return None, {}


def _task_kind(schema_name: str | None, text: str) -> str:
    by_schema = {
        prompts.SCHEMA_POINTWISE: "pointwise",
        prompts.SCHEMA_PAIRWISE: "pairwise",
        prompts.SCHEMA_METADATA: "metadata",
        prompts.SCHEMA_CHECKLIST: "checklist",
        prompts.SCHEMA_CLASSIFICATION: "classification",
    }
    if schema_name in by_schema:
        return by_schema[schema_name]
    m = re.search(r"^Task type: (\w+)", text, re.MULTILINE)
    return m.group(1) if m else "pointwise"


def _keys(text: str, label: str) -> list[str]:
    found = re.findall(rf"^{label}: ([A-Za-z0-9_\-]+)", text, re.MULTILINE)
    return list(dict.fromkeys(found))


def _enum(schema: dict, prop: str) -> list[str]:
    return list(
        schema.get("properties", {}).get(prop, {}).get("items", {}).get("enum", [])
    )


def _is_flame(text: str) -> bool:
    return text.startswith("INSTRUCTIONS:\n")


def _scored_keys(text: str) -> list[str]:
    """The skills a pointwise prompt asks to score: its "Skills to score:" line (the
    cache-friendly layout, whose rubric shows every skill), else every "Skill key:"."""
    m = re.search(
        r"^" + re.escape(prompts.SKILLS_TO_SCORE_LINE) + r"(.+)$", text, re.MULTILINE
    )
    if m:
        return [k.strip() for k in m.group(1).split(",") if k.strip()]
    return _keys(text, "Skill key")


def _pointwise_reply(body, text, schema, config, malformed, out_of_scale=False) -> str:
    keys = list(schema.get("properties", {})) if schema else _scored_keys(text)
    allowed = (
        {k: _schema_values(schema, k) for k in keys}
        if schema
        else _prompt_values(text, keys)
    )
    response = _answer_in(text, default=text)
    if malformed:
        keys = keys[:-1]  # a requested skill goes missing
    scores = {k: fake_score(response, k, config.length_bias, allowed[k]) for k in keys}
    if out_of_scale and keys:
        scores[keys[-1]] = _out_of_scale(allowed[keys[-1]])
    feedback = {
        k: f"Fake feedback on {k}: a deterministic verdict for testing, no real review."
        for k in keys
    }
    if schema:
        return json.dumps(
            {k: {"feedback": feedback[k], "score": scores[k]} for k in keys}
        )
    if _is_flame(text) and keys:
        # FLAMe layout: "field: value" lines, as its EVALUATION block asks.
        lines = ["feedback: " + " ".join(feedback[k] for k in keys)]
        return "\n".join(lines + [f"{k}: {scores[k]}" for k in keys])
    paragraphs = "\n\n".join(f"**{k}**\n{feedback[k]}" for k in keys)
    return f"{paragraphs}\n\n{json.dumps(scores)}" if keys else "Nothing to score."


def _pairwise_reply(body, text, schema, config, malformed) -> str:
    winners = (
        schema.get("properties", {}).get("winner", {}).get("enum") if schema else None
    )
    allow_tie = "tie" in winners if winners else '"Verdict: tie"' in text
    a = _between(text, "### Answer A\n", "\n\n### Answer B\n") or _between(
        text, "\nresponse A: ", "\nresponse B: "
    )
    b = _between(text, "### Answer B\n", "\n### End of answers") or _between(
        text, "\nresponse B: ", "\n\nEVALUATION:"
    )
    a, b = a or text, b or ""
    bias = config.length_bias

    def merit(answer: str) -> float:
        return (1 - bias) * _unit(answer, "pairwise") + bias * _length_unit(answer)

    diff = merit(a) + config.position_bias - merit(b)
    winner = "tie" if allow_tie and abs(diff) < 0.03 else ("A" if diff > 0 else "B")
    cued = _cue_target(text)
    if cued and _unit(text, "cue") < config.cue_follow:
        winner = cued
    if config.pairwise_verdict:
        winner = config.pairwise_verdict
    rationale = "Fake comparison: a deterministic verdict for testing."
    if schema:
        return json.dumps(
            {"rationale": rationale}
            if malformed
            else {"rationale": rationale, "winner": winner}
        )
    if malformed:
        return "Both answers have merits."
    if _is_flame(text):
        return f"rationale: {rationale}\nwinner: {winner}"
    return f"{rationale}\nVerdict: {winner}"


def _cue_target(text: str) -> str | None:
    """ "A" or "B" when the prompt's note names one answer (a bandwagon cue)."""
    note = _between(text, "### Note\n", "\n\n") or _between(
        text, "\nnote: ", "\nresponse A: "
    )
    m = re.search(r"\b(?:answer|response) ([AB])\b", note or "")
    return m.group(1) if m else None


def _classification_reply(body, text, schema, config, malformed) -> str:
    labels = (
        schema.get("properties", {}).get("label", {}).get("enum") if schema else None
    )
    if not labels:
        m = re.search(rf"^{prompts.LABELS_LINE}(.+)$", text, re.MULTILINE)
        labels = m.group(1).split(prompts.LABELS_SEPARATOR) if m else ["yes", "no"]
    response = _answer_in(text, default=text)
    label = (
        config.classification_label
        or labels[int(_unit(response, "classification") * len(labels))]
    )
    if malformed:
        label = "undecided"
    rationale = "Fake label: deterministic, for testing."
    if schema:
        return json.dumps({"rationale": rationale, "label": label})
    if _is_flame(text):
        return f"rationale: {rationale}\nlabel: {label}"
    return f"{rationale}\nLabel: {label}"


def _critique_reply(body, text, schema, config, malformed) -> str:
    if malformed:
        return "critique:"
    response = _answer_in(text, default="")
    critique = (
        f"The response has {len(response)} characters. Fake critique: it states "
        "its main point but gives no evidence for it."
    )
    label = "critique" if _is_flame(text) else "Critique"
    return f"{label}: {critique}"


def _metadata_reply(body, text, schema, config, malformed) -> str:
    domains = _enum(schema, "domains") or re.findall(r"^Domain: (.+?)\s*$", text, re.M)
    domains = domains or ["humanities"]
    skills = _enum(schema, "skills") or _keys(text, "Skill key")
    request = _between(text, "### Request\n", "\n\n### How to reply") or text
    top = sorted(skills, key=lambda k: _unit(request, k))[:3]
    reply = {
        "rationale": "Fake labels: deterministic, for testing.",
        "domains": [domains[int(_unit(request, "domain") * len(domains))]],
        "difficulty": _metadata_level(text, schema, request, malformed),
        "skills": top,
    }
    return json.dumps(reply)


def _metadata_level(text, schema, request, malformed) -> int:
    """A level the prompt (its "N = ..." lines before the request) or the schema
    offers, FLASK's 1-5 if neither lists any; malformed: one it does not offer."""
    menu = text.split("### Request\n", 1)[0]
    levels = (schema or {}).get("properties", {}).get("difficulty", {}).get("enum")
    levels = levels or [int(n) for n in re.findall(r"^([0-9]+) = ", menu, re.M)]
    levels = levels or [1, 2, 3, 4, 5]
    if malformed:
        return 9 if 9 not in levels else max(levels) + 1
    return levels[int(_unit(request, "difficulty") * len(levels))]


def _checklist_reply(body, text, schema, config, malformed) -> str:
    keys = [k for k in schema.get("properties", {})] if schema else None
    keys = keys or [*_keys(text, "Skill key"), prompts.CHECKLIST_GENERAL_KEY]
    if malformed:
        return "{}"
    reply = {
        k: []
        if k == prompts.CHECKLIST_GENERAL_KEY
        else [f"Does the answer meet the {k} criteria for this request?"]
        for k in keys
    }
    return json.dumps(reply)


_REPLIES = {
    "pointwise": _pointwise_reply,
    "pairwise": _pairwise_reply,
    "metadata": _metadata_reply,
    "checklist": _checklist_reply,
    "classification": _classification_reply,
    "critique": _critique_reply,
}


def build_reply(
    body: dict,
    config,  # a judging.fake_server.FakeServerConfig (not imported: no cycle)
    *,
    malformed: bool = False,
    out_of_scale: bool = False,
) -> str:
    """The assistant text the fake judge answers `body` (a chat-completions request)
    with; `out_of_scale` (pointwise) gives the last skill a value it does not allow."""
    text = prompt_text(body)
    name, schema = _schema(body)
    kind = _task_kind(name, text)
    reply = _REPLIES.get(kind)
    if reply is None:
        return f"The fake judge does not handle {kind!r} tasks."
    if kind == "pointwise":
        return _pointwise_reply(body, text, schema, config, malformed, out_of_scale)
    return reply(body, text, schema, config, malformed)
