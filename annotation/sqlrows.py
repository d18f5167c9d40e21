"""Model instances from hand-written SQL rows (the rater loop's hot path).

`Model.from_db` skips the converters the ORM's compiler applies; `from_row` applies
each field's `from_db_value` (JSON fields arrive as text from psycopg), so that an
instance built here equals one the ORM would load. Fields not listed stay deferred.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper


@cache
def _converters(model, fields: tuple[str, ...]) -> tuple:
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    return tuple(
        (index, by_attname[name].from_db_value)
        for index, name in enumerate(fields)
        if hasattr(by_attname[name], "from_db_value")
    )


def from_row(model, fields: tuple[str, ...], values: Sequence):
    """An instance of `model` (saved, not adding) from `values` of the attnames
    `fields`."""
    converters = _converters(model, fields)
    if converters:
        values = list(values)
        for index, convert in converters:
            if values[index] is not None:
                values[index] = convert(values[index], None, connection)
    return model.from_db(connection.alias, fields, values)


def table(model) -> str:
    """`model`'s table name, quoted for the connection's SQL."""
    return connection.ops.quote_name(model._meta.db_table)


def concrete_attnames(model) -> tuple[str, ...]:
    return tuple(f.attname for f in model._meta.concrete_fields)


def columns(model, fields: Sequence[str], alias: str) -> str:
    """``alias."col", ...`` for the attnames `fields` of `model`."""
    q = connection.ops.quote_name
    by_attname = {f.attname: f.column for f in model._meta.concrete_fields}
    return ", ".join(f"{alias}.{q(by_attname[name])}" for name in fields)


_PreparingCursor = None


def prepared_cursor():
    """A Django cursor (errors wrapped, queries logged and counted as usual) whose
    statements PostgreSQL parses and plans once per connection.

    Django's default psycopg cursor binds parameters on the client, so every execution
    of the hot path's big statements was parsed and planned again (about as long as
    running them). This one binds on the server and prepares each statement on its
    first execution; connections persist (CONN_MAX_AGE), so the plans are reused.
    PostgreSQL only.
    """
    global _PreparingCursor
    if _PreparingCursor is None:
        _PreparingCursor = _preparing_cursor_class()
    connection.ensure_connection()
    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django turns automatic preparation off; only explicit requests prepare.
        raw.prepare_threshold = 2**31 - 1
    connection.validate_thread_sharing()
    cursor = _PreparingCursor(raw)
    if connection.queries_logged:
        return _DebugWrapper(cursor, connection)
    return connection.make_cursor(cursor)


def _preparing_cursor_class():
    from django.db.backends.postgresql.base import ServerBindingCursor

    class PreparingCursor(ServerBindingCursor):
        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True, binary=binary)

    return PreparingCursor


class _DebugWrapper(CursorDebugWrapper):
    """Logs the statement with its parameters inlined (Django's own way of reading
    them back knows only client-side binding and would log None)."""

    def execute(self, sql, params=None):
        try:
            shown = self.db.ops.compose_sql(sql, params)
        except Exception:  # only the log line is at stake
            shown = sql
        with self.debug_sql(shown, params, use_last_executed_query=False):
            return CursorWrapper.execute(self, sql, params)
