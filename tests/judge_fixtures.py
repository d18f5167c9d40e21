"""Fixtures for judge execution: the fake OpenAI-compatible server and a real Celery
worker (a separate process on Redis, reading the test database)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from judging.fake_server import FakeServerConfig, start_fake_server_in_thread

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fake_server():
    """`fake_server(**config)` -> base URL of a real local chat-completions server."""
    stops = []

    def start(**kwargs):
        base_url, stop = start_fake_server_in_thread(FakeServerConfig(**kwargs))
        stops.append(stop)
        return base_url

    yield start
    for stop in stops:
        stop()


def _redis_broker() -> str:
    url = os.environ.get("CELERY_BROKER_URL", "")
    if not url.startswith("redis://") or not settings.REDIS_URL:
        pytest.skip(
            "needs Redis: set CELERY_BROKER_URL and REDIS_URL to redis://... "
            "(the CI script does)"
        )
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL=postgres://...)")
    return url


class Worker:
    """A real `celery -A flaskapp worker` process on the test database."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.log = ROOT / "var" / f"test-worker-{os.getpid()}.log"

    def start(self, concurrency: int = 2, extra_args: tuple[str, ...] = ()) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "flaskapp",
                "worker",
                "-Q",
                "celery,judge",
                "--pool=prefork",
                f"--concurrency={concurrency}",
                "--prefetch-multiplier=1",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=INFO",
                "-n",
                f"test-{os.getpid()}-{time.monotonic_ns()}@%h",
                *extra_args,
            ],
            cwd=ROOT,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL the whole worker (main process and children): a crash, not a stop."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()

    def tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


@pytest.fixture
def celery_worker_process(transactional_db):
    """`celery_worker_process(**env)` starts a worker; all are stopped at teardown."""
    broker = _redis_broker()
    from flaskapp.celery import app

    app.control.purge()
    workers: list[Worker] = []

    def start(
        concurrency: int = 2, extra_args: tuple[str, ...] = (), **extra_env: str
    ) -> Worker:
        db = connection.settings_dict
        url = (
            f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
            f"{db['PORT'] or 5432}/{db['NAME']}"
        )
        env = {
            **os.environ,
            "DATABASE_URL": url,
            "CELERY_BROKER_URL": broker,
            "REDIS_URL": settings.REDIS_URL,
            "LOG_LEVEL": "INFO",
            "CELERY_TASK_ALWAYS_EAGER": "0",
            **extra_env,
        }
        worker = Worker(env)
        worker.start(concurrency, extra_args)
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()
    app.control.purge()


def wait_for(predicate, timeout: float, interval: float = 0.2, message=""):
    """Poll `predicate` until truthy; `message` may be a callable (e.g. a log tail)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    detail = message() if callable(message) else message
    raise AssertionError(f"timed out after {timeout} s: {detail}")


from tests.judging.keys_data import lab  # noqa: E402, F401 (a shared fixture)
from tests.judging.pairwise_data import pref_setup  # noqa: E402, F401 (a shared fixture)
