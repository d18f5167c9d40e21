"""An admin uploads a CSV of responses with human scores on a 0-4 rubric, checks the
preview (scores per row), confirms, and follows the link to the imported campaign."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import HumanScore
from annotation.services.rubrics import rubric_import
from tests.annotation.test_score_imports import HELPSTEER_CSV, HELPSTEER_YAML
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_imports_human_scores_and_opens_their_campaign(
    page, live_server, browser_media, tmp_path
):
    admin = UserFactory(username="browser-admin", role="admin")
    rubric_import(data=HELPSTEER_YAML, file="h.yaml")
    path = tmp_path / "helpsteer.csv"
    path.write_text(HELPSTEER_CSV)
    login(page, live_server, admin)

    page.goto(f"{live_server.url}/imports/new/")
    page.get_by_label("Dataset name").fill("helpsteer")
    page.get_by_label("Format").select_option("csv")
    page.get_by_label("Files").set_input_files(str(path))
    page.get_by_label("Field mapping").fill("instruction=prompt")
    page.get_by_label("Rubric").select_option(label="HelpSteer five v1")
    page.get_by_role("button", name="Upload and check").click()

    expect(page.locator("#import-status")).to_have_text("Validated")
    expect(page.locator("#import-human-scores")).to_contain_text(
        "15 human scores to create by 1 rater: imported"
    )
    expect(page.locator("#import-preview")).to_contain_text("helpfulness: 4")
    shot(page, "score-import-validated")

    page.get_by_role("button", name="Confirm import").click()
    expect(page.locator("#import-status")).to_have_text("Succeeded")
    scores = page.locator("#import-human-scores")
    expect(scores).to_contain_text("15 human scores created by 1 rater")
    shot(page, "score-import-succeeded")
    scores.get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Imported scores")
    shot(page, "score-import-campaign")
    assert HumanScore.objects.count() == 15
