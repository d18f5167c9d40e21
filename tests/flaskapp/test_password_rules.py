"""Passwords follow Django's standard validators (similarity, minimum length 10, common
passwords, all digits) wherever a password is set through Django: the admin's forms,
`changepassword`, `createsuperuser`, the password change page."""

from __future__ import annotations

import pytest
from django.contrib.auth.forms import AdminPasswordChangeForm
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError

from tests.factories import UserFactory


@pytest.mark.parametrize(
    "password, code",
    [
        ("password", "password_too_short"),
        ("12345678", "password_too_short"),
        ("password123", "password_too_common"),
        ("8375019264", "password_entirely_numeric"),
        ("short1!", "password_too_short"),
        ("alice-wonderland", "password_too_similar"),
    ],
)
def test_weak_passwords_are_refused_with_the_reason(db, password, code):
    user = UserFactory(username="alice-wonderland")
    with pytest.raises(ValidationError) as exc:
        validate_password(password, user=user)
    assert code in {e.code for e in exc.value.error_list}


def test_a_good_password_passes(db):
    user = UserFactory(username="alice")
    validate_password("correct horse battery", user=user)


def test_the_admin_password_form_refuses_a_weak_password_naming_the_field(db):
    user = UserFactory(username="bob")
    form = AdminPasswordChangeForm(
        user, {"password1": "12345678", "password2": "12345678"}
    )
    assert not form.is_valid()
    assert "password2" in form.errors
    user.refresh_from_db()
    assert not user.check_password("12345678")
