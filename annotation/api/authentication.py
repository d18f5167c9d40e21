"""Token authentication for the rater loop's hot endpoints (`next`, `submit`), and the
views' mixin that uses it (`HotAuthenticationMixin`).

Same contract as knox's `TokenAuthentication` (same ``Authorization: Token ...`` header,
same errors, same ``(user, AuthToken)`` result; tokens hashed, expired ones refused),
in one hand-written query that also loads the user's role names, so that the role
checks after it (`roles.user_roles`) need no query of their own. Knox's own class
looks at every token of the user on each request to delete expired ones; here an
expired token is only refused (`flaskapp.tokens.token_list` cleans up).
"""

from __future__ import annotations

import binascii
from hmac import compare_digest

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from knox.auth import TokenAuthentication
from knox.crypto import hash_token
from knox.models import AuthToken
from knox.settings import CONSTANTS
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication

from annotation.sqlrows import from_row, prepared_cursor
from flaskapp import roles
from flaskapp.models import Membership


def _sql() -> tuple[str, tuple[str, ...]]:
    user_model = get_user_model()
    q = connection.ops.quote_name
    fields = tuple(f.attname for f in user_model._meta.concrete_fields)
    groups = user_model.groups.through
    columns = ", ".join(f"u.{q(f.column)}" for f in user_model._meta.concrete_fields)
    members = q(Membership._meta.db_table)
    sql = (
        f"SELECT t.{q('digest')}, t.{q('created')}, t.{q('expiry')}, g.{q('name')}, "
        # The user's workspace roles ride along (issue 35: the checks after it need
        # no query of their own), as "id:role" texts.
        f"ARRAY(SELECT m.{q('workspace_id')}::text || ':' || m.{q('role')} "
        f"FROM {members} m WHERE m.{q('user_id')} = u.{q('id')}), "
        f"{columns} "
        f"FROM {q(AuthToken._meta.db_table)} t "
        f"JOIN {q(user_model._meta.db_table)} u ON u.{q('id')} = t.{q('user_id')} "
        f"LEFT JOIN {q(groups._meta.db_table)} ug ON ug.{q('user_id')} = u.{q('id')} "
        f"LEFT JOIN {q('auth_group')} g ON g.{q('id')} = ug.{q('group_id')} "
        f"WHERE t.{q('token_key')} = %s"
    )
    return sql, fields


class RaterTokenAuthentication(TokenAuthentication):
    """Knox's `TokenAuthentication` in one query, with the user's roles cached."""

    _query: tuple[str, tuple[str, ...]] | None = None

    def authenticate_credentials(self, token: bytes):
        if connection.vendor != "postgresql":
            # Elsewhere raw rows would need the backend's converters (dates as text).
            return super().authenticate_credentials(token)
        msg = _("Invalid token.")
        text = token.decode("utf-8", errors="replace")
        try:
            digest = hash_token(text)
        except (TypeError, binascii.Error):
            raise exceptions.AuthenticationFailed(msg) from None
        if RaterTokenAuthentication._query is None:
            RaterTokenAuthentication._query = _sql()
        sql, fields = RaterTokenAuthentication._query
        with prepared_cursor() as cursor:
            cursor.execute(sql, [text[: CONSTANTS.TOKEN_KEY_LENGTH]])
            rows = [r for r in cursor.fetchall() if compare_digest(r[0], digest)]
        if not rows:
            raise exceptions.AuthenticationFailed(msg)
        _digest, created, expiry, _group, workspace_roles, *values = rows[0]
        if expiry is not None and expiry < timezone.now():
            raise exceptions.AuthenticationFailed(msg)
        user = from_row(get_user_model(), fields, values)
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        names = {row[3] for row in rows if row[3] is not None}
        if user.is_superuser:
            names.add(roles.ADMIN)
        user._flask_roles = names
        user._flask_workspace_roles = {
            int(ws): role for ws, _, role in (r.partition(":") for r in workspace_roles)
        }
        auth_token = AuthToken.from_db(
            connection.alias,
            ["digest", "token_key", "user_id", "created", "expiry"],
            [digest, text[: CONSTANTS.TOKEN_KEY_LENGTH], user.pk, created, expiry],
        )
        auth_token.user = user
        return user, auth_token


class HotAuthenticationMixin:
    """The rater loop's two hot endpoints (`next`, `submit`) check tokens in one query
    (`RaterTokenAuthentication`, knox's contract). The schema documents knox's own
    token scheme: the same header and the same answers, under one security
    component."""

    def get_authenticators(self):
        if getattr(self, "swagger_fake_view", False):  # drf-spectacular's schema pass
            return [TokenAuthentication(), SessionAuthentication()]
        return [RaterTokenAuthentication(), SessionAuthentication()]
