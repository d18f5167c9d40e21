"""What every judge prompt shares: output modes, schema names, the answer markers,
the FLAMe text-to-text layout, message lists, strict JSON schemas and the prompt
hash. Plain data in, plain data out; no Django imports."""

from __future__ import annotations

import hashlib
import json
import re

OUTPUT_MODES = ("json_schema", "text")
FLAME_TASK_KINDS = (
    "pointwise",
    "pairwise",
    "classification",
    "critique",
    "metadata",
    "checklist",
)
SCHEMA_POINTWISE = "skill_scores"
SCHEMA_PAIRWISE = "pairwise_verdict"
SCHEMA_CLASSIFICATION = "classification_label"
SCHEMA_METADATA = "instruction_metadata"
SCHEMA_CHECKLIST = "instance_checklist"
CHECKLIST_GENERAL_KEY = "general_questions"
SCORE_VALUES = (1, 2, 3, 4, 5, "N/A")

# Markers the fake server (and a human reading a prompt) can rely on.
ANSWER_START = "### Answer to review"
ANSWER_END = "### End of answer"


def loose_key(text: str) -> str:
    """The comparison key of a skill or label name: lower case, without whitespace,
    underscores or dashes, so "Logical Correctness" and "logical_correctness" match."""
    return re.sub(r"[\s_\-]+", "", text.lower())


def reference_block(reference: str | None, include_reference: bool) -> str:
    if not include_reference or not (reference or "").strip():
        return ""
    return (
        "### Reference answer (a correct answer for comparison; the answer under "
        f"review need not match its wording)\n{reference}\n\n"
    )


def chat_messages(system_text: str, user_text: str) -> list[dict]:
    """The chat messages of a prompt: a system message only when `system_text` is
    not blank, then the user message."""
    messages = []
    if system_text.strip():
        messages.append({"role": "system", "content": system_text})
    messages.append({"role": "user", "content": user_text})
    return messages


def strict_object(properties: dict[str, dict]) -> dict:
    """A JSON schema object for strict structured outputs: every property of
    `properties` required, no other property allowed."""
    # Strict structured outputs need every property required and no extras.
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def json_schema_format(name: str, schema: dict) -> dict:
    """The chat API's `response_format` asking for strict JSON that fits `schema`,
    under the schema name `name` (the fake judge server reads the name)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "strict": True, "schema": schema},
    }


def prompt_hash(messages: list[dict], **params) -> str:
    """sha256 of the canonical JSON of the messages and the call parameters."""
    canonical = json.dumps(
        {"messages": messages, "params": params},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# --- FLAMe text-to-text layout --------------------------------------------------------


def render_flame(
    task_kind: str,
    *,
    task_instructions: str,
    context: dict[str, str],
    output_fields: dict[str, str],
) -> list[dict]:
    """One user message: INSTRUCTIONS, CONTEXT (label: value) and EVALUATION blocks."""
    if task_kind not in FLAME_TASK_KINDS:
        raise ValueError(
            f"unknown task kind {task_kind!r}; use one of {FLAME_TASK_KINDS}"
        )
    instructions = f"INSTRUCTIONS:\nTask type: {task_kind}\n{task_instructions.strip()}"
    ctx = "CONTEXT:\n" + "\n".join(f"{k}: {v}" for k, v in context.items())
    evaluation = "EVALUATION:\n" + "\n".join(
        f"{k}: {v}" for k, v in output_fields.items()
    )
    return [{"role": "user", "content": f"{instructions}\n\n{ctx}\n\n{evaluation}"}]


def check_layout(layout: str) -> None:
    """Raise ValueError unless `layout` is 'flask' or 'flame', the two prompt layouts."""
    if layout not in ("flask", "flame"):
        raise ValueError(f"unknown layout {layout!r}; use 'flask' or 'flame'")
