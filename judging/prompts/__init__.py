"""Judge prompts: plain data in, chat messages out. No Django imports.

Two layouts:

- FLASK: a system message and one user message that shows the rubric, the request,
  an optional reference answer and the answer under review, and asks for feedback per
  skill before the scores.
- FLAMe: one user message in INSTRUCTIONS / CONTEXT / EVALUATION blocks.

Every text here is this project's own wording. A few lines are machine-readable on
purpose (``Task type: <kind>``, ``Skill key: <key>``, ``Scale: ...``, ``Labels: ...``,
``Domain: <name>``): they cost a judge nothing and let the fake judge server
(``judging.fake_server``) answer in kind.

The package: `base` (shared parts, the FLAMe layout, schemas, hash), `pointwise`
(criterion blocks and scores for any rubric: `annotation.scales`), `examples`
(the few-shot block of human-scored examples), `tasks` (pairwise,
classification, critique, metadata, checklist). The package is the API: callers
outside it import from `judging.prompts`, and `__all__` lists what they may use; the
package's own modules import each other's defining module, and a public name of a
submodule not listed here (`chat_messages`, `strict_object`, ...) is shared between
them only.
"""

from judging.prompts.base import (
    ANSWER_END,
    ANSWER_START,
    CHECKLIST_GENERAL_KEY,
    FLAME_TASK_KINDS,
    OUTPUT_MODES,
    SCHEMA_CHECKLIST,
    SCHEMA_CLASSIFICATION,
    SCHEMA_METADATA,
    SCHEMA_PAIRWISE,
    SCHEMA_POINTWISE,
    prompt_hash,
    reference_block,
    render_flame,
)
from judging.prompts.examples import (
    EXAMPLES_HEADING,
    FewShotExample,
    examples_block,
    with_examples_slot,
)
from judging.prompts.pointwise import (
    BUILTIN_POINTWISE_SYSTEM,
    BUILTIN_POINTWISE_USER,
    JUDGE_CHECKLIST_HEADING,
    LABELS_LINE,
    LABELS_SEPARATOR,
    METACOGNITION_NOTE,
    NA,
    REQUIRED_PLACEHOLDERS,
    SCALE_LINE,
    SCORE_VALUES,
    SKILLS_TO_SCORE_LINE,
    TEMPLATE_PLACEHOLDERS,
    PointwiseInput,
    SkillSpec,
    all_flask,
    cache_friendly_prefix,
    cache_friendly_template,
    checklist_block,
    fill_template,
    flame_field,
    output_instructions,
    pointwise_response_format,
    render_pointwise,
    render_pointwise_flame,
    rubric_block,
    scale_lines,
    score_schema,
    separate_skills,
    skill_lines,
    template_problems,
    value_hint,
)
from judging.prompts.tasks import (
    DEFAULT_CLASSIFICATION_LABELS,
    DEFAULT_CLASSIFICATION_QUESTION,
    DIFFICULTY_LEVELS,
    checklist_response_format,
    classification_response_format,
    metadata_response_format,
    pairwise_response_format,
    render_checklist,
    render_classification,
    render_critique,
    render_metadata_annotation,
    render_pairwise,
)

__all__ = [
    "ANSWER_END",
    "ANSWER_START",
    "BUILTIN_POINTWISE_SYSTEM",
    "BUILTIN_POINTWISE_USER",
    "CHECKLIST_GENERAL_KEY",
    "DEFAULT_CLASSIFICATION_LABELS",
    "DEFAULT_CLASSIFICATION_QUESTION",
    "DIFFICULTY_LEVELS",
    "EXAMPLES_HEADING",
    "FLAME_TASK_KINDS",
    "JUDGE_CHECKLIST_HEADING",
    "LABELS_LINE",
    "LABELS_SEPARATOR",
    "NA",
    "OUTPUT_MODES",
    "REQUIRED_PLACEHOLDERS",
    "SCALE_LINE",
    "SCHEMA_CHECKLIST",
    "SCHEMA_CLASSIFICATION",
    "SCHEMA_METADATA",
    "SCHEMA_PAIRWISE",
    "SCHEMA_POINTWISE",
    "SCORE_VALUES",
    "SKILLS_TO_SCORE_LINE",
    "TEMPLATE_PLACEHOLDERS",
    "METACOGNITION_NOTE",
    "FewShotExample",
    "PointwiseInput",
    "SkillSpec",
    "all_flask",
    "cache_friendly_prefix",
    "cache_friendly_template",
    "checklist_block",
    "checklist_response_format",
    "classification_response_format",
    "examples_block",
    "fill_template",
    "flame_field",
    "metadata_response_format",
    "output_instructions",
    "pairwise_response_format",
    "pointwise_response_format",
    "prompt_hash",
    "reference_block",
    "render_checklist",
    "render_classification",
    "render_critique",
    "render_flame",
    "render_metadata_annotation",
    "render_pairwise",
    "render_pointwise",
    "render_pointwise_flame",
    "rubric_block",
    "scale_lines",
    "score_schema",
    "separate_skills",
    "skill_lines",
    "template_problems",
    "value_hint",
    "with_examples_slot",
]
