"""Workspaces with a member of each role, for the stored-key and audit tests."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User

from flaskapp.models import Membership, Workspace
from tests.factories import UserFactory

# What every response, log line and audit row is searched for.
SECRET = "sk-stored-0123456789abcdefSECRET"


@dataclass
class Lab:
    workspace: Workspace
    other: Workspace
    owner: User
    researcher: User
    reviewer: User
    rater: User
    outsider: User  # an owner of the other workspace only
    admin: User


@pytest.fixture
def lab(db) -> Lab:
    ws = Workspace.objects.create(name="Lab A", slug="lab-a")
    other = Workspace.objects.create(name="Lab B", slug="lab-b")
    people = {}
    for role in ("owner", "researcher", "reviewer", "rater"):
        # The global group too: today's pages (judge configs) still ask for it.
        group = {"owner": "researcher"}.get(role, role)
        user = UserFactory(username=f"lab-{role}", role=group)
        Membership.objects.create(workspace=ws, user=user, role=role)
        people[role] = user
    outsider = UserFactory(username="lab-outsider", role="researcher")
    Membership.objects.create(workspace=other, user=outsider, role="owner")
    admin = UserFactory(username="lab-admin", role="admin")
    # The factories make every user a member of the default workspace too; the lab's
    # people belong to their lab only, so their pages, forms and API calls work there.
    Membership.objects.filter(
        user__in=[outsider, *people.values()], workspace__slug="default"
    ).delete()
    return Lab(ws, other, outsider=outsider, admin=admin, **people)
