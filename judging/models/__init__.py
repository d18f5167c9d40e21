"""Judging's models: configs, runs, calls and scores (``runs``), and the judge
workbench's splits, experiments, examples and notes (``workbench``).

Plain secrets never live here: a `JudgeConfig` names the environment variable that holds
its API key (`api_key_env`), read from the worker's environment at call time, or a
`StoredKey` of its workspace, kept encrypted (`flaskapp.vault`) and decrypted by the
worker at call time only.
"""

from judging.models.batches import JudgeBatch, JudgeBatchFailure
from judging.models.keys import StoredKey
from judging.models.runs import (
    JudgeCache,
    JudgeCall,
    JudgeConfig,
    JudgeConfigVersion,
    JudgeCritique,
    JudgeDriver,
    JudgeRun,
    JudgeScore,
    MetadataSuggestion,
    PairOrder,
    PairwiseVerdict,
    PromptTemplate,
)
from judging.models.workbench import (
    CriterionNote,
    DisagreementTag,
    EvalSplit,
    EvalSplitMember,
    Experiment,
    FailureTag,
    TestSplitLook,
)

__all__ = [
    "CriterionNote",
    "DisagreementTag",
    "EvalSplit",
    "EvalSplitMember",
    "Experiment",
    "FailureTag",
    "JudgeBatch",
    "JudgeBatchFailure",
    "JudgeCache",
    "JudgeCall",
    "JudgeConfig",
    "JudgeConfigVersion",
    "JudgeCritique",
    "JudgeDriver",
    "JudgeRun",
    "JudgeScore",
    "MetadataSuggestion",
    "PairOrder",
    "PairwiseVerdict",
    "PromptTemplate",
    "StoredKey",
    "TestSplitLook",
]
