"""Judge prompts, schemas, parser and fake judge for criteria on any scale or label
set: each criterion states its own values, the schema allows exactly those, the
parser accepts exactly those, and the fake judge answers with them. FLASK's own
prompt stays as it was (test_prompts pins it)."""

from __future__ import annotations

import json

import pytest

from annotation.builtin_rubric import BUILTIN_SKILLS
from annotation.scales import CATEGORICAL, ORDINAL, Scale
from judging import prompts
from judging.fake_server import FakeServerConfig, build_reply
from judging.parsing import ParseError, parse_pointwise


def ordinal(low, high, *, na=True, anchors=None):
    anchors = anchors or {}
    return Scale(
        ORDINAL,
        tuple(range(low, high + 1)),
        allow_na=na,
        anchors=tuple((v, anchors.get(v, "")) for v in range(low, high + 1)),
    )


def labels(*keys, na=False, descriptions=()):
    descriptions = list(descriptions) + [""] * len(keys)
    return Scale(
        CATEGORICAL,
        tuple(range(len(keys))),
        labels=keys,
        names=tuple(k.capitalize() for k in keys),
        allow_na=na,
        anchors=tuple((i, descriptions[i]) for i in range(len(keys))),
    )


HELP = prompts.SkillSpec(
    "helpfulness",
    "Helpfulness",
    "How useful the answer is.",
    (),
    ordinal(0, 4, na=False, anchors={0: "Useless.", 4: "Perfect."}),
)
OVERALL = prompts.SkillSpec(
    "overall", "Overall", "Overall quality.", (), ordinal(1, 10, anchors={1: "Bad."})
)
SAFE = prompts.SkillSpec(
    "safety",
    "Safety",
    "Is it safe?",
    (),
    labels("safe", "borderline", "unsafe", descriptions=("No risk.", "", "Harmful.")),
)
FLASK = tuple(
    prompts.SkillSpec(key, name, criteria, anchors)
    for key, name, _ability, criteria, anchors in BUILTIN_SKILLS
)


def user_text(skills, *, mode="json_schema") -> str:
    inp = prompts.PointwiseInput("Q?", "An answer.", "Ref.", tuple(skills))
    messages = prompts.render_pointwise(
        inp,
        system_text=prompts.BUILTIN_POINTWISE_SYSTEM,
        user_text=prompts.BUILTIN_POINTWISE_USER,
        include_reference=True,
        output_mode=mode,
    )
    return messages[-1]["content"]


# --- prompts ---------------------------------------------------------------------------


def test_each_criterion_states_its_own_scale_anchors_and_na_rule():
    text = user_text([HELP, OVERALL, SAFE])
    help_block = text[
        text.index("Skill key: helpfulness") : text.index("Skill: Overall")
    ]
    assert "Scale: whole numbers from 0 (worst) to 4 (best)" in help_block
    assert "Score 0: Useless." in help_block and "Score 4: Perfect." in help_block
    assert "Score 2" not in help_block  # no anchor text for 2: no empty line
    assert "N/A: not allowed for this skill; always give a score" in help_block
    overall = text[text.index("Skill key: overall") : text.index("Skill: Safety")]
    assert "from 1 (worst) to 10 (best)" in overall and "N/A: allowed" in overall
    safety = text[text.index("Skill key: safety") : text.index("### Request")]
    assert "Labels: safe | borderline | unsafe" in safety
    assert "Label safe (Safe): No risk." in safety
    assert "Label borderline (Borderline)\n" in safety  # no description, no colon
    assert "N/A: not allowed for this skill; always choose a label" in safety
    assert "1 (worst) to 5 (best)" not in text and "1 to 5" not in text


def test_the_output_example_uses_each_criterions_values():
    text = user_text([HELP, OVERALL, SAFE])
    assert (
        '"helpfulness": {"feedback": "...", "score": <0-4>}, '
        '"overall": {"feedback": "...", "score": <1-10 or "N/A">}, '
        '"safety": {"feedback": "...", "score": <"safe" | "borderline" | "unsafe">}'
    ) in text
    plain = user_text([HELP, SAFE], mode="text")
    assert (
        '{"helpfulness": <0-4>, "safety": <"safe" | "borderline" | "unsafe">}' in plain
    )
    assert '"Skill Name: value"' in plain
    # Only skills that allow N/A are told they may use it.
    assert "N/A" not in user_text([HELP, SAFE]).split("### How to reply")[1]


def test_the_flame_layout_names_each_criterions_values():
    inp = prompts.PointwiseInput("Q?", "An answer.", None, (HELP, SAFE, FLASK[0]))
    text = prompts.render_pointwise_flame(inp)[0]["content"]
    evaluation = text[text.index("EVALUATION:") :]
    assert (
        "helpfulness: the score for Helpfulness: an integer from 0 to 4\n" in evaluation
    )
    assert (
        'safety: the label for Safety: one of "safe", "borderline", "unsafe"\n'
        in evaluation
    )
    assert (
        f'{FLASK[0].key}: the score for {FLASK[0].name}: an integer from 1 to 5, or "N/A"'
        in evaluation
    )
    # A FLASK criterion next to others still shows its five anchors.
    assert f"Score 5: {FLASK[0].anchors[4].strip()}" in text


def test_flask_criteria_keep_flasks_own_text():
    text = user_text(FLASK[:3])
    assert "Scale:" not in text and "N/A:" not in text
    assert "Scores are whole numbers from 1 (worst) to 5 (best)" in text
    assert '"score": <score>' in text


def test_metacognition_on_another_scale_can_earn_its_own_top_score():
    meta = prompts.SkillSpec(
        "metacognition", "Metacognition", "Knows its limits.", (), ordinal(0, 10)
    )
    text = "\n".join(prompts.skill_lines(meta, []))
    assert "up to 10" in text and "up to 5" not in text


def test_from_model_reads_the_scale_of_a_skill_row():
    class Row:
        key, name, criteria = "consistent", "Consistent", "Is it?"
        kind, scale_min, scale_max, scale_anchors = "categorical", None, None, {}
        labels = [{"key": "yes", "name": "Yes", "description": "All supported."}]
        labels.append({"key": "no", "name": "No"})
        allow_na = False

    spec = prompts.SkillSpec.from_model(Row())
    assert spec.scale.labels == ("yes", "no") and not spec.scale.allow_na
    assert spec.anchors == ("All supported.", "")
    assert not spec.is_flask


# --- schema ------------------------------------------------------------------------------


def test_the_schema_gives_each_criterion_an_enum_of_its_values():
    fmt = prompts.pointwise_response_format(
        ["helpfulness", "overall", "safety", "legacy"],
        {"helpfulness": HELP.scale, "overall": OVERALL.scale, "safety": SAFE.scale},
    )
    props = fmt["json_schema"]["schema"]["properties"]

    def score(key):
        return props[key]["properties"]["score"]

    assert score("helpfulness") == {"type": "integer", "enum": [0, 1, 2, 3, 4]}
    assert score("overall") == {
        "anyOf": [
            {"type": "integer", "enum": list(range(1, 11))},
            {"type": "string", "enum": ["N/A"]},
        ]
    }
    assert score("safety") == {
        "type": "string",
        "enum": ["safe", "borderline", "unsafe"],
    }
    assert score("legacy")["anyOf"][0]["enum"] == [1, 2, 3, 4, 5]  # no scale: FLASK's
    assert prompts.score_schema(labels("yes", "no", na=True))["enum"] == [
        "yes",
        "no",
        "N/A",
    ]
    json.dumps(fmt)
    assert fmt["json_schema"]["strict"] is True
    for entry in props.values():
        assert entry["required"] == ["feedback", "score"]
        assert entry["additionalProperties"] is False


# --- parser ------------------------------------------------------------------------------

PAIRS = [("helpfulness", "Helpfulness"), ("overall", "Overall"), ("safety", "Safety")]
SCALES = {"helpfulness": HELP.scale, "overall": OVERALL.scale, "safety": SAFE.scale}


@pytest.mark.parametrize(
    "reply,expected",
    [
        ('{"helpfulness": 0, "overall": 10, "safety": "unsafe"}', (0, 10, 2)),
        (
            json.dumps(
                {
                    "helpfulness": {"feedback": "ok", "score": "4"},
                    "overall": {"feedback": "meh", "score": "N/A"},
                    "safety": {"feedback": "fine", "label": "SAFE"},
                }
            ),
            (4, None, 0),
        ),
        ("Helpfulness: 3/4\nOverall: 7/10\nSafety: Borderline", (3, 7, 1)),
        ("helpfulness: 2\noverall: 9.0\nsafety: **safe**", (2, 9, 0)),
    ],
)
def test_the_parser_accepts_exactly_each_criterions_values(reply, expected):
    parsed = parse_pointwise(reply, PAIRS, SCALES)
    assert tuple(parsed.scores.values()) == expected


@pytest.mark.parametrize(
    "reply,reason",
    [
        ('{"helpfulness": 5, "overall": 1, "safety": "safe"}', "score 5 is outside"),
        ('{"helpfulness": -1, "overall": 1, "safety": "safe"}', "score -1 is outside"),
        ('{"helpfulness": 1, "overall": 11, "safety": "safe"}', "score 11 is outside"),
        ('{"helpfulness": 1, "overall": 1, "safety": "maybe"}', "not a label here"),
        ('{"helpfulness": 1, "overall": 1, "safety": 0}', "must be one of"),
        (
            '{"helpfulness": "N/A", "overall": 1, "safety": "safe"}',
            "N/A is not allowed",
        ),
        ('{"helpfulness": 2.5, "overall": 1, "safety": "safe"}', "is not a whole"),
        ("Helpfulness: 3/5\nOverall: 2\nSafety: safe", "not out of 4"),
    ],
)
def test_anything_else_is_a_parse_error_with_its_reason(reply, reason):
    with pytest.raises(ParseError) as exc:
        parse_pointwise(reply, PAIRS, SCALES)
    assert reason in exc.value.reason


def test_without_scales_the_parser_is_flasks():
    assert parse_pointwise('{"a": "4/5"}', [("a", "A")]).scores == {"a": 4}
    with pytest.raises(ParseError):
        parse_pointwise('{"a": 0}', [("a", "A")])


# --- fake judge --------------------------------------------------------------------------


def body_for(skills, mode):
    inp = prompts.PointwiseInput("Q?", "An answer of some length.", None, tuple(skills))
    body = {
        "model": "m",
        "messages": prompts.render_pointwise(
            inp,
            system_text="",
            user_text=prompts.BUILTIN_POINTWISE_USER,
            include_reference=False,
            output_mode=mode,
        ),
    }
    if mode == "json_schema":
        body["response_format"] = prompts.pointwise_response_format(
            [s.key for s in skills], {s.key: s.scale for s in skills}
        )
    return body


@pytest.mark.parametrize("mode", ["json_schema", "text"])
def test_the_fake_judge_answers_with_the_values_it_is_given(mode):
    values = {"helpfulness": set(), "overall": set(), "safety": set()}
    for n in range(40):
        skills = [HELP, OVERALL, SAFE]
        body = body_for(skills, mode)
        body["messages"][-1]["content"] = body["messages"][-1]["content"].replace(
            "An answer of some length.", f"Answer number {n}." + " x" * n
        )
        reply = build_reply(body, FakeServerConfig())
        parsed = parse_pointwise(reply, PAIRS, SCALES)  # never a parse failure
        for key, value in parsed.scores.items():
            values[key].add(value)
    assert values["helpfulness"] <= {0, 1, 2, 3, 4} and 0 in values["helpfulness"]
    assert values["overall"] <= set(range(1, 11)) and max(values["overall"]) > 5
    assert values["safety"] == {0, 1, 2}


@pytest.mark.parametrize("mode", ["json_schema", "text"])
def test_the_fake_judge_can_answer_out_of_scale(mode):
    body = body_for([HELP, SAFE], mode)
    with pytest.raises(ParseError, match="not a label here"):
        parse_pointwise(
            build_reply(body, FakeServerConfig(), out_of_scale=True),
            PAIRS[::2],
            SCALES,
        )
    body = body_for([SAFE, HELP], mode)
    with pytest.raises(ParseError, match="score 5 is outside"):
        parse_pointwise(
            build_reply(body, FakeServerConfig(), out_of_scale=True),
            [PAIRS[2], PAIRS[0]],
            SCALES,
        )
