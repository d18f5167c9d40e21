"""A small preference set with hand-checkable figures (see test_metaeval_selectors):
4 pairs in 2 categories, 5 human votes, a judge run with verdicts in both orders and a
bandwagon probe run. The `pref_setup` fixture is registered in tests/judging/conftest.py.
"""

from __future__ import annotations

import pytest

from annotation.models import HumanPreference, PreferencePair
from judging.models import JudgeRun, PairwiseVerdict
from tests.analysis.agreement_data import make_dataset

# pair index -> (category, human votes)
VOTES = {
    0: ("chat", ["1"]),
    1: ("chat", ["2", "2"]),
    2: ("code", ["1"]),
    3: ("code", ["tie"]),
}
# judge A: (verdict in order ab, verdict in order ba), mapped back
JUDGE_A = {0: ("1", "1"), 1: ("1", "2"), 2: ("2", "2"), 3: ("tie", "1")}
# bandwagon probe run, cue always pointing at response 1
JUDGE_CUED = {0: ("1", "1"), 1: ("1", "1"), 2: ("1", "2"), 3: ("1", "1")}


def add_run(dataset, pairs, verdicts, name, **fields):
    run = JudgeRun.objects.create(
        dataset=dataset,
        name=name,
        kind=JudgeRun.Kind.IMPORTED,
        status=JudgeRun.Status.COMPLETED,
        **fields,
    )
    PairwiseVerdict.objects.bulk_create(
        PairwiseVerdict(
            run=run, pair=pairs[i], order=order, verdict=v, rationale=f"{name} {i}"
        )
        for i, (ab, ba) in verdicts.items()
        for order, v in (("ab", ab), ("ba", ba))
    )
    return run


@pytest.fixture
def pref_setup():
    return make_pref_setup()


def make_pref_setup(name: str = "pref-set"):
    """The preference set above, as (dataset, pairs, judge A run, bandwagon run)."""
    dataset, responses = make_dataset(name, 4, ("alpha", "beta"))
    # make response 1 longer than response 2 in pairs 0, 2
    for i in (0, 2):
        r = responses[(i, "alpha")]
        r.text = r.text * 10
        r.save()
    pairs = {}
    for i, (cat, votes) in VOTES.items():
        pairs[i] = PreferencePair.objects.create(
            dataset=dataset,
            instruction=responses[(i, "alpha")].instruction,
            response_1=responses[(i, "alpha")],
            response_2=responses[(i, "beta")],
            category=cat,
        )
        HumanPreference.objects.bulk_create(
            HumanPreference(pair=pairs[i], label=v, origin="imported", voter=f"v{k}")
            for k, v in enumerate(votes)
        )
    run_a = add_run(dataset, pairs, JUDGE_A, "judge A")
    cued = add_run(
        dataset,
        pairs,
        JUDGE_CUED,
        "judge A bandwagon",
        probe="bandwagon",
        probe_settings={"cue_target": "1"},
    )
    return dataset, pairs, run_a, cued
