"""The Content Security Policy header (django-csp) on pages, fragments, API answers and
the API documentation, and templates that need nothing the policy refuses (no inline
script, no inline event handler, htmx without eval). The browser test
(tests/browser/test_csp.py) checks that Chromium reports no violation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.urls import reverse

from annotation.services.campaign_spec import (
    CampaignSpec,
)
from annotation.services.campaigns import campaign_create
from tests.factories import DatasetFactory, InstructionFactory, ResponseFactory

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "templates"
INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.I)
EVENT_HANDLER = re.compile(r"<[^>]+\son[a-z]+\s*=", re.I)


def rating_campaign(*, researcher, rater):
    dataset = DatasetFactory()
    instruction = InstructionFactory(dataset=dataset, skill_keys=["factuality"])
    ResponseFactory(instruction=instruction, model_name="alpha")
    return campaign_create(
        spec=CampaignSpec(name="CSP campaign", dataset=dataset, raters=[rater]),
        created_by=researcher,
    )


def directives(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {
        part.split()[0]: part.split()[1:]
        for part in (p.strip() for p in header.split(";"))
        if part
    }


def assert_strict(response) -> None:
    policy = directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    assert policy["style-src"] == ["'self'"]
    # Only style="" attributes may be inline, never a <style> element or a script.
    assert policy["style-src-attr"] == ["'unsafe-inline'"]
    assert policy["object-src"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["form-action"] == ["'self'"]
    assert not any("unsafe-eval" in v for v in policy.values())


def test_pages_carry_the_policy(client, client_for, rater, researcher):
    campaign = rating_campaign(researcher=researcher, rater=rater)
    login = client.get(reverse("login"))
    assert login.status_code == 200
    assert_strict(login)

    rater_client = client_for(rater)
    for url in (
        reverse("annotation:rate-home"),
        reverse("annotation:rate-next", args=[campaign.pk]),
    ):
        response = rater_client.get(url)
        assert response.status_code == 200, url
        assert_strict(response)
        html = response.content.decode()
        assert not INLINE_SCRIPT.search(html), url
        assert 'name="htmx-config"' in html and '"allowEval": false' in html

    page = client_for(researcher).get(
        reverse("annotation:campaign-detail", args=[campaign.pk])
    )
    assert page.status_code == 200
    assert_strict(page)
    fragment = client_for(researcher).get(
        reverse("annotation:campaign-detail", args=[campaign.pk]),
        headers={"HX-Request": "true"},
    )
    assert fragment.status_code == 200
    assert_strict(fragment)


def test_api_answers_and_errors_carry_the_policy(api_client_for, researcher):
    listing = api_client_for(researcher).get("/api/datasets/")
    assert listing.status_code == 200
    assert_strict(listing)
    refused = api_client_for(None).get("/api/datasets/")
    assert refused.status_code == 401
    assert_strict(refused)


def test_api_docs_need_no_inline_script_or_style(client_for, researcher):
    """The split Swagger view: the page loads its start-up script from `?script`."""
    client = client_for(researcher)
    page = client.get(reverse("api-docs"))
    assert page.status_code == 200
    assert_strict(page)
    html = page.content.decode()
    assert not INLINE_SCRIPT.search(html)
    assert "<style" not in html
    script_url = re.search(r'<script src="([^"]*\?script=[^"]*)"', html).group(1)
    script = client.get(script_url.replace("&amp;", "&"))
    assert script.status_code == 200
    assert script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()


@pytest.mark.parametrize(
    "template",
    sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.html")),
)
def test_templates_have_no_inline_script_or_event_handler(template):
    text = (TEMPLATES / template).read_text(encoding="utf-8")
    assert not INLINE_SCRIPT.search(text)
    assert not EVENT_HANDLER.search(text)
    assert "hx-on" not in text and "js:" not in text
