"""Browser fixtures: a headless Debian Chromium driven by Playwright's sync API.

The tests are skipped, with the reason, where /usr/bin/chromium is not installed.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotation.services.campaign_spec import (
    CampaignSpec,
    PairPolicy,
)
from annotation.services.campaigns import campaign_create
from tests.factories import (
    DatasetFactory,
    InstructionFactory,
    ResponseFactory,
    UserFactory,
)

CHROMIUM = Path(os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "pw-123456"  # tests.factories.UserFactory's password


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per test module.

    Module scope, not session: Playwright's sync API keeps an event loop running in
    the main thread while it is open, which other tests (anything calling asyncio.run)
    must not inherit.
    """
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an asyncio loop running in this thread; Django's ORM
    # refuses to run beside one unless told that this is deliberate.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            yield chromium
            chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


# Assertions wait as long as actions do (10 s, `page` below): under a loaded CI
# machine an htmx answer can take longer than expect's default 5 s.
expect.set_options(timeout=10_000)


@pytest.fixture
def page(browser):
    """A fresh browser context (no cookies) and page per test."""
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def browser_media(settings, tmp_path):
    """Uploads of the live server go to a temporary MEDIA_ROOT."""
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


def shot(page, name: str) -> None:
    """A full-page screenshot in $FLASK_SCREENSHOTS (for a person to look at), or
    nothing when it is unset."""
    folder = os.environ.get("FLASK_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


def htmx_idle(page) -> None:
    """Wait until htmx has no request, swap or settle in progress, so the content it
    swapped in is bound (its own hx- triggers work) before the test acts on it."""
    page.wait_for_function(
        "() => !document.querySelector("
        "'.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
    )


def login(page, live_server, user, password: str = PASSWORD) -> None:
    """Log `user` in through the login form, as a person would."""
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Username").fill(user.get_username())
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(f"{live_server.url}/")


def follow_nav(page, name: str) -> None:
    """Follow the main navigation's link `name`, through the menu button when the
    links are folded into it (they fold whenever they do not fit in one row)."""
    toggle = page.get_by_role("button", name="Menu")
    if toggle.is_visible() and toggle.get_attribute("aria-expanded") != "true":
        toggle.click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name=name).click()


SKILLS = ["comprehension", "factuality", "readability"]  # of the rating campaign


def sky_rating_campaign(*, raters):
    """A pointwise campaign of three responses (one per instruction, each with a code
    block), scored on SKILLS."""
    researcher = UserFactory(username="browser-researcher", role="researcher")
    dataset = DatasetFactory()
    for i in range(3):
        instruction = InstructionFactory(
            dataset=dataset,
            skill_keys=SKILLS,
            text=f"Question {i}: why is the sky blue?",
        )
        ResponseFactory(
            instruction=instruction,
            model_name="model-alpha",
            text=f"Answer {i}:\n\n```python\nprint('sky')\n```",
        )
    return campaign_create(
        spec=CampaignSpec(name="Sky campaign", dataset=dataset, raters=raters),
        created_by=researcher,
    )


def sky_pairwise_campaign(*, raters):
    """A pairwise campaign of three pairs (model-alpha with bold text against
    model-beta with a code block) asking overall and for factuality."""
    researcher = UserFactory(username="pair-browser-researcher", role="researcher")
    dataset = DatasetFactory()
    for i in range(3):
        instruction = InstructionFactory(
            dataset=dataset, text=f"Question {i}: why is the sky blue?"
        )
        ResponseFactory(
            instruction=instruction,
            model_name="model-alpha",
            text=f"Alpha answer {i}: **Rayleigh** scattering.",
        )
        ResponseFactory(
            instruction=instruction,
            model_name="model-beta",
            text=f"Beta answer {i}:\n\n```python\nprint('blue')\n```",
        )
    return campaign_create(
        spec=CampaignSpec(
            name="Sky pairs",
            dataset=dataset,
            skills=["factuality"],
            raters=raters,
            pairs=PairPolicy(),
        ),
        created_by=researcher,
    )
