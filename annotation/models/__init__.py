"""The annotation app's data, by concept (re-exported here: one import path).

`datasets` (rubrics, skills, datasets, instructions, responses), `imports`,
`campaigns` (campaigns, items, assignments, human scores), `preferences` and
`accounts` (temporary passwords).

Invariants live in the database where it can hold them (unique keys, value ranges);
the rest (a relevant skill belongs to the dataset's rubric, frozen rubrics) is enforced
by the services and, on PostgreSQL, by a constraint trigger (see migration 0002).
"""

from annotation.models.accounts import TemporaryPassword
from annotation.models.campaigns import (
    Assignment,
    Campaign,
    CampaignItem,
    HumanScore,
    ShownOrder,
)
from annotation.models.datasets import (
    FLASK_GROUPS,
    Ability,
    Dataset,
    Difficulty,
    Domain,
    Instruction,
    InstructionSkill,
    Response,
    Rubric,
    Skill,
    SkillKind,
)
from annotation.models.imports import (
    DATASET_FORMAT_CHOICES,
    ImportJob,
)
from annotation.models.preferences import (
    EvaluatedModel,
    HumanPreference,
    PreferenceLabel,
    PreferencePair,
)
from annotation.models.quality import (
    Adjudication,
    GoldItem,
    GoldScore,
    Qualification,
    RaterExclusion,
)

__all__ = [
    "Adjudication",
    "TemporaryPassword",
    "DATASET_FORMAT_CHOICES",
    "FLASK_GROUPS",
    "Ability",
    "Dataset",
    "Difficulty",
    "Domain",
    "Instruction",
    "InstructionSkill",
    "Response",
    "Rubric",
    "Skill",
    "SkillKind",
    "ImportJob",
    "Assignment",
    "Campaign",
    "CampaignItem",
    "HumanScore",
    "ShownOrder",
    "GoldItem",
    "GoldScore",
    "Qualification",
    "RaterExclusion",
    "EvaluatedModel",
    "HumanPreference",
    "PreferenceLabel",
    "PreferencePair",
]
