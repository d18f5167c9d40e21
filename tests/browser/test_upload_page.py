"""A researcher drops a file on the one upload page, sees the guess, checks and confirms
it; the home page's first-run checklist then shows the data step done (issue 35)."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import expect

from annotation.models import Rubric
from tests.browser.conftest import login
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = "/tmp/shots-upload"
EVAL_SET = [
    {
        "idx": i,
        "instruction": text,
        "answer": "An answer.",
        "task": "qa",
        "skill": ["Factuality", "Comprehension", "Readability"],
        "domain": ["Natural Science"],
        "difficulty": "simple lifestyle knowledge",
    }
    for i, text in enumerate(["Why is the sky blue?", "Why is the sea salty?"], 1)
]
RUBRIC_YAML = """name: Support quality
criteria:
  - key: helpful
    name: Helpful
    scale: {min: 1, max: 3}
    anchors: {1: "Not at all.", 3: "Fully."}
"""


@pytest.fixture
def researcher_user(transactional_db):
    return UserFactory(username="browser-researcher", role="researcher")


def test_a_researcher_drops_a_dataset_and_a_rubric_and_confirms(
    page, live_server, researcher_user, browser_media, tmp_path
):
    import os

    os.makedirs(SHOTS, exist_ok=True)
    login(page, live_server, researcher_user)
    checklist = page.locator("#checklist")
    expect(checklist).to_contain_text("0 of 6 done")
    expect(checklist.locator("[data-step=data]")).to_have_class(
        re.compile(r"\bis-next\b")
    )
    page.screenshot(path=f"{SHOTS}/home-checklist-empty.png", full_page=True)

    checklist.get_by_role("link", name="Upload a file").click()
    expect(page.get_by_role("heading", name="Upload a file")).to_be_visible()
    expect(page.locator("[data-drop-zone]")).to_be_visible()
    page.screenshot(path=f"{SHOTS}/upload-choose.png", full_page=True)

    # A dataset: chosen in the drop zone's file input, read at once (upload.js).
    path = tmp_path / "eval_set.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in EVAL_SET))
    page.locator("[data-drop-zone] input[type=file]").set_input_files(str(path))
    guess = page.locator("#upload-guess")
    expect(guess).to_contain_text("Looks like dataset")
    expect(page.locator("#upload-columns")).to_contain_text("instruction")
    expect(page.get_by_label("Import kind", exact=True)).to_have_value("dataset")
    expect(page.get_by_label("Format", exact=True)).to_have_value("flask")
    # The fields of other kinds are hidden (the rubric name is a rubric file's; a FLASK
    # set reads fixed names, so no mapping), and so are their formats.
    expect(page.get_by_label("Rubric name", exact=True)).to_be_hidden()
    expect(page.get_by_label("Field mapping", exact=True)).to_be_hidden()
    expect(page.locator("option[value=flask_review]")).to_be_disabled()
    page.get_by_label("Format", exact=True).select_option("csv")
    expect(page.get_by_label("Field mapping", exact=True)).to_be_visible()
    page.get_by_label("Format", exact=True).select_option("flask")
    page.get_by_label("Dataset", exact=True).fill("dropped")
    page.screenshot(path=f"{SHOTS}/upload-guess.png", full_page=True)
    page.get_by_role("button", name="Check the file").click()

    # The dataset's import page: the existing preview, then confirm.
    expect(page.locator("#import-status")).to_have_text("Validated")
    expect(page.locator("#import-preview")).to_contain_text("Why is the sea salty?")
    page.get_by_role("button", name="Confirm import").click()
    expect(page.locator("#import-status")).to_have_text("Succeeded")

    # A rubric: the guess, the check (nothing written), the confirm.
    page.goto(f"{live_server.url}/upload/")
    rubric_path = tmp_path / "support.yaml"
    rubric_path.write_text(RUBRIC_YAML)
    page.locator("[data-drop-zone] input[type=file]").set_input_files(str(rubric_path))
    expect(page.locator("#upload-guess")).to_contain_text("Looks like rubric")
    expect(page.get_by_label("Dataset", exact=True)).to_be_hidden()
    page.get_by_role("button", name="Check the file").click()
    expect(page.locator("#upload-check")).to_contain_text("Support quality")
    assert not Rubric.objects.filter(name="Support quality").exists()
    page.screenshot(path=f"{SHOTS}/upload-checked.png", full_page=True)
    page.get_by_role("button", name="Confirm import").click()
    expect(page.get_by_role("heading", name="Support quality")).to_be_visible()
    assert Rubric.objects.filter(name="Support quality").exists()

    # A bad file: its problems with their lines, on the page, nothing written.
    page.goto(f"{live_server.url}/upload/")
    bad = tmp_path / "gold.csv"
    bad.write_text("response_id,factuality\n999999,4\n")
    page.locator("[data-drop-zone] input[type=file]").set_input_files(str(bad))
    page.get_by_label("Dataset", exact=True).fill("dropped")
    page.get_by_role("button", name="Check the file").click()
    expect(page.locator("#upload-problems")).to_contain_text("line 2")
    page.screenshot(path=f"{SHOTS}/upload-problems.png", full_page=True)

    # An ambiguous file: the page asks which kind it is.
    page.goto(f"{live_server.url}/upload/")
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("instruction,model,factuality\n1,m,4\n")
    page.locator("[data-drop-zone] input[type=file]").set_input_files(str(sheet))
    expect(page.locator("#upload-ask")).to_contain_text("Which kind of import is it?")
    page.screenshot(path=f"{SHOTS}/upload-ambiguous.png", full_page=True)

    page.goto(f"{live_server.url}/")
    expect(checklist).to_contain_text("2 of 6 done")
    expect(checklist).to_contain_text("1 rubric of your own")
    expect(checklist.locator("[data-step=campaign]")).to_have_class(
        re.compile(r"\bis-next\b")
    )
    page.screenshot(path=f"{SHOTS}/home-checklist.png", full_page=True)
