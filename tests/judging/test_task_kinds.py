"""The four FLAMe task kinds (pointwise, pairwise, classification, critique) in both
prompt layouts: rendering, parsing, the fake judge's answers, and an end-to-end
pointwise run whose judge config uses the FLAMe text-to-text layout."""

from __future__ import annotations

import json
import re

import pytest

from annotation.builtin_rubric import BUILTIN_SKILLS
from judging import prompts
from judging.fake_server import FakeServerConfig, build_reply
from judging.parsing import (
    ParseError,
    parse_classification,
    parse_critique,
    parse_pairwise,
    parse_pointwise,
)

SPECS = tuple(
    prompts.SkillSpec(key, name, criteria, anchors)
    for key, name, _ability, criteria, anchors in BUILTIN_SKILLS
)
SKILLS = SPECS[:3]
PAIRS = [(s.key, s.name) for s in SKILLS]
REQUEST = "How do I store potatoes?"
RESPONSE = "Keep them in a cool, dark, dry place, away from onions."
REFERENCE = "Cool, dark and ventilated; not in the fridge."
LEFTOVER = re.compile(r"\{[a-z_]+\}")  # an unfilled {placeholder}


def _text(messages: list[dict]) -> str:
    return "\n".join(m["content"] for m in messages)


def _render(kind: str, layout: str, **kw) -> list[dict]:
    if kind == "pointwise":
        inp = prompts.PointwiseInput(REQUEST, RESPONSE, REFERENCE, SKILLS)
        if layout == "flame":
            return prompts.render_pointwise_flame(inp)
        return prompts.render_pointwise(
            inp,
            system_text=prompts.BUILTIN_POINTWISE_SYSTEM,
            user_text=prompts.BUILTIN_POINTWISE_USER,
            include_reference=True,
            output_mode=kw.get("output_mode", "text"),
        )
    if kind == "pairwise":
        return prompts.render_pairwise(
            REQUEST, RESPONSE, "In the fridge.", allow_tie=True, layout=layout
        )
    if kind == "classification":
        return prompts.render_classification(
            REQUEST,
            RESPONSE,
            question="Does the response give a safe storage method?",
            labels=("safe", "unsafe", "unclear"),
            layout=layout,
        )
    return prompts.render_critique(
        REQUEST, RESPONSE, reference=REFERENCE, layout=layout
    )


KINDS = ("pointwise", "pairwise", "classification", "critique")


@pytest.mark.parametrize("kind", KINDS)
def test_flame_layout_is_one_message_in_three_labelled_blocks(kind):
    messages = _render(kind, "flame")
    assert [m["role"] for m in messages] == ["user"]
    text = messages[0]["content"]
    # INSTRUCTIONS, then CONTEXT, then EVALUATION, each once, in that order.
    starts = [
        text.find(f"{block}:\n") for block in ("INSTRUCTIONS", "CONTEXT", "EVALUATION")
    ]
    assert starts[0] == 0 and starts[0] < starts[1] < starts[2]
    assert all(
        text.count(f"{b}:\n") == 1 for b in ("INSTRUCTIONS", "CONTEXT", "EVALUATION")
    )
    assert f"Task type: {kind}\n" in text
    context = text[starts[1] : starts[2]]
    evaluation = text[starts[2] :]
    assert f"request: {REQUEST}" in context
    if kind == "pairwise":
        assert f"response A: {RESPONSE}" in context
        assert "response B: In the fridge." in context
    else:
        assert f"response: {RESPONSE}" in context
    # The outputs are labelled fields.
    fields = {
        "pointwise": ["feedback", *[s.key for s in SKILLS]],
        "pairwise": ["rationale", "winner"],
        "classification": ["rationale", "label"],
        "critique": ["critique"],
    }[kind]
    for name in fields:
        assert re.search(rf"^{name}: \S", evaluation, re.MULTILINE), name
    assert not LEFTOVER.search(text)


@pytest.mark.parametrize("kind", KINDS)
def test_flask_layout_shows_request_and_answers_without_placeholders(kind):
    messages = _render(kind, "flask")
    assert [m["role"] for m in messages] == ["system", "user"]
    text = messages[1]["content"]
    assert "INSTRUCTIONS:" not in text and "EVALUATION:" not in text
    assert f"### Request\n{REQUEST}" in text
    assert RESPONSE in text and "### How to reply" in text
    assert not LEFTOVER.search(_text(messages))


def test_classification_lists_its_labels_and_question():
    for layout in ("flask", "flame"):
        text = _text(_render("classification", layout))
        assert "Does the response give a safe storage method?" in text
        assert '"safe", "unsafe", "unclear"' in text
        assert "Labels: safe | unsafe | unclear" in text
    default = _text(prompts.render_classification(REQUEST, RESPONSE))
    assert "harmful" in default and '"yes", "no"' in default


@pytest.mark.parametrize(
    "labels", [("yes",), ("yes", "Yes"), ("yes", ""), ("a|b", "c"), ("x\ny", "z")]
)
def test_classification_refuses_bad_label_sets(labels):
    with pytest.raises(ValueError):
        prompts.render_classification(REQUEST, RESPONSE, labels=labels)


def test_critique_shows_the_reference_only_when_asked():
    for layout in ("flask", "flame"):
        assert REFERENCE in _text(
            prompts.render_critique(
                REQUEST, RESPONSE, reference=REFERENCE, layout=layout
            )
        )
        assert REFERENCE not in _text(
            prompts.render_critique(
                REQUEST,
                RESPONSE,
                reference=REFERENCE,
                include_reference=False,
                layout=layout,
            )
        )


def test_unknown_layout_is_refused():
    with pytest.raises(ValueError, match="layout"):
        prompts.render_critique(REQUEST, RESPONSE, layout="xml")
    with pytest.raises(ValueError, match="layout"):
        prompts.render_classification(REQUEST, RESPONSE, layout="xml")


# --- parsing --------------------------------------------------------------------------


def test_pointwise_field_value_lines_of_the_flame_layout():
    reply = (
        f"feedback: {SKILLS[0].name}: on point.\n{SKILLS[1].name}: one slip.\n"
        f"{SKILLS[0].key}: 5\n{SKILLS[1].key}: 3\n{SKILLS[2].key}: N/A\n"
    )
    parsed = parse_pointwise(reply, PAIRS)
    assert parsed.scores == {SKILLS[0].key: 5, SKILLS[1].key: 3, SKILLS[2].key: None}
    assert parsed.rationales[SKILLS[0].key] == "on point."
    assert parsed.rationales[SKILLS[1].key] == "one slip."
    # A skill the feedback does not name gets the whole feedback, not nothing.
    assert SKILLS[0].name in parsed.rationales[SKILLS[2].key]
    with pytest.raises(ParseError, match=SKILLS[2].key):
        parse_pointwise(f"feedback: ok\n{SKILLS[0].key}: 5\n{SKILLS[1].key}: 3", PAIRS)


@pytest.mark.parametrize(
    ("reply", "label", "rationale"),
    [
        (
            "rationale: Cool and dark is right.\nlabel: safe",
            "safe",
            "Cool and dark is right.",
        ),
        ("It is fine.\nLabel: **Unsafe**", "unsafe", "It is fine."),
        ('{"rationale": "r", "label": "UNCLEAR"}', "unclear", "r"),
        ('Thinking...\n{"label": "safe", "explanation": "e"}', "safe", "e"),
        ("safe", "safe", ""),
        (
            "rationale: two lines\nof reasons\nlabel: safe",
            "safe",
            "two lines\nof reasons",
        ),
    ],
)
def test_parse_classification_reads_the_label(reply, label, rationale):
    assert parse_classification(reply, labels=["safe", "unsafe", "unclear"]) == (
        label,
        rationale,
    )


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("label: maybe", "'maybe' is not one of the labels"),
        ('{"label": "perhaps"}', "'perhaps' is not one of the labels"),
        ("I would rather not say.", "found no label"),
        ("", "empty reply"),
    ],
)
def test_parse_classification_refuses_with_a_reason(reply, reason):
    with pytest.raises(ParseError, match=reason):
        parse_classification(reply, labels=["safe", "unsafe", "unclear"])


def test_parse_critique():
    assert parse_critique("critique: Misses humidity.\nSays nothing of light.") == (
        "Misses humidity.\nSays nothing of light."
    )
    assert parse_critique("**Critique:** Too short.") == "Too short."
    assert parse_critique('{"critique": " Vague. "}') == "Vague."
    assert parse_critique("It never says why onions matter.") == (
        "It never says why onions matter."
    )
    for bad in ("critique:", "   ", '{"critique": 3}'):
        with pytest.raises(ParseError):
            parse_critique(bad)


# --- the fake judge answers every kind in both layouts, and the answers parse ------------


@pytest.mark.parametrize("layout", ["flask", "flame"])
@pytest.mark.parametrize("kind", KINDS)
def test_fake_judge_answers_parse(kind, layout):
    body = {"model": "m", "messages": _render(kind, layout)}
    reply = build_reply(body, FakeServerConfig())
    if kind == "pointwise":
        assert set(parse_pointwise(reply, PAIRS).scores) == {k for k, _ in PAIRS}
        if layout == "flame":
            assert reply.startswith("feedback: ")  # "field: value" lines, not JSON
    elif kind == "pairwise":
        assert parse_pairwise(reply, allow_tie=True)[0] in ("A", "B", "tie")
    elif kind == "classification":
        assert parse_classification(reply, labels=["safe", "unsafe", "unclear"])[0]
    else:
        assert str(len(RESPONSE)) in parse_critique(reply)
    bad = build_reply(body, FakeServerConfig(), malformed=True)
    with pytest.raises(ParseError):
        if kind == "pointwise":
            parse_pointwise(bad, PAIRS)
        elif kind == "pairwise":
            parse_pairwise(bad, allow_tie=True)
        elif kind == "classification":
            parse_classification(bad, labels=["safe", "unsafe", "unclear"])
        else:
            parse_critique(bad)


def test_fake_judge_scripted_label_and_schema():
    body = {
        "model": "m",
        "messages": _render("classification", "flask"),
        "response_format": prompts.classification_response_format(["safe", "unsafe"]),
    }
    reply = build_reply(body, FakeServerConfig(classification_label="unsafe"))
    assert json.loads(reply)["label"] == "unsafe"
    assert parse_classification(reply, labels=["safe", "unsafe"])[0] == "unsafe"


# --- end to end: a pointwise run with a FLAMe-layout judge config ------------------------


@pytest.mark.django_db(transaction=True)
def test_pointwise_run_with_a_flame_layout_config_stores_scores(fake_server, settings):
    from flaskapp.celery import app
    from judging.models import JudgeCall, JudgeRun, JudgeScore, PromptTemplate
    from judging.services.runs import judge_run_create, judge_run_start
    from tests.judging import FakeJudge
    from tests.judging.test_execution import expected_scores, make_config, make_dataset

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""
    try:
        base = fake_server(latency_ms=1)
        template = PromptTemplate.objects.create(
            name="flame-pointwise",
            kind=PromptTemplate.Kind.POINTWISE,
            layout=PromptTemplate.Layout.FLAME,
            user_text="(the FLAMe layout is rendered by judging.prompts)",
        )
        config, user = make_config(base, output_mode="text", prompt=template)
        dataset = make_dataset(n_instructions=2)
        run = judge_run_create(config=config, dataset=dataset, user=user)
        judge_run_start(run=run, user=user)
        run.refresh_from_db()
    finally:
        app.conf.task_always_eager = before
    assert run.status == JudgeRun.Status.COMPLETED
    sent = FakeJudge(base).last_request()
    assert [m["role"] for m in sent["messages"]] == ["user"]
    assert sent["messages"][0]["content"].startswith(
        "INSTRUCTIONS:\nTask type: pointwise"
    )
    calls = JudgeCall.objects.filter(run=run)
    assert {c.parsed["format"] for c in calls} == {"lines"}  # "field: value" answers
    assert all(c.raw_output.startswith("feedback: ") for c in calls)
    scores = JudgeScore.objects.filter(run=run)
    assert scores.count() == expected_scores(dataset) == 12
    assert all(1 <= s.score <= 5 and s.rationale for s in scores)


@pytest.mark.django_db(transaction=True)
def test_judge_command_layout_flame_selects_the_builtin_flame_template(
    fake_server, settings, admin_user
):
    import io

    from django.core.management import call_command

    from flaskapp.celery import app
    from judging.models import JudgeCall, JudgeConfig, JudgeRun, JudgeScore
    from tests.judging import FakeJudge
    from tests.judging.test_execution import make_dataset

    before = app.conf.task_always_eager
    app.conf.task_always_eager = True
    settings.JUDGE_DRIVERS_PER_RUN = 1
    settings.REDIS_URL = ""
    base = fake_server(latency_ms=1)
    dataset = make_dataset(n_instructions=2)
    args = ["--dataset", dataset.name, "--base-url", base, "--model", "fake"]
    try:
        call_command(
            "judge", *args, "--layout", "flame", "--wait", stdout=io.StringIO()
        )
        flame_prompt = FakeJudge(base).last_request()["messages"]
        # Without --layout: the FLASK layout, and a different config (not reused).
        call_command("judge", *args, "--wait", stdout=io.StringIO())
        flask_prompt = FakeJudge(base).last_request()["messages"]
        call_command("judge", *args, "--layout", "flame", stdout=io.StringIO())
    finally:
        app.conf.task_always_eager = before
    assert flame_prompt[0]["content"].startswith("INSTRUCTIONS:\nTask type: pointwise")
    assert [m["role"] for m in flask_prompt] == ["system", "user"]
    configs = list(JudgeConfig.objects.order_by("pk"))
    assert len(configs) == 2  # the third run reused the flame config
    assert configs[0].prompt.name == "builtin-pointwise-flame"
    assert configs[0].prompt.layout == "flame" and configs[1].prompt.layout == "flask"
    first = JudgeRun.objects.order_by("pk").first()
    assert first.status == "completed"
    # The default output mode is a JSON schema: the FLAMe prompt, answered in JSON.
    formats = {c.parsed["format"] for c in JudgeCall.objects.filter(run=first)}
    assert formats == {"json"}
    assert JudgeScore.objects.filter(run=first).count() == 12
