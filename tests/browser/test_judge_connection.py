"""A researcher tests a judge's connection in Chromium: the htmx button swaps in the
answer of the real local chat-completions server, without a reload."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login
from tests.factories import UserFactory
from tests.judging.data import make_config

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_test_connection_shows_the_answer_in_place(page, live_server, fake_server):
    researcher = UserFactory(username="conn-researcher", role="researcher")
    base = fake_server(latency_ms=1)
    config = make_config(researcher, base_url=base, model="fake-judge", api_key_env="")
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/judges/{config.pk}/")
    page.evaluate("window.__noFullReload = 'still here'")
    page.get_by_role("button", name="Test connection").click()
    expect(page.locator("#connection-result")).to_contain_text(
        "Connected", timeout=8000
    )
    expect(page.locator("#connection-result")).to_contain_text("fake-judge answered")
    assert page.evaluate("window.__noFullReload") == "still here"
