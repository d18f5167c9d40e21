"""Metadata runs suggest from the dataset's own taxonomy (issue 35's leftover): the
prompt offers its domains and difficulty levels with their labels, the parser
accepts only those (a reply naming another fails, naming it) and the stored
suggestion holds its keys and levels; FLASK data keeps exactly FLASK's prompt.

End to end against the real local fake judge server (`judging/fake_server.py`)."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotation.importers.taxonomy import FLASK, taxonomy_parse
from annotation.models import Instruction
from annotation.services.taxonomy import dataset_taxonomy_update
from judging import prompts
from judging.kinds import CallContext, CallResult
from judging.kinds.metadata import MetadataKind
from judging.models import JudgeCall, JudgeRun, MetadataSuggestion
from judging.parsing import ParseError, parse_metadata
from judging.services.runs import judge_run_create, judge_run_start
from judging.services.suggestions import suggestion_accept
from tests.judging.data import make_config, make_dataset, make_run

DECLARED = {
    "domains": ["billing", {"key": "tech", "label": "Technical issue"}, "shipping"],
    "difficulty": {"1": "routine", "4": "tricky", "7": "escalation"},
}
SPEC = prompts.SkillSpec(
    key="readability",
    name="Readability",
    criteria="Is it readable?",
    anchors=("a", "b", "c", "d", "e"),
)

# FLASK's metadata prompt as it was before datasets declared taxonomies.
FLASK_PROMPT = """Task type: metadata
Describe the user request below with three labels. Do not answer it.

1. Domains: one or two domains from this list, the best fit first.
Domain: Humanities
Domain: Language
Domain: Culture
Domain: Health
Domain: History
Domain: Natural Science
Domain: Math
Domain: Social Science
Domain: Technology
Domain: Coding

2. Difficulty: how much knowledge a good answer needs, from 1 to 5.
1 = everyday knowledge that almost anyone has (simple lifestyle)
2 = everyday knowledge that takes some experience or care (advanced lifestyle)
3 = knowledge taught at school or in a first university course (formal education)
4 = knowledge of someone who studied the field in depth (major level)
5 = knowledge that only an expert or researcher in the field has (expert level)

3. Skills: the three skill keys from this list that matter most for a good answer, \
the most important first.
Skill key: readability (Readability): Is it readable?

### Request
Prove it.

### How to reply
Reply with a single JSON object and nothing else: {"rationale": "...", "domains": \
[...], "difficulty": <1-5>, "skills": [<key>, <key>, <key>]}. Use only the domains \
and skill keys listed above."""


def _messages(taxonomy) -> list[dict]:
    return MetadataKind().messages(Instruction(text="Prove it."), [SPEC], taxonomy)


def _parse(taxonomy, reply: dict) -> CallResult:
    ctx = CallContext(
        call_id=1,
        token="t",
        response_id=None,
        sample_index=0,
        skills=[SPEC],
        messages=[],
        cache_key="k",
        kind=JudgeRun.Kind.METADATA,
        taxonomy=taxonomy,
    )
    result = CallResult(
        call_id=1, token="t", response_id=None, sample_index=0, status="succeeded"
    )
    MetadataKind().parse(ctx, result, json.dumps(reply))
    return result


# --- Prompt and parser -------------------------------------------------------------------


def test_flask_data_keeps_exactly_flask_prompt():
    messages = _messages(FLASK)

    assert messages[-1]["content"] == FLASK_PROMPT
    assert (
        messages[0]["content"] == "You label user requests for an evaluation dataset."
    )


def test_declared_taxonomy_prompt_offers_its_domains_and_levels():
    text = _messages(taxonomy_parse(DECLARED))[-1]["content"]

    domains = [line for line in text.splitlines() if line.startswith("Domain: ")]
    assert domains == ["Domain: billing", "Domain: Technical issue", "Domain: shipping"]
    assert "1 = routine\n4 = tricky\n7 = escalation\n" in text
    assert '"difficulty": <1 or 4 or 7>' in text
    assert "Math" not in text and "from 1 to 5" not in text and "expert" not in text


def test_declared_suggestion_stores_domain_keys_and_a_declared_level():
    taxonomy = taxonomy_parse(DECLARED)
    reply = {
        "domains": ["Technical issue", "BILLING"],
        "difficulty": "escalation",
        "skills": ["readability"],
    }

    suggestion = _parse(taxonomy, reply).parsed["suggestion"]

    assert suggestion == {
        "domains": ["tech", "billing"],
        "difficulty": 7,
        "skills": ["readability"],
    }
    assert (
        _parse(taxonomy, {**reply, "difficulty": 4}).parsed["suggestion"]["difficulty"]
        == 4
    )


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"domains": ["Math"]}, "'Math' is not one of billing, Technical issue"),
        (
            {"difficulty": 5},
            "difficulty: 5 is not a level of this dataset (1 = routine",
        ),
        ({"difficulty": "expert"}, "difficulty: 'expert' is not a level of this"),
    ],
)
def test_declared_taxonomy_refuses_an_undeclared_domain_or_level(change, words):
    reply = {"domains": ["tech"], "difficulty": 1, "skills": ["readability"], **change}

    with pytest.raises(ParseError) as caught:
        _parse(taxonomy_parse(DECLARED), reply)

    assert words in str(caught.value)


def test_flask_parse_still_takes_flask_domains_and_five_levels():
    reply = {"domains": ["Natural Science"], "difficulty": 5, "skills": ["Readability"]}

    suggestion = _parse(FLASK, reply).parsed["suggestion"]

    assert suggestion == {
        "domains": ["natural_science"],
        "difficulty": 5,
        "skills": ["readability"],
    }
    with pytest.raises(ParseError, match="'billing' is not one of"):
        _parse(FLASK, {**reply, "domains": ["billing"]})
    with pytest.raises(ParseError, match="7 is not a level from 1 to 5"):
        _parse(FLASK, {**reply, "difficulty": 7})


def test_parse_metadata_levels_accept_n_a_and_refuse_booleans():
    levels = {1: "routine", 7: "escalation"}
    reply = {"domains": "billing", "difficulty": "N/A", "skills": ["readability"]}

    meta = parse_metadata(
        json.dumps(reply),
        domains={"billing": "Billing"},
        skill_keys=["readability"],
        levels=levels,
    )

    assert meta["difficulty"] is None and meta["domains"] == ["billing"]
    with pytest.raises(ParseError, match="True is not a level"):
        parse_metadata(
            json.dumps({**reply, "difficulty": True}),
            domains={"billing": "Billing"},
            skill_keys=["readability"],
            levels=levels,
        )


def test_response_format_lists_the_declared_levels():
    fmt = prompts.metadata_response_format(["billing"], ["readability"], [1, 4, 7])
    flask = prompts.metadata_response_format(["Math"], ["readability"])

    props = fmt["json_schema"]["schema"]["properties"]
    assert props["difficulty"]["enum"] == [1, 4, 7]
    assert flask["json_schema"]["schema"]["properties"]["difficulty"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]


# --- End to end: a run against the fake judge server --------------------------------------


@pytest.fixture
def eager_tasks(settings):
    from flaskapp.celery import app

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.JUDGE_BACKOFF_BASE_SECONDS = 0.01
    settings.JUDGE_BACKOFF_MAX_SECONDS = 0.05
    settings.REDIS_URL = ""  # in-process limiter: these tests need no Redis
    yield
    app.conf.task_always_eager = before


@pytest.fixture
def declared_dataset(admin_user):
    dataset = make_dataset(instructions=6, models=("alpha",))
    Instruction.objects.filter(dataset=dataset).update(
        domain_1="", domain_2="", difficulty=None
    )
    dataset_taxonomy_update(user=admin_user, dataset_id=dataset.pk, taxonomy=DECLARED)
    dataset.refresh_from_db()
    return dataset


def _run(fake_server, researcher, dataset, **server):
    config = make_config(
        researcher,
        base_url=fake_server(latency_ms=1, **server),
        output_mode="text",
        max_parse_retries=0,
    )
    run = judge_run_create(
        config=config, dataset=dataset, user=researcher, kind="metadata"
    )
    judge_run_start(run=run, user=researcher)
    run.refresh_from_db()
    return run


@pytest.mark.django_db(transaction=True)
def test_a_run_on_a_declared_taxonomy_suggests_its_values_and_they_are_accepted(
    eager_tasks, fake_server, researcher, admin_user, declared_dataset
):
    run = _run(fake_server, researcher, declared_dataset)

    assert run.status == JudgeRun.Status.COMPLETED
    suggestions = list(MetadataSuggestion.objects.filter(run=run))
    assert len(suggestions) == 6
    for s in suggestions:
        assert 1 <= len(s.domains) <= 2
        assert set(s.domains) <= {"billing", "tech", "shipping"}
        assert s.difficulty in {1, 4, 7}
    assert set(JudgeCall.objects.filter(run=run).values_list("status", flat=True)) == {
        JudgeCall.Status.SUCCEEDED
    }

    first = suggestions[0]
    suggestion_accept(suggestion=first, user=admin_user)
    instruction = Instruction.objects.get(pk=first.instruction_id)
    assert instruction.domains == first.domains
    assert instruction.difficulty == first.difficulty


@pytest.mark.django_db(transaction=True)
def test_a_reply_with_an_undeclared_level_fails_the_call_naming_it(
    eager_tasks, fake_server, researcher, declared_dataset
):
    run = _run(fake_server, researcher, declared_dataset, malformed=1.0)

    calls = list(JudgeCall.objects.filter(run=run))
    assert calls and all(c.status == JudgeCall.Status.FAILED for c in calls)
    for call in calls:
        assert "difficulty: 9 is not a level of this dataset" in call.error
        assert "7 = escalation" in call.error
    assert not MetadataSuggestion.objects.filter(run=run).exists()


# --- The suggestions page names the declared values ---------------------------------------


@pytest.mark.django_db
def test_suggestions_page_shows_the_declared_labels(
    client_for, admin_user, researcher, declared_dataset
):
    run = make_run(
        dataset=declared_dataset,
        config=make_config(researcher),
        kind=JudgeRun.Kind.METADATA,
        status=JudgeRun.Status.COMPLETED,
    )
    instruction = Instruction.objects.filter(dataset=declared_dataset).first()
    MetadataSuggestion.objects.create(
        run=run, instruction=instruction, domains=["tech"], difficulty=7
    )

    response = client_for(admin_user).get(
        reverse("judging:run-suggestions", args=[run.pk])
    )

    assert response.status_code == 200
    body = response.content.decode()
    assert ">Technical issue<" in body and "7 · escalation" in body
