"""The researcher's view of the data: responses with every human and judge score.

Two reads:

- `instruction_scores` (`browse.scores`): one instruction's responses, each with its
  criteria and, per criterion, every submitted human score (raters pseudonymous:
  "Rater A", "Rater B", ..., lettered by account within the page) and every judge
  run's value, side by side on the criterion's own scale (labels for a categorical
  one), disagreements flagged (`browse.rules`); and the raters' and judges' written
  critiques of each response, side by side. A fixed number of queries whatever the
  number of responses, skills, raters and runs.
- `response_filter_parse` + `response_matches` (`browse.filters`): a dataset's
  responses narrowed by model, by "a judge run and the humans disagree by >= D on a
  skill", and by human mean or judge score ranges on the skill's scale; the
  responses page lists them and the instruction page steps through them (previous /
  next).

Conventions shared by both (one home: `browse.rules`): the humans' value of a
(response, criterion) is the mean of the submitted numeric scores of every campaign
of the dataset (N/A is not a score), or the majority label; a judge run's is the
median of its samples' numeric scores, rounded half up (`analysis.stats.scale`, as
the agreement dashboard rounds), or their most frequent label; skills are matched by
key, so two rubric versions compare skill by skill.
"""

from analysis.selectors.browse.filters import (
    MatchedSkill,
    ResponseFilter,
    ResponseMatch,
    filter_bounds,
    instruction_neighbours,
    response_filter_parse,
    response_matches,
    scored_run_choices,
)
from analysis.selectors.browse.rules import (
    DISAGREEMENT,
    FILTER_PARAMS,
    SCORE_MAX,
    SCORE_MIN,
    disagrees,
    human_majority,
    judge_item_score,
    rater_letter,
    threshold,
)
from analysis.selectors.browse.scores import (
    CritiqueEntry,
    HumanEntry,
    JudgeEntry,
    ResponseScores,
    SkillScores,
    instruction_scores,
)

__all__ = [
    "DISAGREEMENT",
    "FILTER_PARAMS",
    "SCORE_MAX",
    "SCORE_MIN",
    "CritiqueEntry",
    "HumanEntry",
    "JudgeEntry",
    "MatchedSkill",
    "ResponseFilter",
    "ResponseMatch",
    "ResponseScores",
    "SkillScores",
    "disagrees",
    "filter_bounds",
    "human_majority",
    "instruction_neighbours",
    "instruction_scores",
    "judge_item_score",
    "rater_letter",
    "response_filter_parse",
    "response_matches",
    "scored_run_choices",
    "threshold",
]
