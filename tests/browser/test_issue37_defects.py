"""Issue 37's defects of the rater's and the researcher's pages, checked in Chromium;
each test fails if its defect comes back (defects 9, 12 and 13)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from playwright.sync_api import expect

from flaskapp import roles
from tests.analysis.agreement_data import make_agreement_setup
from tests.browser.conftest import SKILLS, login, shot, sky_rating_campaign
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rater(transactional_db):
    return UserFactory(username="issue37-rater", role="rater")


@pytest.mark.parametrize("width", [1440, 800])
def test_rating_help_names_only_the_items_criteria_and_says_na_plainly(
    page, live_server, rater, width
):
    # Defect 13: the help listed every skill of the rubric (12) while the item asked
    # for 3, and its N/A line read "(0 too, where 0 is not a value)".
    campaign = sky_rating_campaign(raters=[rater])
    page.set_viewport_size({"width": width, "height": 900})
    login(page, live_server, rater)
    page.goto(f"{live_server.url}/rate/{campaign.pk}/")
    page.wait_for_load_state("load")
    rows = page.locator("[data-skill-row]")
    expect(rows).to_have_count(len(SKILLS))
    asked = set(rows.evaluate_all("rs => rs.map(r => r.dataset.skillName)"))
    page.get_by_role("button", name="Shortcuts").click()
    dialog = page.locator("#rating-help")
    expect(dialog).to_be_visible()
    listed = dialog.locator(".help-criteria").evaluate_all(
        "spans => spans.flatMap(s => s.textContent.split(', '))"
    )
    assert set(listed) == asked and len(listed) == len(SKILLS)
    expect(dialog).not_to_contain_text("where 0 is not a value")
    expect(dialog).to_contain_text("on a scale without a 0")
    shot(page, f"issue37-rating-help-{width}")


def test_raters_page_campaign_select_is_readable_and_synthetic_accounts_are_not_admins(
    page, live_server, rater
):
    # Defect 12: the select in the Manage column was crushed to ~45 px; synthetic
    # accounts were badged "also researcher or admin".
    campaign = sky_rating_campaign(raters=[rater])
    campaign_name_holder = UserFactory(username="issue37-second-rater", role="rater")
    synthetic = UserFactory(username="issue37-synthetic", role="rater")
    synthetic.groups.add(Group.objects.get_or_create(name=roles.SYNTHETIC)[0])
    researcher = UserFactory(username="browser-researcher", role="researcher")
    login(page, live_server, researcher)
    for width in (1440, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/raters/")
        page.wait_for_load_state("load")
        select = page.locator(f"#campaign-for-{campaign_name_holder.pk}")
        expect(select).to_be_visible()
        box = select.bounding_box()
        assert box is not None and box["width"] >= 150, box
        expect(select.locator("option", has_text=campaign.name)).to_have_count(1)
        row = page.locator(f"#rater-{synthetic.pk}")
        expect(row).to_contain_text("synthetic")
        expect(row).not_to_contain_text("also researcher or admin")
        shot(page, f"issue37-raters-{width}")


def test_experiment_form_shows_only_the_chosen_datasets_runs(page, live_server):
    # Defect 9: every run of every dataset was offered under one list.
    researcher = UserFactory(username="browser-researcher", role="researcher")
    judge = {(i, "alpha", "readability"): 3 for i in range(2)}
    human = {(i, "alpha", "readability"): [3, 4] for i in range(2)}
    first, second = (
        make_agreement_setup(
            researcher,
            human=human,
            judges=[judge],
            n_instructions=2,
            n_raters=2,
            name=name,
        )  # fmt: skip
        for name in ("exp-browser-a", "exp-browser-b")
    )
    login(page, live_server, researcher)
    for width in (1440, 800):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/experiments/")
        page.wait_for_load_state("load")
        for shown, hidden in ((first, second), (second, first)):
            page.get_by_label("Dataset").select_option(label=shown.dataset.name)
            box = page.locator("#experiment-runs")
            expect(box.locator(f'[data-group="{shown.dataset.pk}"]')).to_be_visible()
            expect(box.locator(f'[data-group="{hidden.dataset.pk}"]')).to_be_hidden()
            expect(
                box.get_by_role("checkbox", name=f"(#{shown.runs[0].pk})")
            ).to_be_visible()
        shot(page, f"issue37-experiment-form-{width}")
