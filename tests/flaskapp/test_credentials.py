"""The kernel's account rules (`flaskapp.credentials`): the annotation app registers
where a temporary password is recorded, and without a recorder the kernel refuses
rather than let a password set by someone else pass for its owner's own."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from annotation.models import TemporaryPassword
from flaskapp import credentials
from tests.factories import UserFactory


def test_the_annotation_app_registers_the_temporary_password_recorder(db):
    owner = UserFactory(username="owner-x", role="researcher")
    member = UserFactory(username="member-x", role="rater")
    credentials.password_mark_temporary(user=member, by=owner)
    credentials.password_mark_temporary(user=member, by=owner)  # idempotent
    assert list(TemporaryPassword.objects.values_list("user_id", "set_by_id")) == [
        (member.pk, owner.pk)
    ]


def test_without_a_recorder_marking_a_password_temporary_is_refused(db, monkeypatch):
    monkeypatch.setattr(credentials, "_recorder", [])
    member = UserFactory(username="member-y", role="rater")
    with pytest.raises(ImproperlyConfigured, match="recorder"):
        credentials.password_mark_temporary(user=member, by=member)
    assert not TemporaryPassword.objects.exists()


def test_username_and_password_rules_name_their_field(db):
    UserFactory(username="Taken")
    assert [p.field for p in credentials.username_problems("taken")] == ["username"]
    assert credentials.username_problems("bad name!")[0].message.startswith("may")
    assert credentials.username_problems("fresh-name") == []
    user = UserFactory(username="someone")
    assert {p.field for p in credentials.password_problems("123", user)} == {"password"}
    assert credentials.password_problems(credentials.password_generate(), user) == []
