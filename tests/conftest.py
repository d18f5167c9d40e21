"""Shared fixtures: users per role, API clients, the FLASK release folder."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from tests.factories import UserFactory

# Each test run gets its own cache namespace. The cache lives in Redis (or in files)
# and outlives the test database: a later run, on a new database whose ids start
# again at 1, could otherwise read results cached from another run's data under the
# same key. Set here, before anything opens the cache, for this process and (through
# the environment) for the worker processes the tests start.
os.environ["FLASK_CACHE_KEY_PREFIX"] = f"flaskeval-test-{uuid.uuid4().hex[:12]}"
settings.CACHES["default"]["KEY_PREFIX"] = os.environ["FLASK_CACHE_KEY_PREFIX"]
if (
    "LOCATION" in settings.CACHES["default"]
    and "filebased" in settings.CACHES["default"]["BACKEND"]
):
    # The file cache has no prefix of its own: a folder per run, under the system's.
    settings.CACHES["default"]["LOCATION"] = str(
        Path(tempfile.gettempdir()) / os.environ["FLASK_CACHE_KEY_PREFIX"]
    )

# Fixtures shared by the judging and analysis tests: the local judge server, a real
# Celery worker process, the preference-set builder.
pytest_plugins = ["tests.judge_fixtures"]

FLASK_DATA_DIR = Path(
    os.environ.get("FLASK_DATA_DIR")
    or Path(__file__).resolve().parent.parent.parent / "shared" / "flask-data"
)


def pytest_collection_modifyitems(config, items):
    """Tests marked `postgres` are skipped, saying why, on another database (the
    README's quickstart runs the suite on SQLite)."""
    from django.db import connection

    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(
        reason=f"needs PostgreSQL, not {connection.vendor} "
        "(DATABASE_URL=postgres://...)"
    )
    for item in items:
        if item.get_closest_marker("postgres"):
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def _cache_namespace_in_use():
    """Fails the run at once if the cache was opened before the prefix was set."""
    from django.core.cache import cache

    prefix = os.environ["FLASK_CACHE_KEY_PREFIX"]
    key = cache.make_key("probe")
    assert prefix in key or "filebased" in settings.CACHES["default"]["BACKEND"], key


@pytest.fixture
def flask_data() -> Path:
    """The public FLASK release, when present (CI and dev machines); skipped elsewhere."""
    if not (FLASK_DATA_DIR / "evaluation_set" / "flask_evaluation.jsonl").exists():
        pytest.skip(f"FLASK release not found at {FLASK_DATA_DIR} (set FLASK_DATA_DIR)")
    return FLASK_DATA_DIR


@pytest.fixture
def admin_user(db):
    return UserFactory(username="admin-user", role="admin")


@pytest.fixture
def researcher(db):
    return UserFactory(username="researcher-user", role="researcher")


@pytest.fixture
def rater(db):
    return UserFactory(username="rater-user", role="rater")


@pytest.fixture
def other_rater(db):
    return UserFactory(username="rater-two", role="rater")


@pytest.fixture
def no_role_user(db):
    return UserFactory(username="no-role-user")


def _api(user) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


@pytest.fixture
def api_client_for():
    """`api_client_for(user)` -> an APIClient authenticated as `user` (None: anonymous)."""
    return _api


@pytest.fixture
def client_for(client):
    """`client_for(user)` -> Django test client logged in as `user`."""

    def make(user):
        from django.test import Client

        c = Client()
        if user is not None:
            c.force_login(user)
        return c

    return make


@pytest.fixture(autouse=True)
def _builtin_data_after_flush(request):
    """Transactional tests flush every table, data migrations included: restore the
    built-in rubric and role groups for them (idempotent, a few queries)."""
    marker = request.node.get_closest_marker("django_db")
    transactional = (marker is not None and marker.kwargs.get("transaction")) or any(
        name in request.fixturenames for name in ("transactional_db", "live_server")
    )
    if transactional:
        request.getfixturevalue("transactional_db")
        from annotation.bootstrap import ensure_builtin_data

        ensure_builtin_data()
    yield


def _sqlite_flush_items_first():
    """On SQLite, flush deletes the campaign items before anything else.

    A transactional test ends with `flush`, which on SQLite is one `DELETE FROM` per
    table in the order of a set of names (it changes with PYTHONHASHSEED). The
    response delete guard (annotation migration 0007, a row trigger on SQLite)
    refuses to delete a response a campaign item still refers to, so whenever the
    responses came first the flush failed and left the rows to the next tests.
    Foreign keys are checked at the flush's commit, so the items may go first.
    PostgreSQL flushes with one TRUNCATE, which the guard does not see."""
    from django.db import connection

    if connection.vendor != "sqlite":
        return
    operations = type(connection.ops)
    original = operations.sql_flush

    def sql_flush(self, style, tables, **kwargs):
        tables = sorted(tables, key=lambda table: table != "annotation_campaignitem")
        return original(self, style, tables, **kwargs)

    operations.sql_flush = sql_flush


_sqlite_flush_items_first()


@pytest.fixture(autouse=True)
def _empty_cache_where_ids_come_back():
    """On SQLite each test starts with an empty cache.

    A test's rolled-back transaction gives its ids back on SQLite (the AUTOINCREMENT
    counters roll back with it), so the next test's dataset, campaign and runs have
    the same ids; a result cached under ids and counts (the dataset's responses table
    keyed by its responses' count and last id) would be served to a test whose data
    differ. PostgreSQL never hands out an id twice."""
    from django.db import connection

    if connection.vendor != "postgresql":
        from django.core.cache import cache

        cache.clear()


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """Tests create many users; the production hasher is slow by design."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
