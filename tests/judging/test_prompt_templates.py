"""Prompt templates are versioned: editing saves the next version, never in place."""

from __future__ import annotations

import pytest

from flaskapp.errors import DomainError
from judging.models import PromptTemplate
from judging.services.prompts import prompt_get_builtin, prompt_template_create


@pytest.fixture
def builtin(db):
    return prompt_get_builtin(PromptTemplate.Kind.POINTWISE)


def test_saving_makes_the_next_version(researcher, builtin):
    first = prompt_template_create(
        user=researcher,
        name="mine",
        kind="pointwise",
        system_text="s",
        user_text=builtin.user_text,
    )
    second = prompt_template_create(
        user=researcher,
        name="mine",
        kind="pointwise",
        system_text="s2",
        user_text=builtin.user_text + "\nBe strict.",
    )
    assert (first.version, second.version) == (1, 2)
    first.refresh_from_db()
    assert first.system_text == "s"  # the earlier version is untouched


def test_a_pointwise_template_must_keep_its_placeholders(researcher):
    with pytest.raises(DomainError) as exc:
        prompt_template_create(
            user=researcher,
            name="broken",
            kind="pointwise",
            system_text="",
            user_text="Judge this: {instruction}",
        )
    assert {p.field for p in exc.value.problems} == {"user_text"}
    assert "response" in str(exc.value)
    assert not PromptTemplate.objects.filter(name="broken").exists()


def test_prompt_page_lists_and_saves_versions(client_for, researcher, builtin):
    client = client_for(researcher)
    page = client.get("/prompts/")
    assert page.status_code == 200
    assert "builtin-pointwise" in page.content.decode()
    response = client.post(
        "/prompts/",
        {
            "name": builtin.name,
            "kind": "pointwise",
            "system_text": "x",
            "user_text": builtin.user_text,
        },
    )
    assert response.status_code == 302
    saved = PromptTemplate.objects.get(name="custom-pointwise")
    assert saved.version == 1 and not saved.is_builtin


def test_prompt_page_reports_a_missing_placeholder(client_for, researcher, builtin):
    response = client_for(researcher).post(
        "/prompts/",
        {
            "name": "p",
            "kind": "pointwise",
            "system_text": "",
            "user_text": "only {instruction}",
        },
    )
    assert response.status_code == 400
    assert (
        "{response}" in response.content.decode()
        or "response" in response.content.decode()
    )
    assert not PromptTemplate.objects.filter(name="p").exists()


@pytest.mark.parametrize("who, status", [("rater", 403), ("anonymous", 302)])
def test_prompt_page_refuses_raters_and_anonymous(client_for, rater, who, status):
    client = client_for(rater if who == "rater" else None)
    assert client.get("/prompts/").status_code == status
    assert client.post("/prompts/", {"name": "x"}).status_code == status
