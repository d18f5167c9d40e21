"""Integer query results straight into numpy: on PostgreSQL as one bytea of
fixed-width big-endian int8 values aggregated by the server, elsewhere by the plain
cursor.

The agreement loaders read hundreds of thousands of (run, response, skill, sample,
score) rows; building a tuple per row and an int per value (or reading a COPY, which
psycopg hands over row by row) cost most of the load. One `string_agg` of
`int8send` values is a single value on the wire and one `numpy.frombuffer`.
"""

from __future__ import annotations

import numpy as np
from django.db import connection


def int_rows(sql: str, params: list, n_cols: int) -> np.ndarray:
    """(n, n_cols) int64: the rows of `sql` (in no particular order), whose `n_cols`
    columns must be integers that are never NULL (COALESCE them). One query either
    way."""
    if connection.vendor == "postgresql":
        names = ", ".join(f"c{i}" for i in range(n_cols))
        packed = " || ".join(f"int8send(c{i}::int8)" for i in range(n_cols))
        with connection.cursor() as cur:
            cur.execute(
                f"SELECT string_agg({packed}, ''::bytea) FROM ({sql}) q({names})",
                params,
            )
            (blob,) = cur.fetchone()
        if blob is None:
            return np.zeros((0, n_cols), np.int64)
        values = np.frombuffer(bytes(blob), dtype=">i8")
        return values.reshape(-1, n_cols).astype(np.int64)
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return np.array(cur.fetchall(), dtype=np.int64).reshape(-1, n_cols)
