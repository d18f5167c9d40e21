"""Pointwise judge prompts: a criterion's block, the output instructions and the strict
JSON schema, for any rubric. No Django imports.

Every criterion carries its `annotation.scales.Scale` (`SkillSpec.scale`). A prompt
whose criteria are all FLASK-shaped (ordinal 1-5, N/A allowed) is FLASK's own text,
byte for byte (its cache keys and the tests that pin it depend on that). Any other
criterion's block states its own scale ("Scale: whole numbers from 0 (worst) to 4
(best)" and a line per anchored point) or its labels ("Labels: yes | no" and a line
per label with its description), and whether N/A is allowed; the output instructions,
the example and the schema (`pointwise_response_format`: an enum per criterion) use
those values. The "Scale:" and "Labels:" lines are machine-readable on purpose, like
"Skill key:": the fake judge answers in kind from them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from annotation.scales import FLASK_SCALE, Scale, scale_of
from judging import instance_rubric as own
from judging.prompts.base import (
    ANSWER_END,
    ANSWER_START,
    OUTPUT_MODES,
    SCHEMA_POINTWISE,
    chat_messages,
    json_schema_format,
    loose_key,
    reference_block,
    render_flame,
    strict_object,
)
from judging.prompts.examples import (
    EXAMPLES_PLACEHOLDER,
    FewShotExample,
    examples_block,
    with_examples_slot,
)

SCORE_VALUES = (1, 2, 3, 4, 5, "N/A")
NA = "N/A"
SCALE_LINE = "Scale: whole numbers from "
LABELS_LINE = "Labels: "
LABELS_SEPARATOR = " | "


@dataclass(frozen=True)
class SkillSpec:
    """One criterion as a prompt shows it. `anchors` are FLASK's five anchor texts
    (1..5), used when `scale` is FLASK's; any other scale brings its own anchors (or
    label descriptions) in `scale.anchors`."""

    key: str
    name: str
    criteria: str
    anchors: tuple[str, ...]
    scale: Scale = FLASK_SCALE

    @classmethod
    def from_model(cls, skill) -> SkillSpec:
        """Build from a `Skill` (its scale from `annotation.scales.scale_of`), or from
        anything with key, name, criteria and anchor_1..anchor_5 (a FLASK skill)."""
        if not hasattr(skill, "kind"):
            anchors = tuple(str(getattr(skill, f"anchor_{i}")) for i in range(1, 6))
            return cls(skill.key, skill.name, skill.criteria, anchors)
        scale = scale_of(skill)
        if scale.is_flask:
            anchors = tuple(
                str(getattr(skill, f"anchor_{i}", "") or "") for i in range(1, 6)
            )
            if not any(anchors):
                anchors = tuple(text for _, text in scale.anchors)
        else:
            anchors = tuple(text for _, text in scale.anchors)
        return cls(skill.key, skill.name, skill.criteria, anchors, scale)

    @property
    def is_flask(self) -> bool:
        """FLASK's own criterion shape: ordinal 1-5 with N/A allowed."""
        return self.scale.is_flask and self.scale.allow_na


def all_flask(skills) -> bool:
    """Whether every criterion is FLASK-shaped (the prompt is FLASK's own text)."""
    return all(s.is_flask for s in skills)


@dataclass(frozen=True)
class PointwiseInput:
    instruction: str
    response: str
    reference: str | None
    skills: tuple[SkillSpec, ...]
    # (skill key or None for a general question, question)
    checklist: tuple[tuple[str | None, str], ...] = ()
    instance_rubric: dict = field(
        default_factory=dict, hash=False
    )  # instance_rubric.py
    # Few-shot examples of the run (judging.prompts.examples); the block shows those
    # of this call's criteria.
    examples: tuple[FewShotExample, ...] = ()
    # The whole rubric of the dataset in its fixed order (the cache-friendly layout
    # shows all of it to every call; `skills` are those this call scores). Empty:
    # `skills`.
    rubric: tuple[SkillSpec, ...] = ()


BUILTIN_POINTWISE_SYSTEM = (
    "You are an impartial reviewer of answers written by AI assistants. You judge "
    "each skill on its own, against the rubric you are given, and you explain your "
    "judgement before you commit to a score."
)

BUILTIN_POINTWISE_USER = (
    "Please review the answer that an AI assistant gave to the request below. Judge "
    "it on each skill of the rubric separately, using that skill's criteria and the "
    "description of every score level.\n\n"
    "{rubric_block}{checklist_block}"
    "### Request\n{instruction}\n\n"
    "{reference_block}"
    f"{ANSWER_START}\n{{response}}\n{ANSWER_END}\n\n"
    "{output_instructions}"
)

TEMPLATE_PLACEHOLDERS = (
    "instruction",
    "reference_block",
    "response",
    "rubric_block",
    "checklist_block",
    "output_instructions",
    "examples",
)
REQUIRED_PLACEHOLDERS = (
    "instruction",
    "response",
    "rubric_block",
    "output_instructions",
)
# The cache-friendly layout's own slot (`cache_friendly_template` places it; a
# template does not write it): which criteria this call scores.
SKILLS_TO_SCORE = "skills_to_score"
SKILLS_TO_SCORE_LINE = "Skills to score: "
_PLACEHOLDER_RE = re.compile(
    r"\{(" + "|".join((*TEMPLATE_PLACEHOLDERS, SKILLS_TO_SCORE)) + r")\}"
)

METACOGNITION_NOTE = (
    "Note: declining to answer, or saying how unsure one is, is the right behaviour "
    "when a request is ambiguous, unanswerable or beyond what can be known reliably. "
    "When such a refusal or hedge is justified, it deserves a high score here, up to 5."
)

_SEPARATE_SKILLS = (
    "Judge every skill on its own: a weakness that belongs to one skill must not "
    "lower the score of another. For each skill, write your feedback first and only "
    "then decide its score. Scores are whole numbers from 1 (worst) to 5 (best), as "
    'the rubric describes them. Use "N/A" only when a skill cannot be judged on this '
    "request at all."
)


def separate_skills(skills) -> str:
    """The paragraph that asks for one judgement per skill, feedback first, and says
    what the values are (FLASK's own text when every criterion is FLASK-shaped)."""
    if all_flask(skills):
        return _SEPARATE_SKILLS
    kinds = {s.scale.kind for s in skills}
    if kinds == {"categorical"}:
        values = "Each skill's answer is one of its labels"
    elif kinds == {"ordinal"}:
        values = "Each skill's score is a whole number on its own scale"
    else:
        values = (
            "Each skill's answer is a whole number on its own scale or one of its "
            "labels"
        )
    text = (
        "Judge every skill on its own: a weakness that belongs to one skill must not "
        "lower the score of another. For each skill, write your feedback first and "
        f"only then decide its score. {values}, as the rubric describes them."
    )
    if any(s.scale.allow_na for s in skills):
        text += (
            ' Use "N/A" only for a skill whose entry allows it, when that skill '
            "cannot be judged on this request at all."
        )
    return text


def fill_template(template: str, values: dict[str, str]) -> str:
    """Substitute ``{placeholder}`` in one pass.

    Other braces (JSON examples in a custom template) are left alone, and text that
    is substituted in (a response quoting ``{rubric_block}``) is never expanded again.
    """
    return _PLACEHOLDER_RE.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def template_problems(user_text: str) -> list[str]:
    """Why a custom user template cannot be used (empty list when it can).
    ``{examples}`` (the few-shot block) is optional, at most once."""
    problems = [
        f"the template has no {{{name}}} placeholder"
        for name in REQUIRED_PLACEHOLDERS
        if "{" + name + "}" not in user_text
    ]
    if user_text.count(EXAMPLES_PLACEHOLDER) > 1:
        problems.append("the template has {examples} more than once")
    return problems


JUDGE_CHECKLIST_HEADING = (
    "Checklist for this skill (consider each question while judging):"
)


def _quoted(labels) -> str:
    return ", ".join(f'"{label}"' for label in labels)


def scale_lines(scale: Scale) -> list[str]:
    """The lines that state a (non-FLASK) criterion's values: its scale and anchored
    points, or its labels with their descriptions; and whether N/A is allowed."""
    if scale.is_categorical:
        lines = [LABELS_LINE + LABELS_SEPARATOR.join(scale.labels)]
        for (code, text), key, name in zip(
            scale.anchors, scale.labels, scale.names, strict=True
        ):
            shown = key if name == key else f"{key} ({name})"
            lines.append(f"Label {shown}: {text.strip()}".rstrip(": ").rstrip())
            del code
        what = "always choose a label"
    else:
        lines = [f"{SCALE_LINE}{scale.low} (worst) to {scale.high} (best)"]
        lines += [
            f"Score {v}: {text.strip()}" for v, text in scale.anchors if text.strip()
        ]
        what = "always give a score"
    if scale.allow_na:
        lines.append(f"{NA}: allowed when this skill cannot be judged on this request")
    else:
        lines.append(f"{NA}: not allowed for this skill; {what}")
    return lines


def _metacognition_note(skill: SkillSpec) -> str | None:
    if skill.is_flask:
        return METACOGNITION_NOTE
    if skill.scale.is_categorical:
        return None
    return METACOGNITION_NOTE.replace("up to 5", f"up to {skill.scale.high}")


def skill_lines(
    skill: SkillSpec,
    questions: list[str],
    checklist_heading: str = JUDGE_CHECKLIST_HEADING,
) -> list[str]:
    """The text block of one skill: name, key, criteria, its values (FLASK: one line
    per score level; any other scale: `scale_lines`), the skill's checklist questions
    and, for Metacognition, the note that a justified refusal can earn the top score.
    The one home of this text: judge prompts (both layouts) and the training examples
    of `analysis.exports.examples` use it."""
    lines = [
        f"Skill: {skill.name}",
        f"Skill key: {skill.key}",
        f"Criteria: {skill.criteria.strip()}",
    ]
    if skill.is_flask:
        lines += [
            f"Score {i}: {a.strip()}" for i, a in enumerate(skill.anchors, start=1)
        ]
    else:
        lines += scale_lines(skill.scale)
    if questions:
        lines.append(checklist_heading)
        lines += [f"- {q}" for q in questions]
    if (
        loose_key(skill.key) == "metacognition"
        or loose_key(skill.name) == "metacognition"
    ):
        if note := _metacognition_note(skill):
            lines.append(note)
    return lines


def _split_checklist(
    inp: PointwiseInput,
) -> tuple[dict[str, list[str]], list[str]]:
    by_norm = {loose_key(s.key): s.key for s in inp.skills}
    per_skill: dict[str, list[str]] = {s.key: [] for s in inp.skills}
    general: list[str] = []
    for skill_key, question in inp.checklist:
        question = question.strip()
        if not question:
            continue
        key = by_norm.get(loose_key(skill_key)) if skill_key else None
        if key is None:
            # A general question, or one for a skill this call does not score.
            general.append(question)
        else:
            per_skill[key].append(question)
    return per_skill, general


def rubric_block(inp: PointwiseInput) -> str:
    """The call's criteria, each with its checklist questions (the template layout)."""
    per_skill, _ = _split_checklist(inp)
    return _rubric_text(inp.skills, per_skill)


def whole_rubric_block(inp: PointwiseInput) -> str:
    """Every criterion of the dataset's rubric (`inp.rubric`, else `inp.skills`), in
    its order and without any item's checklist: the same text for every call of a
    run (the cache-friendly layout's shared prefix)."""
    return _rubric_text(inp.rubric or inp.skills, {})


def _rubric_text(skills, per_skill: dict[str, list[str]]) -> str:
    parts = [f"### Rubric ({len(skills)} skills)"]
    for skill in skills:
        parts.append("\n".join(skill_lines(skill, per_skill.get(skill.key, []))))
    return "\n\n".join(parts) + "\n\n"


def checklist_block(inp: PointwiseInput, *, per_skill_too: bool = False) -> str:
    """The general checklist questions; with `per_skill_too` (the cache-friendly
    layout, whose rubric carries none) each scored skill's questions as well."""
    per_skill, general = _split_checklist(inp)
    parts = []
    if per_skill_too:
        for skill in inp.skills:
            if questions := per_skill[skill.key]:
                lines = [f"### Checklist for {skill.name} (skill key {skill.key})"]
                lines += [f"- {q}" for q in questions]
                parts.append("\n".join(lines) + "\n\n")
    if general:
        lines = ["### General checklist (questions that concern the answer as a whole)"]
        lines += [f"- {q}" for q in general]
        parts.append("\n".join(lines) + "\n\n")
    return "".join(parts)


def value_hint(scale: Scale) -> str:
    """A criterion's allowed values as a placeholder: <0-4>, <"yes" | "no" | "N/A">."""
    na = f' or "{NA}"' if scale.allow_na else ""
    if scale.is_categorical:
        return (
            "<"
            + " | ".join(f'"{k}"' for k in scale.labels)
            + (f' | "{NA}"' if scale.allow_na else "")
            + ">"
        )
    return f"<{scale.low}-{scale.high}{na}>"


def _score_example(skills: tuple[SkillSpec, ...], nested: bool) -> str:
    flask = all_flask(skills)

    def hint(s: SkillSpec) -> str:
        return "<score>" if flask else value_hint(s.scale)

    if nested:
        items = [
            f'"{s.key}": {{"feedback": "...", "score": {hint(s)}}}' for s in skills
        ]
    else:
        items = [f'"{s.key}": {hint(s)}' for s in skills]
    return "{" + ", ".join(items) + "}"


def output_instructions(inp: PointwiseInput, output_mode: str) -> str:
    if output_mode not in OUTPUT_MODES:
        raise ValueError(
            f"unknown output mode {output_mode!r}; use one of {OUTPUT_MODES}"
        )
    flask = all_flask(inp.skills)
    values = '1 to 5, or "N/A"' if flask else "a value that skill allows, as shown"
    lines = ["### How to reply", separate_skills(inp.skills)]
    if output_mode == "json_schema":
        lines.append(
            "Reply with a single JSON object and nothing else. It has one entry per "
            "skill key, in the rubric's order; each entry is an object holding "
            '"feedback" (your reasoning about that skill) followed by "score" '
            f"({values}). Shape: " + _score_example(inp.skills, nested=True)
        )
    else:
        text_values = '(1 to 5, or "N/A")' if flask else "(a value that skill allows)"
        lines.append(
            "Write one short feedback paragraph per skill, in the rubric's order, "
            "each starting with the skill's name. After all the feedback, end your "
            f"reply with one JSON object that maps every skill key to its score "
            f"{text_values}, like this: " + _score_example(inp.skills, nested=False)
        )
        lines.append(
            "If you cannot write JSON, end instead with one line per skill in the "
            f'form "Skill Name: {"score" if flask else "value"}".'
        )
    return "\n".join(lines)


def shared_output_instructions(rubric, output_mode: str) -> str:
    """How to reply, in the cache-friendly layout: the same text for every call of
    a run (it names no criterion; `skills_to_score_block` says which ones and the
    reply's shape). `rubric`: every criterion the prompt's rubric shows."""
    if output_mode not in OUTPUT_MODES:
        raise ValueError(
            f"unknown output mode {output_mode!r}; use one of {OUTPUT_MODES}"
        )
    flask = all_flask(rubric)
    values = '1 to 5, or "N/A"' if flask else "a value that skill allows, as shown"
    lines = [
        "### How to reply",
        separate_skills(rubric),
        "The rubric lists every skill of this dataset: judge only the skills listed "
        'under "Skills to score" below, in that order.',
    ]
    if output_mode == "json_schema":
        lines.append(
            "Reply with a single JSON object and nothing else. It has one entry per "
            "skill to score, under its skill key; each entry is an object holding "
            '"feedback" (your reasoning about that skill) followed by "score" '
            f'({values}). Its shape is shown under "Skills to score".'
        )
    else:
        text_values = '(1 to 5, or "N/A")' if flask else "(a value that skill allows)"
        lines.append(
            "Write one short feedback paragraph per skill to score, in the order "
            "listed, each starting with the skill's name. After all the feedback, "
            "end your reply with one JSON object that maps the key of every skill to "
            f'score to its score {text_values}, in the shape shown under "Skills '
            'to score".'
        )
        lines.append(
            "If you cannot write JSON, end instead with one line per skill in the "
            f'form "Skill Name: {"score" if flask else "value"}".'
        )
    return "\n".join(lines)


def skills_to_score_block(inp: PointwiseInput, output_mode: str) -> str:
    """Which criteria this call scores (a machine-readable "Skills to score:" line
    of their keys, in order) and the reply's shape for them, then the item's own
    rubric when it has one: the cache-friendly layout's first per-item part."""
    keys = ", ".join(s.key for s in inp.skills)
    shape = _score_example(inp.skills, nested=output_mode == "json_schema")
    return (
        f"### Skills to score\n{SKILLS_TO_SCORE_LINE}{keys}\nShape of the reply: "
        f"{shape}\n\n" + own.block(inp.instance_rubric)
    )


def render_pointwise(  # noqa: PLR0913 - keyword-only rendering options
    inp: PointwiseInput,
    *,
    system_text: str,
    user_text: str,
    include_reference: bool,
    output_mode: str,
    cache_friendly: bool = False,
) -> list[dict]:
    """Messages for one FLASK pointwise call (all of `inp.skills` in one request).

    `cache_friendly`: the template in `cache_friendly_template`'s order, so that a
    provider's prefix cache serves what calls share. Its shared part (everything
    before ``{skills_to_score}``) depends only on the run: the template's opening,
    the WHOLE rubric of the dataset (`inp.rubric`, without checklists) and how to
    reply (`shared_output_instructions`); then which criteria this call scores
    (`skills_to_score_block`), the item's checklist (each scored skill's questions
    too), examples, request and reference, and the response last. Template layout:
    the template's order, the call's criteria only."""
    if not inp.skills:
        raise ValueError("a pointwise prompt needs at least one skill")
    values = {
        "instruction": inp.instruction,
        "response": inp.response,
        "reference_block": reference_block(inp.reference, include_reference),
        "examples": examples_block(inp.examples, [s.key for s in inp.skills]),
    }
    if cache_friendly:
        values |= {
            "rubric_block": whole_rubric_block(inp),
            "checklist_block": checklist_block(inp, per_skill_too=True),
            "output_instructions": shared_output_instructions(
                inp.rubric or inp.skills, output_mode
            ),
            SKILLS_TO_SCORE: skills_to_score_block(inp, output_mode),
        }
    else:
        values |= {
            "rubric_block": rubric_block(inp) + own.block(inp.instance_rubric),
            "checklist_block": checklist_block(inp),
            "output_instructions": output_instructions(inp, output_mode),
        }
    if values["examples"]:
        user_text = with_examples_slot(user_text)
    if cache_friendly:
        user_text = cache_friendly_template(user_text)
    return chat_messages(system_text, fill_template(user_text, values))


def cache_friendly_prefix(
    rubric: tuple[SkillSpec, ...], *, system_text: str, user_text: str, output_mode: str
) -> str:
    """What every call of a run shares in the cache-friendly layout, as the
    endpoint reads it (the messages' contents joined by a newline): the system text
    and the user text up to ``{skills_to_score}``, filled as `render_pointwise`
    fills it for a run whose rubric is `rubric`. Every such call's prompt starts
    with it (a run with few-shot examples and a template whose ``{examples}`` slot
    comes first aside); the estimates price it as cached input."""
    head = cache_friendly_template(user_text).split("{" + SKILLS_TO_SCORE + "}")[0]
    inp = PointwiseInput(instruction="", response="", reference=None, skills=rubric)
    values = {
        "rubric_block": whole_rubric_block(inp),
        "output_instructions": shared_output_instructions(rubric, output_mode),
    }
    user = fill_template(head, values)
    return f"{system_text}\n{user}" if system_text.strip() else user


# What every call of a run shares, and what differs from call to call, in a template.
_SHARED_PLACEHOLDERS = ("{rubric_block}", "{output_instructions}")
_ITEM_PLACEHOLDERS = (
    "{checklist_block}",
    "{examples}",
    "{instruction}",
    "{reference_block}",
    "{response}",
)


def cache_friendly_template(user_text: str) -> str:
    """`user_text` reordered so that what every call of a run shares comes first:
    the text before the first placeholder of what varies (`_ITEM_PLACEHOLDERS`:
    checklist, examples, request, reference, response), then ``{rubric_block}`` and
    ``{output_instructions}`` (moved there, in that order, when the template has
    them later), then ``{skills_to_score}`` and the rest in the template's order, so
    the response stays last (a template with no item placeholder gets
    ``{skills_to_score}`` at its end). The words of the template are all kept."""
    found = [i for i in (user_text.find(p) for p in _ITEM_PLACEHOLDERS) if i >= 0]
    if not found:
        return user_text.rstrip() + "\n\n{" + SKILLS_TO_SCORE + "}"
    first = min(found)
    head, tail = user_text[:first], user_text[first:]
    moved = ""
    for tag in _SHARED_PLACEHOLDERS:
        at = tail.find(tag)
        if at < 0:
            continue
        before, after = tail[:at].rstrip(), tail[at + len(tag) :].lstrip()
        tail = before + ("\n\n" if before and after else "") + after
        # The rubric block ends in a blank line; how to reply does not.
        moved += tag + ("\n\n" if tag == "{output_instructions}" else "")
    return head + moved + "{" + SKILLS_TO_SCORE + "}" + tail.rstrip()


def score_schema(scale: Scale) -> dict:
    """The JSON schema of one criterion's "score": an integer enum of its points (an
    ordinal scale) or a string enum of its label keys (categorical), with "N/A" only
    where the criterion allows it."""
    if scale.is_categorical:
        return {
            "type": "string",
            "enum": [*scale.labels, *([NA] if scale.allow_na else [])],
        }
    points = {"type": "integer", "enum": list(scale.values)}
    if not scale.allow_na:
        return points
    return {"anyOf": [points, {"type": "string", "enum": [NA]}]}


def pointwise_response_format(
    skill_keys: list[str], scales: dict[str, Scale] | None = None
) -> dict:
    """Strict JSON schema: per skill key, {"feedback": str, "score": <its values>}.

    A key without an entry in `scales` is FLASK's 1-5 or "N/A". "feedback" comes
    before "score" so that a schema-constrained decoder writes the reasoning first,
    as FLASK asks.
    """
    if not skill_keys:
        raise ValueError("need at least one skill key")
    scales = scales or {}

    def entry(key: str) -> dict:
        score = score_schema(scales.get(key, FLASK_SCALE))
        return strict_object({"feedback": {"type": "string"}, "score": score})

    return json_schema_format(
        SCHEMA_POINTWISE, strict_object({key: entry(key) for key in skill_keys})
    )


def flame_field(skill: SkillSpec) -> str:
    """A criterion's EVALUATION field in the FLAMe layout."""
    scale = skill.scale
    na = f', or "{NA}"' if scale.allow_na else ""
    if scale.is_categorical:
        return f"the label for {skill.name}: one of {_quoted(scale.labels)}{na}"
    return (
        f"the score for {skill.name}: an integer from {scale.low} to {scale.high}{na}"
    )


def render_pointwise_flame(
    inp: PointwiseInput, *, include_reference: bool = True
) -> list[dict]:
    """The pointwise task in FLAMe's layout; the judge answers "field: value" lines."""
    if not inp.skills:
        raise ValueError("a pointwise prompt needs at least one skill")
    per_skill, general = _split_checklist(inp)
    rubric = "\n\n".join(
        "\n".join(skill_lines(s, per_skill[s.key])) for s in inp.skills
    )
    instructions = (
        "Rate the response to the user's request on each skill below, using the "
        "skill's criteria and score descriptions.\n"
        + separate_skills(inp.skills)
        + "\n\n"
        + rubric
        + own.flame_text(inp.instance_rubric)
    )
    if general:
        instructions += "\n\nGeneral checklist:\n" + "\n".join(
            f"- {q}" for q in general
        )
    if block := examples_block(inp.examples, [s.key for s in inp.skills]):
        instructions += "\n\n" + block.rstrip()
    context = {"request": inp.instruction}
    if include_reference and (inp.reference or "").strip():
        context["reference answer"] = inp.reference or ""
    context["response"] = inp.response
    fields = {"feedback": "one short paragraph per skill, each starting with its name"}
    for s in inp.skills:
        fields[s.key] = flame_field(s)
    return render_flame(
        "pointwise",
        task_instructions=instructions,
        context=context,
        output_fields=fields,
    )
