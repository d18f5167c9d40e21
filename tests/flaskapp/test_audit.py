"""The audit log's page and API (issue 35): a workspace's owners and instance admins
read its events, newest first, filtered by action and paginated; everyone else is
refused by the workspace rules (404 for a non-member, 403 naming the role)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from flaskapp.workspaces import audit_record
from judging.services.keys import stored_key_create
from tests.judging.keys_data import SECRET

HX = {"HTTP_HX_REQUEST": "true"}


def events(lab, n=3):
    for i in range(n):
        audit_record(
            action="membership.role_changed",
            actor=lab.owner,
            workspace=lab.workspace,
            target=lab.rater,
            before={"role": "rater"},
            after={"role": f"reviewer-{i}"},
        )
    audit_record(action="workspace.renamed", actor=lab.outsider, workspace=lab.other)


def test_owner_sees_the_workspaces_events_with_who_what_before_after(lab, client_for):
    events(lab)
    stored_key_create(
        user=lab.owner,
        workspace=lab.workspace,
        name="openai",
        value=SECRET,
        allowed_hosts=["api.openai.com"],
    )
    page = client_for(lab.owner).get(
        reverse("workspace-audit", args=[lab.workspace.pk])
    )
    body = page.content.decode()
    assert page.status_code == 200
    assert "key.created" in body and "membership.role_changed" in body
    assert "lab-owner" in body and "reviewer-2" in body and "openai" in body
    assert "workspace.renamed" not in body  # another workspace's event
    assert body.index("key.created") < body.index("reviewer-2")  # newest first
    assert SECRET not in body


def test_the_page_filters_by_action_and_answers_htmx_with_the_table(lab, client_for):
    events(lab)
    stored_key_create(
        user=lab.owner,
        workspace=lab.workspace,
        name="openai",
        value=SECRET,
        allowed_hosts=["api.openai.com"],
    )
    url = reverse("workspace-audit", args=[lab.workspace.pk])
    answer = client_for(lab.admin).get(url, {"action": "key"}, **HX)
    body = answer.content.decode()
    assert answer.status_code == 200
    assert body.lstrip().startswith('<div id="audit-table"')
    assert "key.created" in body and "membership.role_changed" not in body


def test_the_page_is_paginated(lab, client_for):
    events(lab, n=55)
    url = reverse("workspace-audit", args=[lab.workspace.pk])
    first = client_for(lab.owner).get(url).content.decode()
    second = client_for(lab.owner).get(url, {"page": 2}).content.decode()
    assert "Page 1 of 2" in first and "reviewer-54" in first
    assert "reviewer-0" in second and "reviewer-54" not in second


@pytest.mark.parametrize(
    ("who", "status"), [("researcher", 403), ("rater", 403), ("outsider", 404)]
)
def test_the_page_refuses_everyone_but_owners(lab, client_for, who, status):
    events(lab)
    answer = client_for(getattr(lab, who)).get(
        reverse("workspace-audit", args=[lab.workspace.pk])
    )
    assert answer.status_code == status
    assert "reviewer-1" not in answer.content.decode()


def test_anonymous_visitors_are_sent_to_the_login(lab, client):
    answer = client.get(reverse("workspace-audit", args=[lab.workspace.pk]))
    assert answer.status_code == 302 and "/login/" in answer["Location"]


def test_api_lists_the_workspaces_events_newest_first(lab, api_client_for):
    events(lab)
    answer = api_client_for(lab.owner).get(
        "/api/audit/", {"workspace": lab.workspace.pk}
    )
    assert answer.status_code == 200
    data = answer.json()
    assert data["count"] == 3
    first = data["results"][0]
    assert (
        first["action"] == "membership.role_changed" and first["actor"] == "lab-owner"
    )
    assert first["after"] == {"role": "reviewer-2"} and first["before"] == {
        "role": "rater"
    }
    assert first["target_label"] == "lab-rater"
    filtered = api_client_for(lab.admin).get(
        "/api/audit/", {"workspace": lab.workspace.pk, "action": "key"}
    )
    assert filtered.json()["count"] == 0
    paged = api_client_for(lab.owner).get(
        "/api/audit/", {"workspace": lab.workspace.pk, "limit": 2, "offset": 2}
    )
    assert [r["after"]["role"] for r in paged.json()["results"]] == ["reviewer-0"]


@pytest.mark.parametrize(
    ("who", "status"),
    [("researcher", 403), ("reviewer", 403), ("outsider", 404), ("anonymous", 401)],
)
def test_api_refuses_everyone_but_owners(lab, api_client_for, who, status):
    events(lab)
    user = None if who == "anonymous" else getattr(lab, who)
    answer = api_client_for(user).get("/api/audit/", {"workspace": lab.workspace.pk})
    assert answer.status_code == status
    if status == 403:
        assert "owner" in answer.json()["detail"]


@pytest.mark.parametrize("query", [{}, {"workspace": "x"}, {"workspace": "-1"}])
def test_api_bad_workspace_is_a_400_naming_it(lab, api_client_for, query):
    answer = api_client_for(lab.owner).get("/api/audit/", query)
    assert answer.status_code == 400
    assert answer.json()["problems"][0]["field"] == "workspace"


def test_the_page_and_api_read_a_constant_number_of_queries(
    lab, client_for, api_client_for, django_assert_max_num_queries
):
    events(lab, n=40)
    url = reverse("workspace-audit", args=[lab.workspace.pk])
    client = client_for(lab.owner)
    api = api_client_for(lab.owner)
    client.get(url)  # warm the session and the user's role cache
    with django_assert_max_num_queries(10):
        assert client.get(url).status_code == 200
    with django_assert_max_num_queries(6):
        assert (
            api.get("/api/audit/", {"workspace": lab.workspace.pk}).status_code == 200
        )
