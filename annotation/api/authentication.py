"""Token authentication for the rater loop's hot endpoints (`next`, `submit`).

Same contract as DRF's `TokenAuthentication` (same header, same errors, same
``(user, token)`` result), in one hand-written query that also loads the user's role
names, so that the role checks after it (`roles.user_roles`) need no query of their own.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from annotation import roles
from annotation.sqlrows import from_row, prepared_cursor


def _sql() -> tuple[str, tuple[str, ...]]:
    user_model = get_user_model()
    q = connection.ops.quote_name
    fields = tuple(f.attname for f in user_model._meta.concrete_fields)
    groups = user_model.groups.through
    columns = ", ".join(f"u.{q(f.column)}" for f in user_model._meta.concrete_fields)
    sql = (
        f"SELECT t.{q('created')}, g.{q('name')}, {columns} "
        f"FROM {q(Token._meta.db_table)} t "
        f"JOIN {q(user_model._meta.db_table)} u ON u.{q('id')} = t.{q('user_id')} "
        f"LEFT JOIN {q(groups._meta.db_table)} ug ON ug.{q('user_id')} = u.{q('id')} "
        f"LEFT JOIN {q('auth_group')} g ON g.{q('id')} = ug.{q('group_id')} "
        f"WHERE t.{q('key')} = %s"
    )
    return sql, fields


class RaterTokenAuthentication(TokenAuthentication):
    """`TokenAuthentication` in one query, with the user's roles cached on the user."""

    _query: tuple[str, tuple[str, ...]] | None = None

    def authenticate_credentials(self, key):
        if connection.vendor != "postgresql":
            # Elsewhere raw rows would need the backend's converters (dates as text).
            return super().authenticate_credentials(key)
        if RaterTokenAuthentication._query is None:
            RaterTokenAuthentication._query = _sql()
        sql, fields = RaterTokenAuthentication._query
        with prepared_cursor() as cursor:
            cursor.execute(sql, [key])
            rows = cursor.fetchall()
        if not rows:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        created, _group, *values = rows[0]
        user = from_row(get_user_model(), fields, values)
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        names = {group for _created, group, *_rest in rows if group is not None}
        if user.is_superuser:
            names.add(roles.ADMIN)
        user._flask_roles = names
        token = Token.from_db(
            connection.alias, ["key", "user_id", "created"], [key, user.pk, created]
        )
        token.user = user
        return user, token
