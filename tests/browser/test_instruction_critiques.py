"""A researcher in Chromium opens an instruction of a yes/no dataset: the raters' and
the judge's labels on the question's label set, the disagreement, and the raters'
and the judge's critiques side by side; then filters the responses on a 1-10
criterion with a bound the FLASK scale would have refused."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.analysis.rubric_data import rubric_1_10, rubric_yes_no, scored_dataset
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="critique-researcher", role="researcher")


@pytest.fixture
def raters(transactional_db):
    return [UserFactory(username=f"critic-{k}", role="rater") for k in range(3)]


def test_critiques_side_by_side_and_labels(page, live_server, researcher, raters):
    dataset, *_ = scored_dataset(
        rubric_yes_no(),
        raters=raters,
        human_values={"consistent": [0, 0, 1]},
        judge_values={"consistent": [1, 0]},
    )
    instruction = dataset.instructions.order_by("position").first()
    response = instruction.responses.get()
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/instructions/{instruction.pk}/")

    card = page.locator(f'[data-response="{response.pk}"]')
    question = card.locator('[data-skill="consistent"]')
    expect(question).to_contain_text("labels yes / no")
    expect(question.locator(".human-majority")).to_have_text("Yes")
    expect(question.locator(".disagreement-flag")).to_be_visible()
    expect(question.locator(".judge-score .score-badge")).to_have_text("No")
    critiques = card.get_by_role("group", name="Critiques of this response")
    expect(critiques.locator(".human-critique")).to_have_count(3)
    expect(critiques.locator(".judge-critique")).to_have_count(1)
    expect(critiques.locator(".judge-critique")).to_contain_text("it omits the date")
    human_box = critiques.locator(".human-critiques").bounding_box()
    judge_box = critiques.locator(".judge-critiques").bounding_box()
    # Side by side on a wide screen: the judge's column starts right of the raters'.
    assert judge_box["x"] > human_box["x"] + human_box["width"] - 1
    assert abs(judge_box["y"] - human_box["y"]) < 2
    card.scroll_into_view_if_needed()
    shot(page, "instruction-critiques")

    ten, _, run, _ = scored_dataset(
        rubric_1_10(),
        raters=raters[:2],
        human_values={"overall": [10, 8]},
        judge_values={"overall": [9, 2]},
    )
    page.goto(f"{live_server.url}/datasets/{ten.pk}/responses/")
    page.get_by_label("Skill").select_option("overall")
    page.get_by_label("Raters’ mean at least").fill("8")
    page.get_by_label("Judge run").select_option(str(run.pk))
    page.get_by_label("Judge score at least").fill("9")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#response-table tbody tr")).to_have_count(1)
    expect(page.locator("#response-table tbody")).to_contain_text("9.00")
    shot(page, "responses-1-10")
