"""Rendered judge prompts: what the judge is shown, and the schemas it must follow."""

from __future__ import annotations

import json

import pytest

from annotation.builtin_rubric import BUILTIN_SKILLS
from judging import prompts

SPECS = tuple(
    prompts.SkillSpec(key, name, criteria, anchors)
    for key, name, _ability, criteria, anchors in BUILTIN_SKILLS
)
BY_KEY = {s.key: s for s in SPECS}


def pointwise_input(keys=("logical_correctness", "readability"), **overrides):
    fields = {
        "instruction": "Add 17 and 25.",
        "response": "17 + 25 = 42.",
        "reference": "The sum is 42.",
        "skills": tuple(BY_KEY[k] for k in keys),
    }
    fields.update(overrides)
    return prompts.PointwiseInput(**fields)


def render(inp, *, include_reference=True, output_mode="json_schema") -> str:
    messages = prompts.render_pointwise(
        inp,
        system_text=prompts.BUILTIN_POINTWISE_SYSTEM,
        user_text=prompts.BUILTIN_POINTWISE_USER,
        include_reference=include_reference,
        output_mode=output_mode,
    )
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[1]["content"]


def test_every_skill_shows_its_criteria_and_five_anchors():
    text = render(pointwise_input())
    for key in ("logical_correctness", "readability"):
        skill = BY_KEY[key]
        assert f"Skill key: {key}" in text
        assert skill.name in text and skill.criteria in text
        for level, anchor in enumerate(skill.anchors, start=1):
            assert f"Score {level}: {anchor}" in text
    assert "Add 17 and 25." in text and "17 + 25 = 42." in text


def test_reference_only_when_included_and_present():
    assert "The sum is 42." in render(pointwise_input(), include_reference=True)
    assert "The sum is 42." not in render(pointwise_input(), include_reference=False)
    assert "Reference answer" not in render(pointwise_input(reference=None))
    assert "Reference answer" not in render(pointwise_input(reference="  "))


def test_checklist_questions_sit_with_their_skill_and_general_ones_apart():
    inp = pointwise_input(
        checklist=(
            ("readability", "Is the sum shown as an equation?"),
            (None, "Is the reply in English?"),
            ("harmlessness", "Is nothing unsafe suggested?"),  # a skill not scored here
        )
    )
    text = render(inp)
    readability = text.index("Skill: Readability")
    question = text.index("Is the sum shown as an equation?")
    request = text.index("### Request")
    assert readability < question < request
    assert (
        text.index("Skill: Logical Correctness") < readability
    )  # not under the first skill
    general = text.index("### General checklist")
    assert question < general < request
    assert general < text.index("Is the reply in English?") < request
    assert general < text.index("Is nothing unsafe suggested?") < request


def test_feedback_before_scores_and_na_in_both_modes():
    for mode in ("json_schema", "text"):
        text = render(pointwise_input(), output_mode=mode)
        instructions = text[text.index("### How to reply") :]
        assert "feedback first" in instructions
        assert '"N/A"' in instructions


def test_text_mode_asks_for_a_final_object_or_name_lines():
    text = render(pointwise_input(), output_mode="text")
    assert '{"logical_correctness": <score>, "readability": <score>}' in text
    assert '"Skill Name: score"' in text


def test_metacognition_note_says_a_justified_refusal_can_earn_a_five():
    text = render(pointwise_input(keys=("metacognition",)))
    assert "refusal" in text and "up to 5" in text
    assert "refusal" not in render(pointwise_input(keys=("readability",)))


def test_text_substituted_in_is_never_expanded_again():
    inp = pointwise_input(response='Here is {rubric_block} and {"json": 1}')
    text = render(inp)
    assert 'Here is {rubric_block} and {"json": 1}' in text
    assert text.count("### Rubric") == 1


def test_a_custom_template_keeps_its_literal_braces():
    template = 'Rate it. {rubric_block}Q: {instruction}\nA: {response}\nFormat: {"x": 1}\n{output_instructions}'
    messages = prompts.render_pointwise(
        pointwise_input(),
        system_text="",
        user_text=template,
        include_reference=True,
        output_mode="text",
    )
    assert len(messages) == 1  # no system message when it is empty
    assert 'Format: {"x": 1}' in messages[0]["content"]
    assert prompts.template_problems(template) == []
    assert prompts.template_problems("Rate {response}") == [
        "the template has no {instruction} placeholder",
        "the template has no {rubric_block} placeholder",
        "the template has no {output_instructions} placeholder",
    ]


def test_unknown_output_mode_and_no_skills_are_refused():
    with pytest.raises(ValueError):
        render(pointwise_input(), output_mode="yaml")
    with pytest.raises(ValueError):
        render(pointwise_input(keys=()))


def _assert_strict(schema: dict) -> None:
    """Every object closes its properties and requires all of them (strict mode)."""
    if schema.get("type") == "object":
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
        for child in schema["properties"].values():
            _assert_strict(child)
    for child in schema.get("anyOf", []):
        _assert_strict(child)
    if "items" in schema:
        _assert_strict(schema["items"])


@pytest.mark.parametrize(
    "response_format",
    [
        prompts.pointwise_response_format(["logical_correctness", "readability"]),
        prompts.pairwise_response_format(allow_tie=True),
        prompts.metadata_response_format(["Math", "Coding"], ["readability"]),
        prompts.checklist_response_format(["readability"]),
    ],
)
def test_response_formats_are_strict_json_schemas(response_format):
    assert response_format["type"] == "json_schema"
    spec = response_format["json_schema"]
    assert spec["strict"] is True
    assert set(spec["name"]) <= set("abcdefghijklmnopqrstuvwxyz_")
    _assert_strict(spec["schema"])
    json.dumps(response_format)


def test_pointwise_schema_orders_feedback_before_score_and_allows_na():
    schema = prompts.pointwise_response_format(["readability"])["json_schema"]["schema"]
    entry = schema["properties"]["readability"]
    assert list(entry["properties"]) == ["feedback", "score"]
    allowed = [
        v for option in entry["properties"]["score"]["anyOf"] for v in option["enum"]
    ]
    assert allowed == [1, 2, 3, 4, 5, "N/A"]


def test_pairwise_schema_has_tie_only_when_allowed():
    def winners(allow_tie):
        schema = prompts.pairwise_response_format(allow_tie)["json_schema"]["schema"]
        return schema["properties"]["winner"]["enum"]

    assert winners(True) == ["A", "B", "tie"]
    assert winners(False) == ["A", "B"]


def test_prompt_hash_changes_with_parameters_not_with_key_order():
    messages = [{"role": "user", "content": "hi"}]
    base = prompts.prompt_hash(messages, temperature=0.0, sample_index=0, model="m")
    assert base == prompts.prompt_hash(
        messages, model="m", sample_index=0, temperature=0.0
    )
    reordered = [{"content": "hi", "role": "user"}]
    assert base == prompts.prompt_hash(
        reordered, temperature=0.0, sample_index=0, model="m"
    )
    assert base != prompts.prompt_hash(
        messages, temperature=0.7, sample_index=0, model="m"
    )
    assert base != prompts.prompt_hash(
        messages, temperature=0.0, sample_index=1, model="m"
    )
    assert base != prompts.prompt_hash(
        [{"role": "user", "content": "hi!"}], temperature=0.0, sample_index=0, model="m"
    )
    assert len(base) == 64 and int(base, 16) >= 0


def test_flame_layout_has_three_blocks_in_order():
    messages = prompts.render_flame(
        "classification",
        task_instructions="Is the response safe?",
        context={"request": "How do I bake bread?", "response": "Knead, proof, bake."},
        output_fields={"label": "safe or unsafe"},
    )
    assert len(messages) == 1 and messages[0]["role"] == "user"
    text = messages[0]["content"]
    assert text.startswith(
        "INSTRUCTIONS:\nTask type: classification\nIs the response safe?"
    )
    assert (
        "\n\nCONTEXT:\nrequest: How do I bake bread?\nresponse: Knead, proof, bake."
        in text
    )
    assert text.endswith("\n\nEVALUATION:\nlabel: safe or unsafe")
    with pytest.raises(ValueError):
        prompts.render_flame(
            "poetry", task_instructions="", context={}, output_fields={}
        )


def test_pointwise_in_flame_layout():
    text = prompts.render_pointwise_flame(pointwise_input())[0]["content"]
    instructions, rest = text.split("\n\nCONTEXT:\n")
    context, evaluation = rest.split("\n\nEVALUATION:\n")
    assert BY_KEY["readability"].anchors[4] in instructions
    assert (
        context
        == "request: Add 17 and 25.\nreference answer: The sum is 42.\nresponse: 17 + 25 = 42."
    )
    assert evaluation.splitlines()[0].startswith("feedback:")
    assert "logical_correctness: the score for Logical Correctness" in evaluation
    no_ref = prompts.render_pointwise_flame(pointwise_input(), include_reference=False)
    assert "The sum is 42." not in no_ref[0]["content"]


@pytest.mark.parametrize("layout", ["flask", "flame"])
def test_pairwise_shows_both_answers_and_the_cue_in_the_context(layout):
    cue = "Most reviewers preferred the second answer."
    messages = prompts.render_pairwise(
        "Name a prime.", "7", "9", allow_tie=False, layout=layout, cue=cue
    )
    text = messages[-1]["content"]
    assert "Name a prime." in text
    assert text.index("7") < text.index("9")
    assert cue in text
    if layout == "flame":
        context = text.split("CONTEXT:\n")[1].split("\n\nEVALUATION:")[0]
        assert f"note: {cue}" in context
    else:
        assert text.index("### Note") < text.index("### Answer A")
    assert "tie" not in text.split("How to reply")[-1].replace(
        "a tie is not allowed", ""
    )


def test_pairwise_tie_wording_and_no_cue_by_default():
    text = prompts.render_pairwise("q", "a", "b", allow_tie=True, layout="flask")[-1][
        "content"
    ]
    assert '"Verdict: tie"' in text and "### Note" not in text


def test_metadata_prompt_lists_domains_levels_and_skills():
    text = prompts.render_metadata_annotation(
        "Prove that there are infinitely many primes.",
        domains=["Math", "Natural Science"],
        skills=list(SPECS),
    )[-1]["content"]
    assert "Domain: Math" in text and "Domain: Natural Science" in text
    for level, _description in prompts.DIFFICULTY_LEVELS:
        assert f"\n{level} = " in text
    assert all(f"Skill key: {s.key}" in text for s in SPECS)
    assert "three skill keys" in text and '"difficulty"' in text


def test_checklist_prompt_asks_per_skill_questions_as_json():
    text = prompts.render_checklist("Sort a list.", "Use sorted().", list(SPECS[:2]))[
        -1
    ]["content"]
    assert "yes/no questions" in text and "Use sorted()." in text
    assert f'"{SPECS[0].key}": ["..."]' in text
    assert f'"{prompts.CHECKLIST_GENERAL_KEY}": []' in text


def test_skill_spec_from_any_object_with_the_model_fields():
    class Row:
        key, name, criteria = "k", "K", "c"
        anchor_1, anchor_2, anchor_3, anchor_4, anchor_5 = "1", "2", "3", "4", "5"

    assert prompts.SkillSpec.from_model(Row()) == prompts.SkillSpec(
        "k", "K", "c", ("1", "2", "3", "4", "5")
    )
