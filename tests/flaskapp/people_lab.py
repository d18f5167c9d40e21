"""Two workspaces and a person in every role, for the people tests (pages, API,
browser): lab A with an owner, a researcher, a reviewer and a rater; lab B with its
own owner; an outsider who belongs to neither; an instance admin."""

from __future__ import annotations

from types import SimpleNamespace

from flaskapp.models import Membership, Workspace
from tests.factories import UserFactory

PASSWORD = "pw-123456"  # tests.factories.UserFactory's


def make_lab() -> SimpleNamespace:
    a = Workspace.objects.create(name="Lab A", slug="lab-a")
    b = Workspace.objects.create(name="Lab B", slug="lab-b")
    lab = SimpleNamespace(a=a, b=b)
    for role in ("owner", "researcher", "reviewer", "rater"):
        user = UserFactory(username=f"a-{role}", email=f"{role}@a.example.org")
        Membership.objects.create(workspace=a, user=user, role=role)
        setattr(lab, role, user)
    lab.owner_b = UserFactory(username="b-owner")
    Membership.objects.create(workspace=b, user=lab.owner_b, role="owner")
    lab.outsider = UserFactory(username="outsider", email="out@example.org")
    lab.admin = UserFactory(username="instance-admin", role="admin")
    return lab


def member_role(ws, user) -> str | None:
    m = Membership.objects.filter(workspace=ws, user=user).first()
    return m.role if m else None
