"""A researcher fills in the new-campaign form in Chromium: choosing a dataset loads its
models and skills in place, with no JavaScript error, keeping the chosen skill mode."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import login
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def researcher(transactional_db):
    return UserFactory(username="form-researcher", role="researcher")


@pytest.fixture
def datasets(transactional_db):
    """Two datasets (so none is preselected), with one model each."""
    made = []
    for name, model in (("alpha-set", "model-alpha"), ("beta-set", "model-beta")):
        dataset = DatasetFactory(name=name)
        ResponseFactory(
            instruction=InstructionFactory(dataset=dataset), model_name=model
        )
        made.append(dataset)
    return made


def test_changing_the_dataset_loads_its_options_without_a_javascript_error(
    page, live_server, researcher, datasets
):
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on(
        "console",
        lambda msg: (
            errors.append(f"console: {msg.text}") if msg.type == "error" else None
        ),
    )
    login(page, live_server, researcher)
    page.goto(f"{live_server.url}/campaigns/new/")
    options = page.locator("#campaign-options")
    expect(options.get_by_label("model-alpha (1)")).to_have_count(0)

    page.get_by_label("Dataset").select_option(label="alpha-set (1 response)")
    expect(options.get_by_label("model-alpha (1)")).to_be_visible()
    options.get_by_label("Every skill of the rubric").check()

    page.get_by_label("Dataset").select_option(label="beta-set (1 response)")
    expect(options.get_by_label("model-beta (1)")).to_be_visible()
    # The skill mode chosen before the change is kept.
    expect(options.get_by_label("Every skill of the rubric")).to_be_checked()
    assert errors == []
