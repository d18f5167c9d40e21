"""Turn a judge's raw output into scores, verdicts, labels, critiques and suggestions.
Pure functions, no Django imports.

The package: `base` (ParseError, finding JSON in text, FLAMe fields), `pointwise`
(scores of any rubric's criteria: see its docstring), `tasks` (pairwise,
classification, critique, metadata, checklist). The package is the API: callers
outside it import from `judging.parsing`, and `__all__` lists what they may use; the
package's own modules import each other's defining module, and a public name of a
submodule not listed here (`check_size`, `field_text`, ...) is shared between them only.
"""

from judging.parsing.base import (
    MAX_TEXT_CHARS,
    ParseError,
    PointwiseParse,
    balanced_objects,
    load_object,
    normalize_label,
)
from judging.parsing.pointwise import (
    parse_pointwise,
    scale_value,
    score_spans,
    score_value,
)
from judging.parsing.tasks import (
    parse_checklist,
    parse_classification,
    parse_critique,
    parse_metadata,
    parse_pairwise,
)

__all__ = [
    "MAX_TEXT_CHARS",
    "ParseError",
    "PointwiseParse",
    "balanced_objects",
    "load_object",
    "normalize_label",
    "parse_checklist",
    "parse_classification",
    "parse_critique",
    "parse_metadata",
    "parse_pairwise",
    "parse_pointwise",
    "scale_value",
    "score_spans",
    "score_value",
]
