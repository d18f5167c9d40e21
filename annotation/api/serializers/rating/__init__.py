"""Input and output shapes of the rating API (campaigns, assignments, scores).

Parsing and rendering only: value rules (overlap 1-50, each score on its criterion's
scale, `annotation.scales`: a point of an ordinal scale, a label key of a categorical
one, N/A where allowed; every listed skill present; the critique) belong to the
services, which name the offending field in their `DomainError`. Input serializers
here only check types, so a wrong type is refused by DRF ({"field": [...]}) and a wrong
value by the service ({"detail", "problems": [{"field", ...}]}).

The package re-exports every public name: `values` (a criterion's scale as JSON),
`campaigns` (researchers), `rater` (raters, errors), `render` (hot-path renderers).
"""

from annotation.api.serializers.rating.campaigns import (
    CampaignCreateInputSerializer,
    CampaignCriterionOutputSerializer,
    CampaignCritiqueInputSerializer,
    CampaignDatasetRefOutputSerializer,
    CampaignDetailOutputSerializer,
    CampaignListOutputSerializer,
    CampaignLockOutputSerializer,
    CampaignProgressOutputSerializer,
    CampaignRaterProgressOutputSerializer,
    CampaignRatersInputSerializer,
    CampaignStatusInputSerializer,
    RaterListField,
    UserRefOutputSerializer,
)
from annotation.api.serializers.rating.rater import (
    RATER_REMOVED,
    AssignmentSkipInputSerializer,
    AssignmentSkipOutputSerializer,
    RaterAssignmentOutputSerializer,
    RaterCampaignOutputSerializer,
    RaterInstructionOutputSerializer,
    RaterNextOutputSerializer,
    RaterProgressOutputSerializer,
    RaterRemovedOutputSerializer,
    RaterResponseOutputSerializer,
    RaterScoreOutputSerializer,
    RaterSkillOutputSerializer,
    RatingAmendInputSerializer,
    RatingErrorOutputSerializer,
    RatingOutputSerializer,
    RatingProblemOutputSerializer,
    RatingSubmitInputSerializer,
)
from annotation.api.serializers.rating.render import (
    rater_assignment_data,
    rater_next_data,
    rater_progress_data,
    rater_score_data,
    rater_skill_data,
    rating_data,
)
from annotation.api.serializers.rating.values import (
    ANCHORS_SCHEMA,
    KEYS_SCHEMA,
    LABELS_SCHEMA,
    SCALE_SCHEMA,
    SCORE_SCHEMA,
    ScoreValueField,
    anchors_data,
    keys_data,
    labels_data,
    scale_data,
    score_value_data,
)

__all__ = [
    "ANCHORS_SCHEMA",
    "AssignmentSkipInputSerializer",
    "AssignmentSkipOutputSerializer",
    "CampaignCreateInputSerializer",
    "CampaignCriterionOutputSerializer",
    "CampaignCritiqueInputSerializer",
    "CampaignDatasetRefOutputSerializer",
    "CampaignDetailOutputSerializer",
    "CampaignListOutputSerializer",
    "CampaignLockOutputSerializer",
    "CampaignProgressOutputSerializer",
    "CampaignRaterProgressOutputSerializer",
    "CampaignRatersInputSerializer",
    "CampaignStatusInputSerializer",
    "KEYS_SCHEMA",
    "LABELS_SCHEMA",
    "RATER_REMOVED",
    "RaterAssignmentOutputSerializer",
    "RaterCampaignOutputSerializer",
    "RaterInstructionOutputSerializer",
    "RaterListField",
    "RaterNextOutputSerializer",
    "RaterProgressOutputSerializer",
    "RaterRemovedOutputSerializer",
    "RaterResponseOutputSerializer",
    "RaterScoreOutputSerializer",
    "RaterSkillOutputSerializer",
    "RatingAmendInputSerializer",
    "RatingErrorOutputSerializer",
    "RatingOutputSerializer",
    "RatingProblemOutputSerializer",
    "RatingSubmitInputSerializer",
    "SCALE_SCHEMA",
    "SCORE_SCHEMA",
    "ScoreValueField",
    "UserRefOutputSerializer",
    "anchors_data",
    "keys_data",
    "labels_data",
    "rater_assignment_data",
    "rater_next_data",
    "rater_progress_data",
    "rater_score_data",
    "rater_skill_data",
    "rating_data",
    "scale_data",
    "score_value_data",
]
