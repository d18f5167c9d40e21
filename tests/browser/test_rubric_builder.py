"""Issue 37: the rubric editor's form builder and the YAML stay in step both ways,
the preview shows the raters' rating form (or the text's problems, marked in the
line numbers), and the rubric built with the form saves."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotation.models import Rubric
from tests.browser.conftest import htmx_idle, login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_build_a_rubric_with_the_form_edit_its_yaml_and_save(page, live_server):
    researcher = UserFactory(username="rubric-builder", role="researcher")
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/rubrics/new/")
    page.wait_for_load_state("load")
    builder = page.locator("#rubric-builder")
    text = page.get_by_label("Rubric (YAML)")
    preview = page.locator("#rubric-preview")
    expect(builder).to_be_visible()
    expect(preview.locator("#row-overall")).to_be_visible()
    lines = text.input_value().count("\n") + 1
    expect(page.locator("[data-gutter] span")).to_have_count(lines)

    # The form writes the text, and the preview follows.
    builder.get_by_role("button", name="Add a yes / no question").click()
    expect(text).to_have_value(
        re.compile(r"key: question_3\n\s+name: A yes / no question")
    )
    name = page.locator("#b-criteria-2-name")
    name.fill("Grounded in the source")
    expect(text).to_have_value(re.compile(r"name: Grounded in the source"))
    row = preview.locator("#row-question_3")
    expect(row).to_contain_text("Grounded in the source")
    expect(row.locator("label.seg-btn", has_text="Yes")).to_be_visible()
    expect(row.locator("label.seg-na")).to_be_visible()
    page.locator("#b-criteria-2-allow_na").uncheck()
    expect(text).to_have_value(re.compile(r"question_3(.|\n)*allow_na: false"))
    expect(row.locator("label.seg-na")).to_have_count(0)
    htmx_idle(page)
    for width in (1440, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, f"rubric-builder-{width}")

    # The text writes the form: a 1-7 scale becomes 0-4.
    edited = (
        text.input_value()
        .replace("scale: {min: 1, max: 7}", "scale: {min: 0, max: 4}")
        .replace("      1: ", "      0: ")
        .replace("      4: ", "      2: ")
        .replace("      7: ", "      4: ")
    )
    text.fill(edited)
    expect(page.locator("#b-criteria-0-scale-max")).to_have_value("4")
    expect(page.locator("#b-criteria-0-scale-min")).to_have_value("0")
    expect(page.locator("#b-criteria-0-anchors-2")).to_have_value(
        "The response meets the request with flaws."
    )
    expect(preview.locator("#s-overall-0")).to_be_attached()

    # A problem is listed with its line and marked in the line numbers.
    line = edited.splitlines().index("    scale: {min: 0, max: 4}") + 1
    text.fill(edited.replace("max: 4}", "max: 40}"))
    expect(preview.locator("#rubric-preview-problems")).to_contain_text(f"line {line}")
    expect(page.locator("[data-gutter] span.has-problem")).to_have_text(str(line))
    shot(page, "rubric-builder-problem-800")
    text.fill(edited)
    expect(page.locator("[data-gutter] span.has-problem")).to_have_count(0)
    htmx_idle(page)

    page.get_by_role("button", name="Create the rubric").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("My rubric")
    rubric = Rubric.objects.get(name="My rubric", version=1)
    skills = {s.key: s for s in rubric.skills.all()}
    assert list(skills) == ["overall", "safe", "question_3"]
    assert (skills["overall"].scale_min, skills["overall"].scale_max) == (0, 4)
    assert skills["question_3"].name == "Grounded in the source"
    assert [lab["key"] for lab in skills["question_3"].labels] == ["yes", "no"]
    assert skills["question_3"].allow_na is False
