"""The main navigation: researchers and admins reach the API docs from every page;
raters do not get the link."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

DOCS = reverse("api-docs")


@pytest.mark.parametrize("who", ["researcher", "admin_user"])
def test_api_docs_are_linked_for_researchers_and_admins(request, client_for, who):
    client = client_for(request.getfixturevalue(who))
    for page in (reverse("home"), reverse("judging:judge-list")):
        body = client.get(page).content.decode()
        nav = body.split('<nav aria-label="Main">', 1)[1].split("</nav>", 1)[0]
        assert f'href="{DOCS}"' in nav and "API docs" in nav
    # The link leads to the interactive docs, served to a logged-in session.
    docs = client.get(DOCS)
    assert docs.status_code == 200
    assert "swagger" in docs.content.decode().lower()


def test_raters_and_anonymous_get_no_api_docs_link(client_for, rater):
    assert (
        f'href="{DOCS}"' not in client_for(rater).get(reverse("home")).content.decode()
    )
    login = client_for(None).get(reverse("login")).content.decode()
    assert f'href="{DOCS}"' not in login
