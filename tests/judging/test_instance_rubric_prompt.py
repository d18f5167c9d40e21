"""An instruction's own score rubric in the judge prompt: after the skill rubric, with a
label; without one, every prompt is byte-identical to what it was."""

from __future__ import annotations

import dataclasses

import httpx
import pytest

from analysis.exports.examples import pointwise_input as training_input
from judging import instance_rubric, prompts
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory
from tests.judging.test_execution import eager_tasks, make_config, run_to_end
from tests.judging.test_prompts import BY_KEY, pointwise_input, render

__all__ = ["eager_tasks"]  # a fixture, used by name

OWN = {
    "criteria": "Does the proof name each step?",
    "scores": {
        "1": "OWN-ONE no steps",
        "2": "OWN-TWO one step",
        "3": "OWN-THREE some steps",
        "4": "OWN-FOUR all but one",
        "5": "OWN-FIVE every step",
    },
}
CHECKLIST = ((None, "Does it state the theorem?"), ("readability", "Is it short?"))


def with_rubric(**overrides):
    return pointwise_input(instance_rubric=OWN, checklist=CHECKLIST, **overrides)


@pytest.mark.parametrize("output_mode", ["json_schema", "text"])
def test_prompt_holds_criteria_every_score_and_checklist_after_skill_rubric(
    output_mode,
):
    text = render(with_rubric(), output_mode=output_mode)
    heading = text.index(instance_rubric.HEADING)
    assert text.index("### Rubric (2 skills)") < heading < text.index("### Request")
    assert text.index(BY_KEY["readability"].anchors[4]) < heading
    assert f"Criteria: {OWN['criteria']}" in text
    for score, description in OWN["scores"].items():
        assert f"Score {score}: {description}" in text
    for _skill, question in CHECKLIST:
        assert question in text


def test_prompt_without_one_is_byte_identical_to_the_builder_without_the_field():
    inp = with_rubric()
    bare = dataclasses.replace(inp, instance_rubric={})
    legacy = prompts.PointwiseInput(  # as built before the field existed
        instruction=inp.instruction,
        response=inp.response,
        reference=inp.reference,
        skills=inp.skills,
        checklist=inp.checklist,
    )
    for mode in ("json_schema", "text"):
        assert render(bare, output_mode=mode) == render(legacy, output_mode=mode)
        assert instance_rubric.HEADING not in render(bare, output_mode=mode)
    assert prompts.render_pointwise_flame(bare) == prompts.render_pointwise_flame(
        legacy
    )


def test_a_custom_template_without_checklist_placeholder_still_gets_it():
    user_text = "{rubric_block}Q: {instruction}\nA: {response}\n{output_instructions}"
    messages = prompts.render_pointwise(
        with_rubric(),
        system_text="s",
        user_text=user_text,
        include_reference=False,
        output_mode="text",
    )
    assert "OWN-FIVE every step" in messages[1]["content"]


def test_flame_layout_and_training_export_show_the_same_rubric():
    flame = prompts.render_pointwise_flame(with_rubric())[0]["content"]
    skill = BY_KEY["readability"]
    kwargs = {"instruction": "q", "reference": None, "response": "a", "skill": skill}
    training = training_input(**kwargs, instance_rubric=OWN)
    own_text = instance_rubric.block(OWN).strip()
    assert own_text in flame and own_text in training
    assert flame.index(skill.anchors[4]) < flame.index(instance_rubric.HEADING)
    assert training_input(**kwargs) == training_input(**kwargs, instance_rubric={})
    assert instance_rubric.HEADING not in training_input(**kwargs)


@pytest.mark.django_db(transaction=True)
def test_a_judge_run_sends_the_instructions_own_rubric(eager_tasks, fake_server):
    base = fake_server(latency_ms=1)
    config, user = make_config(base)
    dataset = DatasetFactory()
    instruction = InstructionFactory(dataset=dataset, instance_rubric=OWN)
    ResponseFactory(instruction=instruction, model_name="m", text="An answer.")
    run = run_to_end(config, user, dataset)
    assert run.status == "completed", run.status
    body = httpx.get(base.rstrip("/").removesuffix("/v1") + "/last_request").json()
    user_text = body["body"]["messages"][-1]["content"]
    assert instance_rubric.HEADING in user_text
    for description in OWN["scores"].values():
        assert description in user_text


def test_a_1_10_rubric_is_listed_in_numeric_order_in_the_prompt():
    ten = {
        "criteria": "Overall.",
        "scores": {str(i): f"TEN-{i}" for i in (10, 2, 1, 9, 3, 4, 5, 6, 7, 8)},
    }
    text = render(pointwise_input(instance_rubric=ten))
    positions = [text.index(f"Score {i}: TEN-{i}") for i in range(1, 11)]
    assert positions == sorted(positions)
