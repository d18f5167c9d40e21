"""An admin writes a new rubric in the browser, then edits it into a second version."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation.models import Rubric
from tests.browser.conftest import login, shot
from tests.factories import UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_write_then_edit_a_rubric(page, live_server):
    admin = UserFactory(username="rubric-admin", role="admin")
    login(page, live_server, admin)
    page.goto(f"{live_server.url}/rubrics/")
    page.get_by_role("link", name="New rubric").click()
    text = page.get_by_label("Rubric (YAML)")
    expect(text).to_contain_text("kind: categorical")
    for width in (1440, 800):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        shot(page, f"rubric-new-{width}")
    page.get_by_role("button", name="Create the rubric").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("My rubric")
    expect(page.get_by_text("1-7").first).to_be_visible()
    shot(page, "rubric-detail-800")

    page.get_by_role("link", name="Edit (new version)").click()
    broken = text.input_value().replace("max: 7", "max: 1")
    text.fill(broken)
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.locator("#rubric-problems")).to_contain_text("criteria[0].scale")
    shot(page, "rubric-edit-problem-800")
    text.fill(
        broken.replace("max: 1", "max: 9").replace("7: The response", "9: The response")
    )
    page.get_by_role("button", name="Save as a new version").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("v2")
    assert (
        Rubric.objects.get(name="My rubric", version=2)
        .skills.get(key="overall")
        .scale_max
        == 9
    )
    assert (
        Rubric.objects.get(name="My rubric", version=1)
        .skills.get(key="overall")
        .scale_max
        == 7
    )
