"""The prompt editor's preview (a version rendered for one response, nothing sent)
and the diff of two versions, for each role."""

from __future__ import annotations

import pytest
from django.urls import reverse

from judging.services.prompts import prompt_get_builtin, prompt_template_create
from tests.factories import ResponseFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def researcher():
    return UserFactory(username="prompt-researcher", role="researcher")


def test_the_preview_renders_the_template_for_a_response(client, researcher):
    response = ResponseFactory(text="Paris is the capital of France.")
    base = prompt_get_builtin("pointwise")
    url = reverse("judging:prompt-preview", args=[base.pk])
    assert client.get(url).status_code == 302
    client.force_login(UserFactory(username="prompt-rater", role="rater"))
    assert client.get(url + f"?response={response.pk}").status_code == 403
    client.force_login(researcher)
    page = client.get(url + f"?response={response.pk}").content.decode()
    assert "Paris is the capital of France." in page
    assert response.instruction.text in page
    assert "input tokens" in page
    assert client.get(url + "?response=999999").status_code == 400
    assert client.get(url + "?response=x").status_code in (200, 400)


def test_the_diff_shows_what_changed_between_versions(client, researcher):
    base = prompt_get_builtin("pointwise")
    edited = prompt_template_create(
        user=researcher,
        name="custom-judge",
        kind="pointwise",
        system_text=base.system_text + "\nBe strict about units.",
        user_text=base.user_text,
    )
    url = reverse("judging:prompt-diff") + f"?a={base.pk}&b={edited.pk}"
    client.force_login(UserFactory(username="prompt-rater", role="rater"))
    assert client.get(url).status_code == 403
    client.force_login(researcher)
    page = client.get(url).content.decode()
    assert 'class="diff-add">+ Be strict about units.' in page
    assert (
        client.get(reverse("judging:prompt-diff") + "?a=999999&b=1").status_code == 400
    )
