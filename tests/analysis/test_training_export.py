"""Human judgments as autorater training data (FLAMe layout) and the long-format
preference export: examples built from real rows, split by instruction, the three
de-duplication modes on hand-counted cases, anonymised raters, the two commands and
the two researcher-only streaming endpoints."""

from __future__ import annotations

import csv
import io
import itertools
import json
import re
from collections import Counter

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from analysis.exports.examples import pointwise_input, split_for
from analysis.exports.preferences import FIELDS, preference_rows
from analysis.exports.training import (
    TrainingOptions,
    rater_anon_id,
    training_examples,
    training_options_parse,
)
from annotation.models import (
    Assignment,
    Campaign,
    HumanPreference,
    HumanScore,
    PreferencePair,
    Skill,
)
from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
    ServingPolicy,
)
from annotation.services.campaigns import campaign_create
from annotation.services.pairwise import pairwise_next, pairwise_submit
from flaskapp.errors import DomainError
from judging.models import JudgeRun, PairwiseVerdict
from judging.prompts import SkillSpec
from tests.analysis.agreement_data import (
    add_human_scores,
    make_agreement_setup,
    make_dataset,
)
from tests.factories import UserFactory

HEX12 = re.compile(r"^[0-9a-f]{12}$")


def examples(dataset, **options) -> list[dict]:
    return list(
        training_examples(dataset=dataset, options=training_options_parse(**options))
    )


def by_kind(rows, kind):
    return [r for r in rows if r["task_kind"] == kind]


@pytest.fixture
def scored(researcher):
    """Two instructions x two models, two raters: factuality scores (one N/A) and a
    readability score on q0/alpha."""
    return make_agreement_setup(
        researcher,
        human={
            (0, "alpha", "factuality"): [4, None],
            (0, "alpha", "readability"): [5, 3],
            (0, "beta", "factuality"): [2, 2],
            (1, "alpha", "factuality"): [3, "-"],
            (1, "beta", "factuality"): [1, 5],
        },
        judges=[],
        n_instructions=2,
        n_raters=2,
        name="train-set",
    )


def make_pair(dataset, index=0, models=("alpha", "beta"), **fields):
    instruction = dataset.instructions.get(external_id=f"q{index}")
    r1 = instruction.responses.get(model_name=models[0])
    r2 = instruction.responses.get(model_name=models[1])
    return PreferencePair.objects.create(
        dataset=dataset,
        instruction=instruction,
        response_1=r1,
        response_2=r2,
        **fields,
    )


_VOTES = itertools.count()


def vote(pair, label, **fields):
    """An imported vote (a distinct source key each, as the importer writes)."""
    fields.setdefault("origin", HumanPreference.Origin.IMPORTED)
    fields.setdefault("source_key", f"k{next(_VOTES)}")
    return HumanPreference.objects.create(pair=pair, label=label, **fields)


# --- Pointwise examples -----------------------------------------------------------------


def test_pointwise_examples_come_one_per_submitted_assignment_and_skill(scored):
    rows = examples(scored.dataset)
    assert len(rows) == 9 and {r["task_kind"] for r in rows} == {"pointwise"}
    assert HumanScore.objects.count() == 9

    alpha = scored.responses[(0, "alpha")]
    first_rater = scored.raters[0]
    assignment = Assignment.objects.get(response=alpha, rater=first_rater)
    row = next(
        r
        for r in rows
        if r["source"]["assignment_id"] == assignment.pk
        and r["source"]["skill"] == "factuality"
    )
    assert row["target"] == "score: 4\nrationale: human 0 on factuality"
    assert row["source"] == {
        "dataset": "train-set",
        "instruction_external_id": "q0",
        "response_id": alpha.pk,
        "skill": "factuality",
        "campaign_id": scored.campaign.pk,
        "assignment_id": assignment.pk,
        "rater": rater_anon_id(dataset_id=scored.dataset.pk, user_id=first_rater.pk),
        "synthetic": False,
    }
    assert row["split"] in ("train", "validation")

    text = row["input"]
    blocks = [
        line for line in text.splitlines() if line.endswith(":") and line.isupper()
    ]
    assert blocks == ["INSTRUCTIONS:", "CONTEXT:", "EVALUATION:"]
    assert "Task type: pointwise" in text
    factuality = Skill.objects.get(rubric=scored.dataset.rubric, key="factuality")
    assert f"Criteria: {factuality.criteria.strip()}" in text
    assert f"Score 5: {factuality.anchor_5.strip()}" in text
    assert "Skill key: readability" not in text  # one skill per example
    context = text.split("CONTEXT:\n")[1].split("\n\nEVALUATION:")[0]
    assert context == (
        "request: Question 0\nreference answer: A reference answer.\n"
        "response: alpha answer 0"
    )
    evaluation = text.split("EVALUATION:\n")[1]
    assert evaluation.splitlines()[0].startswith("score: ")
    assert evaluation.splitlines()[1].startswith("rationale: ")


def test_na_scores_become_na_targets(scored):
    alpha = scored.responses[(0, "alpha")]
    second = Assignment.objects.get(response=alpha, rater=scored.raters[1])
    row = next(
        r
        for r in examples(scored.dataset)
        if r["source"]["assignment_id"] == second.pk
        and r["source"]["skill"] == "factuality"
    )
    assert row["target"] == "score: N/A\nrationale: human 1 on factuality"


def test_reference_is_shown_only_when_the_campaign_showed_it(scored):
    Campaign.objects.filter(pk=scored.campaign.pk).update(show_reference=False)
    rows = examples(scored.dataset)
    assert rows and all("reference answer" not in r["input"] for r in rows)
    assert all("request: Question" in r["input"] for r in rows)


def test_unsubmitted_assignments_are_left_out(scored):
    beta = scored.responses[(1, "beta")]
    held = Assignment.objects.get(response=beta, rater=scored.raters[0])
    Assignment.objects.filter(pk=held.pk).update(status=Assignment.Status.SERVED)
    rows = examples(scored.dataset)
    assert len(rows) == 8
    assert held.pk not in {r["source"]["assignment_id"] for r in rows}


def test_other_datasets_are_not_exported(scored, researcher):
    make_agreement_setup(
        researcher,
        human={(0, "alpha", "factuality"): [1]},
        judges=[],
        n_instructions=1,
        n_raters=1,
        name="other-set",
    )
    assert {r["source"]["dataset"] for r in examples(scored.dataset)} == {"train-set"}


def test_pointwise_input_shows_this_skills_and_general_checklist_questions():
    skill = SkillSpec("factuality", "Factuality", "True?", ("a", "b", "c", "d", "e"))
    text = pointwise_input(
        instruction="Q",
        reference="",
        response="R",
        skill=skill,
        checklist=[
            {"skill": "factuality", "question": "Is the date right?"},
            {"skill": "readability", "question": "Is it short?"},
            {"skill": None, "question": "Does it answer the question?"},
            {"skill": "factuality", "question": "  "},
        ],
    )
    instructions = text.split("\n\nCONTEXT:")[0]
    assert "- Is the date right?" in instructions
    assert "General checklist:\n- Does it answer the question?" in instructions
    assert "Is it short?" not in text
    assert "reference answer" not in text  # an empty reference is not shown


# --- Pairwise examples ------------------------------------------------------------------


def test_imported_preference_becomes_a_pairwise_example(scored):
    pair = make_pair(scored.dataset, category="chat")
    pref = vote(pair, "2", voter="arena-voter-17", rationale="  B is right.  ")
    rows = by_kind(examples(scored.dataset), "pairwise")
    assert len(rows) == 1
    row = rows[0]
    assert row["target"] == "winner: B\nrationale: B is right."
    assert row["source"] == {
        "dataset": "train-set",
        "instruction_external_id": "q0",
        "response_ids": [pair.response_1_id, pair.response_2_id],
        "pair_id": pair.pk,
        "category": "chat",
        "origin": "imported",
        "campaign_id": None,
        "assignment_id": None,
        "preference_id": pref.pk,
        "rater": rater_anon_id(dataset_id=scored.dataset.pk, voter="arena-voter-17"),
        "synthetic": False,
    }
    text = row["input"]
    assert "Task type: pairwise" in text
    for block in ("INSTRUCTIONS:\n", "\n\nCONTEXT:\n", "\n\nEVALUATION:\n"):
        assert block in text
    # An imported vote: nobody knows whether the voter saw a reference.
    assert text.split("CONTEXT:\n")[1].split("\n\nEVALUATION:")[0] == (
        "request: Question 0\nresponse A: alpha answer 0\nresponse B: beta answer 0"
    )
    assert text.split("EVALUATION:\n")[1].splitlines()[0].startswith("winner: ")
    assert "arena-voter-17" not in json.dumps(row)


def test_campaign_vote_is_exported_in_the_original_numbering(researcher):
    dataset, _ = make_dataset("pair-set", 1, ("alpha", "beta"))
    raters = [UserFactory(username=f"pw-{i}", role="rater") for i in range(2)]
    campaign = campaign_create(
        spec=CampaignSpec(
            name="pw",
            dataset=dataset,
            raters=raters,
            serving=ServingPolicy(overlap=2),
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
    shown = {}
    for rater in raters:
        assignment = pairwise_next(campaign=campaign, rater=rater).assignment
        shown[rater.pk] = assignment.shown_order
        # Each rater picks what they saw as "A".
        pairwise_submit(
            assignment_id=assignment.pk, rater=rater, label="A", rationale="first"
        )
    rows = by_kind(examples(dataset), "pairwise")
    assert len(rows) == 2
    for row in rows:
        pref = HumanPreference.objects.get(pk=row["source"]["preference_id"])
        # "A" as seen in order "21" is response 2, exported as B (response 1 is A).
        expected = "A" if shown[pref.rater_id] == "12" else "B"
        assert row["target"] == f"winner: {expected}\nrationale: first"
        assert row["source"]["origin"] == "campaign"
        assert row["source"]["campaign_id"] == campaign.pk
        assert row["source"]["rater"] == rater_anon_id(
            dataset_id=dataset.pk, user_id=pref.rater_id
        )
        # The campaign showed the reference, so the example does too.
        assert "reference answer: A reference answer." in row["input"]
        r1, r2 = pref.pair.response_1.text, pref.pair.response_2.text
        assert f"response A: {r1}\nresponse B: {r2}" in row["input"]


def test_kinds_select_what_is_exported(scored):
    vote(make_pair(scored.dataset), "1")
    assert Counter(r["task_kind"] for r in examples(scored.dataset)) == {
        "pointwise": 9,
        "pairwise": 1,
    }
    assert {r["task_kind"] for r in examples(scored.dataset, kinds="pairwise")} == {
        "pairwise"
    }
    assert {r["task_kind"] for r in examples(scored.dataset, kinds=["pointwise"])} == {
        "pointwise"
    }


# --- Split by instruction ---------------------------------------------------------------


@pytest.fixture
def many_instructions(researcher):
    n = 40
    setup = make_agreement_setup(
        researcher,
        human={(i, m, "factuality"): [3, 4] for i in range(n) for m in ("a", "b")},
        judges=[],
        n_instructions=n,
        models=("a", "b"),
        n_raters=2,
        name="split-set",
    )
    for i in range(n):
        pair = make_pair(setup.dataset, i, models=("a", "b"))
        vote(pair, "1")
        vote(pair, "2")
    return setup


def test_no_instruction_is_in_both_splits(many_instructions):
    dataset = many_instructions.dataset
    for seed in (0, 1, 7):
        rows = examples(dataset, validation_fraction="0.3", seed=seed)
        assert len(rows) == 40 * 2 * 2 + 40 * 2
        splits: dict[str, set[str]] = {}
        for row in rows:
            iid = row["source"]["instruction_external_id"]
            splits.setdefault(iid, set()).add(row["split"])
        assert len(splits) == 40
        assert all(len(s) == 1 for s in splits.values()), splits
        validation = {i for i, s in splits.items() if s == {"validation"}}
        # A seeded hash, not an exact share: 12 expected of 40, well inside 3..24.
        assert 3 <= len(validation) <= 24
    first = examples(dataset, validation_fraction="0.3", seed=0)
    again = examples(dataset, validation_fraction="0.3", seed=0)
    other = examples(dataset, validation_fraction="0.3", seed=1)
    assert first == again
    assert [r["split"] for r in first] != [r["split"] for r in other]


def test_fraction_zero_and_one_put_everything_in_one_split(many_instructions):
    dataset = many_instructions.dataset
    assert {r["split"] for r in examples(dataset, validation_fraction=0)} == {"train"}
    assert {r["split"] for r in examples(dataset, validation_fraction=1)} == {
        "validation"
    }


def test_split_grows_monotonically_with_the_fraction():
    keys = [f"q{i}" for i in range(300)]
    small = {
        k for k in keys if split_for(k, seed=5, validation_fraction=0.1) == "validation"
    }
    large = {
        k for k in keys if split_for(k, seed=5, validation_fraction=0.5) == "validation"
    }
    assert small < large
    assert 10 <= len(small) <= 50 and 110 <= len(large) <= 190


# --- De-duplication (hand-counted) ------------------------------------------------------


@pytest.fixture
def duplicated(researcher):
    """q0 with two responses; four raters score factuality with the same rationale:
    alpha 4, 4, 3, N/A; beta 5, 2, 2, 5 (a tie, 5 given first). Pair alpha/beta:
    imported votes 1, 1, 2, tie (no rationale); pair beta/alpha: 2, 1 (a tie)."""
    dataset, responses = make_dataset("dup-set", 1, ("alpha", "beta"))
    raters = [UserFactory(username=f"dup-{k}", role="rater") for k in range(4)]
    campaign = campaign_create(
        spec=CampaignSpec(
            name="dup",
            dataset=dataset,
            skill_mode=Campaign.SkillMode.ALL,
            raters=raters,
            serving=ServingPolicy(overlap=4),
        ),
        created_by=researcher,
    )
    add_human_scores(
        campaign,
        responses,
        {
            (0, "alpha", "factuality"): [4, 4, 3, None],
            (0, "beta", "factuality"): [5, 2, 2, 5],
        },
        raters,
        rationale="same",
    )
    forward = make_pair(dataset)
    for label in ("1", "1", "2", "tie"):
        vote(forward, label)
    backward = make_pair(dataset, models=("beta", "alpha"))
    first_backward = vote(backward, "2")
    vote(backward, "1")
    return dataset, responses, raters, first_backward


def test_dedupe_none_keeps_every_judgment(duplicated):
    dataset = duplicated[0]
    rows = examples(dataset, dedupe="none")
    assert len(rows) == 8 + 6
    assert all("merged" not in r["source"] for r in rows)


def test_dedupe_exact_keeps_one_line_per_input_and_target(duplicated):
    dataset = duplicated[0]
    rows = examples(dataset, dedupe="exact")
    # alpha: 4 (x2), 3, N/A -> 3 lines; beta: 5 (x2), 2 (x2) -> 2 lines;
    # pair alpha/beta: A (x2), B, tie -> 3 lines; pair beta/alpha: B, A -> 2 lines.
    assert len(rows) == 10
    merged = [
        (
            r["source"].get("response_id") or tuple(r["source"]["response_ids"]),
            r["target"].splitlines()[0],
            r["source"]["merged"],
        )
        for r in rows
    ]
    _, responses, _, _ = duplicated
    a, b = responses[(0, "alpha")].pk, responses[(0, "beta")].pk
    expected = [
        (a, "score: 4", 2),
        (a, "score: 3", 1),
        (a, "score: N/A", 1),
        (b, "score: 5", 2),
        (b, "score: 2", 2),
        ((a, b), "winner: A", 2),
        ((a, b), "winner: B", 1),
        ((a, b), "winner: tie", 1),
        ((b, a), "winner: B", 1),
        ((b, a), "winner: A", 1),
    ]
    assert sorted(merged, key=str) == sorted(expected, key=str)
    assert len({(r["input"], r["target"]) for r in rows}) == len(rows)
    assert all("votes" not in r["source"] for r in rows)


def test_dedupe_input_keeps_the_majority_and_counts_the_votes(duplicated):
    dataset, responses, raters, first_backward = duplicated
    rows = examples(dataset, dedupe="input")
    assert len(rows) == 4
    a, b = responses[(0, "alpha")], responses[(0, "beta")]
    got = {
        r["source"].get("response_id") or tuple(r["source"]["response_ids"]): r
        for r in rows
    }
    alpha = got[a.pk]
    assert alpha["target"] == "score: 4\nrationale: same"
    assert alpha["source"]["merged"] == 4
    assert alpha["source"]["votes"] == {"4": 2, "3": 1, "N/A": 1}
    assert alpha["source"]["assignment_id"] == (
        Assignment.objects.get(response=a, rater=raters[0]).pk
    )
    beta = got[b.pk]
    # 5 and 2 have two votes each: the label given first (5) wins, not the lowest.
    assert beta["target"] == "score: 5\nrationale: same"
    assert beta["source"]["votes"] == {"5": 2, "2": 2}
    forward = got[(a.pk, b.pk)]
    assert forward["target"] == "winner: A\nrationale:"
    assert forward["source"]["votes"] == {"A": 2, "B": 1, "tie": 1}
    assert forward["source"]["merged"] == 4
    backward = got[(b.pk, a.pk)]
    assert backward["target"] == "winner: B\nrationale:"  # the first of a 1-1 tie
    assert backward["source"]["preference_id"] == first_backward.pk
    assert backward["source"]["votes"] == {"B": 1, "A": 1}


def test_dedupe_counts_reach_the_tally(duplicated):
    dataset = duplicated[0]
    tally: Counter = Counter()
    options = training_options_parse(dedupe="input", validation_fraction=0)
    rows = list(training_examples(dataset=dataset, options=options, tally=tally))
    assert len(rows) == 4
    assert tally[("pointwise", "train")] == 2 and tally[("pairwise", "train")] == 2
    assert tally[("merged", "pointwise")] == 6 and tally[("merged", "pairwise")] == 4


# --- Anonymity --------------------------------------------------------------------------


def test_raters_are_anonymised_and_stable(scored, researcher):
    rows = examples(scored.dataset)
    text = "\n".join(json.dumps(r) for r in rows)
    for user in scored.raters:
        assert user.username not in text
    ids = {r["source"]["rater"] for r in rows}
    assert len(ids) == 2 and all(HEX12.match(i) for i in ids)
    assert not ids & {str(u.pk) for u in scored.raters}
    assert all(
        set(r["source"]) & {"rater_id", "user_id", "username"} == set() for r in rows
    )
    # The same rater in another dataset gets another id.
    other, responses = make_dataset("anon-other", 1, ("alpha",))
    campaign = campaign_create(
        spec=CampaignSpec(name="o", dataset=other, raters=[scored.raters[0]]),
        created_by=researcher,
    )
    add_human_scores(
        campaign, responses, {(0, "alpha", "factuality"): [3]}, [scored.raters[0]]
    )
    (elsewhere,) = examples(other)
    mine = rater_anon_id(dataset_id=scored.dataset.pk, user_id=scored.raters[0].pk)
    assert mine in ids and elsewhere["source"]["rater"] != mine


# --- Options ----------------------------------------------------------------------------


def test_options_defaults_and_every_bad_value_named():
    assert training_options_parse() == TrainingOptions(
        kinds=("pointwise", "pairwise", "classification", "critique"),
        validation_fraction=0.1,
        seed=0,
        dedupe="none",
    )
    with pytest.raises(DomainError) as info:
        training_options_parse(
            kinds="pointwise,labels,votes",
            validation_fraction="1.5",
            seed="x",
            dedupe="fuzzy",
        )
    fields = [p.field for p in info.value.problems]
    assert fields == ["kinds", "kinds", "validation_fraction", "seed", "dedupe"]
    assert "unknown kind 'labels'" in info.value.problems[0].message
    for bad in ("nan", "-0.1", "abc"):
        with pytest.raises(DomainError, match="validation_fraction"):
            training_options_parse(validation_fraction=bad)
    with pytest.raises(DomainError, match="kinds"):
        training_options_parse(kinds=" , ")
    # Empty values are the defaults; repeated query parameters add up.
    assert training_options_parse(kinds=[""], validation_fraction="", dedupe="") == (
        TrainingOptions()
    )
    assert training_options_parse(kinds=["pairwise", "pointwise"]).kinds == (
        "pointwise",
        "pairwise",
    )


def test_queries_do_not_grow_with_rows(researcher, django_assert_max_num_queries):
    for n, name in ((2, "small"), (12, "large")):
        setup = make_agreement_setup(
            researcher,
            human={(i, "alpha", "factuality"): [3] for i in range(n)},
            judges=[],
            n_instructions=n,
            models=("alpha", "beta"),
            n_raters=1,
            name=name,
        )
        for i in range(n):
            vote(make_pair(setup.dataset, i), "1")
        # skills, scores, preferences, raters' and judges' critiques
        with django_assert_max_num_queries(5):
            assert len(examples(setup.dataset)) == 2 * n
        with django_assert_max_num_queries(10):  # each read twice
            assert len(examples(setup.dataset, dedupe="input")) == 2 * n


# --- Command and API --------------------------------------------------------------------


def training_url(dataset, query: str = "") -> str:
    url = reverse("analysis_api:dataset-training-export", args=[dataset.pk])
    return f"{url}?{query}" if query else url


def preferences_url(dataset, query: str = "") -> str:
    url = reverse("analysis_api:dataset-preferences-export", args=[dataset.pk])
    return f"{url}?{query}" if query else url


def body(response) -> str:
    return b"".join(response.streaming_content).decode("utf-8")


def test_command_output_matches_the_api(duplicated, api_client_for, researcher):
    dataset = duplicated[0]
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "export_training", "--dataset", dataset.name, "--dedupe", "input",
        "--seed", "3", "--validation-fraction", "0.5", stdout=out, stderr=err,
    )  # fmt: skip
    response = api_client_for(researcher).get(
        training_url(dataset, "dedupe=input&seed=3&validation_fraction=0.5")
    )
    assert response.status_code == 200 and response.streaming is True
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["Content-Disposition"] == (
        'attachment; filename="dup-set-training.jsonl"'
    )
    api_text = body(response)
    assert api_text == out.getvalue()
    rows = [json.loads(line) for line in api_text.splitlines()]
    assert len(rows) == 4
    counts = Counter((r["task_kind"], r["split"]) for r in rows)
    summary = err.getvalue()
    assert summary.startswith("4 training examples of dup-set (dedupe input")
    for kind in ("pointwise", "pairwise"):
        expected = (
            f"{kind}: train {counts[(kind, 'train')]}, "
            f"validation {counts[(kind, 'validation')]}, "
        )
        assert expected in summary


def test_command_writes_a_file_and_refuses_bad_options(scored, tmp_path):
    dataset = scored.dataset
    out = tmp_path / "train.jsonl"
    err = io.StringIO()
    call_command(
        "export_training", dataset=dataset.name, kinds="pointwise",
        out=str(out), stderr=err,
    )  # fmt: skip
    lines = out.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x) for x in lines] == examples(dataset, kinds="pointwise")
    assert f"written to {out}" in err.getvalue()
    with pytest.raises(CommandError, match="no dataset named 'nope'"):
        call_command("export_training", dataset="nope")
    with pytest.raises(CommandError, match="validation_fraction"):
        call_command(
            "export_training", dataset=dataset.name, validation_fraction="2",
            stderr=io.StringIO(),
        )  # fmt: skip
    with pytest.raises(CommandError, match="unknown kind 'critiques'"):
        call_command(
            "export_training", dataset=dataset.name, kinds="critiques",
            stderr=io.StringIO(),
        )  # fmt: skip


def test_training_api_for_an_admin_with_kinds(api_client_for, admin_user, scored):
    vote(make_pair(scored.dataset), "tie")
    response = api_client_for(admin_user).get(
        training_url(scored.dataset, "kinds=pairwise")
    )
    assert response.status_code == 200 and response.streaming is True
    rows = [json.loads(line) for line in body(response).splitlines()]
    assert [r["task_kind"] for r in rows] == ["pairwise"]
    assert rows[0]["target"] == "winner: tie\nrationale:"


def test_exports_refuse_raters_and_anonymous(api_client_for, rater, scored):
    dataset = scored.dataset
    for url in (training_url(dataset), preferences_url(dataset, "format=jsonl")):
        refused = api_client_for(rater).get(url)
        assert refused.status_code == 403 and not refused.streaming
        assert "human 0 on" not in refused.content.decode()
        assert api_client_for(None).get(url).status_code == 401
        no_role = UserFactory(username="nobody")
        assert api_client_for(no_role).get(url).status_code == 403


@pytest.mark.parametrize(
    "query, field",
    [
        ("kinds=classifications", "kinds"),
        ("kinds=scores", "kinds"),
        ("validation_fraction=1.2", "validation_fraction"),
        ("validation_fraction=lots", "validation_fraction"),
        ("seed=abc", "seed"),
        ("dedupe=fuzzy", "dedupe"),
    ],
)
def test_training_api_bad_parameters_are_400s(
    api_client_for, researcher, scored, query, field
):
    response = api_client_for(researcher).get(training_url(scored.dataset, query))
    assert response.status_code == 400 and not response.streaming
    assert [p["field"] for p in response.json()["problems"]] == [field]


def test_missing_dataset_is_a_404(api_client_for, researcher):
    client = api_client_for(researcher)
    url = reverse("analysis_api:dataset-training-export", args=[999999])
    assert client.get(url).status_code == 404
    url = reverse("analysis_api:dataset-preferences-export", args=[999999])
    assert client.get(url).status_code == 404


# --- Preference export (long format) ----------------------------------------------------


@pytest.fixture
def preferences(researcher):
    """q0 alpha/beta: one imported vote, one campaign vote (real services), and a
    pairwise judge run with verdicts in both orders (one unusable)."""
    dataset, _ = make_dataset("pref-set", 1, ("alpha", "beta"))
    pair = make_pair(dataset, category="math", source="hand", external_id="p-1")
    imported = vote(pair, "tie", voter="v-9", rationale="even")
    voter = UserFactory(username="pref-rater", role="rater")
    campaign = campaign_create(
        spec=CampaignSpec(
            name="pw",
            dataset=dataset,
            raters=[voter],
            pairs=PairPolicy(mode="existing"),
        ),
        created_by=researcher,
    )
    assignment = pairwise_next(campaign=campaign, rater=voter).assignment
    pairwise_submit(assignment_id=assignment.pk, rater=voter, label="B")
    run = JudgeRun.objects.create(
        dataset=dataset,
        name="judge x",
        kind=JudgeRun.Kind.PAIRWISE,
        status=JudgeRun.Status.COMPLETED,
    )
    PairwiseVerdict.objects.create(
        run=run, pair=pair, order="ab", verdict_raw="A", verdict="1", rationale="r1"
    )
    PairwiseVerdict.objects.create(
        run=run, pair=pair, order="ba", verdict_raw="", verdict=""
    )
    return dataset, pair, imported, voter, campaign, assignment, run


def test_preference_rows_cover_humans_and_judges(preferences):
    dataset, pair, imported, voter, campaign, assignment, run = preferences
    rows = list(preference_rows(dataset=dataset))
    assert [r["source_kind"] for r in rows] == ["human", "human", "judge", "judge"]
    assert all(tuple(r) == FIELDS for r in rows)
    common = {
        "dataset": "pref-set",
        "pair_id": pair.pk,
        "pair_external_id": "p-1",
        "instruction_external_id": "q0",
        "instruction_id": pair.instruction_id,
        "response_1_id": pair.response_1_id,
        "response_2_id": pair.response_2_id,
        "model_1": "alpha",
        "model_2": "beta",
        "category": "math",
        "pair_source": "hand",
    }
    first, second, ab, ba = rows
    assert first | {"created_at": None} == common | {
        "source_kind": "human",
        "origin": "imported",
        "rater": rater_anon_id(dataset_id=dataset.pk, voter="v-9"),
        "campaign_id": None,
        "assignment_id": None,
        "preference_id": imported.pk,
        "run_id": None,
        "run_name": None,
        "run_probe": None,
        "order": "",
        "sample_index": None,
        "shown_order": "",
        "label": "tie",
        "presented_label": "",
        "skill_labels": {},
        "rationale": "even",
        "created_at": None,
        "submitted_at": None,
    }
    assignment.refresh_from_db()
    # "B" as the rater saw it, in the original numbering.
    expected_label = "2" if assignment.shown_order == "12" else "1"
    assert second["label"] == expected_label and second["presented_label"] == "B"
    assert second["shown_order"] == assignment.shown_order
    assert second["origin"] == "campaign" and second["campaign_id"] == campaign.pk
    assert second["assignment_id"] == assignment.pk
    assert second["rater"] == rater_anon_id(dataset_id=dataset.pk, user_id=voter.pk)
    assert second["submitted_at"] == assignment.submitted_at.isoformat()
    assert ab | {"created_at": None} == common | {
        "source_kind": "judge",
        "origin": "run",
        "rater": None,
        "campaign_id": None,
        "assignment_id": None,
        "preference_id": None,
        "run_id": run.pk,
        "run_name": "judge x",
        "run_probe": "",
        "order": "ab",
        "sample_index": 0,
        "shown_order": "12",
        "label": "1",
        "presented_label": "A",
        "skill_labels": {},
        "rationale": "r1",
        "created_at": None,
        "submitted_at": None,
    }
    assert (ba["order"], ba["shown_order"], ba["label"]) == ("ba", "21", "")
    text = json.dumps(rows)
    assert "pref-rater" not in text and "v-9" not in text


def test_preferences_command_and_api_agree(
    preferences, api_client_for, researcher, tmp_path
):
    dataset = preferences[0]
    out = tmp_path / "prefs.csv"
    err = io.StringIO()
    call_command("export_preferences", dataset=dataset.name, out=str(out), stderr=err)
    assert (
        f"2 human preferences and 2 judge verdicts of pref-set written to {out}"
        in err.getvalue()
    )
    file_rows = list(csv.DictReader(out.open(newline="", encoding="utf-8")))
    assert len(file_rows) == 4 and list(file_rows[0]) == list(FIELDS)
    assert file_rows[0]["campaign_id"] == "" and file_rows[0]["label"] == "tie"

    response = api_client_for(researcher).get(preferences_url(dataset))
    assert response.status_code == 200 and response.streaming is True
    assert response["Content-Type"].startswith("text/csv")
    assert body(response) == out.read_bytes().decode("utf-8")

    stdout = io.StringIO()
    call_command(
        "export_preferences", dataset=dataset.name, format="jsonl", stdout=stdout
    )
    jsonl = api_client_for(researcher).get(preferences_url(dataset, "format=jsonl"))
    assert jsonl["Content-Type"].startswith("application/x-ndjson")
    assert body(jsonl) == stdout.getvalue()
    assert [json.loads(x) for x in stdout.getvalue().splitlines()] == list(
        preference_rows(dataset=dataset)
    )


def test_preferences_api_bad_format_is_a_400(api_client_for, researcher, preferences):
    response = api_client_for(researcher).get(
        preferences_url(preferences[0], "format=xml")
    )
    assert response.status_code == 400
    assert [p["field"] for p in response.json()["problems"]] == ["format"]


def test_dataset_page_links_the_exports(client_for, researcher, scored):
    page = client_for(researcher).get(
        reverse("annotation:dataset-detail", args=[scored.dataset.pk])
    )
    assert page.status_code == 200
    html = page.content.decode()
    assert training_url(scored.dataset) in html
    assert preferences_url(scored.dataset, "format=csv") in html
    score_export = reverse("analysis_api:dataset-export", args=[scored.dataset.pk])
    assert (
        f"{score_export}?format=csv" in html and f"{score_export}?format=jsonl" in html
    )
    assert reverse("analysis:agreement", args=[scored.dataset.pk]) in html
    # the linked score export answers the researcher with the streamed CSV
    csv = client_for(researcher).get(f"{score_export}?format=csv")
    assert csv.status_code == 200 and csv["Content-Type"].startswith("text/csv")
    assert b"".join(csv.streaming_content).startswith(b"dataset,")


def test_training_text_and_judge_prompt_share_the_skill_block():
    """One text per skill: a training example shows the skill exactly as the judge
    prompt does, the Metacognition note included (it used to be judge-only)."""
    from analysis.exports.examples import pointwise_input
    from judging.prompts import METACOGNITION_NOTE, SkillSpec, skill_lines

    skill = SkillSpec(
        "metacognition",
        "Metacognition",
        "Knows what it does not know.",
        ("one", "two", "three", "four", "five"),
    )
    text = pointwise_input(
        instruction="What will the weather be in a year?",
        reference=None,
        response="Nobody can know that reliably.",
        skill=skill,
    )
    block = "\n".join(skill_lines(skill, []))
    assert block in text
    assert METACOGNITION_NOTE in text
