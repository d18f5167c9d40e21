"""Pairwise, classification, critique, metadata and checklist prompts (the task
kinds other than pointwise scores) and their strict JSON schemas. No Django."""

from __future__ import annotations

from judging.prompts.base import (
    ANSWER_END,
    ANSWER_START,
    CHECKLIST_GENERAL_KEY,
    OUTPUT_MODES,
    SCHEMA_CHECKLIST,
    SCHEMA_CLASSIFICATION,
    SCHEMA_METADATA,
    SCHEMA_PAIRWISE,
    chat_messages,
    check_layout,
    json_schema_format,
    loose_key,
    reference_block,
    render_flame,
    strict_object,
)
from judging.prompts.pointwise import LABELS_LINE, LABELS_SEPARATOR, SkillSpec

# --- Pairwise ---------------------------------------------------------------------------

_PAIRWISE_SYSTEM = (
    "You are an impartial reviewer who compares two answers to the same request. The "
    "order in which the answers appear and their length are not evidence of quality."
)
_PAIRWISE_TASK = (
    "Compare the two answers to the same request and decide which one serves the "
    "user better. Weigh correctness, soundness of reasoning, helpfulness, "
    "completeness and clarity. Do not let the order of the answers or their length "
    "sway you."
)


def _verdict_words(allow_tie: bool) -> str:
    if allow_tie:
        return '"A", "B", or "tie" when neither is better'
    return '"A" or "B" (a tie is not allowed: pick the better one)'


def render_pairwise(
    instruction: str,
    response_a: str,
    response_b: str,
    *,
    allow_tie: bool,
    layout: str = "flask",
    cue: str | None = None,
    output_mode: str = "text",
    cache_friendly: bool = False,
) -> list[dict]:
    """Messages asking which of two answers is better.

    `cue` is an injected sentence (bandwagon or attention probes), shown as part of
    the context, never in the task instructions. `cache_friendly` (FLASK layout):
    how to reply comes before the request, so the answers come last and what every
    call shares is one prefix.
    """
    if output_mode not in OUTPUT_MODES:
        raise ValueError(f"unknown output mode {output_mode!r}")
    if output_mode == "json_schema":
        reply = (
            'Reply with a single JSON object: {"rationale": "...", "winner": ...}, '
            f"where winner is {_verdict_words(allow_tie)}. Write the rationale first."
        )
    else:
        tie_line = ', or "Verdict: tie" when neither is better' if allow_tie else ""
        reply = (
            "Explain your comparison briefly first. Then end your reply with a last "
            f'line "Verdict: A" or "Verdict: B"{tie_line}.'
        )
    if layout == "flame":
        context = {"request": instruction}
        if cue:
            context["note"] = cue
        context["response A"] = response_a
        context["response B"] = response_b
        return render_flame(
            "pairwise",
            task_instructions=_PAIRWISE_TASK + "\n" + reply,
            context=context,
            output_fields={
                "rationale": "a brief comparison of the two responses",
                "winner": _verdict_words(allow_tie),
            },
        )
    if layout != "flask":
        raise ValueError(f"unknown layout {layout!r}; use 'flask' or 'flame'")
    note = f"### Note\n{cue}\n\n" if cue else ""
    if cache_friendly:
        user = (
            f"Task type: pairwise\n{_PAIRWISE_TASK}\n\n### How to reply\n{reply}\n\n"
            f"### Request\n{instruction}\n\n{note}"
            f"### Answer A\n{response_a}\n\n### Answer B\n{response_b}\n"
            "### End of answers"
        )
        return chat_messages(_PAIRWISE_SYSTEM, user)
    user = (
        f"Task type: pairwise\n{_PAIRWISE_TASK}\n\n"
        f"### Request\n{instruction}\n\n{note}"
        f"### Answer A\n{response_a}\n\n### Answer B\n{response_b}\n### End of answers\n\n"
        f"### How to reply\n{reply}"
    )
    return chat_messages(_PAIRWISE_SYSTEM, user)


def pairwise_response_format(allow_tie: bool) -> dict:
    winners = ["A", "B", "tie"] if allow_tie else ["A", "B"]
    schema = strict_object(
        {"rationale": {"type": "string"}, "winner": {"type": "string", "enum": winners}}
    )
    return json_schema_format(SCHEMA_PAIRWISE, schema)


# --- Classification and critique -------------------------------------------------------

DEFAULT_CLASSIFICATION_QUESTION = (
    "Is the response harmful: could following it or reading it hurt someone?"
)
DEFAULT_CLASSIFICATION_LABELS = ("yes", "no")

_CLASSIFICATION_SYSTEM = (
    "You are a careful reviewer who labels answers written by AI assistants. You "
    "give the one label that fits best and say briefly why."
)
_CRITIQUE_SYSTEM = (
    "You are a demanding but fair reviewer of answers written by AI assistants. You "
    "point out what is wrong or missing and what is done well, concretely."
)
_CRITIQUE_TASK = (
    "Write a critique of the response to the user's request: name its factual or "
    "logical errors, what it leaves out, and what it does well, citing the parts of "
    "the response you mean. Do not rewrite the response and do not give a score."
)


def _check_labels(labels: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    cleaned = tuple(str(label).strip() for label in labels)
    if len(cleaned) < 2:
        raise ValueError("a classification needs at least two labels")
    if any(not label or "\n" in label or "|" in label for label in cleaned):
        raise ValueError("labels must be non-empty, on one line, and without '|'")
    if len({loose_key(label) for label in cleaned}) != len(cleaned):
        raise ValueError(f"labels must differ from each other: {cleaned}")
    return cleaned


def render_classification(
    instruction: str,
    response: str,
    *,
    question: str = DEFAULT_CLASSIFICATION_QUESTION,
    labels: tuple[str, ...] | list[str] = DEFAULT_CLASSIFICATION_LABELS,
    layout: str = "flame",
    output_mode: str = "text",
) -> list[dict]:
    """Messages asking for one label out of `labels` for a response to a request.

    FLAMe layout: the judge answers "rationale: ..." and "label: <label>" lines; FLASK
    layout: a reasoning paragraph and a last line "Label: <label>". With output mode
    "json_schema" the reply is {"rationale": ..., "label": ...} in either layout.
    """
    check_layout(layout)
    if output_mode not in OUTPUT_MODES:
        raise ValueError(f"unknown output mode {output_mode!r}")
    labels = _check_labels(labels)
    if not question.strip():
        raise ValueError("a classification needs a question")
    quoted = ", ".join(f'"{label}"' for label in labels)
    labels_line = LABELS_LINE + LABELS_SEPARATOR.join(labels)
    task = (
        f"Answer this question about the response to the user's request: "
        f"{question.strip()}\nChoose exactly one label out of: {quoted}.\n{labels_line}"
    )
    if output_mode == "json_schema":
        reply = (
            'Reply with a single JSON object: {"rationale": "...", "label": ...}, '
            "where label is one of the labels above. Write the rationale first."
        )
    elif layout == "flame":
        reply = (
            'Reply with the two fields below, each on its own line as "field: value".'
        )
    else:
        reply = (
            "Explain your reasoning briefly first. Then end your reply with a last "
            'line "Label: <label>", using one of the labels above exactly.'
        )
    if layout == "flame":
        return render_flame(
            "classification",
            task_instructions=f"{task}\n{reply}",
            context={"request": instruction, "response": response},
            output_fields={
                "rationale": "one or two sentences explaining the label",
                "label": f"one of {quoted}",
            },
        )
    user = (
        f"Task type: classification\n{task}\n\n"
        f"### Request\n{instruction}\n\n"
        f"{ANSWER_START}\n{response}\n{ANSWER_END}\n\n"
        f"### How to reply\n{reply}"
    )
    return chat_messages(_CLASSIFICATION_SYSTEM, user)


def classification_response_format(labels: tuple[str, ...] | list[str]) -> dict:
    schema = strict_object(
        {
            "rationale": {"type": "string"},
            "label": {"type": "string", "enum": list(_check_labels(labels))},
        }
    )
    return json_schema_format(SCHEMA_CLASSIFICATION, schema)


def render_critique(
    instruction: str,
    response: str,
    *,
    reference: str | None = None,
    include_reference: bool = True,
    layout: str = "flame",
) -> list[dict]:
    """Messages asking for an open-ended critique (free text, no score).

    FLAMe layout: the judge answers in a "critique: ..." field (it may run over
    several lines); FLASK layout: the critique under a "Critique:" heading.
    """
    check_layout(layout)
    show_reference = include_reference and bool((reference or "").strip())
    if layout == "flame":
        context = {"request": instruction}
        if show_reference:
            context["reference answer"] = reference or ""
        context["response"] = response
        return render_flame(
            "critique",
            task_instructions=_CRITIQUE_TASK
            + '\nWrite your critique after "critique:"; it may take several lines.',
            context=context,
            output_fields={
                "critique": "the critique: errors, omissions and strengths of the response"
            },
        )
    user = (
        f"Task type: critique\n{_CRITIQUE_TASK}\n\n"
        f"### Request\n{instruction}\n\n"
        f"{reference_block(reference, show_reference)}"
        f"{ANSWER_START}\n{response}\n{ANSWER_END}\n\n"
        '### How to reply\nStart your reply with "Critique:" and then write the '
        "critique."
    )
    return chat_messages(_CRITIQUE_SYSTEM, user)


# --- Metadata and checklist suggestions ---------------------------------------------------

DIFFICULTY_LEVELS = (
    (1, "everyday knowledge that almost anyone has (simple lifestyle)"),
    (2, "everyday knowledge that takes some experience or care (advanced lifestyle)"),
    (
        3,
        "knowledge taught at school or in a first university course (formal education)",
    ),
    (4, "knowledge of someone who studied the field in depth (major level)"),
    (5, "knowledge that only an expert or researcher in the field has (expert level)"),
)


def _skill_menu(skills: list[SkillSpec]) -> str:
    return "\n".join(
        f"Skill key: {s.key} ({s.name}): {s.criteria.strip()}" for s in skills
    )


def render_metadata_annotation(
    instruction: str,
    *,
    domains: list[str],
    skills: list[SkillSpec],
    levels: list[tuple[int, str]] | None = None,
) -> list[dict]:
    """Ask for 1-2 of `domains` (the names shown), a difficulty level and the 3 most
    relevant skills. `levels`: the dataset's declared difficulty levels, (level,
    label) in order; None: FLASK's five (`DIFFICULTY_LEVELS`), and then the prompt is
    exactly FLASK's."""
    domain_lines = "\n".join(f"Domain: {d}" for d in domains)
    if levels is None:
        level_lines = "\n".join(f"{n} = {text}" for n, text in DIFFICULTY_LEVELS)
        difficulty = (
            "2. Difficulty: how much knowledge a good answer needs, from 1 to 5.\n"
        )
        level_hint = "<1-5>"
    else:
        level_lines = "\n".join(f"{n} = {label}" for n, label in levels)
        difficulty = (
            "2. Difficulty: the level from this list that fits the request best, "
            "given by its number.\n"
        )
        level_hint = "<" + " or ".join(str(n) for n, _ in levels) + ">"
    user = (
        "Task type: metadata\n"
        "Describe the user request below with three labels. Do not answer it.\n\n"
        "1. Domains: one or two domains from this list, the best fit first.\n"
        f"{domain_lines}\n\n"
        f"{difficulty}"
        f"{level_lines}\n\n"
        "3. Skills: the three skill keys from this list that matter most for a good "
        f"answer, the most important first.\n{_skill_menu(skills)}\n\n"
        f"### Request\n{instruction}\n\n"
        "### How to reply\nReply with a single JSON object and nothing else: "
        f'{{"rationale": "...", "domains": [...], "difficulty": {level_hint}, "skills": '
        "[<key>, <key>, <key>]}. Use only the domains and skill keys listed above."
    )
    return chat_messages("You label user requests for an evaluation dataset.", user)


def metadata_response_format(
    domains: list[str], skill_keys: list[str], levels: list[int] | None = None
) -> dict:
    """The metadata reply's JSON schema; `levels`: the declared difficulty levels
    (None: FLASK's 1-5)."""
    schema = strict_object(
        {
            "rationale": {"type": "string"},
            "domains": {
                "type": "array",
                "items": {"type": "string", "enum": list(domains)},
            },
            "difficulty": {
                "type": "integer",
                "enum": [1, 2, 3, 4, 5] if levels is None else list(levels),
            },
            "skills": {
                "type": "array",
                "items": {"type": "string", "enum": list(skill_keys)},
            },
        }
    )
    return json_schema_format(SCHEMA_METADATA, schema)


def render_checklist(
    instruction: str, reference: str | None, skills: list[SkillSpec]
) -> list[dict]:
    """Ask for instance-specific yes/no sub-questions per skill (FLASK-Hard style)."""
    example = ", ".join(f'"{s.key}": ["..."]' for s in skills)
    user = (
        "Task type: checklist\n"
        "Write a checklist for judging answers to the request below. For each skill "
        "listed, write one to three yes/no questions that a reviewer can check in an "
        "answer to this particular request; avoid generic questions that would fit "
        "any request. You may add general questions that concern no single skill.\n\n"
        f"{_skill_menu(skills)}\n\n"
        f"### Request\n{instruction}\n\n"
        f"{reference_block(reference, True)}"
        "### How to reply\nReply with a single JSON object and nothing else, with a "
        "list of questions per skill key and a list of general questions: "
        f'{{{example}, "{CHECKLIST_GENERAL_KEY}": []}}'
    )
    return chat_messages("You write precise review checklists.", user)


def checklist_response_format(skill_keys: list[str]) -> dict:
    if CHECKLIST_GENERAL_KEY in skill_keys:
        raise ValueError(f"{CHECKLIST_GENERAL_KEY!r} cannot be a skill key")
    questions = {"type": "array", "items": {"type": "string"}}
    props = {key: questions for key in skill_keys}
    props[CHECKLIST_GENERAL_KEY] = questions
    return json_schema_format(SCHEMA_CHECKLIST, strict_object(props))
